import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { createBurrow } from '../../lib/index.ts';
import { isShared } from '../../lib/store.ts';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../helpers.ts';

/**
 * The states a test returns to (lib/control/checkpoints.ts): POST /_burrow/reset brings an account back to
 * how it started (the admin key restored, every other key gone), and named checkpoints keep and
 * restore the whole state.
 */

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const asOperator = { token: OPERATOR_TOKEN };
const control = async (method: string, path: string, body?: unknown, status = 200) => {
  const res = await api.request(method, `/_burrow${path}`, body, asOperator);
  assert.equal(res.status, status, res.text);
  return res.body;
};
/** The whole state as an export sees it, without the export's own time. */
const state = async () => {
  const { exported_at: _, ...snapshot } = await control('GET', '/snapshot');
  return snapshot;
};

describe('POST /_burrow/reset: the starting state', () => {
  test('the admin key a test deleted comes back; keys, bots and resources created since go', async () => {
    const started = await state();
    const key = await api.request('POST', '/api_keys', { description: 'made by a test' });
    const bot = await api.request('POST', '/bot_users', { name: 'ci' });
    await api.request('POST', '/api_keys', { owner_id: bot.body.id });
    await api.request('POST', '/credentials', {});
    await api.request('POST', '/ip_policies', {});
    const adminKey = (await api.request('GET', '/api_keys')).body.keys.find((k: any) => k.description === 'admin key created with the account');
    assert.equal((await api.request('DELETE', `/api_keys/${adminKey.id}`)).status, 204);
    assert.equal((await api.request('GET', '/api_keys')).status, 401, 'the test locked itself out');

    const reset = await control('POST', '/reset', { account_id: api.accountId });
    assert.deepEqual(reset, { accounts: [api.accountId], removed: 9 });
    assert.deepEqual((await api.request('GET', '/api_keys')).body.keys.map((k: any) => k.id), [adminKey.id], 'the admin key authenticates again, alone');
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: key.body.token })).status, 401, 'a key created since no longer authenticates');
    assert.deepEqual(await state(), started, 'every record, index included, is as it was');
  });

  test('one account only: the others keep what they made', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    const policy = await api.request('POST', '/ip_policies', {}, { token: other.token });
    await api.request('POST', '/ip_policies', {});
    await control('POST', '/reset', { account_id: api.accountId });
    assert.equal((await api.request('GET', '/ip_policies')).body.ip_policies.length, 0);
    assert.equal((await api.request('GET', `/ip_policies/${policy.body.id}`, undefined, { token: other.token })).status, 200);
  });

  test('every account when none is named; an account made after the start goes back to how it was made', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    await api.request('POST', '/ip_policies', {}, { token: other.token });
    await api.request('POST', '/api_keys', {}, { token: other.token });
    const reset = await control('POST', '/reset', {});
    assert.deepEqual(reset.accounts.sort(), [api.accountId, other.accountId].sort());
    assert.equal((await api.request('GET', '/ip_policies', undefined, { token: other.token })).body.ip_policies.length, 0);
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: other.token })).body.keys.length, 1);
  });

  test('an instance-wide claim (a reserved domain) is released: the domain can be reserved again', async () => {
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'app.example.com' })).status, 201);
    await control('POST', '/reset', { account_id: api.accountId });
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'app.example.com' })).status, 201);
    const other = await api.burrow.createAccount();
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'app.example.com' }, { token: other.token })).status, 409, 'still unique across accounts');
  });

  test('deterministic mode replays the same ids after a reset', async () => {
    const first = await api.request('POST', '/ip_policies', {});
    await control('POST', '/reset', { account_id: api.accountId });
    api.clock.advance(0);
    const again = await api.request('POST', '/ip_policies', {});
    assert.equal(again.body.id, first.body.id);
  });

  test('in-process: burrow.reset()', async () => {
    await api.request('POST', '/credentials', {});
    assert.deepEqual(await api.burrow.reset(api.accountId), { accounts: [api.accountId], removed: 2 });
    assert.equal((await api.request('GET', '/credentials')).body.credentials.length, 0);
  });

  test('a snapshot import becomes the starting state', async () => {
    await api.request('POST', '/ip_policies', { description: 'in the snapshot' });
    const snapshot = await control('GET', '/snapshot');
    await control('PUT', '/snapshot', snapshot);
    await api.request('POST', '/ip_policies', { description: 'after it' });
    await control('POST', '/reset', {});
    assert.deepEqual((await api.request('GET', '/ip_policies')).body.ip_policies.map((p: any) => p.description), ['in the snapshot']);
  });

  test('an account another server made: over a shared store (PostgreSQL) it resets here too; over one only a server may hold, 409 naming why', async () => {
    const elsewhere = createBurrow({ store: api.burrow.store });
    const made = await elsewhere.createAccount();
    const reset = await api.request('POST', '/_burrow/reset', { account_id: made.accountId }, asOperator);
    if (isShared(api.burrow.store)) assert.deepEqual(reset.body, { accounts: [made.accountId], removed: 0 });
    else assertError(reset, 409, 9007, /has no starting state on this server: it was created by another server over the same store/);
  });

  test('an unknown account is a 404', async () => {
    assertError(await api.request('POST', '/_burrow/reset', { account_id: 'ac_missing' }, asOperator), 404, 9001, /^account 'ac_missing' was not found$/);
  });
});

describe('/_burrow/checkpoints', () => {
  test('restore puts back the whole state as it was, across accounts, keys and indexes', async () => {
    await api.request('POST', '/ip_policies', { description: 'kept' });
    const kept = await state();
    const checkpoint = await control('POST', '/checkpoints', { name: 'seeded' }, 201);
    assert.deepEqual(checkpoint, { name: 'seeded', created_at: '2026-03-01T12:00:00Z', records: checkpoint.records });
    assert.ok(checkpoint.records > 5);

    const later = await api.burrow.createAccount({ name: 'later' });
    await api.request('POST', '/reserved_domains', { domain: 'x.example.com' });
    const adminKey = (await api.request('GET', '/api_keys')).body.keys[0];
    await api.request('DELETE', `/api_keys/${adminKey.id}`);

    assert.deepEqual(await control('POST', '/checkpoints/seeded/restore'), checkpoint);
    assert.deepEqual(await state(), kept);
    assert.equal((await api.request('GET', '/api_keys')).status, 200, 'the deleted key authenticates again');
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: later.token })).status, 401, 'an account made since is gone with its keys');
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'x.example.com' })).status, 201, 'its claims were released');
    const since = (await control('GET', '/requests')).requests.map((entry: any) => `${entry.method} ${entry.path} ${entry.status}`);
    assert.deepEqual(since, ['POST /reserved_domains 201', 'GET /api_keys 401', 'GET /api_keys 200'], 'the journal starts afresh at the restore');
  });

  test('restore twice: a checkpoint is not used up', async () => {
    await control('POST', '/checkpoints', { name: 'empty' }, 201);
    for (let i = 0; i < 2; i++) {
      await api.request('POST', '/credentials', {});
      await control('POST', '/checkpoints/empty/restore');
      assert.equal((await api.request('GET', '/credentials')).body.credentials.length, 0);
    }
  });

  test('list, replace by name, delete; in-process too', async () => {
    await control('POST', '/checkpoints', { name: 'a' }, 201);
    await api.request('POST', '/credentials', {});
    await api.burrow.checkpoint('b');
    await api.burrow.checkpoint('a');
    assert.deepEqual((await control('GET', '/checkpoints')).checkpoints.map((c: any) => c.name), ['a', 'b']);
    await api.request('POST', '/credentials', {});
    await api.burrow.restore('a');
    assert.equal((await api.request('GET', '/credentials')).body.credentials.length, 1, "'a' was taken again after the first credential");
    assert.equal((await api.request('DELETE', '/_burrow/checkpoints/a', undefined, asOperator)).status, 204);
    assertError(await api.request('POST', '/_burrow/checkpoints/a/restore', undefined, asOperator), 404, 9001, /^checkpoint 'a' was not found; checkpoints: b$/);
    assertError(await api.request('DELETE', '/_burrow/checkpoints/a', undefined, asOperator), 404, 9001, /^checkpoint 'a' was not found$/);
  });

  test('names are 1 to 64 letters, digits, . _ -; at most 64 checkpoints (limit checkpoints)', async () => {
    assertError(await api.request('POST', '/_burrow/checkpoints', { name: 'no spaces' }, asOperator), 400, 215, /^name: must be 1 to 64 letters, digits/);
    assertError(await api.request('POST', '/_burrow/checkpoints', {}, asOperator), 400, 215, /^name: is required$/);
    for (let i = 0; i < 64; i++) await api.burrow.checkpoint(`c${i}`);
    await api.burrow.checkpoint('c0');
    assertError(await api.request('POST', '/_burrow/checkpoints', { name: 'one-more' }, asOperator), 400, 215, /^name: at most 64 checkpoints are kept; delete one first \(limit checkpoints\)$/);
  });

  test('operator only', async () => {
    assert.equal((await api.request('POST', '/_burrow/checkpoints', { name: 'x' })).status, 403);
  });
});
