import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useOfficialClient } from '../../compat/official-client.ts';

/**
 * Event destinations, subscriptions and sources through the official client. Burrow's target
 * members use the spec's neutral names (stream, stream_ref, role_ref …); the client converts
 * camelCase keys to snake_case, so it sends them unchanged. The client's own typed names
 * (kinesis, streamArn, roleArn …) work too, and are answered in kind.
 */

const official = useOfficialClient();

const streamTarget = { stream: { auth: { role: { roleRef: 'role-1' } }, streamRef: 'stream-1' } };

function rejectsWith(code: number, status: number) {
  return (error: any) => {
    assert.equal(error.statusCode, status);
    assert.equal(error.errorCode, `ERR_BURROW_${code}`);
    return true;
  };
}

describe('official client: event destinations', () => {
  test('create, get, list, update; deletes refused while in use', async () => {
    const { client } = official;
    const destination = await client.eventDestinations.create({ description: 'audit', format: 'JSON', target: streamTarget });
    assert.match(destination.id, /^ed_/);
    assert.equal(destination.format, 'json');
    assert.deepEqual(destination.target.stream, { auth: { role: { roleRef: 'role-1' }, creds: null }, streamRef: 'stream-1' });
    assert.equal(destination.target.logs, null);
    assert.deepEqual(await client.eventDestinations.get(destination.id), destination);
    assert.ok((await client.eventDestinations.list()).some((d: any) => d.id === destination.id));

    const updated = await client.eventDestinations.update({
      id: destination.id,
      description: 'rotated',
      target: { stream: { auth: { creds: { cloudAccessKeyId: 'AKID', cloudSecretAccessKey: 'shh' } }, streamRef: 'stream-2' } },
    });
    assert.equal(updated.description, 'rotated');
    assert.deepEqual(updated.target.stream.auth.creds, { cloudAccessKeyId: 'AKID', cloudSecretAccessKey: null });
    await assert.rejects(client.eventDestinations.update({ id: destination.id, target: { logs: { auth: { role: { roleRef: 'r' } }, logGroupRef: 'lg' } } }), rejectsWith(5108, 400));
    await assert.rejects(client.eventDestinations.create({ format: 'json', target: {} }), rejectsWith(5100, 400));

    const subscription = await client.eventSubscriptions.create({ destinationIds: [destination.id] });
    assert.equal(await official.deleteWithFetch(`/event_destinations/${destination.id}`), 409);
    assert.equal(await official.deleteWithFetch(`/event_subscriptions/${subscription.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/event_destinations/${destination.id}`), 204);
    await assert.rejects(client.eventDestinations.get(destination.id), rejectsWith(5103, 404));
  });
});

describe("official client: event destinations in the client's own target names", () => {
  test('kinesis and datadog, as the client types them, read back the same way', async () => {
    const { client } = official;
    const kinesis = await client.eventDestinations.create({
      format: 'json',
      target: { kinesis: { auth: { creds: { awsAccessKeyId: 'AKID', awsSecretAccessKey: 'shh' } }, streamArn: 'arn:aws:kinesis:us-east-1:1:stream/events' } },
    });
    assert.deepEqual(kinesis.target, {
      firehose: null,
      kinesis: { auth: { role: null, creds: { awsAccessKeyId: 'AKID', awsSecretAccessKey: null } }, streamArn: 'arn:aws:kinesis:us-east-1:1:stream/events' },
      cloudwatchLogs: null,
      datadog: null,
      azureLogsIngestion: null,
    });
    assert.deepEqual(await client.eventDestinations.get(kinesis.id), kinesis);
    const datadog = await client.eventDestinations.create({ format: 'json', target: { datadog: { apiKey: 'dd', ddsite: 'datadoghq.eu' } } });
    assert.deepEqual(datadog.target.datadog, { apiKey: null, ddtags: '', service: '', ddsite: 'datadoghq.eu' });
    const updated = await client.eventDestinations.update({ id: kinesis.id, target: { kinesis: { auth: { role: { roleArn: 'arn:aws:iam::1:role/w' } }, streamArn: 'arn:2' } } });
    assert.deepEqual(updated.target.kinesis, { auth: { role: { roleArn: 'arn:aws:iam::1:role/w' }, creds: null }, streamArn: 'arn:2' });
  });
});

describe('official client: event subscriptions and sources', () => {
  test('configures a subscription, its sources, and reads back what it caused', async () => {
    const { client, server } = official;
    const destination = await client.eventDestinations.create({ format: 'json', target: streamTarget });
    const subscription = await client.eventSubscriptions.create({ sources: [{ type: 'ip_policy_created.v0' }], destinationIds: [destination.id] });
    assert.match(subscription.id, /^esb_/);
    assert.deepEqual(subscription.sources, [{ type: 'ip_policy_created.v0', uri: `${server.url}/event_subscriptions/${subscription.id}/sources/ip_policy_created.v0` }]);
    assert.deepEqual(subscription.destinations.map((d: any) => d.id), [destination.id]);
    assert.deepEqual(await client.eventSubscriptions.get(subscription.id), subscription);
    assert.ok((await client.eventSubscriptions.list()).some((s: any) => s.id === subscription.id));
    assert.equal((await client.eventSubscriptions.update({ id: subscription.id, description: 'audit' })).description, 'audit');

    const source = await client.eventSources.create({ subscriptionId: subscription.id, type: 'ip_policy_updated.v0' });
    assert.deepEqual(source, { type: 'ip_policy_updated.v0', uri: `${server.url}/event_subscriptions/${subscription.id}/sources/ip_policy_updated.v0` });
    assert.deepEqual(await client.eventSources.get({ subscriptionId: subscription.id, type: 'ip_policy_updated.v0' }), source);
    assert.deepEqual(await client.eventSources.update({ subscriptionId: subscription.id, type: 'ip_policy_updated.v0' }), source);
    const sources = await client.eventSources.list({ subscriptionId: subscription.id });
    assert.deepEqual(sources.sources.map((s: any) => s.type), ['ip_policy_created.v0', 'ip_policy_updated.v0']);
    await assert.rejects(client.eventSources.create({ subscriptionId: subscription.id, type: 'ip_policy_updated.v0' }), rejectsWith(5127, 409));
    await assert.rejects(client.eventSources.create({ subscriptionId: subscription.id, type: 'no_such_thing.v0' }), rejectsWith(238, 400));

    const policy = await client.ipPolicies.create({ description: 'watched' });
    await client.ipPolicies.update({ id: policy.id, description: 'changed' });
    assert.equal(await official.deleteWithFetch(`/event_subscriptions/${subscription.id}/sources/ip_policy_updated.v0`), 204);
    await client.ipPolicies.update({ id: policy.id, description: 'no longer watched' });
    await assert.rejects(client.eventSources.get({ subscriptionId: subscription.id, type: 'ip_policy_updated.v0' }), rejectsWith(5125, 404));

    const accountId = /account (ac_\w+)/.exec(server.output.join('\n'))![1];
    const outbox = await server.request('GET', `/_burrow/accounts/${accountId}/event_destinations/${destination.id}/outbox`, undefined, { token: server.operatorToken! });
    assert.deepEqual(outbox.body.events.map((e: any) => [e.event_type, e.object.description]), [['ip_policy_created.v0', 'watched'], ['ip_policy_updated.v0', 'changed']]);
  });
});
