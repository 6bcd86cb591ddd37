import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import type { Delivery } from '../../lib/index.ts';
import { createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../helpers.ts';

let api: TestInstance;
let delivered: Delivery[];
beforeEach(async () => {
  delivered = [];
  api = await createTestInstance({ outboxLimit: 5, eventSinks: [{ deliver: (d) => void delivered.push(d) }] });
});

function assertError(res: { status: number; body: any }, status: number, code: number, message: RegExp) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error_code, `ERR_BURROW_${code}`);
  assert.match(res.body.msg, message);
}

const roleAuth = { role: { role_ref: 'arn:role/burrow' } };
const credsAuth = { creds: { cloud_access_key_id: 'AKID', cloud_secret_access_key: 'very-secret' } };

async function destination(target: Record<string, unknown> = { stream: { auth: roleAuth, stream_ref: 'stream-1' } }) {
  const res = await api.request('POST', '/event_destinations', { format: 'json', target });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function subscription(types: string[], destinationIds: string[]) {
  const res = await api.request('POST', '/event_subscriptions', { sources: types.map((type) => ({ type })), destination_ids: destinationIds });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

describe('/event_destinations', () => {
  test('create answers every target member, unused ones null, secrets null', async () => {
    const res = await api.request('POST', '/event_destinations', { description: 'audit', format: 'JSON', target: { delivery: { auth: credsAuth, delivery_stream_ref: 'fh-1' } } });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^ed_/);
    assert.equal(res.body.format, 'json');
    assert.deepEqual(res.body.target, {
      delivery: { auth: { role: null, creds: { cloud_access_key_id: 'AKID', cloud_secret_access_key: null } }, delivery_stream_ref: 'fh-1' },
      stream: null,
      logs: null,
      monitoring: null,
      storage: null,
    });
    assert.ok(!res.text.includes('very-secret'));
  });

  test('every member, including storage and monitoring', async () => {
    assert.equal((await destination({ logs: { auth: roleAuth, log_group_ref: 'lg' } })).target.logs.log_group_ref, 'lg');
    assert.equal((await destination({ storage: { auth: roleAuth, bucket_ref: 'bucket-1' } })).target.storage.bucket_ref, 'bucket-1');
    const monitoring = await destination({ monitoring: { api_key: 'k', monitoringtags: 'env:ci', service: 'burrow', monitoringsite: 'eu' } });
    assert.deepEqual(monitoring.target.monitoring, { api_key: null, monitoringtags: 'env:ci', service: 'burrow', monitoringsite: 'eu' });
  });

  test('refuses a bad format, zero or two targets, and bad auth', async () => {
    const post = (body: Record<string, unknown>) => api.request('POST', '/event_destinations', body);
    assertError(await post({ format: 'xml', target: { stream: { auth: roleAuth, stream_ref: 's' } } }), 400, 235, /^format: the only supported format is json/);
    assertError(await post({ target: {} }), 400, 5100, /^target: exactly one of delivery, stream, logs, monitoring, storage must be set \(got none\)/);
    assertError(await post({ target: { stream: { auth: roleAuth, stream_ref: 's' }, logs: { auth: roleAuth, log_group_ref: 'l' } } }), 400, 5100, /got stream, logs/);
    assertError(await post({ target: { stream: { auth: { ...roleAuth, ...credsAuth }, stream_ref: 's' } } }), 400, 240, /^target\.stream\.auth: exactly one of role or creds/);
    assertError(await post({ target: { stream: { auth: {}, stream_ref: 's' } } }), 400, 240, /exactly one of role or creds/);
    assertError(await post({ target: { stream: { auth: roleAuth } } }), 400, 215, /^target\.stream\.stream_ref: is required/);
    assertError(await post({ target: { queue: {} } }), 400, 214, /^target\.queue: unknown field/);
  });

  test('update keeps the target kind', async () => {
    const created = await destination();
    const updated = await api.request('PATCH', `/event_destinations/${created.id}`, { target: { stream: { auth: credsAuth, stream_ref: 'stream-2' } } });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.target.stream.stream_ref, 'stream-2');
    assertError(await api.request('PATCH', `/event_destinations/${created.id}`, { target: { logs: { auth: roleAuth, log_group_ref: 'l' } } }), 400, 5108, /a stream destination cannot become a logs destination/);
    assert.equal((await api.request('PATCH', `/event_destinations/${created.id}`, { description: 'only this' })).body.target.stream.stream_ref, 'stream-2');
  });

  test('a destination that a subscription uses is not deleted', async () => {
    const dest = await destination();
    const sub = await subscription([], [dest.id]);
    assertError(await api.request('DELETE', `/event_destinations/${dest.id}`), 409, 5112, new RegExp(sub.id));
    await api.request('PATCH', `/event_subscriptions/${sub.id}`, { destination_ids: [] });
    assert.equal((await api.request('DELETE', `/event_destinations/${dest.id}`)).status, 204);
    assertError(await api.request('GET', `/event_destinations/${dest.id}`), 404, 5103, /was not found/);
  });
});

describe('/event_subscriptions', () => {
  test('create, get, list, update and delete', async () => {
    const dest = await destination();
    const sub = await subscription(['ip_policy_created.v0', 'api_key_deleted.v0'], [dest.id]);
    assert.match(sub.id, /^esb_/);
    assert.deepEqual(sub.sources, [
      { type: 'ip_policy_created.v0', uri: `http://burrow.test/event_subscriptions/${sub.id}/sources/ip_policy_created.v0` },
      { type: 'api_key_deleted.v0', uri: `http://burrow.test/event_subscriptions/${sub.id}/sources/api_key_deleted.v0` },
    ]);
    assert.deepEqual(sub.destinations, [{ id: dest.id, uri: `http://burrow.test/event_destinations/${dest.id}` }]);
    assert.equal((await api.request('GET', `/event_subscriptions/${sub.id}`)).body.id, sub.id);
    assert.equal((await api.request('GET', '/event_subscriptions')).body.event_subscriptions.length, 1);
    const updated = await api.request('PATCH', `/event_subscriptions/${sub.id}`, { sources: [{ type: 'ip_policy_updated.v0' }] });
    assert.deepEqual(updated.body.sources.map((s: any) => s.type), ['ip_policy_updated.v0']);
    assert.deepEqual(updated.body.destinations.map((d: any) => d.id), [dest.id]);
    assert.equal((await api.request('DELETE', `/event_subscriptions/${sub.id}`)).status, 204);
    assertError(await api.request('GET', `/event_subscriptions/${sub.id}`), 404, 5123, /was not found/);
  });

  test('sources must be catalogue types, once each; destinations must exist', async () => {
    const post = (body: Record<string, unknown>) => api.request('POST', '/event_subscriptions', body);
    assertError(await post({ sources: [{ type: 'ip_policy_exploded.v0' }] }), 400, 238, /^sources\[0\]\.type: "ip_policy_exploded\.v0" is not an event type/);
    assertError(await post({ sources: [{ type: 'api_key_created.v0' }, { type: 'api_key_created.v0' }] }), 409, 5127, /^sources\[1\]\.type: api_key_created\.v0 appears more than once/);
    assertError(await post({ destination_ids: ['ed_missing'] }), 404, 5103, /^destination_ids\[0\]: event destination 'ed_missing' was not found/);
  });
});

describe('/event_subscriptions/{id}/sources', () => {
  test('create, list, get, patch with {} and delete, keyed by type', async () => {
    const sub = await subscription([], []);
    const base = `/event_subscriptions/${sub.id}/sources`;
    const created = await api.request('POST', base, { type: 'ip_policy_created.v0' });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body, { type: 'ip_policy_created.v0', uri: `http://burrow.test${base}/ip_policy_created.v0` });
    const list = await api.request('GET', base);
    assert.deepEqual(list.body, { sources: [created.body], uri: `http://burrow.test${base}` });
    assert.deepEqual((await api.request('GET', `${base}/ip_policy_created.v0`)).body, created.body);
    const patched = await api.request('PATCH', `${base}/ip_policy_created.v0`, {});
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body, created.body);
    assert.equal((await api.request('DELETE', `${base}/ip_policy_created.v0`)).status, 204);
    assertError(await api.request('GET', `${base}/ip_policy_created.v0`), 404, 5125, /has no source of type "ip_policy_created\.v0"/);
  });

  test('refuses unknown types, duplicates, fields on PATCH and unknown subscriptions', async () => {
    const sub = await subscription(['api_key_created.v0'], []);
    const base = `/event_subscriptions/${sub.id}/sources`;
    assertError(await api.request('POST', base, { type: 'nope.v0' }), 400, 238, /^type: "nope\.v0" is not an event type/);
    assertError(await api.request('POST', base, { type: 'api_key_created.v0' }), 409, 5127, /already a source/);
    assertError(await api.request('PATCH', `${base}/api_key_created.v0`, { filter: 'x' }), 400, 214, /filter: unknown field/);
    assertError(await api.request('POST', '/event_subscriptions/esb_missing/sources', { type: 'api_key_created.v0' }), 404, 5123, /esb_missing/);
  });
});

describe('emission', () => {
  test('a subscription receives exactly its events, in order, with the documented payload', async () => {
    const dest = await destination();
    await subscription(['ip_policy_created.v0', 'ip_policy_updated.v0', 'api_key_deleted.v0'], [dest.id]);
    const policy = await api.request('POST', '/ip_policies', { description: 'first' });
    await api.request('POST', '/credentials', {});
    await api.request('PATCH', `/ip_policies/${policy.body.id}`, { description: 'second' });
    const key = await api.request('POST', '/api_keys', {});
    await api.request('DELETE', `/api_keys/${key.body.id}`);
    await api.request('DELETE', `/ip_policies/${policy.body.id}`);

    const outbox = await api.burrow.outbox(api.accountId, dest.id);
    assert.deepEqual(outbox.events.map((e) => e.event_type), ['ip_policy_created.v0', 'ip_policy_updated.v0', 'api_key_deleted.v0']);
    const [created, updated, deleted] = outbox.events;
    assert.match(created!.event_id, /^ev_[0-9A-Za-z]{27}$/);
    assert.equal(created!.event_timestamp, '2026-03-01T12:00:00Z');
    assert.equal(created!.account_id, api.accountId);
    assert.deepEqual(created!.principal, { id: api.userId, subject: 'admin', source: 'API', credential: created!.principal!.credential });
    assert.match(created!.principal!.credential!.id, /^ak_/);
    assert.equal((created!.object as any).description, 'first');
    assert.equal((updated!.object as any).description, 'second');
    assert.equal((deleted!.object as any).id, key.body.id);
    assert.equal((deleted!.object as any).token, null, 'never a secret');
    assert.deepEqual(delivered.map((d) => d.event.event_id), outbox.events.map((e) => e.event_id), 'sinks get the same events after commit');
  });

  test('a failed operation emits nothing', async () => {
    const dest = await destination();
    await subscription(['ip_policy_rule_created.v0'], [dest.id]);
    const policy = await api.request('POST', '/ip_policies', {});
    assert.equal((await api.request('POST', '/ip_policy_rules', { ip_policy_id: policy.body.id, cidr: '10.0.0.1/8', action: 'allow' })).status, 400);
    assert.equal((await api.burrow.outbox(api.accountId, dest.id)).events.length, 0);
    assert.equal(delivered.length, 0);
  });

  test('events go to every destination of every matching subscription, once per destination', async () => {
    const [a, b] = [await destination(), await destination({ logs: { auth: roleAuth, log_group_ref: 'l' } })];
    await subscription(['tunnel_credential_created.v0'], [a.id, b.id]);
    await subscription(['tunnel_credential_created.v0'], [a.id]);
    await api.request('POST', '/credentials', {});
    assert.equal((await api.burrow.outbox(api.accountId, a.id)).events.length, 1);
    assert.equal((await api.burrow.outbox(api.accountId, b.id)).events.length, 1);
  });

  test('the outbox is bounded: the oldest are dropped and counted', async () => {
    const dest = await destination();
    await subscription(['api_key_created.v0'], [dest.id]);
    const ids = [];
    for (let i = 0; i < 8; i++) ids.push((await api.request('POST', '/api_keys', { description: `k${i}` })).body.id);
    const outbox = await api.burrow.outbox(api.accountId, dest.id);
    assert.equal(outbox.limit, 5);
    assert.equal(outbox.dropped, 3);
    assert.deepEqual(outbox.events.map((e) => (e.object as any).id), ids.slice(3));
  });

  test('other accounts never see the events', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    const dest = await destination();
    await subscription(['ip_policy_created.v0'], [dest.id]);
    await api.request('POST', '/ip_policies', {}, { token: other.token });
    assert.equal((await api.burrow.outbox(api.accountId, dest.id)).events.length, 0);
  });
});

describe('control plane', () => {
  test('serves the catalogue', async () => {
    const res = await api.request('GET', '/_burrow/event_types', undefined, { token: null });
    for (const type of ['api_key_created.v0', 'tunnel_credential_updated.v0', 'ssh_public_key_deleted.v0', 'ip_policy_created.v0', 'ip_policy_rule_deleted.v0', 'ip_restriction_updated.v0', 'ssh_certificate_authority_created.v0', 'event_destination_deleted.v0', 'agent_session_start.v0', 'agent_session_stop.v0']) {
      assert.ok(res.body.event_types.includes(type), type);
    }
  });

  test('reads and clears an outbox', async () => {
    const dest = await destination();
    await subscription(['ip_policy_created.v0'], [dest.id]);
    await api.request('POST', '/ip_policies', {});
    const path = `/_burrow/accounts/${api.accountId}/event_destinations/${dest.id}/outbox`;
    const read = await api.request('GET', path, undefined, { token: OPERATOR_TOKEN });
    assert.equal(read.body.events.length, 1);
    assert.equal(read.body.dropped, 0);
    assert.deepEqual((await api.request('DELETE', path, undefined, { token: OPERATOR_TOKEN })).body, { removed: 1 });
    assert.equal((await api.request('GET', path, undefined, { token: OPERATOR_TOKEN })).body.events.length, 0);
    assert.equal((await api.request('GET', `/_burrow/accounts/${api.accountId}/event_destinations/ed_nope/outbox`, undefined, { token: OPERATOR_TOKEN })).status, 404);
  });
});
