import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useOfficialClient } from './official-client.ts';

const official = useOfficialClient();

describe('official client: event destinations, subscriptions and sources', () => {
  test('configures a subscription and reads back what it caused', async () => {
    const { client, server } = official;
    // Burrow's target members use the spec's neutral names; the client passes them through.
    const destination = await client.eventDestinations.create({ format: 'json', target: { stream: { auth: { role: { roleRef: 'role-1' } }, streamRef: 'stream-1' } } });
    assert.match(destination.id, /^ed_/);
    assert.equal(destination.target.stream.streamRef, 'stream-1');
    assert.equal((await client.eventDestinations.get(destination.id)).format, 'json');
    assert.ok((await client.eventDestinations.list()).some((d: any) => d.id === destination.id));

    const subscription = await client.eventSubscriptions.create({ sources: [{ type: 'ip_policy_created.v0' }], destinationIds: [destination.id] });
    assert.deepEqual(subscription.sources.map((s: any) => s.type), ['ip_policy_created.v0']);
    assert.deepEqual(subscription.destinations.map((d: any) => d.id), [destination.id]);
    assert.equal((await client.eventSubscriptions.update({ id: subscription.id, description: 'audit' })).description, 'audit');

    const source = await client.eventSources.create({ subscriptionId: subscription.id, type: 'ip_policy_updated.v0' });
    assert.equal(source.type, 'ip_policy_updated.v0');
    assert.equal((await client.eventSources.get({ subscriptionId: subscription.id, type: 'ip_policy_updated.v0' })).type, 'ip_policy_updated.v0');
    const sources = await client.eventSources.list({ subscriptionId: subscription.id });
    assert.deepEqual(sources.sources.map((s: any) => s.type).sort(), ['ip_policy_created.v0', 'ip_policy_updated.v0']);

    const policy = await client.ipPolicies.create({ description: 'watched' });
    await client.ipPolicies.update({ id: policy.id, description: 'changed' });
    const accountId = /account (ac_\w+)/.exec(server.output.join('\n'))![1];
    const outbox = await server.request('GET', `/_burrow/accounts/${accountId}/event_destinations/${destination.id}/outbox`, undefined, { token: server.operatorToken! });
    assert.deepEqual(outbox.body.events.map((e: any) => [e.event_type, e.object.description]), [['ip_policy_created.v0', 'watched'], ['ip_policy_updated.v0', 'changed']]);
  });
});
