import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import pg from 'pg';
import { createFetchHandler } from '../../../adapters/http/fetch-handler.ts';
import { MIGRATIONS } from '../../../adapters/stores/postgres/migrations.ts';
import { openPostgresStore, PostgresStore, SESSION_SETTINGS } from '../../../adapters/stores/postgres-store.ts';
import { createBurrow, type StoredRecord } from '../../../lib/index.ts';
import { createDatabase, freshSchema, POSTGRES_MISSING, testCluster } from '../../fixtures/postgres-cluster.ts';
import { assertError, sendRequest, startServer } from '../../helpers.ts';
import { runStoreConformance } from './conformance.ts';

const cluster = await testCluster();
const skip = cluster ? false : POSTGRES_MISSING;
const SCOPE = { account: 'ac_1', kind: 'counter' };

if (cluster) {
  runStoreConformance('postgres', {
    create: async () => openPostgresStore({ url: cluster.url, schema: freshSchema() }),
    noNulInKeys: 'PostgreSQL text cannot hold U+0000; lib/ keeps such keys out of every store (storableKey)',
  });
}

/** A TCP relay to PostgreSQL that a test can cut (every connection dropped, port closed) and restore. */
async function cuttableRelay(target: number) {
  const sockets = new Set<Socket>();
  let server: Server;
  const listen = (port: number) =>
    new Promise<number>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(target, '127.0.0.1');
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => undefined);
          socket.on('close', () => (client.destroy(), upstream.destroy()));
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const port = await listen(0);
  const cut = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    });
  return { port, cut, restore: () => listen(port) };
}

async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

describe('postgres: transactions', { skip }, () => {
  test('a serialization failure runs the callback again, and no update is lost', async () => {
    const store = await openPostgresStore({ url: cluster!.url, schema: freshSchema() });
    try {
      let runs = 0;
      let arrived = 0;
      let release!: () => void;
      const bothRead = new Promise<void>((resolve) => (release = resolve));
      const increment = () =>
        store.transaction(async (tx) => {
          runs++;
          const current = await tx.get(SCOPE, 'c');
          if (runs <= 2 && ++arrived === 2) release();
          if (runs <= 2) await bothRead;
          await tx.put(SCOPE, { id: 'c', n: Number(current?.n ?? 0) + 1 });
        });
      await Promise.all([increment(), increment()]);
      assert.equal((await store.get(SCOPE, 'c'))?.n, 2);
      assert.ok(runs >= 3, `the losing callback ran again (${runs} runs)`);
    } finally {
      await store.close();
    }
  });

  test('a re-run locks the records its failed run wrote, so contended re-runs take turns instead of conflicting again', async () => {
    // Two stores (two servers) on one schema; 32 increments of one record whose first runs all
    // read before any writes: one commits, 31 conflict. With two runs at most, every re-run must
    // succeed, which it does only because re-runs of one record wait for each other.
    const schema = freshSchema();
    const stores = await Promise.all([0, 1].map(() => openPostgresStore({ url: cluster!.url, schema, maxAttempts: 2, poolSize: 16 })));
    try {
      await stores[0]!.transaction((tx) => tx.put(SCOPE, { id: 'c', n: 0 }));
      const parties = 32;
      let arrived = 0;
      let release!: () => void;
      const allRead = new Promise<void>((resolve) => (release = resolve));
      const increment = (store: PostgresStore) => {
        let runs = 0;
        return store.transaction(async (tx) => {
          const current = await tx.get(SCOPE, 'c');
          if (++runs === 1) {
            if (++arrived === parties) release();
            await allRead;
          }
          await tx.put(SCOPE, { id: 'c', n: Number(current!.n) + 1 });
        });
      };
      const results = await Promise.allSettled(Array.from({ length: parties }, (_, n) => increment(stores[n % 2]!)));
      assert.deepEqual(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)), []);
      assert.equal((await stores[1]!.get(SCOPE, 'c'))?.n, parties);
      assert.equal(stores[0]!.stats.retried + stores[1]!.stats.retried, parties - 1);
      assert.equal(stores[0]!.stats.exhausted + stores[1]!.stats.exhausted, 0);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  test('a database error that the callback caught still fails the transaction, and nothing is kept', async () => {
    const store = await openPostgresStore({ url: cluster!.url, schema: freshSchema() });
    try {
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.put(SCOPE, { id: 'kept?' });
          // Longer than a btree index entry may be: PostgreSQL refuses the row.
          await tx.put(SCOPE, { id: randomBytes(8000).toString('base64') }).catch(() => undefined);
        }),
        /index row requires \d+ bytes/,
      );
      assert.equal(await store.get(SCOPE, 'kept?'), undefined);
    } finally {
      await store.close();
    }
  });
});

/** The round trips `call` made to the database, and its answer. */
async function roundTrips<T>(store: PostgresStore, call: () => Promise<T>): Promise<[number, T]> {
  const before = store.stats.roundTrips;
  const answer = await call();
  return [store.stats.roundTrips - before, answer];
}

describe('postgres: round trips per request', { skip }, () => {
  test('with a key seen before, a GET, a list and a filtered list are one statement each, and answer what is committed', async () => {
    const store = await openPostgresStore({ url: cluster!.url, schema: freshSchema() });
    try {
      const burrow = createBurrow({ store });
      const { token } = await burrow.createAccount();
      const policies = burrow.client(token).resource('ip_policies');
      const first = await policies.create({ description: 'one' });
      const second = await policies.create({ description: 'two' });
      const trips = <T>(call: () => Promise<T>) => roundTrips(store, call);
      assert.deepEqual(await trips(() => policies.get(first.id)), [1, first]);
      const [listTrips, page] = await trips(() => policies.list({ limit: '1' }));
      assert.equal(listTrips, 1);
      assert.deepEqual(page.ip_policies.map((p: { id: string }) => p.id), [second.id]);
      const [beforeTrips, older] = await trips(() => policies.list({ before_id: second.id }));
      assert.equal(beforeTrips, 1);
      assert.deepEqual(older.ip_policies.map((p: { id: string }) => p.id), [first.id]);
      const [filterTrips, filtered] = await trips(() => policies.list({ filter: "obj.description == 'one'" }));
      assert.equal(filterTrips, 1);
      assert.deepEqual(filtered.ip_policies.map((p: { id: string }) => p.id), [first.id]);
      assert.equal((await trips(() => policies.create({ description: 'three' })))[0], 3, 'the key; BEGIN, the record and what the write reads; COMMIT');
      // The prefetch is no cache: a deleted record, a deleted key are seen by the next request.
      await policies.delete(first.id);
      await assert.rejects(policies.get(first.id), { status: 404 });
      const key = (await burrow.client(token).resource('api_keys').list()).keys[0];
      await burrow.client(token).resource('api_keys').delete(key.id);
      await assert.rejects(policies.get(second.id), { status: 401 });
    } finally {
      await store.close();
    }
  });
});

describe('postgres: reads share pipelined connections', { skip }, () => {
  const ids = Array.from({ length: 50 }, (_, i) => `rec_${String(i).padStart(2, '0')}`);
  /** A store on a database of its own (its connections counted alone), holding `ids`. */
  async function filledStore(poolSize?: number): Promise<{ url: string; schema: string; store: PostgresStore }> {
    const url = await createDatabase(cluster!, 'reads');
    const schema = freshSchema();
    const store = await openPostgresStore({ url, schema, ...(poolSize ? { poolSize } : {}) });
    await store.transaction(async (tx) => {
      for (const [n, id] of ids.entries()) await tx.put(SCOPE, { id, n });
    });
    return { url, schema, store };
  }
  const burrowConnections = async (url: string) =>
    (await query(url, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'burrow'")).rows[0].n as number;

  test('reads of many requests at once go on a few connections, and each gets its own answer', async () => {
    const { url, store } = await filledStore(20);
    try {
      const reads = Array.from({ length: 200 }, (_, i) =>
        i % 4 === 3 ? store.page(SCOPE, { limit: 2, beforeId: ids[i % 50] }) : store.get(SCOPE, ids[i % 50]!),
      );
      for (const [i, answer] of (await Promise.all(reads)).entries()) {
        if (i % 4 === 3) assert.deepEqual((answer as { id: string }[]).map((record) => record.id), ids.slice(Math.max(0, (i % 50) - 2), i % 50).reverse());
        else assert.deepEqual(answer, { id: ids[i % 50], n: i % 50 });
      }
      // 200 reads at once on a pool of 20: the reads' few connections (at most 4) and the one the writes used.
      assert.ok((await burrowConnections(url)) <= 5, `${await burrowConnections(url)} connections`);
    } finally {
      await store.close();
    }
  });

  test('reads by key asked in one turn are one statement, and each read gets its own records', async () => {
    const { store } = await filledStore();
    try {
      const before = store.stats.roundTrips;
      const [one, none, many, paged] = await Promise.all([
        store.get(SCOPE, 'rec_07'),
        store.get(SCOPE, 'rec_missing'),
        store.readMany([{ scope: SCOPE, id: 'rec_03' }, { scope: SCOPE, id: 'rec_missing' }, { scope: { ...SCOPE, kind: 'other' }, id: 'rec_03' }, { scope: SCOPE, id: 'rec_01' }]),
        store.readMany([{ scope: SCOPE, id: 'rec_02' }, { scope: SCOPE, page: { limit: 1 } }]),
      ]);
      assert.deepEqual([one, none], [{ id: 'rec_07', n: 7 }, undefined]);
      assert.deepEqual(many, [{ id: 'rec_03', n: 3 }, undefined, undefined, { id: 'rec_01', n: 1 }]);
      assert.deepEqual(paged, [{ id: 'rec_02', n: 2 }, [{ id: 'rec_49', n: 49 }]]);
      // The three reads by key alone shared a statement; the one with a page went by itself.
      assert.equal(store.stats.roundTrips - before, 2);
      const reads = await Promise.all(Array.from({ length: 2500 }, (_, i) => store.get(SCOPE, ids[i % 50]!)));
      for (const [i, record] of reads.entries()) assert.equal(record?.id, ids[i % 50]);
      assert.equal(store.stats.roundTrips - before, 2 + 3, '2,500 keys: statements of at most 1,000');
    } finally {
      await store.close();
    }
  });

  test('a read whose keys PostgreSQL refuses fails alone: the reads that shared its statement answer', async () => {
    const { store } = await filledStore();
    try {
      const [good, bad, alsoGood] = await Promise.allSettled([store.get(SCOPE, 'rec_05'), store.get(SCOPE, 'bad\u0000id'), store.readMany([{ scope: SCOPE, id: 'rec_06' }])]);
      assert.deepEqual(good, { status: 'fulfilled', value: { id: 'rec_05', n: 5 } });
      assert.equal(bad.status, 'rejected');
      assert.match(String((bad as PromiseRejectedResult).reason), /0x00/);
      assert.deepEqual(alsoGood, { status: 'fulfilled', value: [{ id: 'rec_06', n: 6 }] });
    } finally {
      await store.close();
    }
  });

  test('a read connection that dies under reads in flight is replaced, and every read answers', async () => {
    const { url, store } = await filledStore();
    try {
      // Reads keep coming, a statement of them each turn, until the read connection is gone.
      const reads: Promise<StoredRecord | undefined>[] = [];
      let terminated = false;
      const reading = (async () => {
        while (!terminated) {
          for (let i = 0; i < 20; i++) reads.push(store.get(SCOPE, ids[reads.length % 50]!));
          await new Promise(setImmediate);
        }
      })();
      // The connection whose last statement is a read's (the writes' connection stays).
      const { rows } = await query(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'burrow' AND query LIKE 'SELECT n, data FROM %'");
      terminated = true;
      await reading;
      assert.equal(rows.length, 1);
      for (const [i, record] of (await Promise.all(reads)).entries()) assert.equal(record?.id, ids[i % 50]);
      assert.deepEqual(await store.get(SCOPE, ids[7]!), { id: ids[7], n: 7 });
    } finally {
      await store.close();
    }
  });

  test('a store left open after its reads does not keep the process alive', { timeout: 60_000 }, async () => {
    const { url, schema, store } = await filledStore();
    await store.close();
    const script = `
      import { openPostgresStore } from ${JSON.stringify(new URL('../../../adapters/stores/postgres-store.ts', import.meta.url).pathname)};
      const store = await openPostgresStore({ url: ${JSON.stringify(url)}, schema: ${JSON.stringify(schema)} });
      const found = await Promise.all([store.get(${JSON.stringify(SCOPE)}, 'rec_01'), store.page(${JSON.stringify(SCOPE)}, { limit: 1 })]);
      console.log(found[0].id, found[1][0].id);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    assert.equal(code, 0);
    assert.equal(output.trim(), 'rec_01 rec_49');
  });

  test('the statements keep an index plan, also one made while the table was small', async () => {
    const { url, schema, store } = await filledStore();
    try {
      await store.readMany([{ scope: SCOPE, id: ids[1]! }, { scope: SCOPE, id: ids[2]! }]);
      const sent = await query(url, "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'burrow' AND query LIKE '%unnest(%'");
      const text = sent.rows[0]?.query as string;
      assert.ok(text, 'the store sent its readMany statement');
      const planOf = async (options: string) => {
        const client = new pg.Client({ connectionString: url, options });
        await client.connect();
        try {
          await client.query(`ANALYZE "${schema}".records`);
          await client.query(`PREPARE reads AS ${text}`);
          const { rows } = await client.query("EXPLAIN EXECUTE reads ('{ac_1}', '{counter}', '{rec_01}')");
          return rows.map((row) => row['QUERY PLAN']).join('\n');
        } finally {
          await client.end();
        }
      };
      // The control: a plan kept for any values, on 50 rows, scans the table.
      assert.match(await planOf('-c plan_cache_mode=force_generic_plan'), /Seq Scan/);
      const kept = await planOf(SESSION_SETTINGS);
      assert.match(kept, /Index Scan using records_pkey/);
      assert.doesNotMatch(kept, /Seq Scan/);
    } finally {
      await store.close();
    }
  });
});

describe('postgres: a transaction\'s round trips', { skip }, () => {
  test('statements go together: BEGIN with the first, puts with the next statement or COMMIT', async () => {
    const store = await openPostgresStore({ url: cluster!.url, schema: freshSchema() });
    try {
      const trips = async (work: Parameters<typeof store.transaction>[0]) => (await roundTrips(store, () => store.transaction(work)))[0];
      assert.equal(await trips(async (tx) => tx.put(SCOPE, { id: 'a', n: 1 })), 1, 'BEGIN, the put and COMMIT');
      assert.equal(await trips(async (tx) => void (await tx.get(SCOPE, 'a'))), 2, 'BEGIN and the read; COMMIT');
      assert.equal(await trips(async () => undefined), 0);
      assert.equal(
        await trips(async (tx) => {
          const a = await tx.get(SCOPE, 'a');
          await tx.put(SCOPE, { id: 'a', n: Number(a!.n) + 1 });
          await tx.put(SCOPE, { id: 'b', n: 1 });
          assert.equal((await tx.get(SCOPE, 'a'))!.n, 2, 'a read sees the puts sent ahead of it');
          await tx.put(SCOPE, { id: 'c', n: 1 });
        }),
        3,
      );
      assert.deepEqual((await store.page(SCOPE, { limit: 5 })).map((r) => [r.id, r.n]), [['c', 1], ['b', 1], ['a', 2]]);
      // A failed statement fails the statements sent behind it and the transaction: nothing is kept.
      await assert.rejects(store.transaction(async (tx) => {
        await tx.put(SCOPE, { id: 'd', n: 1 });
        await tx.page(SCOPE, { beforeId: 'z', limit: -1 });
      }));
      assert.equal(await store.get(SCOPE, 'd'), undefined);
      assert.equal((await store.get(SCOPE, 'a'))!.n, 2);
    } finally {
      await store.close();
    }
  });
});

describe('postgres: schema', { skip }, () => {
  test('servers opening an empty database at once create the schema once, as an ordinary role', async () => {
    const url = await createDatabase(cluster!, 'migrate');
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ url })));
    await stores[0]!.transaction((tx) => tx.put(SCOPE, { id: 'c', n: 1 }));
    for (const store of stores) assert.equal((await store.get(SCOPE, 'c'))?.n, 1);
    await Promise.all(stores.map((store) => store.close()));
    const applied = await query(url, 'SELECT version, name FROM burrow.schema_migrations ORDER BY version');
    assert.deepEqual(applied.rows, MIGRATIONS.map(({ version, name }) => ({ version, name })));
    assert.equal((await query(url, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`)).rows[0].rolsuper, false);
  });

  test('instances bootstrapping the default account at once create one account with one key', async () => {
    const url = await createDatabase(cluster!, 'bootstrap');
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ url })));
    try {
      const results = await Promise.all(stores.map((store) => createBurrow({ store }).ensureDefaultAccount()));
      assert.equal(results.filter((r) => r.created).length, 1);
      assert.equal(new Set(results.map((r) => r.accountId)).size, 1);
      assert.deepEqual(results.filter((r) => r.token !== undefined).length, 1);
      assert.equal((await query(url, `SELECT count(*) AS n FROM burrow.records WHERE kind = 'account'`)).rows[0].n, '1');
      assert.equal((await query(url, `SELECT count(*) AS n FROM burrow.records WHERE kind = 'api_key'`)).rows[0].n, '1');
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  test('a schema newer than this Burrow is refused with a message', async () => {
    const url = await createDatabase(cluster!, 'newer');
    await (await openPostgresStore({ url })).close();
    await query(url, `INSERT INTO burrow.schema_migrations (version, name) VALUES (999, 'from the future')`);
    await assert.rejects(openPostgresStore({ url }), /schema burrow is at version 999, newer than this Burrow knows \(\d+\); upgrade Burrow/);
  });

  test('the URL may name the schema, and the password never appears in messages', async () => {
    const store = new PostgresStore({ url: 'postgresql://burrow:s3cret@127.0.0.1:1/db?schema=other' });
    assert.equal(store.location, 'burrow@127.0.0.1:1/db');
    await assert.rejects(store.open(), (error: Error) => !error.message.includes('s3cret') && /PostgreSQL at burrow@127\.0\.0\.1:1\/db is unreachable/.test(error.message));
    await store.close();
    assert.throws(() => new PostgresStore({ url: 'mysql://x@y/z' }), /the scheme must be postgres:\/\//);
  });
});

describe('postgres: instance-wide unique values across servers', { skip }, () => {
  test('two instances on one database never hand out one reserved address twice', async () => {
    const url = await createDatabase(cluster!, 'addrs');
    const stores = await Promise.all([openPostgresStore({ url }), openPostgresStore({ url })]);
    try {
      // One port on each of the region's nine hosts: 18 parallel requests for 9 addresses.
      const simulation = { regions: ['us'], reservedAddrPorts: { first: 40000, last: 40000 } };
      const [a, b] = stores.map((store) => createBurrow({ store, simulation }));
      const { token } = await a!.ensureDefaultAccount();
      await b!.ensureDefaultAccount();
      const clients = [a!.client(token!), b!.client(token!)];
      const results = await Promise.allSettled(Array.from({ length: 18 }, (_, n) => clients[n % 2]!.resource('reserved_addrs').create({})));
      const addrs = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.addr as string] : []));
      const refused = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as { code: number; status: number })] : []));
      assert.equal(addrs.length, 9);
      assert.equal(new Set(addrs).size, 9, `an address was handed out twice: ${addrs.join(' ')}`);
      assert.deepEqual(refused.map((e) => [e.status, e.code]), Array(9).fill([409, 503]));
      assert.equal((await query(url, `SELECT count(*) AS n FROM burrow.records WHERE kind = 'reserved_addr'`)).rows[0].n, '9');
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});

describe('postgres: a database that goes away', { skip }, () => {
  test('answers 503 envelopes while it is unreachable, and serves again when it is back', async () => {
    const relay = await cuttableRelay(Number(new URL(cluster!.url).port));
    const url = new URL(cluster!.url);
    url.port = String(relay.port);
    const store = await openPostgresStore({ url: url.toString(), schema: freshSchema(), connectTimeoutMs: 1000 });
    try {
      const burrow = createBurrow({ store });
      const { token } = await burrow.createAccount();
      const handle = createFetchHandler(burrow, { operatorToken: 'op' });
      const call = (method: string, path: string, body?: unknown) => sendRequest(handle, `http://burrow.test${path}`, method, body, { token });
      assert.equal((await call('POST', '/ip_policies', {})).status, 201);

      await relay.cut();
      const where = new RegExp(`burrow@|127\\.0\\.0\\.1|${relay.port}|/burrow`);
      for (const [method, path, body] of [['GET', '/ip_policies'], ['POST', '/ip_policies', {}]] as const) {
        const res = await call(method, path, body);
        assertError(res, 503, 9005, /^the store is unavailable, try again$/);
        assert.equal(res.headers.get('retry-after'), '1');
      }
      const unauthenticated = await sendRequest(handle, 'http://burrow.test/ip_policies', 'GET', undefined, { token: 'not-a-key-0123456789' });
      assertError(unauthenticated, 503, 9005, /^the store is unavailable, try again$/);
      const health = await sendRequest(handle, 'http://burrow.test/_burrow/health', 'GET');
      assertError(health, 503, 9005, /^the store \(postgres\) is unavailable$/);
      assert.doesNotMatch(health.text, where, 'health without the operator token names no user, host, port or database');
      const asOperator = await sendRequest(handle, 'http://burrow.test/_burrow/health', 'GET', undefined, { token: 'op' });
      assertError(asOperator, 503, 9005, new RegExp(`^the store \\(postgres\\) is unavailable: PostgreSQL at burrow@127\\.0\\.0\\.1:${relay.port}/burrow is unreachable`));

      await relay.restore();
      assert.equal((await call('POST', '/ip_policies', {})).status, 201);
      assert.equal((await call('GET', '/ip_policies')).body.ip_policies.length, 2);
      assert.equal((await sendRequest(handle, 'http://burrow.test/_burrow/health', 'GET')).status, 200);
    } finally {
      await store.close();
      await relay.cut();
    }
  });
});

describe('postgres: the server log when the database goes away', { skip }, () => {
  test('says the store was lost once, however many requests it fails, and regained once it answers, without a request', async (t) => {
    const relay = await cuttableRelay(Number(new URL(cluster!.url).port));
    t.after(() => relay.cut());
    const url = new URL(cluster!.url);
    url.port = String(relay.port);
    url.searchParams.set('schema', freshSchema());
    const server = await startServer(['--data', url.toString(), '--log-format', 'json']);
    t.after(() => server.stop());
    const events = (lines: string[], name: string) => lines.filter((line) => line.startsWith('{') && JSON.parse(line).event === name).map((line) => JSON.parse(line) as Record<string, any>);

    await relay.cut();
    for (let i = 0; i < 3; i++) assert.equal((await server.request('GET', '/ip_policies')).status, 503);
    await relay.restore();
    // The store notices by itself (it asks the database each second while it is lost).
    const lines = await server.outputUntil((lines) => events(lines, 'store_regained').length > 0);
    const [lost, ...more] = events(lines, 'store_lost');
    assert.deepEqual(more, [], 'once, not per request');
    assert.match(lost!.reason, new RegExp(`^PostgreSQL at burrow@127\\.0\\.0\\.1:${relay.port}/burrow is unreachable`));
    assert.match(lost!.msg, /^store lost: PostgreSQL at /);
    assert.equal(events(lines, 'store_regained').length, 1);
    assert.ok(!lines.join('\n').includes(url.password || 'no password in this URL'), 'never the password');
    assert.equal((await server.request('GET', '/ip_policies')).status, 200);
  });
});

describe('burrow serve --data postgres://…', () => {
  test('an unreachable database stops start-up with exit code 1 and a message without the password', async () => {
    const closed = await cuttableRelay(1);
    await closed.cut();
    await assert.rejects(
      startServer(['--data', `postgres://burrow:s3cret@127.0.0.1:${closed.port}/burrow`]),
      (error: Error) => !error.message.includes('s3cret') && new RegExp(`exited with 1: burrow: PostgreSQL at burrow@127\\.0\\.0\\.1:${closed.port}/burrow is unreachable \\(connect ECONNREFUSED`).test(error.message),
    );
  });

  test('an unparsable URL is a usage error (exit code 2)', async () => {
    await assert.rejects(startServer([], { BURROW_DATA: 'postgres://[nope' }), /exited with 2: burrow: --data must be postgres:\/\/USER@HOST:PORT\/DATABASE/);
  });
});
