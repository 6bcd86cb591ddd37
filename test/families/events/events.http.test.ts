import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import { openJsonFileStore } from '../../../adapters/stores/json-file-store.ts';
import { ApiError, createBurrow, ERRORS, eventCatalogue, ManualClock, RESOURCES, type Delivery, type Operation } from '../../../lib/index.ts';
import { BASE, createTestInstance, OPERATOR_TOKEN, type TestInstance, type TestResponse } from '../../helpers.ts';
import { GO_CLIENT_HEADERS, PYTHON_CLIENT_HEADERS } from '../../fixtures/client-dialects.ts';

let api: TestInstance;
let delivered: Delivery[];
beforeEach(async () => {
  delivered = [];
  api = await createTestInstance({ outboxLimit: 20, eventSinks: [{ deliver: (d) => void delivered.push(d) }] });
});

function assertError(res: TestResponse, status: number, code: number, message: RegExp) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error_code, `ERR_BURROW_${code}`);
  assert.match(res.body.msg, message);
}

const roleAuth = { role: { role_ref: 'role/burrow-writer' } };
const credsAuth = { creds: { cloud_access_key_id: 'AKID', cloud_secret_access_key: 'very-secret' } };
const streamTarget = { stream: { auth: roleAuth, stream_ref: 'stream-1' } };

async function destination(target: Record<string, unknown> = streamTarget) {
  const res = await api.request('POST', '/event_destinations', { format: 'json', target });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function subscription(types: string[], destinationIds: string[]) {
  const res = await api.request('POST', '/event_subscriptions', { sources: types.map((type) => ({ type })), destination_ids: destinationIds });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

const outboxTypes = async (destinationId: string) => (await api.burrow.outbox(api.accountId, destinationId)).events.map((e) => e.event_type);

describe('POST /event_destinations', () => {
  test('answers every target member, unused ones null, the secret null, format as json', async () => {
    const res = await api.request('POST', '/event_destinations', { description: 'audit', metadata: '{"team":"ops"}', format: 'JSON', target: { delivery: { auth: credsAuth, delivery_stream_ref: 'fh-1' } } });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^ed_[0-9A-Za-z]{27}$/);
    assert.deepEqual(res.body, {
      id: res.body.id,
      uri: `${BASE}/event_destinations/${res.body.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'audit',
      metadata: '{"team":"ops"}',
      format: 'json',
      target: {
        delivery: { auth: { role: null, creds: { cloud_access_key_id: 'AKID', cloud_secret_access_key: null } }, delivery_stream_ref: 'fh-1' },
        stream: null,
        logs: null,
        monitoring: null,
        storage: null,
        logs_ingestion: null,
      },
    });
    assert.ok(!res.text.includes('very-secret'));
  });

  test('accepts each member: stream, logs, storage (auth + bucket_ref) and monitoring', async () => {
    assert.deepEqual((await destination(streamTarget)).target.stream, { auth: { role: roleAuth.role, creds: null }, stream_ref: 'stream-1' });
    assert.equal((await destination({ logs: { auth: roleAuth, log_group_ref: 'lg' } })).target.logs.log_group_ref, 'lg');
    assert.deepEqual((await destination({ storage: { auth: roleAuth, bucket_ref: 'bucket-1' } })).target.storage, { auth: { role: roleAuth.role, creds: null }, bucket_ref: 'bucket-1' });
    const monitoring = await destination({ monitoring: { api_key: 'dd-secret', monitoringtags: 'env:ci', service: 'burrow', monitoringsite: 'eu' } });
    assert.deepEqual(monitoring.target.monitoring, { api_key: null, monitoringtags: 'env:ci', service: 'burrow', monitoringsite: 'eu' });
    assert.deepEqual((await destination({ monitoring: {} })).target.monitoring, { api_key: null, monitoringtags: '', service: '', monitoringsite: '' });
  });

  test('refuses a missing or unsupported format (235)', async () => {
    assertError(await api.request('POST', '/event_destinations', { target: streamTarget }), 400, 235, /^format: the only supported format is json \(got nothing\)/);
    assertError(await api.request('POST', '/event_destinations', { format: 'xml', target: streamTarget }), 400, 235, /^format: the only supported format is json \(got "xml"\)/);
  });

  test('refuses zero or two target members (5100)', async () => {
    const post = (target: unknown) => api.request('POST', '/event_destinations', { format: 'json', target });
    assertError(await post({}), 400, 5100, /^target: exactly one of delivery, stream, logs, monitoring, storage, logs_ingestion \(or the vendor's firehose, kinesis, cloudwatch_logs, datadog, azure_logs_ingestion\) must be set \(got none\)/);
    assertError(await post({ stream: null, logs: null }), 400, 5100, /\(got none\)/);
    assertError(await post({ ...streamTarget, logs: { auth: roleAuth, log_group_ref: 'l' } }), 400, 5100, /\(got stream, logs\)/);
  });

  test('refuses an auth without exactly one of role or creds (240)', async () => {
    const post = (auth: unknown) => api.request('POST', '/event_destinations', { format: 'json', target: { storage: { auth, bucket_ref: 'b' } } });
    assertError(await post({ ...roleAuth, ...credsAuth }), 400, 240, /^target\.storage\.auth: exactly one of role or creds must be set/);
    assertError(await post({}), 400, 240, /exactly one of role or creds/);
    assertError(await post({ role: null, creds: null }), 400, 240, /exactly one of role or creds/);
  });

  test('refuses missing references, empty references and unknown members', async () => {
    const post = (target: unknown) => api.request('POST', '/event_destinations', { format: 'json', target });
    assertError(await post({ stream: { auth: roleAuth } }), 400, 215, /^target\.stream\.stream_ref: is required/);
    assertError(await post({ stream: { auth: roleAuth, stream_ref: '' } }), 400, 215, /^target\.stream\.stream_ref: must not be empty/);
    assertError(await post({ stream: { auth: { role: { role_ref: 'r', external_id: 'x' } }, stream_ref: 's' } }), 400, 214, /^target\.stream\.auth\.role\.external_id: unknown field/);
    assertError(await post({ queue: {} }), 400, 214, /^target\.queue: unknown field; supported fields: delivery, stream, logs, storage, monitoring/);
  });
});

describe("the vendor's target names", () => {
  const vendorRole = { role: { role_arn: 'arn:aws:iam::1:role/writer' } };

  test('each vendor member is accepted and answered in vendor names, unused members null, secrets null', async () => {
    const cases: [Record<string, unknown>, string, unknown][] = [
      [{ kinesis: { auth: vendorRole, stream_arn: 'arn:aws:kinesis:1:stream/s' } }, 'kinesis', { auth: { role: { role_arn: 'arn:aws:iam::1:role/writer' }, creds: null }, stream_arn: 'arn:aws:kinesis:1:stream/s' }],
      [
        { firehose: { auth: { creds: { aws_access_key_id: 'AKID', aws_secret_access_key: 'shh' } }, delivery_stream_arn: 'arn:f' } },
        'firehose',
        { auth: { role: null, creds: { aws_access_key_id: 'AKID', aws_secret_access_key: null } }, delivery_stream_arn: 'arn:f' },
      ],
      [{ cloudwatch_logs: { auth: vendorRole, log_group_arn: 'arn:lg' } }, 'cloudwatch_logs', { auth: { role: { role_arn: 'arn:aws:iam::1:role/writer' }, creds: null }, log_group_arn: 'arn:lg' }],
      [{ datadog: { api_key: 'dd-secret', ddtags: 'env:test', ddsite: 'datadoghq.eu' } }, 'datadog', { api_key: null, ddtags: 'env:test', service: '', ddsite: 'datadoghq.eu' }],
    ];
    for (const [target, member, answered] of cases) {
      const created = await destination(target);
      const expected = { firehose: null, kinesis: null, cloudwatch_logs: null, datadog: null, azure_logs_ingestion: null, [member]: answered };
      assert.deepEqual(created.target, expected, member);
      assert.deepEqual((await api.request('GET', `/event_destinations/${created.id}`)).body.target, expected, `${member} read back`);
      assert.ok(!JSON.stringify(created).includes('dd-secret') && !JSON.stringify(created).includes('shh'));
    }
  });

  test('neutral destinations keep answering in neutral names', async () => {
    const created = await destination();
    assert.deepEqual(Object.keys(created.target), ['delivery', 'stream', 'logs', 'monitoring', 'storage', 'logs_ingestion']);
  });

  test('an update may use either vocabulary; the answer keeps the one of the create', async () => {
    const created = await destination({ kinesis: { auth: vendorRole, stream_arn: 'arn:1' } });
    const neutral = await api.request('PATCH', `/event_destinations/${created.id}`, { target: { stream: { auth: roleAuth, stream_ref: 'arn:2' } } });
    assert.equal(neutral.status, 200, JSON.stringify(neutral.body));
    assert.deepEqual(neutral.body.target.kinesis, { auth: { role: { role_arn: 'role/burrow-writer' }, creds: null }, stream_arn: 'arn:2' });
    assertError(await api.request('PATCH', `/event_destinations/${created.id}`, { target: { firehose: { auth: vendorRole, delivery_stream_arn: 'f' } } }), 400, 5108, /a kinesis destination cannot become a firehose destination/);
  });

  test('names are not mixed inside a member, and one member in all', async () => {
    const post = (target: unknown) => api.request('POST', '/event_destinations', { format: 'json', target });
    assertError(await post({ kinesis: { auth: vendorRole, stream_ref: 's' } }), 400, 215, /^target\.kinesis\.stream_arn: is required; target\.kinesis\.stream_ref: unknown field; supported fields: auth, stream_arn$/);
    assertError(await post({ kinesis: { auth: roleAuth, stream_arn: 's' } }), 400, 215, /target\.kinesis\.auth\.role\.role_ref: unknown field; supported fields: role_arn$/);
    assertError(await post({ kinesis: { auth: vendorRole, stream_arn: 's' }, stream: { auth: roleAuth, stream_ref: 's' } }), 400, 5100, /\(got stream, kinesis\)/);
    assertError(await post({ datadog: { auth: vendorRole } }), 400, 214, /^target\.datadog\.auth: unknown field/);
  });

  test('events and sinks carry the destination in its vocabulary', async () => {
    const created = await destination({ datadog: { api_key: 'k' } });
    await subscription(['ip_policy_created.v0'], [created.id]);
    await api.request('POST', '/ip_policies', {});
    assert.deepEqual(delivered.map((d) => Object.keys(d.destination.target as object)), [['firehose', 'kinesis', 'cloudwatch_logs', 'datadog', 'azure_logs_ingestion']]);
    assert.deepEqual((delivered[0]!.destination.target as Record<string, unknown>).datadog, { api_key: null, ddtags: '', service: '', ddsite: '' });
  });
});

describe('azure_logs_ingestion targets (Go client v8, Python client 0.17)', () => {
  const azure = {
    tenant_id: '72f988bf-86f1-41af-91ab-2d7cd011db47',
    client_id: '0c7f9f0e-4c1b-4b8a-9f2e-2f1d3c4b5a69',
    client_secret: 'azure-client-secret',
    logs_ingestion_uri: 'https://burrow-dce-a1b2.eastus-1.ingest.monitor.azure.com',
    data_collection_rule_id: 'dcr-00000000000000000000000000000000',
    data_collection_stream_name: 'Custom-BurrowEvents_CL',
  };
  const answered = { ...azure, client_secret: null };

  test('the Go body (omitempty: no description, metadata or other members) creates it; reads answer every field, the secret null', async () => {
    const res = await api.request('POST', '/event_destinations', { format: 'json', target: { azure_logs_ingestion: azure } }, { headers: GO_CLIENT_HEADERS });
    assert.equal(res.status, 201, res.text);
    const target = { firehose: null, kinesis: null, cloudwatch_logs: null, datadog: null, azure_logs_ingestion: answered };
    assert.deepEqual(res.body.target, target);
    assert.deepEqual((await api.request('GET', `/event_destinations/${res.body.id}`)).body.target, target);
    assert.ok(!(await api.request('GET', '/event_destinations')).text.includes('azure-client-secret'));
  });

  test('the Python body (its "" defaults, the other members null) creates it; an update replaces it within its kind', async () => {
    const body = { metadata: '', description: '', format: 'json', target: { firehose: null, kinesis: null, cloudwatch_logs: null, datadog: null, azure_logs_ingestion: azure } };
    const res = await api.request('POST', '/event_destinations', body, { headers: PYTHON_CLIENT_HEADERS });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.target.azure_logs_ingestion, answered);
    const rotated = { ...azure, client_secret: 'rotated', data_collection_stream_name: 'Custom-Other_CL' };
    const updated = await api.request('PATCH', `/event_destinations/${res.body.id}`, { target: { azure_logs_ingestion: rotated } }, { headers: GO_CLIENT_HEADERS });
    assert.deepEqual(updated.body.target.azure_logs_ingestion, { ...rotated, client_secret: null });
    assertError(await api.request('PATCH', `/event_destinations/${res.body.id}`, { target: { datadog: { api_key: 'k' } } }), 400, 5108, /an azure_logs_ingestion destination cannot become a datadog destination/);
  });

  test('in neutral names it is logs_ingestion, with the same fields', async () => {
    const created = await destination({ logs_ingestion: azure });
    assert.deepEqual(created.target.logs_ingestion, answered);
    assert.equal(created.target.delivery, null);
  });

  test('every field is required and non-empty; the ingestion URI is an absolute https URL', async () => {
    const post = (member: Record<string, unknown>) => api.request('POST', '/event_destinations', { format: 'json', target: { azure_logs_ingestion: member } });
    const { client_secret: _omitted, ...withoutSecret } = azure;
    assertError(await post(withoutSecret), 400, 215, /^target\.azure_logs_ingestion\.client_secret: is required/);
    assertError(await post({ ...azure, tenant_id: '' }), 400, 215, /^target\.azure_logs_ingestion\.tenant_id: must not be empty/);
    assertError(await post({ ...azure, logs_ingestion_uri: 'http://dce.example.com' }), 400, 215, /^target\.azure_logs_ingestion\.logs_ingestion_uri: must be an absolute https URL \(got "http:\/\/dce\.example\.com"\)/);
    assertError(await post({ ...azure, region: 'eastus' }), 400, 214, /^target\.azure_logs_ingestion\.region: unknown field/);
    assertError(await api.request('POST', '/event_destinations', { format: 'json', target: { azure_logs_ingestion: azure, datadog: {} } }), 400, 5100, /\(got datadog, azure_logs_ingestion\)/);
  });
});

describe('GET /event_destinations', () => {
  test('gets one and lists them newest first with the list key event_destinations', async () => {
    const first = await destination();
    const second = await destination({ logs: { auth: credsAuth, log_group_ref: 'lg' } });
    assert.deepEqual((await api.request('GET', `/event_destinations/${first.id}`)).body, first);
    const list = await api.request('GET', '/event_destinations?limit=1');
    assert.deepEqual(list.body, { event_destinations: [second], uri: `${BASE}/event_destinations`, next_page_uri: `${BASE}/event_destinations?limit=1&before_id=${second.id}` });
    assert.ok(!(await api.request('GET', '/event_destinations')).text.includes('very-secret'));
  });

  test('answers 404 (5103) for an unknown id and for another account’s destination', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    const foreign = await api.request('POST', '/event_destinations', { format: 'json', target: streamTarget }, { token: other.token });
    assertError(await api.request('GET', '/event_destinations/ed_missing'), 404, 5103, /event destination 'ed_missing' was not found/);
    assertError(await api.request('GET', `/event_destinations/${foreign.body.id}`), 404, 5103, /was not found/);
  });
});

describe('PATCH /event_destinations/{id}', () => {
  test('changes only the fields sent', async () => {
    const created = await destination();
    const res = await api.request('PATCH', `/event_destinations/${created.id}`, { description: 'renamed', format: 'Json' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { ...created, description: 'renamed' });
  });

  test('replaces the target member of the same kind', async () => {
    const created = await destination();
    const res = await api.request('PATCH', `/event_destinations/${created.id}`, { target: { stream: { auth: credsAuth, stream_ref: 'stream-2' } } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.target.stream, { auth: { role: null, creds: { cloud_access_key_id: 'AKID', cloud_secret_access_key: null } }, stream_ref: 'stream-2' });
  });

  test('refuses to change the kind of target (5108) and validates like create', async () => {
    const created = await destination();
    assertError(
      await api.request('PATCH', `/event_destinations/${created.id}`, { target: { logs: { auth: roleAuth, log_group_ref: 'l' } } }),
      400,
      5108,
      /^target: a stream destination cannot become a logs destination; create a new destination instead/,
    );
    assertError(await api.request('PATCH', `/event_destinations/${created.id}`, { format: 'csv' }), 400, 235, /^format:/);
    assertError(await api.request('PATCH', `/event_destinations/${created.id}`, { target: {} }), 400, 5100, /^target:/);
    assert.deepEqual((await api.request('GET', `/event_destinations/${created.id}`)).body, created);
  });
});

describe('DELETE /event_destinations/{id}', () => {
  test('deletes an unused destination (204) and its outbox', async () => {
    const created = await destination();
    const sub = await subscription(['ip_policy_created.v0'], [created.id]);
    await api.request('POST', '/ip_policies', {});
    await api.request('DELETE', `/event_subscriptions/${sub.id}`);
    assert.equal((await api.request('DELETE', `/event_destinations/${created.id}`)).status, 204);
    assertError(await api.request('GET', `/event_destinations/${created.id}`), 404, 5103, /was not found/);
    assert.deepEqual(await api.burrow.outbox(api.accountId, created.id), { events: [], dropped: 0, limit: 20 });
  });

  test('refuses a destination that a subscription uses (409, 5112), naming the subscription', async () => {
    const dest = await destination();
    const sub = await subscription([], [dest.id]);
    assertError(await api.request('DELETE', `/event_destinations/${dest.id}`), 409, 5112, new RegExp(`still used by event subscription '${sub.id}'`));
    await api.request('PATCH', `/event_subscriptions/${sub.id}`, { destination_ids: [] });
    assert.equal((await api.request('DELETE', `/event_destinations/${dest.id}`)).status, 204);
  });
});

describe('/event_subscriptions', () => {
  test('create answers sources with their uris and destinations as Refs', async () => {
    const dest = await destination();
    const res = await api.request('POST', '/event_subscriptions', {
      description: 'audit',
      sources: [{ type: 'ip_policy_created.v0' }, { type: 'api_key_deleted.v0' }],
      destination_ids: [dest.id, dest.id],
    });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^esb_/);
    assert.deepEqual(res.body, {
      id: res.body.id,
      uri: `${BASE}/event_subscriptions/${res.body.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'audit',
      metadata: '',
      sources: [
        { type: 'ip_policy_created.v0', uri: `${BASE}/event_subscriptions/${res.body.id}/sources/ip_policy_created.v0` },
        { type: 'api_key_deleted.v0', uri: `${BASE}/event_subscriptions/${res.body.id}/sources/api_key_deleted.v0` },
      ],
      destinations: [{ id: dest.id, uri: `${BASE}/event_destinations/${dest.id}` }],
    });
  });

  test('get, list, update (only the fields sent) and delete', async () => {
    const dest = await destination();
    const sub = await subscription(['ip_policy_created.v0'], [dest.id]);
    assert.deepEqual((await api.request('GET', `/event_subscriptions/${sub.id}`)).body, sub);
    assert.deepEqual((await api.request('GET', '/event_subscriptions')).body, { event_subscriptions: [sub], uri: `${BASE}/event_subscriptions`, next_page_uri: null });
    const renamed = await api.request('PATCH', `/event_subscriptions/${sub.id}`, { id: sub.id, metadata: 'm' });
    assert.deepEqual(renamed.body, { ...sub, metadata: 'm' });
    const resourced = await api.request('PATCH', `/event_subscriptions/${sub.id}`, { sources: [{ type: 'ip_policy_updated.v0' }] });
    assert.deepEqual(resourced.body.sources.map((s: any) => s.type), ['ip_policy_updated.v0']);
    assert.deepEqual(resourced.body.destinations, sub.destinations);
    assert.equal((await api.request('DELETE', `/event_subscriptions/${sub.id}`)).status, 204);
    assertError(await api.request('GET', `/event_subscriptions/${sub.id}`), 404, 5123, new RegExp(`event subscription '${sub.id}' was not found`));
  });

  test('refuses types outside the catalogue (238) and repeated types (5127), on create and update', async () => {
    const sub = await subscription([], []);
    for (const [method, path] of [['POST', '/event_subscriptions'], ['PATCH', `/event_subscriptions/${sub.id}`]] as const) {
      assertError(await api.request(method, path, { sources: [{ type: 'ip_policy_exploded.v0' }] }), 400, 238, /^sources\[0\]\.type: "ip_policy_exploded\.v0" is not an event type Burrow emits/);
      assertError(await api.request(method, path, { sources: [{ type: 'api_key_created.v0' }, { type: 'api_key_created.v0' }] }), 409, 5127, /^sources\[1\]\.type: api_key_created\.v0 appears more than once/);
      assertError(await api.request(method, path, { sources: [{ type: 'api_key_created.v0', filter: 'true' }] }), 400, 214, /^sources\[0\]\.filter: unknown field/);
    }
  });

  test('refuses destinations that do not exist (5103), also another account’s', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    const foreign = await api.request('POST', '/event_destinations', { format: 'json', target: streamTarget }, { token: other.token });
    assertError(await api.request('POST', '/event_subscriptions', { destination_ids: ['ed_missing'] }), 404, 5103, /^destination_ids\[0\]: event destination 'ed_missing' was not found/);
    const sub = await subscription([], []);
    assertError(await api.request('PATCH', `/event_subscriptions/${sub.id}`, { destination_ids: [foreign.body.id] }), 404, 5103, /^destination_ids\[0\]:/);
  });

  test('moving a subscription to other destinations frees the ones it left', async () => {
    const [a, b] = [await destination(), await destination()];
    const sub = await subscription([], [a.id]);
    await api.request('PATCH', `/event_subscriptions/${sub.id}`, { destination_ids: [b.id] });
    assert.equal((await api.request('DELETE', `/event_destinations/${a.id}`)).status, 204);
    assertError(await api.request('DELETE', `/event_destinations/${b.id}`), 409, 5112, new RegExp(sub.id));
  });
});

describe('/event_subscriptions/{id}/sources', () => {
  test('create (201), list, get, PATCH {} (200) and delete (204), keyed by type', async () => {
    const sub = await subscription([], []);
    const base = `/event_subscriptions/${sub.id}/sources`;
    const created = await api.request('POST', base, { type: 'ip_policy_created.v0' });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body, { type: 'ip_policy_created.v0', uri: `${BASE}${base}/ip_policy_created.v0` });
    await api.request('POST', base, { subscription_id: sub.id, type: 'api_key_created.v0' });
    assert.deepEqual((await api.request('GET', base)).body, {
      sources: [created.body, { type: 'api_key_created.v0', uri: `${BASE}${base}/api_key_created.v0` }],
      uri: `${BASE}${base}`,
    });
    assert.deepEqual((await api.request('GET', `${base}/ip_policy_created.v0`)).body, created.body);
    const patched = await api.request('PATCH', `${base}/ip_policy_created.v0`, {});
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body, created.body);
    assert.equal((await api.request('PATCH', `${base}/ip_policy_created.v0`, { subscription_id: sub.id, type: 'ip_policy_created.v0' })).status, 200);
    assert.equal((await api.request('DELETE', `${base}/ip_policy_created.v0`)).status, 204);
    assertError(await api.request('GET', `${base}/ip_policy_created.v0`), 404, 5125, /has no source of type "ip_policy_created\.v0"/);
    assert.deepEqual((await api.request('GET', `/event_subscriptions/${sub.id}`)).body.sources.map((s: any) => s.type), ['api_key_created.v0']);
  });

  test('refuses a type outside the catalogue (238) and a type the subscription already has (409, 5127)', async () => {
    const sub = await subscription(['api_key_created.v0'], []);
    const base = `/event_subscriptions/${sub.id}/sources`;
    assertError(await api.request('POST', base, { type: 'nope.v0' }), 400, 238, /^type: "nope\.v0" is not an event type/);
    assertError(await api.request('POST', base, { type: 'api_key_created.v0' }), 409, 5127, /^type: api_key_created\.v0 is already a source of event subscription/);
    assertError(await api.request('POST', base, {}), 400, 215, /^type: is required/);
  });

  test('PATCH takes no fields; a path id that differs is a 400', async () => {
    const sub = await subscription(['api_key_created.v0'], []);
    const item = `/event_subscriptions/${sub.id}/sources/api_key_created.v0`;
    assertError(await api.request('PATCH', item, { filter: 'x' }), 400, 214, /^filter: unknown field/);
    assertError(await api.request('PATCH', item, { type: 'api_key_deleted.v0' }), 400, 215, /^type: must equal the id in the path/);
    assertError(await api.request('PATCH', `/event_subscriptions/${sub.id}/sources/api_key_deleted.v0`, {}), 404, 5125, /has no source/);
  });

  test('answers 404 (5123) for an unknown subscription on every operation', async () => {
    const base = '/event_subscriptions/esb_missing/sources';
    assertError(await api.request('POST', base, { type: 'api_key_created.v0' }), 404, 5123, /esb_missing/);
    assertError(await api.request('GET', base), 404, 5123, /esb_missing/);
    assertError(await api.request('GET', `${base}/api_key_created.v0`), 404, 5123, /esb_missing/);
    assertError(await api.request('PATCH', `${base}/api_key_created.v0`, {}), 404, 5123, /esb_missing/);
    assertError(await api.request('DELETE', `${base}/api_key_created.v0`), 404, 5123, /esb_missing/);
  });
});

describe('routing: which subscriptions receive an event', () => {
  test('sources added or removed through any endpoint take effect at once', async () => {
    const dest = await destination();
    const sub = await subscription([], [dest.id]);
    await api.request('POST', '/ip_policies', {});
    await api.request('POST', `/event_subscriptions/${sub.id}/sources`, { type: 'ip_policy_created.v0' });
    await api.request('POST', '/ip_policies', {});
    await api.request('PATCH', `/event_subscriptions/${sub.id}`, { sources: [{ type: 'api_key_created.v0' }] });
    await api.request('POST', '/ip_policies', {});
    await api.request('POST', '/api_keys', {});
    await api.request('DELETE', `/event_subscriptions/${sub.id}/sources/api_key_created.v0`);
    await api.request('POST', '/api_keys', {});
    assert.deepEqual(await outboxTypes(dest.id), ['ip_policy_created.v0', 'api_key_created.v0']);
  });

  test('a deleted subscription receives nothing more', async () => {
    const dest = await destination();
    const sub = await subscription(['api_key_created.v0'], [dest.id]);
    await api.request('DELETE', `/event_subscriptions/${sub.id}`);
    await api.request('POST', '/api_keys', {});
    assert.deepEqual(await outboxTypes(dest.id), []);
  });

  test('an event reaches every destination of every matching subscription once', async () => {
    const [a, b, c] = [await destination(), await destination({ logs: { auth: roleAuth, log_group_ref: 'l' } }), await destination()];
    await subscription(['tunnel_credential_created.v0'], [a.id, b.id]);
    await subscription(['tunnel_credential_created.v0', 'api_key_created.v0'], [a.id]);
    await subscription(['api_key_created.v0'], [c.id]);
    await api.request('POST', '/credentials', {});
    assert.deepEqual(await outboxTypes(a.id), ['tunnel_credential_created.v0']);
    assert.deepEqual(await outboxTypes(b.id), ['tunnel_credential_created.v0']);
    assert.deepEqual(await outboxTypes(c.id), []);
  });

  test('changes to sources are themselves events of the subscription', async () => {
    const dest = await destination();
    const sub = await subscription(['event_subscription_updated.v0'], [dest.id]);
    await api.request('POST', `/event_subscriptions/${sub.id}/sources`, { type: 'api_key_created.v0' });
    await api.request('PATCH', `/event_subscriptions/${sub.id}/sources/api_key_created.v0`, {});
    await api.request('DELETE', `/event_subscriptions/${sub.id}/sources/api_key_created.v0`);
    const events = (await api.burrow.outbox(api.accountId, dest.id)).events;
    assert.deepEqual(events.map((e) => (e.object as any).sources.map((s: any) => s.type)), [
      ['event_subscription_updated.v0', 'api_key_created.v0'],
      ['event_subscription_updated.v0'],
    ]);
  });

  test('other accounts never see the events', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    const dest = await destination();
    await subscription(['ip_policy_created.v0'], [dest.id]);
    await api.request('POST', '/ip_policies', {}, { token: other.token });
    assert.deepEqual(await outboxTypes(dest.id), []);
  });
});

describe('emission', () => {
  test('a subscription receives exactly its events, in order, after a mix of operations', async () => {
    const dest = await destination();
    const watched = ['api_key_created.v0', 'api_key_updated.v0', 'api_key_deleted.v0', 'tunnel_credential_created.v0', 'tunnel_credential_updated.v0', 'tunnel_credential_deleted.v0', 'ip_policy_created.v0'];
    await subscription(watched, [dest.id]);
    const expected: [string, unknown, string][] = [];
    const step = () => api.clock.advance(1);
    const get = async (path: string) => (await api.request('GET', path)).body;

    step();
    const key = (await api.request('POST', '/api_keys', { description: 'ci' })).body;
    expected.push(['api_key_created.v0', await get(`/api_keys/${key.id}`), '2026-03-01T12:00:01Z']);
    step();
    const policy = (await api.request('POST', '/ip_policies', { description: 'office' })).body;
    expected.push(['ip_policy_created.v0', await get(`/ip_policies/${policy.id}`), '2026-03-01T12:00:02Z']);
    step();
    await api.request('PATCH', `/ip_policies/${policy.id}`, { description: 'not watched' });
    step();
    const credential = (await api.request('POST', '/credentials', { acl: ['bind:*.example.com'] })).body;
    expected.push(['tunnel_credential_created.v0', await get(`/credentials/${credential.id}`), '2026-03-01T12:00:04Z']);
    step();
    assert.equal((await api.request('POST', '/credentials', { acl: ['bind:'] })).status, 400);
    step();
    await api.request('PATCH', `/credentials/${credential.id}`, { metadata: 'v2' });
    expected.push(['tunnel_credential_updated.v0', await get(`/credentials/${credential.id}`), '2026-03-01T12:00:06Z']);
    step();
    await api.request('PATCH', `/api_keys/${key.id}`, { description: 'ci v2' });
    const lastKey = await get(`/api_keys/${key.id}`);
    expected.push(['api_key_updated.v0', lastKey, '2026-03-01T12:00:07Z']);
    step();
    await get('/api_keys');
    const lastCredential = await get(`/credentials/${credential.id}`);
    await api.request('DELETE', `/credentials/${credential.id}`);
    expected.push(['tunnel_credential_deleted.v0', lastCredential, '2026-03-01T12:00:08Z']);
    step();
    await api.request('DELETE', `/api_keys/${key.id}`);
    expected.push(['api_key_deleted.v0', lastKey, '2026-03-01T12:00:09Z']);

    const { events } = await api.burrow.outbox(api.accountId, dest.id);
    assert.deepEqual(events.map((e) => [e.event_type, e.object, e.event_timestamp]), expected);
    const ids = events.map((e) => e.event_id);
    assert.deepEqual([...ids].sort(), ids, 'event ids sort in emission order');
    assert.ok(ids.every((id) => /^ev_[0-9A-Za-z]{27}$/.test(id)));
    assert.ok(events.every((e) => e.account_id === api.accountId));
  });

  test('the payload names the principal: owner, its name and the API key used', async () => {
    const dest = await destination();
    await subscription(['ip_policy_created.v0'], [dest.id]);
    const bot = await api.burrow.createOwner(api.accountId, { kind: 'bot', name: 'deploy-bot' });
    const botKey = await api.burrow.issueApiKey(api.accountId, bot.id);
    await api.request('POST', '/ip_policies', {});
    await api.request('POST', '/ip_policies', {}, { token: botKey.token });
    const [byAdmin, byBot] = (await api.burrow.outbox(api.accountId, dest.id)).events;
    assert.equal(byAdmin!.principal!.id, api.userId);
    assert.equal(byAdmin!.principal!.subject, 'admin');
    assert.match(byAdmin!.principal!.credential!.id, /^ak_/);
    assert.deepEqual(byBot!.principal, { id: bot.id, subject: 'deploy-bot', source: 'API', credential: { id: botKey.id, uri: `${BASE}/api_keys/${botKey.id}` } });
  });

  test('objects never carry secrets: tokens and destination secrets are null', async () => {
    const dest = await destination();
    await subscription(['api_key_created.v0', 'tunnel_credential_created.v0', 'event_destination_created.v0'], [dest.id]);
    const key = await api.request('POST', '/api_keys', {});
    const credential = await api.request('POST', '/credentials', {});
    await api.request('POST', '/event_destinations', { format: 'json', target: { delivery: { auth: credsAuth, delivery_stream_ref: 'fh' } } });
    const text = JSON.stringify(await api.burrow.outbox(api.accountId, dest.id));
    assert.equal((await api.burrow.outbox(api.accountId, dest.id)).events.length, 3);
    for (const secret of [key.body.token, credential.body.token, 'very-secret']) assert.ok(!text.includes(secret), secret);
  });

  test('a failed operation emits nothing, to outboxes or sinks', async () => {
    const dest = await destination();
    await subscription(['ip_policy_rule_created.v0', 'ip_policy_created.v0'], [dest.id]);
    delivered.length = 0;
    assert.equal((await api.request('POST', '/ip_policy_rules', { ip_policy_id: 'ipp_missing', cidr: '10.0.0.0/8', action: 'allow' })).status, 404);
    const policy = await api.request('POST', '/ip_policies', { description: 'x'.repeat(256) });
    assert.equal(policy.status, 400);
    assert.deepEqual(await api.burrow.outbox(api.accountId, dest.id), { events: [], dropped: 0, limit: 20 });
    assert.deepEqual(delivered, []);
  });

  test('an operation that fails after emitting leaves neither its writes nor its events', async () => {
    const dest = await destination();
    await subscription(['api_key_created.v0'], [dest.id]);
    delivered.length = 0;
    const failing: Operation = {
      id: 'test.emit_then_fail',
      tag: 'test',
      method: 'POST',
      path: '/test',
      status: 201,
      mutates: true,
      summary: 'writes, emits, then fails',
      async run(ctx) {
        await ctx.tx.put({ account: ctx.account, kind: 'api_key' }, { id: 'ak_half', created_at: '', description: '', metadata: '' });
        ctx.emit('api_key_created.v0', { id: 'ak_half' });
        throw new ApiError(ERRORS.CONFLICT, 'refused after the event was emitted');
      },
    };
    const principal = await api.burrow.authenticate(`Bearer ${api.token}`);
    await assert.rejects(api.burrow.execute(principal, failing, { params: {}, query: {}, body: {} }, { baseUrl: BASE }), /refused after the event/);
    assertError(await api.request('GET', '/api_keys/ak_half'), 404, 9001, /ak_half/);
    assert.deepEqual(await api.burrow.outbox(api.accountId, dest.id), { events: [], dropped: 0, limit: 20 });
    assert.deepEqual(delivered, []);
  });
});

describe('outbox', () => {
  test('is bounded: the oldest events are dropped and counted', async () => {
    const small = await createTestInstance({ outboxLimit: 5 });
    const dest = (await small.request('POST', '/event_destinations', { format: 'json', target: streamTarget })).body;
    await small.request('POST', '/event_subscriptions', { sources: [{ type: 'api_key_created.v0' }], destination_ids: [dest.id] });
    const ids = [];
    for (let i = 0; i < 8; i++) ids.push((await small.request('POST', '/api_keys', { description: `k${i}` })).body.id);
    const outbox = await small.burrow.outbox(small.accountId, dest.id);
    assert.equal(outbox.limit, 5);
    assert.equal(outbox.dropped, 3);
    assert.deepEqual(outbox.events.map((e) => (e.object as any).id), ids.slice(3));

    assert.equal(await small.burrow.clearOutbox(small.accountId, dest.id), 5);
    assert.deepEqual(await small.burrow.outbox(small.accountId, dest.id), { events: [], dropped: 0, limit: 5 });
    await small.request('POST', '/api_keys', {});
    assert.equal((await small.burrow.outbox(small.accountId, dest.id)).events.length, 1);
  });

  test('defaults to 1000 events and refuses a limit below 1', async () => {
    const plain = await createTestInstance();
    assert.equal(plain.burrow.outboxLimit, 1000);
    assert.throws(() => createBurrow({ store: plain.burrow.store, outboxLimit: 0 }), /outboxLimit must be a whole number of at least 1 \(got 0\)/);
  });

  test('survives a restart on the JSON-file store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'burrow-events-'));
    try {
      const path = join(dir, 'state.json');
      const clock = new ManualClock('2026-03-01T12:00:00Z');
      const first = createBurrow({ store: await openJsonFileStore(path), clock, seed: 7 });
      const { token, accountId } = await first.createAccount();
      const client = first.client(token);
      const dest = await client.resource('event_destinations').create({ format: 'json', target: streamTarget });
      const sub = await client.resource('event_subscriptions').create({ destination_ids: [dest.id] });
      await client.call('event_sources.create', { params: { subscription_id: sub.id }, body: { type: 'api_key_created.v0' } });
      await client.resource('api_keys').create({ description: 'before restart' });
      const before = await first.outbox(accountId, dest.id);
      await first.close();

      const second = createBurrow({ store: await openJsonFileStore(path), clock, seed: 8 });
      assert.deepEqual(await second.outbox(accountId, dest.id), before);
      assert.deepEqual(before.events.map((e) => (e.object as any).description), ['before restart']);
      await second.client(token).resource('api_keys').create({ description: 'after restart' });
      assert.deepEqual((await second.outbox(accountId, dest.id)).events.map((e) => (e.object as any).description), ['before restart', 'after restart']);
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('event sinks', () => {
  test('receive each delivery after commit, with the destination as the API answers it', async () => {
    const seenCommitted: boolean[] = [];
    const local = await createTestInstance({
      eventSinks: [
        {
          async deliver(d) {
            seenCommitted.push((await local.burrow.outbox(d.account, d.destinationId)).events.some((e) => e.event_id === d.event.event_id));
            delivered.push(d);
          },
        },
      ],
    });
    const dest = (await local.request('POST', '/event_destinations', { format: 'json', target: streamTarget })).body;
    await local.request('POST', '/event_subscriptions', { sources: [{ type: 'ip_policy_created.v0' }], destination_ids: [dest.id] });
    await local.request('POST', '/ip_policies', {});
    assert.equal(delivered.length, 1);
    assert.deepEqual(delivered[0]!.destination, dest);
    assert.equal(delivered[0]!.destinationId, dest.id);
    assert.equal(delivered[0]!.account, local.accountId);
    assert.deepEqual(delivered[0]!.event, (await local.burrow.outbox(local.accountId, dest.id)).events[0]);
    assert.deepEqual(seenCommitted, [true]);
  });

  test('a failing sink is reported and the operation still succeeds', async () => {
    const reported: unknown[] = [];
    const local = await createTestInstance({
      eventSinks: [{ deliver: () => Promise.reject(new Error('downstream is down')) }],
      onSinkError: (error) => void reported.push((error as Error).message),
    });
    const dest = (await local.request('POST', '/event_destinations', { format: 'json', target: streamTarget })).body;
    await local.request('POST', '/event_subscriptions', { sources: [{ type: 'ip_policy_created.v0' }], destination_ids: [dest.id] });
    assert.equal((await local.request('POST', '/ip_policies', {})).status, 201);
    assert.deepEqual(reported, ['downstream is down']);
    assert.equal((await local.burrow.outbox(local.accountId, dest.id)).events.length, 1);
  });
});

describe('event catalogue', () => {
  test('holds created/updated/deleted of every registered kind with an event, plus agent sessions and traffic', () => {
    const catalogue = eventCatalogue(RESOURCES);
    for (const def of RESOURCES.filter((d) => d.event)) {
      for (const action of ['created', 'updated', 'deleted']) assert.ok(catalogue.includes(`${def.event}_${action}.v0`), `${def.event}_${action}.v0`);
    }
    for (const type of ['api_key_deleted.v0', 'tunnel_credential_updated.v0', 'ssh_public_key_created.v0', 'ip_policy_created.v0', 'agent_session_start.v0', 'agent_session_stop.v0', 'http_request_complete.v0', 'tcp_connection_closed.v0']) {
      assert.ok(catalogue.includes(type), type);
    }
    assert.deepEqual([...catalogue].sort(), catalogue);
    assert.equal(new Set(catalogue).size, catalogue.length);
    assert.equal(catalogue.length, 3 * new Set(RESOURCES.flatMap((d) => (d.event ? [d.event] : []))).size + 4);
  });

  test('is derived from the definitions: a new kind brings its events', () => {
    assert.deepEqual(eventCatalogue([{ event: 'widget' }, {}]), ['agent_session_start.v0', 'agent_session_stop.v0', 'http_request_complete.v0', 'tcp_connection_closed.v0', 'widget_created.v0', 'widget_deleted.v0', 'widget_updated.v0']);
  });

  test('is served by the control plane', async () => {
    const res = await api.request('GET', '/_burrow/event_types', undefined, { token: null });
    assert.deepEqual(res.body, { event_types: eventCatalogue(RESOURCES) });
  });
});

describe('control plane outboxes', () => {
  test('reads and clears an outbox with the operator token', async () => {
    const dest = await destination();
    await subscription(['ip_policy_created.v0'], [dest.id]);
    await api.request('POST', '/ip_policies', {});
    const path = `/_burrow/accounts/${api.accountId}/event_destinations/${dest.id}/outbox`;
    const read = await api.request('GET', path, undefined, { token: OPERATOR_TOKEN });
    assert.deepEqual(read.body, await api.burrow.outbox(api.accountId, dest.id));
    assert.equal(read.body.events.length, 1);
    assert.equal((await api.request('GET', path)).status, 403, 'an API key is not the operator token');
    assert.deepEqual((await api.request('DELETE', path, undefined, { token: OPERATOR_TOKEN })).body, { removed: 1 });
    assert.equal((await api.request('GET', path, undefined, { token: OPERATOR_TOKEN })).body.events.length, 0);
    assert.equal((await api.request('GET', `/_burrow/accounts/${api.accountId}/event_destinations/ed_nope/outbox`, undefined, { token: OPERATOR_TOKEN })).status, 404);
  });
});
