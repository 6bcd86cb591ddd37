import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { createFetchHandler, type RequestLog } from '../../adapters/http/index.ts';
import { BASE, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const asOperator = { token: OPERATOR_TOKEN };
const journal = async (query = '') => {
  const res = await api.request('GET', `/_burrow/requests${query}`, undefined, asOperator);
  assert.equal(res.status, 200, res.text);
  return res.body.requests as any[];
};

describe('GET /_burrow/requests', () => {
  test('records time, method, path, query, status, error code, duration and operation, newest first', async () => {
    const created = await api.request('POST', '/credentials', { description: 'ci' });
    api.clock.advance(5);
    await api.request('GET', '/credentials?limit=5');
    await api.request('GET', '/credentials/cr_missing');
    const [missing, list, create] = await journal();
    assert.deepEqual({ ...create, duration_ms: 0 }, {
      operation_id: created.headers.get('burrow-operation-id'),
      time: '2026-03-01T12:00:00.000Z',
      account_id: api.accountId,
      method: 'POST',
      path: '/credentials',
      query: '',
      status: 201,
      error_code: null,
      duration_ms: 0,
      operation: 'credentials.create',
      fault: null,
      message: null,
    });
    assert.equal(typeof create.duration_ms, 'number');
    assert.ok(create.duration_ms >= 0);
    assert.equal(list.query, 'limit=5');
    assert.equal(list.time, '2026-03-01T12:00:05.000Z', 'times follow the instance clock');
    assert.equal(missing.status, 404);
    assert.equal(missing.error_code, 'ERR_BURROW_9001');
    assert.equal(missing.operation, 'credentials.get');
  });

  test('never keeps a token: the Authorization header is masked and secret-looking query values are redacted', async () => {
    const created = await api.request('POST', '/credentials', {});
    await api.request('GET', `/api_keys?token=${created.body.token}&limit=2`);
    const text = JSON.stringify(await journal());
    assert.ok(!text.includes(api.token), 'the API key token is not in the journal');
    assert.ok(!text.includes(created.body.token), 'a token sent in a query is not in the journal');
    assert.match(text, /"query":"token=REDACTED&limit=2"/);
  });

  test('the journal and the log line redact the same secret-looking names, percent-encoded ones too', async () => {
    const logs: RequestLog[] = [];
    const handle = createFetchHandler(api.burrow, { log: (entry) => logs.push(entry) });
    const secrets = { pwd: 's1', db_password: 's2', credential: 's3', client_secret: 's4', value: 's5', '%74oken': 's6', passphrase: 's7', session_cookie: 's8', code: 's9' };
    const query = `${Object.entries(secrets).map(([name, secret]) => `${name}=${secret}`).join('&')}&limit=2`;
    await handle(new Request(`${BASE}/api_keys?${query}`, { headers: { Authorization: `Bearer ${api.token}` } }));
    const [entry] = await journal();
    const names = 'pwd=X&db_password=X&credential=X&client_secret=X&value=X&token=X&passphrase=X&session_cookie=X&code=X&limit=2';
    assert.equal(entry.query, names.replaceAll('X', 'REDACTED'));
    assert.equal(logs[0]!.query, `?${names.replaceAll('X', '***')}`);
  });

  test('a query without secret-looking names is kept as sent', async () => {
    await api.request('GET', '/api_keys?limit=2&before_id=ak_x%20y');
    assert.equal((await journal())[0].query, 'limit=2&before_id=ak_x%20y');
  });

  test('requests without a valid API key have no account and are found with account_id=none', async () => {
    await api.request('GET', '/credentials', undefined, { token: 'not-a-key' });
    await api.request('GET', '/no/such/route');
    await api.request('GET', '/credentials');
    const anonymous = await journal('?account_id=none');
    assert.deepEqual(anonymous.map((e) => [e.path, e.status, e.error_code, e.account_id, e.operation]), [
      ['/no/such/route', 404, 'ERR_BURROW_9002', null, null],
      ['/credentials', 401, 'ERR_BURROW_203', null, 'credentials.list'],
    ]);
    assert.deepEqual((await journal(`?account_id=${api.accountId}`)).map((e) => e.status), [200]);
  });

  test('filters by status (exact, class or failed) and by path', async () => {
    await api.request('POST', '/credentials', {});
    await api.request('POST', '/credentials', { acl: ['nope'] });
    await api.request('GET', '/ip_policies/ipp_missing');
    await api.request('GET', '/ip_policies');
    assert.deepEqual((await journal('?status=failed')).map((e) => e.status), [404, 400]);
    assert.deepEqual((await journal('?status=4xx')).map((e) => e.status), [404, 400]);
    assert.deepEqual((await journal('?status=201')).map((e) => e.path), ['/credentials']);
    assert.deepEqual((await journal('?path=ip_policies')).map((e) => e.path), ['/ip_policies', '/ip_policies/ipp_missing']);
    assert.deepEqual((await journal('?path=ip_policies&status=2xx&limit=1')).map((e) => e.status), [200]);
  });

  test('refuses unknown filters and limits out of range', async () => {
    assert.equal((await api.request('GET', '/_burrow/requests?status=bad', undefined, asOperator)).body.error_code, 'ERR_BURROW_230');
    assert.equal((await api.request('GET', '/_burrow/requests?limit=0', undefined, asOperator)).body.error_code, 'ERR_BURROW_233');
    assert.equal((await api.request('GET', '/_burrow/requests?since=1', undefined, asOperator)).body.error_code, 'ERR_BURROW_231');
  });

  test('needs the operator token and does not journal the control plane itself', async () => {
    assert.equal((await api.request('GET', '/_burrow/requests', undefined, { token: null })).status, 401);
    assert.equal((await api.request('GET', '/_burrow/requests')).status, 403, 'an API key is not the operator token');
    await api.request('GET', '/_burrow/health', undefined, { token: null });
    assert.deepEqual(await journal(), []);
  });
});

describe('journal bounds', () => {
  test('keeps the last N requests per account; one account never pushes out another', async () => {
    api = await createTestInstance({ requestJournalSize: 3 });
    const other = await api.burrow.createAccount({ name: 'other' });
    await api.request('GET', '/credentials', undefined, { token: other.token });
    for (let i = 1; i <= 5; i++) await api.request('GET', `/credentials?limit=${i}`);
    assert.deepEqual((await journal(`?account_id=${api.accountId}`)).map((e) => e.query), ['limit=5', 'limit=4', 'limit=3']);
    assert.deepEqual((await journal(`?account_id=${other.accountId}`)).map((e) => e.account_id), [other.accountId]);
    assert.equal((await api.request('GET', '/_burrow/requests', undefined, asOperator)).body.size, 3);
  });

  test('size 0 turns the journal off', async () => {
    api = await createTestInstance({ requestJournalSize: 0 });
    await api.request('GET', '/credentials');
    assert.deepEqual(await journal(), []);
  });

  test('a size that is not a whole number is refused at start', async () => {
    await assert.rejects(createTestInstance({ requestJournalSize: -1 }), /requestJournalSize/);
  });
});

describe('DELETE /_burrow/requests', () => {
  test('clears one account, or all', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    await api.request('GET', '/credentials');
    await api.request('GET', '/credentials', undefined, { token: other.token });
    const cleared = await api.request('DELETE', `/_burrow/requests?account_id=${api.accountId}`, undefined, asOperator);
    assert.deepEqual(cleared.body, { removed: 1 });
    assert.deepEqual((await journal()).map((e) => e.account_id), [other.accountId]);
    assert.deepEqual((await api.request('DELETE', '/_burrow/requests', undefined, asOperator)).body, { removed: 1 });
    assert.deepEqual(await journal(), []);
  });

  test('a reset of an account clears its journal too', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    await api.request('GET', '/credentials');
    await api.request('GET', '/credentials', undefined, { token: other.token });
    await api.request('POST', '/_burrow/reset', { account_id: api.accountId }, asOperator);
    assert.deepEqual((await journal()).map((e) => e.account_id), [other.accountId]);
  });
});

describe('in-process', () => {
  test('burrow.requests lists and clears what HTTP recorded', async () => {
    await api.request('GET', '/credentials/cr_x');
    const [entry] = api.burrow.requests.list({ account: api.accountId, status: 'failed' });
    assert.equal(entry?.path, '/credentials/cr_x');
    assert.equal(api.burrow.requests.clear(api.accountId), 1);
    assert.deepEqual(api.burrow.requests.list(), []);
  });
});
