import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { BASE, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const asOperator = { token: OPERATOR_TOKEN };
const control = (method: string, path: string, body?: unknown) => api.request(method, `/_burrow${path}`, body, asOperator);

describe('GET /_burrow/accounts', () => {
  test('lists every account oldest first', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    const res = await control('GET', '/accounts');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.accounts, [
      { id: api.accountId, name: 'test', created_at: '2026-03-01T12:00:00Z', default: false },
      { id: other.accountId, name: 'other', created_at: '2026-03-01T12:00:00Z', default: false },
    ]);
  });

  test('marks the default account', async () => {
    const { accountId } = await api.burrow.ensureDefaultAccount();
    const accounts = (await control('GET', '/accounts')).body.accounts as { id: string; default: boolean }[];
    assert.deepEqual(accounts.filter((a) => a.default).map((a) => a.id), [accountId]);
  });

  test('needs the operator token', async () => {
    assert.equal((await api.request('GET', '/_burrow/accounts')).status, 403);
  });
});

describe('GET /_burrow/accounts/:account_id/resources', () => {
  test('names every resource kind with the account’s count of it', async () => {
    await api.request('POST', '/credentials', {});
    await api.request('POST', '/credentials', {});
    const other = await api.burrow.createAccount();
    await api.request('POST', '/ip_policies', {}, { token: other.token });
    const { resources } = (await control('GET', `/accounts/${api.accountId}/resources`)).body;
    const counts = Object.fromEntries(resources.map((r: any) => [r.name, r.count]));
    assert.equal(counts.credentials, 2);
    assert.equal(counts.api_keys, 1, 'the admin key made with the account');
    assert.equal(counts.ip_policies, 0, 'other accounts are not counted');
    assert.deepEqual(resources.find((r: any) => r.name === 'credentials'), { name: 'credentials', label: 'tunnel credential', path: '/credentials', prefix: 'cr', list_key: 'credentials', count: 2, more: false });
    assert.equal(resources.length, api.burrow.resources.length);
  });

  test('an unknown account is a 404', async () => {
    assert.equal((await control('GET', '/accounts/ac_nope/resources')).status, 404);
  });
});

describe('GET /_burrow/accounts/:account_id/resources/:name', () => {
  test('pages a kind exactly as the API lists it', async () => {
    for (let i = 0; i < 3; i++) await api.request('POST', '/credentials', { description: `c${i}` });
    const viaControl = await control('GET', `/accounts/${api.accountId}/resources/credentials?limit=2`);
    const viaApi = await api.request('GET', '/credentials?limit=2');
    assert.equal(viaControl.status, 200);
    assert.deepEqual(viaControl.body, viaApi.body);
    const before = viaControl.body.credentials[1].id;
    const next = await control('GET', `/accounts/${api.accountId}/resources/credentials?limit=2&before_id=${before}`);
    assert.deepEqual(next.body.credentials.map((c: any) => c.description), ['c0']);
  });

  test('an unknown kind is a 404 naming the kinds', async () => {
    const res = await control('GET', `/accounts/${api.accountId}/resources/widgets`);
    assert.equal(res.status, 404);
    assert.match(res.body.msg, /no resource kind 'widgets'; kinds: api_keys, credentials/);
  });

  test('does not count against the account’s rate limit', async () => {
    api = await createTestInstance({ rateLimit: { requests: 1, windowSeconds: 60 } });
    for (let i = 0; i < 3; i++) assert.equal((await control('GET', `/accounts/${api.accountId}/resources/credentials`)).status, 200);
    assert.equal((await api.request('GET', '/credentials')).status, 200);
  });
});

describe('GET /_burrow/accounts/:account_id/records/:id', () => {
  test('answers any record by id, as the API does, with its kind', async () => {
    const policy = await api.request('POST', '/ip_policies', { description: 'office' });
    const res = await control('GET', `/accounts/${api.accountId}/records/${policy.body.id}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { resource: 'ip_policies', label: 'IP policy', record: policy.body });
    assert.equal(res.body.record.uri, `${BASE}/ip_policies/${policy.body.id}`);
  });

  test('is a 404 for ids of other accounts and of no kind', async () => {
    const other = await api.burrow.createAccount();
    const policy = await api.request('POST', '/ip_policies', {}, { token: other.token });
    assert.equal((await control('GET', `/accounts/${api.accountId}/records/${policy.body.id}`)).status, 404);
    assert.match((await control('GET', `/accounts/${api.accountId}/records/zz_123`)).body.msg, /no kind has the prefix 'zz'/);
  });
});

describe('POST /_burrow/accounts/:account_id/tunnel_sessions/:id/:command', () => {
  async function connectAgent() {
    const credential = await api.request('POST', '/credentials', {});
    const session = await control('POST', '/agents', { token: credential.body.token });
    assert.equal(session.status, 201);
    return session.body.id as string;
  }

  test('stop ends the session', async () => {
    const id = await connectAgent();
    assert.equal((await control('POST', `/accounts/${api.accountId}/tunnel_sessions/${id}/stop`, {})).status, 204);
    assert.deepEqual((await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions, []);
  });

  test('restart replaces the session by a new one', async () => {
    const id = await connectAgent();
    assert.equal((await control('POST', `/accounts/${api.accountId}/tunnel_sessions/${id}/restart`, {})).status, 204);
    const ids = (await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions.map((s: any) => s.id);
    assert.equal(ids.length, 1);
    assert.notEqual(ids[0], id);
  });

  test('refuses unknown commands and unknown sessions', async () => {
    const id = await connectAgent();
    assert.equal((await control('POST', `/accounts/${api.accountId}/tunnel_sessions/${id}/explode`, {})).status, 404);
    assert.equal((await control('POST', `/accounts/${api.accountId}/tunnel_sessions/ts_missing/stop`, {})).status, 404);
  });
});
