import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDatabase, POSTGRES_MISSING, testCluster } from '../fixtures/postgres-cluster.ts';
import { assertError, startServer, type RunningServer } from '../helpers.ts';

/**
 * Test state is one through every server over one PostgreSQL database (issue 45, item 2): starting
 * states, checkpoints and fault rules live in the store, and --rate-limit counts an account's
 * requests through all servers together.
 */

const cluster = await testCluster();
const OPERATOR = 'cluster-state-operator-token';
const asOperator = { token: OPERATOR };

describe('test state through any of two servers on one PostgreSQL database', { skip: cluster ? false : POSTGRES_MISSING }, () => {
  let a: RunningServer;
  let b: RunningServer;
  let token: string;
  const RATE = 40;

  before(async () => {
    const url = await createDatabase(cluster!, 'state');
    const serve = () => startServer(['--data', url, '--quiet', '--operator-token', OPERATOR, '--rate-limit', `${RATE}/3600s`]);
    a = await serve();
    b = await serve();
    token = a.token!;
  });

  after(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
  });

  const control = (server: RunningServer, method: string, path: string, body?: unknown) => server.request(method, `/_burrow${path}`, body, asOperator);
  const policies = async (server: RunningServer) => (await server.request('GET', '/ip_policies', undefined, { token })).body.ip_policies.map((p: { description: string }) => p.description).sort();

  test('a checkpoint made through A is listed and restored through B; reset through B returns the account A created to its start', async () => {
    assert.equal((await a.request('POST', '/ip_policies', { description: 'kept' }, { token })).status, 201);
    assert.equal((await control(a, 'POST', '/checkpoints', { name: 'one' })).status, 201);
    assert.deepEqual((await control(b, 'GET', '/checkpoints')).body.checkpoints.map((c: { name: string }) => c.name), ['one']);
    assert.equal((await b.request('POST', '/ip_policies', { description: 'after' }, { token })).status, 201);
    assert.deepEqual(await policies(a), ['after', 'kept']);
    const restored = await control(b, 'POST', '/checkpoints/one/restore');
    assert.equal(restored.status, 200, restored.text);
    assert.deepEqual(await policies(a), ['kept']);
    const reset = await control(b, 'POST', '/reset', {});
    assert.equal(reset.status, 200, reset.text);
    assert.deepEqual(await policies(a), []);
    assert.equal((await control(b, 'DELETE', '/checkpoints/one')).status, 204);
    assert.equal((await control(a, 'GET', '/checkpoints')).body.checkpoints.length, 0);
    assertError(await control(a, 'POST', '/checkpoints/one/restore'), 404, 9001, /checkpoint 'one' was not found; checkpoints: none/);
  });

  test('a fault rule added through A strikes requests through B, and its `times` counts both servers', async () => {
    const rule = await control(a, 'POST', '/faults', { operation: 'ip_policies.list', error: { status: 503 }, times: 2 });
    assert.equal(rule.status, 201, rule.text);
    const statuses = [];
    for (const server of [b, a, b]) statuses.push((await server.request('GET', '/ip_policies', undefined, { token })).status);
    assert.deepEqual(statuses, [503, 503, 200]);
    const listed = (await control(b, 'GET', `/faults/${rule.body.id}`)).body;
    assert.deepEqual([listed.matched, listed.applied], [2, 2]);
    assert.equal((await control(b, 'DELETE', '/faults')).body.removed, 1);
    assert.deepEqual((await control(a, 'GET', '/faults')).body.faults, []);
  });

  test(`--rate-limit ${RATE}/3600s counts the account's requests through both servers together`, async () => {
    const answers: number[] = [];
    // One after another: each request sees every earlier one (the count is exact then).
    for (let i = 0; i < RATE + 4; i++) answers.push((await (i % 2 ? b : a).request('GET', '/api_keys?limit=1', undefined, { token })).status);
    const passed = answers.filter((status) => status === 200).length;
    assert.ok(passed <= RATE, `${passed} requests passed through two servers, at most ${RATE} may`);
    assert.deepEqual(answers.slice(-4), [429, 429, 429, 429]);
    const refused = await b.request('GET', '/api_keys?limit=1', undefined, { token });
    assertError(refused, 429, 226, new RegExp(`at most ${RATE} requests per 3600 seconds per account`));
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
  });
});
