import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, beforeEach, describe, test } from 'node:test';
import ngrokApi from '@ngrok/ngrok-api';
import { createFetchHandler, createNodeListener } from '../../adapters/http/index.ts';
import { ConnectionDroppedError } from '../../lib/index.ts';
import { assertError, BASE, createTestInstance, OPERATOR_TOKEN, sendRequest, type TestInstance } from '../helpers.ts';

/**
 * Faults on demand (lib/simulation/faults.ts): rules added through /_burrow/faults or burrow.faults make
 * matching API requests fail, wait or lose their connection, in the one request pipeline; the
 * official client's error paths are driven through them on a live node:http server.
 */

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const asOperator = { token: OPERATOR_TOKEN };
const addFault = async (rule: unknown) => {
  const res = await api.request('POST', '/_burrow/faults', rule, asOperator);
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string };
};
const journal = async () => (await api.request('GET', '/_burrow/requests', undefined, asOperator)).body.requests as any[];

describe('POST /_burrow/faults', () => {
  test('an error status with any error code in the envelope, for the matching operation only, once', async () => {
    const fault = await addFault({ operation: 'credentials.create', error: { status: 503, error_code: 'ERR_NGROK_999', message: 'the service is down' }, times: 1 });
    assert.match(fault.id, /^flt_/);
    const failed = await api.request('POST', '/credentials', {});
    assert.equal(failed.status, 503);
    assert.deepEqual(failed.body, { error_code: 'ERR_NGROK_999', status_code: 503, msg: 'the service is down', details: { fault: fault.id, operation_id: failed.headers.get('burrow-operation-id') } });
    assert.equal((await api.request('GET', '/credentials')).status, 200, 'another operation is not matched');
    assert.equal((await api.request('POST', '/credentials', {})).status, 201, 'once: the second create goes through');
    const [rule] = (await api.request('GET', '/_burrow/faults', undefined, asOperator)).body.faults;
    assert.equal(rule.matched, 1, 'a spent rule matches no more');
    assert.equal(rule.applied, 1);
  });

  test('a numeric error code takes the instance prefix; without one, 9060; the message names the rule', async () => {
    await addFault({ path: '/ip_policies', method: 'get', error: { status: 500, error_code: '1234' }, times: 1 });
    assertError(await api.request('GET', '/ip_policies'), 500, 1234, /^injected fault flt_\w+: 500$/);
    const bare = await addFault({ path: '/ip_policies', error: { status: 502 } });
    assertError(await api.request('GET', '/ip_policies'), 502, 9060, new RegExp(`^injected fault ${bare.id}: 502$`));
  });

  test('path patterns: * within a segment, ** across; operation patterns', async () => {
    await addFault({ path: '/ip_policies/*', error: { status: 500 } });
    await addFault({ operation: 'credentials.*', error: { status: 501 } });
    await addFault({ path: '/api_keys/**', error: { status: 502 } });
    assert.equal((await api.request('GET', '/ip_policies')).status, 200);
    assert.equal((await api.request('GET', '/ip_policies/ipp_x')).status, 500);
    assert.equal((await api.request('GET', '/credentials')).status, 501);
    assert.equal((await api.request('GET', '/api_keys')).status, 200);
    assert.equal((await api.request('GET', '/api_keys/ak_x')).status, 502);
  });

  test('scoped to an account: other accounts are not touched', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    await addFault({ account_id: other.accountId, error: { status: 503 } });
    assert.equal((await api.request('GET', '/api_keys')).status, 200);
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: other.token })).status, 503);
  });

  test('every Nth request, for N requests', async () => {
    await addFault({ path: '/credentials', every: 2, times: 2, error: { status: 500 } });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await api.request('GET', '/credentials')).status);
    assert.deepEqual(statuses, [200, 500, 200, 500, 200, 200]);
  });

  test('with a probability, drawn from the seed in deterministic mode: the same seed replays the same requests', async () => {
    const run = async () => {
      const instance = await createTestInstance({ seed: 'faults' });
      await instance.request('POST', '/_burrow/faults', { path: '/credentials', probability: 0.5, error: { status: 503 } }, asOperator);
      const statuses: number[] = [];
      for (let i = 0; i < 24; i++) statuses.push((await instance.request('GET', '/credentials')).status);
      return statuses;
    };
    const first = await run();
    assert.deepEqual(await run(), first);
    assert.ok(first.includes(503) && first.includes(200), `some requests fail and some do not: ${first}`);
  });

  test('429 with Retry-After', async () => {
    const fault = await addFault({ operation: 'api_keys.list', rate_limit: { retry_after_seconds: 7 } });
    const res = await api.request('GET', '/api_keys');
    assertError(res, 429, 226, new RegExp(`^rate limit exceeded \\(fault ${fault.id}\\); retry in 7 s$`));
    assert.equal(res.headers.get('retry-after'), '7');
  });

  test('latency, fixed or in a range drawn from the seed; the journal shows the rule and the latency', async () => {
    await addFault({ path: '/credentials', latency_ms: { min: 5, max: 40 }, times: 3 });
    for (let i = 0; i < 3; i++) assert.equal((await api.request('GET', '/credentials')).status, 200);
    const entries = (await journal()).filter((entry) => entry.path === '/credentials');
    const latencies = entries.map((entry) => entry.fault.latency_ms as number);
    for (const [i, entry] of entries.entries()) {
      assert.ok(latencies[i]! >= 5 && latencies[i]! <= 40, `latency ${latencies[i]} is within the range`);
      assert.ok(entry.duration_ms >= latencies[i]!, `the request took its latency (${entry.duration_ms} ms >= ${latencies[i]} ms)`);
    }
    const again = await createTestInstance();
    await again.request('POST', '/_burrow/faults', { path: '/credentials', latency_ms: { min: 5, max: 40 }, times: 3 }, asOperator);
    for (let i = 0; i < 3; i++) await again.request('GET', '/credentials');
    const replayed = (await again.request('GET', '/_burrow/requests', undefined, asOperator)).body.requests.map((entry: any) => entry.fault.latency_ms);
    assert.deepEqual(replayed, latencies, 'the same seed draws the same latencies');
  });

  test('latency then an error: the error is answered after the wait', async () => {
    await addFault({ path: '/credentials', latency_ms: 3, error: { status: 504 } });
    assert.equal((await api.request('GET', '/credentials')).status, 504);
    const [entry] = await journal();
    assert.equal(entry.status, 504);
    assert.equal(entry.fault.latency_ms, 3);
  });

  test('a dropped connection: fetch fails as on a network error, the in-process client throws ConnectionDroppedError, the journal says 0', async () => {
    const fault = await addFault({ path: '/credentials', drop_connection: true, times: 2 });
    await assert.rejects(api.request('GET', '/credentials'), (error: Error) => error instanceof TypeError && error.message.includes(fault.id));
    await assert.rejects(api.burrow.client(api.token).resource('credentials').list(), (error: Error) => error instanceof ConnectionDroppedError && (error as ConnectionDroppedError).code === 'ECONNRESET');
    const [inProcess, overFetch] = await journal();
    for (const entry of [inProcess, overFetch]) {
      assert.equal(entry.status, 0);
      assert.deepEqual(entry.fault, { id: fault.id, latency_ms: null });
    }
    assert.equal((await api.request('GET', '/_burrow/requests?status=failed', undefined, asOperator)).body.requests.length, 2, 'dropped requests count as failed');
  });

  test('requests with no valid key never reach a fault; the control plane is never faulted', async () => {
    await addFault({ path: '/**', error: { status: 500 } });
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: 'nobody' })).status, 401);
    assert.equal((await api.request('GET', '/_burrow/faults', undefined, asOperator)).status, 200);
  });

  test('list, get, remove one, clear all; a reset removes them too', async () => {
    const first = await addFault({ error: { status: 500 }, path: '/a' });
    const second = await addFault({ error: { status: 500 }, path: '/b' });
    assert.equal((await api.request('GET', `/_burrow/faults/${first.id}`, undefined, asOperator)).body.path, '/a');
    assert.equal((await api.request('DELETE', `/_burrow/faults/${first.id}`, undefined, asOperator)).status, 204);
    assertError(await api.request('DELETE', `/_burrow/faults/${first.id}`, undefined, asOperator), 404, 9001, /^fault rule 'flt_\w+' was not found$/);
    assert.deepEqual((await api.request('GET', '/_burrow/faults', undefined, asOperator)).body.faults.map((f: any) => f.id), [second.id]);
    assert.deepEqual((await api.request('DELETE', '/_burrow/faults', undefined, asOperator)).body, { removed: 1 });
    await addFault({ error: { status: 500 } });
    await api.request('POST', '/_burrow/reset', {}, asOperator);
    assert.deepEqual((await api.request('GET', '/_burrow/faults', undefined, asOperator)).body.faults, []);
  });

  test('operator only', async () => {
    assert.equal((await api.request('GET', '/_burrow/faults')).status, 403, 'an admin API key is not the operator token');
    assert.equal((await api.request('POST', '/_burrow/faults', { error: { status: 500 } })).status, 403);
  });

  for (const [body, message] of [
    [{}, /^body: a fault needs an effect: error, rate_limit, drop_connection or latency_ms$/],
    [{ error: { status: 200 } }, /^error\.status: must be at least 400$/],
    [{ error: { status: 500 }, drop_connection: true }, /^body: error, rate_limit and drop_connection: give at most one of them$/],
    [{ latency_ms: { min: 9, max: 3 } }, /^body: latency_ms: min must not be above max$/],
    [{ latency_ms: 600_001 }, /^latency_ms: must be at most 600000 ms \(limit fault_latency_ms\)$/],
    [{ latency_ms: 'slow' }, /^latency_ms: must be milliseconds from 0 to 600000, or \{min, max\}$/],
    [{ probability: 2, error: { status: 500 } }, /^probability: must be from 0 to 1$/],
    [{ every: 0, error: { status: 500 } }, /^every: must be at least 1$/],
    [{ method: 'TRACE', error: { status: 500 } }, /^method: must be GET, HEAD, POST, PUT, PATCH or DELETE$/],
    [{ path: 'has space', error: { status: 500 } }, /^path: must be a path pattern such as \/api_keys\/\* in visible ASCII without spaces$/],
    [{ error: { status: 500, error_code: 'no spaces here!' } }, /^error\.error_code: must be 1 to 64 letters/],
  ] as const) {
    test(`refuses ${JSON.stringify(body)}`, async () => {
      const res = await api.request('POST', '/_burrow/faults', body, asOperator);
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.msg, message);
    });
  }

  test('at most 256 rules (limit fault_rules)', async () => {
    for (let i = 0; i < 256; i++) await api.burrow.faults.add({ path: `/r${i}`, error: { status: 500 } });
    assertError(await api.request('POST', '/_burrow/faults', { error: { status: 500 } }, asOperator), 400, 215, /^at most 256 fault rules are kept; remove one first \(limit fault_rules\)$/);
  });
});

describe("the official client's error paths, through faults on a live server", () => {
  const { Ngrok } = ngrokApi as unknown as { Ngrok: new (config: { apiToken: string; baseUrl: string }) => any };
  let server: Server;
  let client: any;
  let live: TestInstance;
  before(async () => {
    live = await createTestInstance({ baseUrl: undefined });
    server = createServer(createNodeListener(live.burrow, { operatorToken: OPERATOR_TOKEN }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    client = new Ngrok({ apiToken: live.token, baseUrl: `http://127.0.0.1:${address.port}` });
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => live.burrow.faults.clear());

  /** What a client's user writes: retry a call on 429 and 5xx (the client keeps only the body: no Retry-After). */
  async function withRetries<T>(call: () => Promise<T>, attempts: number): Promise<{ result: T; failures: unknown[] }> {
    const failures: unknown[] = [];
    for (;;) {
      try {
        return { result: await call(), failures };
      } catch (error) {
        const status = (error as { statusCode?: number }).statusCode ?? 0;
        if (!(status === 429 || status >= 500) || failures.length + 1 >= attempts) throw error;
        failures.push(error);
      }
    }
  }

  test('an error answer reaches the caller as the client deserialises the envelope', async () => {
    const fault = await live.burrow.faults.add({ operation: 'ip_policies.create', error: { status: 503, error_code: 'ERR_NGROK_999', message: 'try later' } });
    await assert.rejects(client.ipPolicies.create({ description: 'x' }), (error: any) => {
      assert.equal(error.errorCode, 'ERR_NGROK_999');
      assert.equal(error.statusCode, 503);
      assert.equal(error.msg, 'try later');
      assert.equal(error.details.get('fault'), fault.id);
      return true;
    });
  });

  test('a retry loop gets through once the fault is spent; the journal shows each attempt', async () => {
    await live.burrow.faults.add({ operation: 'credentials.create', error: { status: 502 }, times: 2 });
    await live.burrow.faults.add({ operation: 'credentials.list', rate_limit: { retry_after_seconds: 0 }, times: 1 });
    const created = await withRetries<any>(() => client.credentials.create({ description: 'retried' }), 3);
    assert.equal(created.result.description, 'retried');
    assert.deepEqual(created.failures.map((e: any) => e.statusCode), [502, 502]);
    const listed = await withRetries<any>(() => client.credentials.list(), 2);
    assert.equal(listed.result.length, 1);
    assert.deepEqual(listed.failures.map((e: any) => [e.statusCode, e.errorCode]), [[429, 'ERR_BURROW_226']]);
    const entries = live.burrow.requests.list({ account: live.accountId, path: '/credentials', limit: 5 });
    assert.deepEqual(entries.map((entry) => [entry.method, entry.status, entry.fault !== null]).reverse(), [
      ['POST', 502, true],
      ['POST', 502, true],
      ['POST', 201, false],
      ['GET', 429, true],
      ['GET', 200, false],
    ]);
  });

  test('gives up after its attempts when the fault does not stop', async () => {
    await live.burrow.faults.add({ operation: 'api_keys.list', error: { status: 500 } });
    await assert.rejects(withRetries(() => client.apiKeys.list(), 3), (error: any) => error.statusCode === 500);
    assert.equal((await live.burrow.faults.list())[0]!.applied, 3);
  });

  test("a dropped connection: the client fails parsing node-fetch's network error as JSON (its network error path)", async () => {
    await live.burrow.faults.add({ operation: 'api_keys.list', drop_connection: true, times: 1 });
    await assert.rejects(client.apiKeys.list(), (error: Error) => error instanceof SyntaxError && error.message.includes('"request to"'));
    assert.equal((await client.apiKeys.list()).length, 1, 'the next call goes through');
  });
});

test('the fetch handler without a fault answers as before (no rule: one length check)', async () => {
  const res = await sendRequest(createFetchHandler(api.burrow), `${BASE}/api_keys`, 'GET', undefined, { token: api.token });
  assert.equal(res.status, 200);
});
