/**
 * `npm run bench` (`-- --quick` for a shorter run): Burrow as users run it (the CLI, `burrow serve`,
 * spawned as its own process) against the practical ceiling (a bare node:http server answering the
 * same JSON from a Map) and json-server 0.17, plus the core in-process against a plain Map,
 * start-up and memory. Every HTTP figure is the median of several autocannon runs, and Burrow's
 * runs alternate with the bare server's so that each ratio compares runs that shared the machine's
 * load; the spread of the per-round ratios says how noisy the run was. Each server's CPU time per
 * request (from /proc) is printed too: it moves far less with load than requests per second.
 * Then the bounds of lib/limits.ts: how long the costliest input each one accepts holds the event
 * loop (test/bench/bounds.ts). Prints tables and one JSON line with every figure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { openJsonFileStore } from '../../adapters/stores/json-file-store.ts';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { openPostgresStore } from '../../adapters/stores/postgres-store.ts';
import { createBurrow, INSTANCE_SCOPE, StoreUnavailableError } from '../../lib/index.ts';
import { BARE_STARTUP, cpuMicros, firstAnswer, median } from '../fixtures/first-answer.ts';
import { tempDir } from '../fixtures/openssh.ts';
import { installPackedBurrow } from '../package/packed.ts';
import { measureBounds, type BoundFigure } from './bounds.ts';
import { measureFirstTunnel } from './first-tunnel.ts';
import { measureCluster, measureIngress } from './ingress.ts';
import { createDatabase, POSTGRES_MISSING, postgresBinDir, startPostgresCluster } from '../fixtures/postgres-cluster.ts';

const quick = process.argv.includes('--quick');
// `-- --startup` measures start-up alone (about a minute).
const startupOnly = process.argv.includes('--startup');
// `-- --stores` measures the three stores at 100k records and PostgreSQL contention alone.
const storesOnly = process.argv.includes('--stores');
// `-- --bounds` times the costliest input each bound of lib/limits.ts accepts, alone (a minute).
const boundsOnly = process.argv.includes('--bounds');
// `-- --checkpoints` times reset and checkpoint restore at 1,000 records on the memory store, alone.
const checkpointsOnly = process.argv.includes('--checkpoints');
// `-- --ingress` measures traffic through the ingress and the vendor's agent against direct, alone (test/bench/ingress.ts).
const ingressOnly = process.argv.includes('--ingress');
// `-- --tunnel` measures a test's first tunnel alone (test/bench/first-tunnel.ts).
const tunnelOnly = process.argv.includes('--tunnel');
// `-- --cluster` measures traffic through a server relaying to the agent's server against through that server, alone (test/bench/ingress.ts).
const clusterOnly = process.argv.includes('--cluster');
// `-- --hot` measures the hot path alone: GET and POST /ip_policies against the bare server (about 2 minutes).
const hotOnly = process.argv.includes('--hot');
// `-- --postgres` measures the PostgreSQL store against the memory store (issue #32's targets), alone.
const postgresOnly = process.argv.includes('--postgres');
const DURATION = quick ? 1.5 : 4;
const ROUNDS = quick ? 3 : 5;
const CONNECTIONS = 32;
const KEYS = 1000;
const TOKEN = 'bench-admin-token-0123456789';
const root = new URL('../../', import.meta.url).pathname;
const dir = tempDir('burrow-bench-');
/** Medians. */
const figures: Record<string, number> = {};
/** Every sample behind a median, for the JSON line. */
const samples: Record<string, number[]> = {};
/** 503 answers per load, summed over its rounds (a store too contended or unreachable to answer). */
const unavailable: Record<string, number> = {};
/** Same-round ratios: median and spread. */
const ratios: Record<string, { median: number; min: number; max: number }> = {};
/** The 1-minute load average while each ratio's rounds ran: lowest and highest, read before and after each round. */
const ratioLoads: Record<string, { min: number; max: number }> = {};
const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

/** Notes `loads` (load averages read while its rounds ran) for the ratio `name`. */
function noteLoads(name: string, loads: readonly number[]): void {
  const seen = ratioLoads[name];
  ratioLoads[name] = { min: Math.min(...loads, seen?.min ?? Infinity), max: Math.max(...loads, seen?.max ?? -Infinity) };
}

/** Runs a scenario; each ratio it adds that `rounds` did not note gets the load average before and after it. */
async function underLoad<T>(work: () => Promise<T>): Promise<T> {
  const before = loadAverage();
  const result = await work();
  const after = loadAverage();
  for (const name of Object.keys(ratios)) if (!ratioLoads[name]) noteLoads(name, [before, after]);
  return result;
}

interface Server {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function startProcess(command: string, args: string[], ready: RegExp): Promise<Server> {
  const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr!.on('data', (c) => (errors += c));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not start: ${errors}`)), 60_000);
    // Drains stdout for the whole life of the process (request log lines when logging is on).
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = ready.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!.replace(/\/$/, ''));
      }
    });
    child.once('exit', (code) => reject(new Error(`${command} exited with ${code}: ${errors}`)));
  });
  return { url, process: child, stop: () => stopChild(child) };
}

/** What `npm start -- …` runs. */
const burrowArgs = (extra: string[]) => ['--import', 'tsx', 'bin/burrow.ts', 'serve', '--port', '0', '--api-key', TOKEN, ...extra];
const startBurrow = (extra: string[] = ['--quiet']) => startProcess(process.execPath, burrowArgs(extra), /listening on (\S+)/);
const startBare = (count: number) => startProcess(process.execPath, ['--import', 'tsx', 'test/bench/bare-server.ts', String(count)], /listening on (\S+)/);

function jsonServerDb(count: number): string {
  const file = join(dir.path, `db-${count}.json`);
  const api_keys = Array.from({ length: count }, (_, i) => ({ id: `ak_${String(i).padStart(27, '0')}`, description: `key ${i}`, metadata: '', created_at: '2026-01-01T00:00:00Z' }));
  writeFileSync(file, JSON.stringify({ api_keys }));
  return file;
}
/** json-server in quiet mode (no per-request logging) prints nothing: poll until it answers. */
async function startJsonServer(count: number): Promise<Server> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(join(root, 'node_modules/.bin/json-server'), ['--port', String(port), '--host', '127.0.0.1', '--quiet', jsonServerDb(count)], { cwd: root, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 600) throw new Error('json-server did not start');
    if (await fetch(`${url}/api_keys?_limit=1`).then((r) => r.ok, () => false)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url, process: child, stop: () => stopChild(child) };
}

const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Service-Version': '2' };


interface Load {
  server: Server;
  path: string;
  method: 'GET' | 'POST' | 'PATCH';
  body?: unknown;
  /** Connections (default 32). */
  connections?: number;
  /** A second server loaded at the same time, as much (the rate is both servers' together). */
  alongside?: Server;
}

/**
 * One autocannon run: requests per second (2xx only), the server's CPU µs per request, and how
 * many 503s it answered (counted, not fatal: a store may refuse under contention); any other
 * non-2xx or a connection error stops the bench.
 */
async function run(load: Load): Promise<{ rate: number; cpu: number; unavailable: number }> {
  const servers = load.alongside ? [load.server, load.alongside] : [load.server];
  const cpu = () => servers.reduce((sum, server) => sum + cpuMicros(server.process.pid!), 0);
  const before = cpu();
  const results = await Promise.all(
    servers.map((server) =>
      autocannon({
        url: `${server.url}${load.path}`,
        method: load.method,
        headers,
        ...(load.body ? { body: JSON.stringify(load.body) } : {}),
        connections: load.connections ?? CONNECTIONS,
        duration: DURATION,
      }),
    ),
  );
  const used = cpu() - before;
  let rate = 0;
  let total = 0;
  let unavailable = 0;
  for (const result of results) {
    const refused = (result.statusCodeStats as Record<string, { count: number }> | undefined)?.['503']?.count ?? 0;
    if (result.non2xx > refused || result.errors > 0) throw new Error(`${load.method} ${load.path}: ${result.non2xx} non-2xx (${refused} of them 503), ${result.errors} errors`);
    rate += Math.round((result.requests.average * (result.requests.total - refused)) / Math.max(1, result.requests.total));
    total += result.requests.total;
    unavailable += refused;
  }
  return { rate, cpu: Math.round((used / Math.max(1, total)) * 10) / 10, unavailable };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

function record(name: string, values: number[]): void {
  samples[name] = values;
  figures[name] = Math.round(median(values) * 10) / 10;
}

/**
 * Runs each load `ROUNDS` times, the loads of one round back to back, and records per load the
 * median rate and server CPU per request; for `[name, of, base]` the median and spread of the
 * per-round ratios of `of` to `base`.
 */
async function rounds(loads: Record<string, Load>, pairs: [string, string, string][], rounds = ROUNDS): Promise<void> {
  const rates: Record<string, number[]> = {};
  const cpus: Record<string, number[]> = {};
  const loadsSeen = [loadAverage()];
  for (let i = 0; i < rounds; i++) {
    for (const [name, load] of Object.entries(loads)) {
      const { rate, cpu, unavailable: refused } = await run(load);
      unavailable[name] = (unavailable[name] ?? 0) + refused;
      (rates[name] ??= []).push(rate);
      (cpus[name] ??= []).push(cpu);
    }
    loadsSeen.push(loadAverage());
  }
  for (const name of Object.keys(loads)) {
    record(name, rates[name]!);
    record(`${name}_cpu_us`, cpus[name]!);
  }
  for (const [ratio, of, base] of pairs) {
    const perRound = rates[of]!.map((rate, i) => rate / rates[base]![i]!);
    ratios[ratio] = { median: round2(median(perRound)), min: round2(Math.min(...perRound)), max: round2(Math.max(...perRound)) };
    const cpuPerRound = cpus[base]!.map((cpu, i) => cpu / cpus[of]![i]!);
    ratios[`${ratio}_by_cpu`] = { median: round2(median(cpuPerRound)), min: round2(Math.min(...cpuPerRound)), max: round2(Math.max(...cpuPerRound)) };
    noteLoads(ratio, loadsSeen);
    noteLoads(`${ratio}_by_cpu`, loadsSeen);
  }
}

/** Creates `count` records on a running server (concurrently), answering the newest id. */
async function seedOverHttp(server: Server, count: number, path: string, listKey: string): Promise<string> {
  await autocannon({ url: `${server.url}${path}`, method: 'POST', headers, body: JSON.stringify({ description: 'seed' }), connections: 32, amount: count });
  const res = await fetch(`${server.url}${path}?limit=1`, { headers });
  return ((await res.json()) as Record<string, { id: string }[]>)[listKey]![0]!.id;
}

/**
 * The hot path (issue #32): GET /ip_policies/{id} and POST /ip_policies on the memory store against
 * the bare server, in alternating rounds (bare, Burrow, bare, …), and the GET with the request log on.
 */
async function hotPath() {
  const bare = await startBare(KEYS);
  const burrow = await startBurrow();
  const logging = await startBurrow([]);
  try {
    const bareId = `ipp_${String(5).padStart(27, '0')}`;
    const id = await seedOverHttp(burrow, KEYS, '/ip_policies', 'ip_policies');
    const loggedId = await seedOverHttp(logging, KEYS, '/ip_policies', 'ip_policies');
    await rounds(
      {
        bare_get: { server: bare, method: 'GET', path: `/ip_policies/${bareId}` },
        memory_get: { server: burrow, method: 'GET', path: `/ip_policies/${id}` },
        memory_get_logged: { server: logging, method: 'GET', path: `/ip_policies/${loggedId}` },
        bare_post: { server: bare, method: 'POST', path: '/ip_policies', body: { description: 'x' } },
        memory_post: { server: burrow, method: 'POST', path: '/ip_policies', body: { description: 'x' } },
        memory_post_key: { server: burrow, method: 'POST', path: '/api_keys', body: { description: 'x' } },
      },
      [
        ['get_vs_bare', 'memory_get', 'bare_get'],
        ['get_logged_vs_bare', 'memory_get_logged', 'bare_get'],
        ['post_vs_bare', 'memory_post', 'bare_post'],
        ['post_api_keys_vs_bare', 'memory_post_key', 'bare_post'],
      ],
    );
  } finally {
    await Promise.all([bare.stop(), burrow.stop(), logging.stop()]);
  }
}

async function httpScenarios() {
  await hotPath();
  const bare = await startBare(KEYS);
  const burrow = await startBurrow();
  try {
    const bareId = `ipp_${String(5).padStart(27, '0')}`;
    const policyId = await seedOverHttp(burrow, KEYS, '/ip_policies', 'ip_policies');
    await rounds(
      {
        bare_list: { server: bare, method: 'GET', path: '/ip_policies' },
        memory_list: { server: burrow, method: 'GET', path: '/ip_policies?limit=100' },
        bare_patch: { server: bare, method: 'PATCH', path: `/ip_policies/${bareId}`, body: { description: 'y' } },
        memory_patch: { server: burrow, method: 'PATCH', path: `/ip_policies/${policyId}`, body: { description: 'y' } },
      },
      [
        ['list_vs_bare', 'memory_list', 'bare_list'],
        ['patch_vs_bare', 'memory_patch', 'bare_patch'],
      ],
      quick ? 1 : 3,
    );
  } finally {
    await Promise.all([bare.stop(), burrow.stop()]);
  }

  // A page of 100 at 100,000 records against the same page at 1,000 (full run only).
  if (!quick) {
    const small = await startBurrow();
    const big = await startBurrow();
    try {
      await seedOverHttp(small, KEYS, '/ip_policies', 'ip_policies');
      await seedOverHttp(big, 100_000, '/ip_policies', 'ip_policies');
      await rounds(
        {
          list_1k: { server: small, method: 'GET', path: '/ip_policies?limit=100' },
          list_100k: { server: big, method: 'GET', path: '/ip_policies?limit=100' },
        },
        [['list_100k_vs_1k', 'list_100k', 'list_1k']],
        3,
      );
    } finally {
      await Promise.all([small.stop(), big.stop()]);
    }
  }

  // json-server 0.17, the stateful JSON-file mock a user would otherwise pick; its GET alternates
  // with Burrow's in fresh processes.
  const js = await startJsonServer(KEYS);
  const again = await startBurrow();
  try {
    const id = await seedOverHttp(again, KEYS, '/api_keys', 'keys');
    await rounds(
      {
        jsonserver_get: { server: js, method: 'GET', path: `/api_keys/ak_${String(5).padStart(27, '0')}` },
        memory_get_again: { server: again, method: 'GET', path: `/api_keys/${id}` },
      },
      [['get_vs_jsonserver', 'memory_get_again', 'jsonserver_get']],
      3,
    );
  } finally {
    await Promise.all([js.stop(), again.stop()]);
  }

  // The JSON-file store (durable writes) at 10,000 records against json-server at 10,000.
  const fileSize = quick ? 2000 : 10_000;
  const fileServer = await startBurrow(['--quiet', '--data', join(dir.path, 'burrow.json')]);
  const js10k = await startJsonServer(fileSize);
  try {
    const fileId = await seedOverHttp(fileServer, fileSize, '/api_keys', 'keys');
    await rounds(
      {
        file_get: { server: fileServer, method: 'GET', path: `/api_keys/${fileId}` },
        file_post: { server: fileServer, method: 'POST', path: '/api_keys', body: { description: 'x' } },
        jsonserver_post: { server: js10k, method: 'POST', path: '/api_keys', body: { description: 'x' } },
      },
      [['file_post_vs_jsonserver', 'file_post', 'jsonserver_post']],
      quick ? 1 : 3,
    );
  } finally {
    await Promise.all([fileServer.stop(), js10k.stop()]);
  }
}

/**
 * The three stores at 100,000 IP policies (10,000 with --quick), in rounds in the same run: the
 * PostgreSQL store (a throwaway local cluster, fsync off: this measures Burrow and its round trips,
 * not the disk) and the JSON-file store (durable) are seeded directly through their own store,
 * the memory store over HTTP; each is served by `burrow serve`. Ratios are against the memory
 * store measured in the same rounds. Then the contention figures: PostgreSQL serialization
 * retries for 200 parallel creates and for 32 clients PATCHing one record (in-process).
 */
async function storeScenarios() {
  if (!postgresBinDir()) {
    console.warn(`postgres figures skipped: ${POSTGRES_MISSING}`);
    return;
  }
  const count = quick ? 10_000 : 100_000;
  const cluster = await startPostgresCluster();
  const servers: Server[] = [];
  try {
    const url = await createDatabase(cluster, 'bench');
    await (await startBurrow(['--quiet', '--data', url])).stop();
    const id = (n: string) => `'ipp_' || lpad(${n}::text, 27, '0')`;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(
        `INSERT INTO burrow.records (account, kind, id, data)
         SELECT (SELECT data->>'value' FROM burrow.records WHERE kind = 'setting' AND id = 'default_account'), 'ip_policy', ${id('i')},
                jsonb_build_object('id', ${id('i')}, 'created_at', '2026-01-01T00:00:00Z', 'description', 'policy ' || i, 'metadata', '')
         FROM generate_series(0, $1 - 1) AS i`,
        [count],
      );
      await client.query('ANALYZE burrow.records');
    } finally {
      await client.end();
    }
    // The JSON file: the CLI creates it with the default account, then the same records go in.
    const file = join(dir.path, `stores-${count}.json`);
    await (await startBurrow(['--quiet', '--data', file])).stop();
    const store = await openJsonFileStore(file);
    try {
      const account = String((await store.get({ account: INSTANCE_SCOPE, kind: 'setting' }, 'default_account'))!.value);
      for (let from = 0; from < count; from += 10_000) {
        await store.transaction(async (tx) => {
          for (let i = from; i < Math.min(count, from + 10_000); i++) {
            const policyId = `ipp_${String(i).padStart(27, '0')}`;
            await tx.put({ account, kind: 'ip_policy' }, { id: policyId, created_at: '2026-01-01T00:00:00Z', description: `policy ${i}`, metadata: '' });
          }
        });
      }
    } finally {
      await store.close();
    }
    const postgres = await startBurrow(['--quiet', '--data', url]);
    servers.push(postgres);
    const jsonFile = await startBurrow(['--quiet', '--data', file]);
    servers.push(jsonFile);
    const memory = await startBurrow();
    servers.push(memory);
    const memoryId = await seedOverHttp(memory, count, '/ip_policies', 'ip_policies');
    const seededId = `ipp_${String(5).padStart(27, '0')}`;
    const at = `_${count}`;
    const loads: Record<string, Load> = {};
    for (const [name, server, policy] of [['memory', memory, memoryId], ['file', jsonFile, seededId], ['postgres', postgres, seededId]] as const) {
      loads[`${name}_get${at}`] = { server, method: 'GET', path: `/ip_policies/${policy}` };
      loads[`${name}_list${at}`] = { server, method: 'GET', path: '/ip_policies?limit=100' };
      loads[`${name}_post${at}`] = { server, method: 'POST', path: '/ip_policies', body: { description: 'x' } };
      // 32 clients changing one record: the worst case for serialisable transactions.
      loads[`${name}_patch_one${at}`] = { server, method: 'PATCH', path: `/ip_policies/${policy}`, body: { description: 'y' } };
    }
    const pairs: [string, string, string][] = [];
    for (const op of ['get', 'list', 'post', 'patch_one']) {
      for (const store of ['file', 'postgres']) pairs.push([`${store}_${op}_vs_memory${at}`, `${store}_${op}${at}`, `memory_${op}${at}`]);
    }
    await rounds(loads, pairs, quick ? 1 : 3);
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
  try {
    await contention(await createDatabase(cluster, 'contention'));
  } finally {
    await cluster.stop();
  }
}

/**
 * The PostgreSQL store against the memory store as issue #32 measures them (`-- --postgres` alone,
 * a few minutes): `burrow serve` on each, 1,000 IP policies seeded over HTTP, 16 connections, GET
 * by id, a list of 20 and POST, in rounds that alternate the stores; then two servers on one
 * database against one (the same GET, 16 connections on each server against 16 on one). The
 * cluster is a local throwaway one with fsync off: this measures Burrow and its round trips.
 */
async function postgresScenarios() {
  if (!postgresBinDir()) {
    console.warn(`postgres figures skipped: ${POSTGRES_MISSING}`);
    return;
  }
  const cluster = await startPostgresCluster();
  const servers: Server[] = [];
  try {
    const url = await createDatabase(cluster, 'perf');
    const memory = await startBurrow();
    servers.push(memory);
    const postgres = await startBurrow(['--quiet', '--data', url]);
    servers.push(postgres);
    const ids = { memory: await seedOverHttp(memory, KEYS, '/ip_policies', 'ip_policies'), postgres: await seedOverHttp(postgres, KEYS, '/ip_policies', 'ip_policies') };
    const loads: Record<string, Load> = {};
    for (const [op, method, path] of [['get', 'GET', ''], ['list', 'GET', '?limit=20'], ['post', 'POST', '']] as const) {
      for (const [name, server] of [['memory', memory], ['postgres', postgres]] as const) {
        loads[`pg_scenario_${name}_${op}`] = { server, method, path: `/ip_policies${op === 'get' ? `/${ids[name]}` : path}`, connections: 16, ...(method === 'POST' ? { body: { description: 'bench' } } : {}) };
      }
    }
    await rounds(
      loads,
      (['get', 'list', 'post'] as const).map((op) => [`postgres_${op}_vs_memory`, `pg_scenario_postgres_${op}`, `pg_scenario_memory_${op}`]),
      ROUNDS,
    );
    const second = await startBurrow(['--quiet', '--data', url]);
    servers.push(second);
    const get = { method: 'GET', path: `/ip_policies/${ids.postgres}`, connections: 16 } as const;
    await rounds({ pg_one_server_get: { server: postgres, ...get }, pg_two_servers_get: { server: postgres, alongside: second, ...get } }, [['postgres_two_servers_vs_one', 'pg_two_servers_get', 'pg_one_server_get']], ROUNDS);
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await cluster.stop();
  }
}

/** PostgreSQL serialization retries under contention, counted by the store itself (in-process). */
async function contention(url: string) {
  const store = await openPostgresStore({ url });
  try {
    const burrow = createBurrow({ store, baseUrl: 'http://bench.local' });
    const { token } = await burrow.createAccount();
    const client = burrow.client(token);
    const reset = () => Object.assign(store.stats, { committed: 0, retried: 0, exhausted: 0 });
    const creates: number[] = [];
    for (let round = 0; round < 3; round++) {
      reset();
      await Promise.all(Array.from({ length: 200 }, (_, n) => client.resource('credentials').create({ description: `c${n}` })));
      creates.push(store.stats.retried);
    }
    record('pg_retries_per_200_parallel_creates', creates);
    const policy = await client.resource('ip_policies').create({ description: 'hot' });
    reset();
    const deadline = Date.now() + DURATION * 1000;
    let refused = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (Date.now() < deadline) {
          await client.resource('ip_policies').update(policy.id, { description: `d${Math.random()}` }).catch((error: Error) => {
            if (!(error instanceof StoreUnavailableError)) throw error;
            refused++;
          });
        }
      }),
    );
    figures.pg_patch_one_record_committed = store.stats.committed;
    figures.pg_patch_one_record_retries = store.stats.retried;
    figures.pg_patch_one_record_gave_up = store.stats.exhausted;
    unavailable.pg_patch_one_record_in_process = refused;
  } finally {
    await store.close();
  }
}

/** Median ops/s of `count` sequential calls, over `rounds` rounds. */
async function timeOps(count: number, op: (i: number) => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i++) await op(i);
  return Math.round(count / ((performance.now() - started) / 1000));
}

async function inProcessScenarios() {
  const n = quick ? 5000 : 20_000;
  const burrow = createBurrow({ store: new MemoryStore(), baseUrl: 'http://bench.local' });
  const { token } = await burrow.createAccount();
  const keys = burrow.client(token).resource('api_keys');
  const ids: string[] = [];
  const map = new Map<string, Record<string, unknown>>();
  const mapIds: string[] = [];
  const series: Record<string, number[]> = { core_create: [], map_create: [], core_get: [], map_get: [], core_list: [], map_list: [] };
  // A plain Map doing the same work: validate a little, stamp, store a copy, answer a copy.
  for (let round = 0; round < ROUNDS; round++) {
    const base = ids.length;
    series.core_create!.push(await timeOps(n, async () => ids.push((await keys.create({ description: 'x' })).id)));
    series.map_create!.push(
      await timeOps(n, (i) => {
        const input = JSON.parse(JSON.stringify({ description: 'x' }));
        if (typeof input.description !== 'string') throw new Error('bad');
        const id = `ak_${base + i}`;
        map.set(id, { id, created_at: new Date().toISOString(), description: input.description, metadata: '', owner_id: 'usr_1' });
        mapIds.push(id);
        return structuredClone(map.get(id));
      }),
    );
    series.core_get!.push(await timeOps(n, (i) => keys.get(ids[base + i]!)));
    series.map_get!.push(await timeOps(n, (i) => structuredClone(map.get(mapIds[base + i]!))));
    series.core_list!.push(await timeOps(quick ? 300 : 1000, () => keys.list({ limit: '100' })));
    series.map_list!.push(await timeOps(quick ? 300 : 1000, () => mapIds.slice(-100).reverse().map((id) => structuredClone(map.get(id)))));
  }
  for (const [name, values] of Object.entries(series)) record(name, values);
  for (const op of ['create', 'get', 'list']) {
    const perRound = series[`core_${op}`]!.map((v, i) => v / series[`map_${op}`]![i]!);
    ratios[`core_${op}_vs_map`] = { median: round2(median(perRound)), min: round2(Math.min(...perRound)), max: round2(Math.max(...perRound)) };
  }
}

/**
 * Reset and checkpoint restore at 1,000 records on the memory store (docs/testing.md): a reset that
 * removes 1,000 records made since the start, a reset back to a starting state of 1,000 records,
 * and a restore of a 1,000-record checkpoint; each timed alone, the records made between rounds.
 */
async function checkpointScenarios() {
  const samples = quick ? 10 : 30;
  const burrow = createBurrow({ store: new MemoryStore(), baseUrl: 'http://bench.local' });
  const { token, accountId } = await burrow.createAccount();
  const policies = burrow.client(token).resource('ip_policies');
  // The account starts with 4 records (account, admin user, its key and the key's token entry).
  const fill = async (count: number) => {
    for (let i = 0; i < count; i++) await policies.create({ description: 'bench' });
  };
  // The garbage the set-up left is collected first, so that the figure is the operation's own time;
  // its CPU time too (this process's), which a loaded machine's waits for a core do not inflate.
  const series: Record<string, number[]> = {};
  const timed = async (name: string, work: () => Promise<unknown>) => {
    (globalThis as { gc?: () => void }).gc?.();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await work();
    (series[`${name}_ms`] ??= []).push(round2(performance.now() - started));
    const used = process.cpuUsage(cpuBefore);
    (series[`${name}_cpu_ms`] ??= []).push(round2((used.user + used.system) / 1000));
  };
  for (let i = 0; i < samples; i++) {
    await fill(1000);
    await timed('reset_removing_1k', () => burrow.reset(accountId));
  }
  await fill(996);
  await burrow.captureStart();
  const { records } = await burrow.checkpoint('bench');
  if (records < 1000) throw new Error(`the checkpoint holds ${records} records, fewer than 1,000`);
  for (let i = 0; i < samples; i++) {
    await fill(10);
    await timed('reset_to_1k_start', () => burrow.reset(accountId));
    await fill(10);
    await timed('restore_1k_checkpoint', () => burrow.restore('bench'));
  }
  for (const [name, values] of Object.entries(series)) record(name, values);
  await burrow.close();
}

async function startUp() {
  // The installed package, as users run it: plain node over the compiled dist/ (no loader).
  const installed = await installPackedBurrow();
  const starters: Record<string, [string, string[], string]> = {
    bare_node: [process.execPath, ['-e', BARE_STARTUP], '/'],
    installed_bin: [installed.bin, ['--port', '0', '--quiet', '--api-key', TOKEN], '/_burrow/health'],
    npm_start: [process.execPath, burrowArgs(['--quiet']), '/_burrow/health'],
  };
  const series: Record<string, number[]> = {};
  try {
    for (let i = 0; i < (quick ? 5 : 9); i++) {
      // Alternated, so that each pair shares the machine's load of its moment.
      for (const [name, [command, args, path]] of Object.entries(starters)) {
        if (name === 'npm_start' && i >= 3) continue;
        const { wall, cpu } = await firstAnswer(command, args, { path, cwd: root });
        (series[`startup_${name}_ms`] ??= []).push(Math.round(wall));
        (series[`startup_${name}_cpu_ms`] ??= []).push(Math.round(cpu));
      }
    }
  } finally {
    installed.remove();
  }
  for (const [name, values] of Object.entries(series)) record(name, values);
  const extra = series.startup_installed_bin_ms!.map((v, i) => v - series.startup_bare_node_ms![i]!);
  ratios.startup_installed_minus_bare_ms = { median: Math.round(median(extra)), min: Math.min(...extra), max: Math.max(...extra) };
  const extraCpu = series.startup_installed_bin_cpu_ms!.map((v, i) => v - series.startup_bare_node_cpu_ms![i]!);
  ratios.startup_installed_minus_bare_cpu_ms = { median: Math.round(median(extraCpu)), min: Math.min(...extraCpu), max: Math.max(...extraCpu) };
  // In-process: the first instance of the process (cold code) and a later one.
  const instances: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const burrow = createBurrow({ store: new MemoryStore() });
    const { token } = await burrow.createAccount();
    await burrow.client(token).resource('api_keys').list();
    instances.push(Math.round((performance.now() - started) * 100) / 100);
  }
  figures.embedded_startup_ms = instances[0]!;
  figures.embedded_next_instance_ms = instances[2]!;
}

async function memory() {
  const count = quick ? 20_000 : 100_000;
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage().rss;
  const burrow = createBurrow({ store: new MemoryStore(), baseUrl: 'http://bench.local' });
  const { token } = await burrow.createAccount();
  const policies = burrow.client(token).resource('ip_policies');
  let json = 0;
  for (let i = 0; i < count; i++) json += JSON.stringify(await policies.create({ description: `policy ${i}`, metadata: '{"team":"bench"}' })).length;
  gc?.();
  figures.memory_records = count;
  figures.heap_bytes_per_resource = Math.round((process.memoryUsage().heapUsed - heapBefore) / count);
  figures.rss_bytes_per_resource = Math.round((process.memoryUsage().rss - rssBefore) / count);
  figures.json_bytes_per_resource = Math.round(json / count);
  figures.heap_beyond_json_bytes = figures.heap_bytes_per_resource - figures.json_bytes_per_resource;
  void burrow;
}

/** The longest event-loop block of each bound's costliest accepted input (test/bench/bounds.ts). */
let bounds: BoundFigure[] = [];

try {
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const all = !hotOnly && !startupOnly && !storesOnly && !boundsOnly && !checkpointsOnly && !ingressOnly && !postgresOnly && !tunnelOnly && !clusterOnly;
  if (all) await httpScenarios();
  if (hotOnly) await hotPath();
  if (all || postgresOnly) await postgresScenarios();
  if (all || storesOnly) await storeScenarios();
  // Before the in-process scenarios, so that the first in-process instance runs cold code.
  if (all || startupOnly) await underLoad(startUp);
  if (all) await underLoad(inProcessScenarios);
  if (all) await memory();
  if (all || checkpointsOnly) await checkpointScenarios();
  if (all || boundsOnly) {
    const measured = await measureBounds(quick ? 5 : 9);
    bounds = [...measured.policies, ...measured.filters];
  }
  // Traffic through the ingress, a test's first tunnel, and traffic relayed between servers (with
  // PostgreSQL installed): their own modules, their own figures.
  const traffic = { rounds: ROUNDS, durationS: DURATION, connections: CONNECTIONS, latencyRequests: quick ? 500 : 2000 };
  const parts: [boolean, () => ReturnType<typeof measureIngress>][] = [
    [all || ingressOnly, () => measureIngress(traffic)],
    [all || tunnelOnly, () => measureFirstTunnel(quick ? 3 : 7)],
    [(all && postgresBinDir() !== undefined) || clusterOnly, () => measureCluster(traffic)],
  ];
  const partTargets: [string, boolean][] = [];
  for (const [wanted, measure] of parts) {
    if (!wanted) continue;
    const before = loadAverage();
    const part = await measure();
    Object.assign(figures, part.figures);
    Object.assign(samples, part.samples);
    Object.assign(ratios, part.ratios);
    for (const name of Object.keys(part.ratios)) noteLoads(name, [before, loadAverage()]);
    partTargets.push(...part.targets);
  }
  const r = (name: string) => ratios[name]?.median ?? Number.NaN;
  const targets: [string, boolean][] = [
    ['GET by id ≥ 0.5 of bare node:http', r('get_vs_bare') >= 0.5],
    ['POST create ≥ 0.4 of bare', r('post_vs_bare') >= 0.4],
    ['POST /api_keys ≥ 0.4 of bare', r('post_api_keys_vs_bare') >= 0.4],
    ['in-process get ≥ 0.4 of a Map get', r('core_get_vs_map') >= 0.4],
    ['GET by id ≥ 10× json-server', r('get_vs_jsonserver') >= 10],
    ['JSON-file POST at 10k ≥ 10× json-server POST', r('file_post_vs_jsonserver') >= 10],
    ...(ratios.list_100k_vs_1k ? ([['list page at 100k within 1.5× the time of 1k', r('list_100k_vs_1k') >= 1 / 1.5]] as [string, boolean][]) : []),
    ['PostgreSQL GET by id ≥ 0.35 of the memory store', r('postgres_get_vs_memory') >= 0.35],
    ['PostgreSQL list of 20 ≥ 0.3 of the memory store', r('postgres_list_vs_memory') >= 0.3],
    ['PostgreSQL POST ≥ 0.2 of the memory store', r('postgres_post_vs_memory') >= 0.2],
    ['two servers on one PostgreSQL database serve ≥ 1.6× the GETs of one', r('postgres_two_servers_vs_one') >= 1.6],
    ['installed bin: first answer ≤ 100 ms after a bare node -e server', r('startup_installed_minus_bare_ms') <= 100],
    ['installed bin: ≤ 100 ms more CPU to its first answer than a bare node -e server', r('startup_installed_minus_bare_cpu_ms') <= 100],
    ['in-process instance ready < 5 ms', figures.embedded_startup_ms! < 5],
    ['reset and checkpoint restore at 1,000 records < 5 ms (memory store)', ['reset_removing_1k_ms', 'reset_to_1k_start_ms', 'restore_1k_checkpoint_ms'].every((name) => figures[name]! < 5)],
    ['< 2 KB per resource beyond its JSON', figures.heap_beyond_json_bytes! < 2048],
    ...(bounds.length > 0
      ? ([
          ['every bound\'s costliest accepted input holds the event loop < 50 ms', bounds.every((b) => b.blockMs < 50)],
          ['every bound\'s costliest accepted input takes the event loop\'s thread < 50 ms of CPU', bounds.every((b) => b.cpuMs < 50)],
        ] as [string, boolean][])
      : []),
    ...partTargets,
  ];
  console.log(`\nBurrow benchmark (${quick ? 'quick' : 'full'}): ${DURATION} s per HTTP run, ${CONNECTIONS} connections, ${ROUNDS} rounds; load average before: ${load}, after: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
  console.log('| figure (median) | value | samples |\n|---|---|---|');
  for (const [name, value] of Object.entries(figures)) console.log(`| ${name} | ${value} | ${samples[name]?.join(', ') ?? ''} |`);
  console.log('\n| 503 answers (all rounds) | count |\n|---|---|');
  for (const [name, n] of Object.entries(unavailable)) if (n > 0 || /postgres|pg_/.test(name)) console.log(`| ${name} | ${n} |`);
  console.log('\n| same-round ratio | median | min–max | load average (1 min) while measured |\n|---|---|---|---|');
  for (const [name, { median: m, min, max }] of Object.entries(ratios)) {
    const seen = ratioLoads[name];
    console.log(`| ${name} | ${m} | ${min}–${max} | ${seen ? (seen.min === seen.max ? `${seen.min}` : `${seen.min}–${seen.max}`) : ''} |`);
  }
  if (bounds.length > 0) {
    console.log('\n| costliest accepted input | longest event-loop block, ms (median) | its thread\'s CPU, ms (median) | first run (cold), ms |\n|---|---|---|---|');
    for (const b of bounds) console.log(`| ${b.input} | ${b.blockMs} | ${b.cpuMs} | ${b.coldMs} |`);
  }
  console.log('\n| target | met |\n|---|---|');
  const shown = (name: string) => (startupOnly ? /start|instance|bare node -e/.test(name) : boundsOnly ? /bound/.test(name) : checkpointsOnly ? /checkpoint/.test(name) : ingressOnly ? /^ingress/.test(name) : tunnelOnly ? /^first tunnel/.test(name) : clusterOnly ? /^cluster/.test(name) : postgresOnly ? /PostgreSQL/.test(name) : hotOnly ? /of bare/.test(name) : !storesOnly);
  for (const [name, met] of targets) if (shown(name)) console.log(`| ${name} | ${met ? 'yes' : 'NO'} |`);
  console.log(`\n${JSON.stringify({ quick, figures, samples, ratios, ratioLoads, unavailable, bounds, targets: Object.fromEntries(targets) })}`);
} finally {
  dir.remove();
}
