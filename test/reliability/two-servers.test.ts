import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createDatabase, POSTGRES_MISSING, testCluster } from '../fixtures/postgres-cluster.ts';
import { openPostgresStore } from '../../adapters/stores/postgres-store.ts';
import { createBurrow } from '../../lib/index.ts';
import { assertError, startServer, type RunningServer } from '../helpers.ts';

/**
 * Two `burrow serve` processes over one PostgreSQL database, started at the same moment on an
 * empty database as an ordinary role. Figures (printed): the 200 parallel creates' wall time and
 * how many writes the kill -9 interrupted.
 */

const cluster = await testCluster();
const OPERATOR = 'two-servers-operator-token';
const asOperator = { token: OPERATOR };

async function countRows(url: string, where: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query(`SELECT count(*) AS n FROM burrow.records WHERE ${where}`)).rows[0].n);
  } finally {
    await client.end();
  }
}

describe('two servers on one PostgreSQL database', { skip: cluster ? false : POSTGRES_MISSING }, () => {
  let url: string;
  let a: RunningServer;
  let b: RunningServer;
  let token: string;
  const serve = () => startServer(['--data', url, '--quiet', '--operator-token', OPERATOR]);
  const as = (server: RunningServer) => ({ token: (method: string, path: string, body?: unknown) => server.request(method, path, body, { token }) });

  before(async () => {
    url = await createDatabase(cluster!, 'two');
    const started = await Promise.allSettled([serve(), serve()]);
    [a, b] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined)) as [RunningServer, RunningServer];
    for (const s of started) if (s.status === 'rejected') throw s.reason;
  });

  after(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
  });

  test('starting at once on an empty database bootstraps one default account with one key', async () => {
    const printed = [a.token, b.token].filter((t) => t !== undefined);
    assert.equal(printed.length, 1, 'exactly one server created the account and printed its key');
    token = printed[0]!;
    assert.equal(await countRows(url, `kind = 'account'`), 1);
    assert.equal(await countRows(url, `kind = 'api_key'`), 1);
    for (const server of [a, b]) assert.equal((await server.request('GET', '/api_keys', undefined, { token })).body.keys.length, 1);
  });

  test('a write through A is read through B at once, and a delete through B is seen by A', async () => {
    const created = await as(a).token('POST', '/ip_policies', { description: 'from A' });
    assert.equal(created.status, 201);
    assert.equal((await as(b).token('GET', `/ip_policies/${created.body.id}`)).body.description, 'from A');
    assert.equal((await as(b).token('DELETE', `/ip_policies/${created.body.id}`)).status, 204);
    assert.equal((await as(a).token('GET', `/ip_policies/${created.body.id}`)).status, 404);
  });

  test('200 parallel creates split between A and B give 200 distinct ids and identical lists', async () => {
    const started = performance.now();
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, n) => as(n % 2 === 0 ? a : b).token('POST', '/credentials', { description: `c${n}` })),
    );
    const ms = performance.now() - started;
    assert.deepEqual(results.filter((r) => r.status !== 201).map((r) => r.body), []);
    const ids = new Set(results.map((r) => r.body.id));
    assert.equal(ids.size, 200);
    const list = async (server: RunningServer) => {
      const out: string[] = [];
      for (let path = '/credentials?limit=100'; ; ) {
        const page = (await as(server).token('GET', path)).body;
        out.push(...page.credentials.map((c: { id: string }) => c.id));
        if (!page.next_page_uri) return out;
        path = new URL(page.next_page_uri).pathname + new URL(page.next_page_uri).search;
      }
    };
    const [fromA, fromB] = await Promise.all([list(a), list(b)]);
    assert.deepEqual(fromA, fromB);
    assert.deepEqual(new Set(fromA), ids);
    console.log(`# two servers: 200 parallel creates in ${ms.toFixed(0)} ms (${(200_000 / ms).toFixed(0)}/s)`);
  });

  test('parallel PATCHes of different fields of one record through A and B lose nothing', async () => {
    const key = (await as(a).token('POST', '/api_keys', {})).body;
    for (let round = 0; round < 25; round++) {
      const [viaA, viaB] = await Promise.all([
        as(a).token('PATCH', `/api_keys/${key.id}`, { description: `d${round}` }),
        as(b).token('PATCH', `/api_keys/${key.id}`, { metadata: `m${round}` }),
      ]);
      assert.deepEqual([viaA.status, viaB.status], [200, 200]);
      const now = (await as(round % 2 ? a : b).token('GET', `/api_keys/${key.id}`)).body;
      assert.deepEqual([now.description, now.metadata], [`d${round}`, `m${round}`]);
    }
  });

  test('first secrets written through A and B at once are sealed with one key, kept once in the database', async () => {
    const vault = await as(a).token('POST', '/vaults', { name: 'shared' });
    assert.equal(vault.status, 201);
    const writes = await Promise.all(
      Array.from({ length: 10 }, (_, i) => as(i % 2 ? b : a).token('POST', '/vault_secrets', { name: `S${i}`, value: `two-servers-value-${i}`, vault_id: vault.body.id })),
    );
    assert.deepEqual(writes.map((w) => w.status), Array(10).fill(201));
    assert.equal(await countRows(url, `kind = 'setting' AND id = 'secrets_key'`), 1);
    assert.equal(await countRows(url, `kind = 'secret' AND data::text LIKE '%two-servers-value-%'`), 0, 'no plaintext in the database');
    const reader = createBurrow({ store: await openPostgresStore({ url }) });
    try {
      const accountId = (await reader.authenticate(`Bearer ${token}`)).account;
      for (const [i, w] of writes.entries()) assert.equal(await reader.revealSecretValue(accountId, w.body.id), `two-servers-value-${i}`);
    } finally {
      await reader.close();
    }
  });

  test('two servers racing for one hostport: exactly one 201 and one 409 envelope', async () => {
    for (let round = 0; round < 5; round++) {
      const hostport = `race${round}.tcp.example.com:${20000 + round}`;
      const results = await Promise.all([a, b].map((server) => as(server).token('POST', '/edges/tcp', { hostports: [hostport] })));
      assert.deepEqual(results.map((r) => r.status).sort(), [201, 409], JSON.stringify(results.map((r) => r.body)));
      assertError(results.find((r) => r.status === 409)!, 409, 7122, /is already used by TCP edge/);
    }
  });

  test('an agent session connected through A is listed and commandable through B', async () => {
    const credential = (await as(a).token('POST', '/credentials', { acl: [] })).body;
    const session = await a.request('POST', '/_burrow/agents', { token: credential.token }, asOperator);
    assert.equal(session.status, 201, JSON.stringify(session.body));
    const listed = (await as(b).token('GET', '/tunnel_sessions')).body.tunnel_sessions.map((s: { id: string }) => s.id);
    assert.ok(listed.includes(session.body.id));
    assert.equal((await as(b).token('POST', `/tunnel_sessions/${session.body.id}/stop`, {})).status, 204);
    assert.equal((await as(a).token('GET', `/tunnel_sessions/${session.body.id}`)).status, 404);
  });

  test('a key deleted through A is refused by B at once', async () => {
    const key = (await as(a).token('POST', '/api_keys', {})).body;
    assert.equal((await b.request('GET', '/api_keys?limit=1', undefined, { token: key.token })).status, 200);
    assert.equal((await as(a).token('DELETE', `/api_keys/${key.id}`)).status, 204);
    assertError(await b.request('GET', '/api_keys?limit=1', undefined, { token: key.token }), 401, 203, /unknown or was deleted/);
  });

  test('kill -9 of A during writes loses no acknowledged write, and A restarts on the same database', async () => {
    const acknowledged: string[] = [];
    let failed = 0;
    const writer = async () => {
      for (;;) {
        const res = await as(a).token('POST', '/ip_policies', { description: 'before the kill' }).catch(() => undefined);
        if (!res) return;
        if (res.status === 201) acknowledged.push(res.body.id);
        else failed++;
      }
    };
    const writers = Array.from({ length: 8 }, writer);
    while (acknowledged.length < 100) await new Promise((resolve) => setTimeout(resolve, 10));
    await a.stop('SIGKILL');
    await Promise.all(writers);
    assert.equal(failed, 0);
    for (const id of acknowledged) assert.equal((await as(b).token('GET', `/ip_policies/${id}`)).status, 200, `${id} was acknowledged`);
    a = await serve();
    assert.equal(a.token, undefined, 'the restart finds the default account');
    const again = await as(a).token('GET', `/ip_policies/${acknowledged.at(-1)}`);
    assert.equal(again.status, 200);
    console.log(`# two servers: kill -9 after ${acknowledged.length} acknowledged writes; all readable through B and through the restarted A`);
  });
});

describe('two servers started at once on an empty database with the same --api-key', { skip: cluster ? false : POSTGRES_MISSING }, () => {
  const KEY = 'two-servers-shared-admin-key-0123456789';

  /**
   * Starts two servers on `url` that bootstrap at the same moment: the records table is locked
   * until both wait for it (their first read of the default account), then released.
   */
  async function startTogether(url: string) {
    await (await openPostgresStore({ url })).close();
    const [holder, watcher] = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
    await Promise.all([holder.connect(), watcher.connect()]);
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE burrow.records IN ACCESS EXCLUSIVE MODE');
      const starting = Promise.allSettled([0, 1].map(() => startServer(['--data', url, '--quiet', '--api-key', KEY])));
      // Asked outside a transaction, so each answer is fresh (a transaction sees one statistics snapshot).
      const waiting = `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'burrow' AND wait_event_type = 'Lock'`;
      while (Number((await watcher.query(waiting)).rows[0].n) < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      await holder.query('COMMIT');
      return await starting;
    } finally {
      await Promise.all([holder.end(), watcher.end()]);
    }
  }

  test('both serve, and the default account is made once, with that key as its only key (3 rounds)', async () => {
    for (let round = 1; round <= 3; round++) {
      const url = await createDatabase(cluster!, 'samekey');
      const started = await startTogether(url);
      const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      try {
        assert.deepEqual(started.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason)), [], `round ${round}: both servers started`);
        assert.equal(await countRows(url, `kind = 'account'`), 1, `round ${round}`);
        assert.equal(await countRows(url, `kind = 'api_key'`), 1, `round ${round}`);
        assert.equal(await countRows(url, `kind = 'setting' AND id = 'default_account'`), 1, `round ${round}`);
        for (const server of servers) {
          const keys = await server.request('GET', '/api_keys', undefined, { token: KEY });
          assert.equal(keys.status, 200, `round ${round}: ${keys.text}`);
          assert.equal(keys.body.keys.length, 1);
          assert.ok(!server.output.join('\n').includes('    at '), `round ${round}: no stack trace:\n${server.output.join('\n')}`);
        }
      } finally {
        await Promise.all(servers.map((server) => server.stop('SIGKILL')));
      }
    }
  });
});
