/**
 * `npm run bench` (`-- --quick` for a run under a minute): Burrow against the practical ceiling (a
 * bare node:http server answering the same JSON from a Map) and against json-server 0.17, all
 * measured in this run on this machine, each server in its own process. Prints a table and one JSON
 * line with every figure and ratio.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { MemoryStore } from '../../adapters/memory-store.ts';
import { createBurrow } from '../../lib/index.ts';
import { tempDir } from '../fixtures/openssh.ts';

const quick = process.argv.includes('--quick');
const DURATION = quick ? 1.5 : 5;
const CONNECTIONS = 16;
const TOKEN = 'bench-admin-token-0123456789';
const root = new URL('../../', import.meta.url).pathname;
const dir = tempDir('burrow-bench-');
const figures: Record<string, number> = {};

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
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = ready.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!.replace(/\/$/, ''));
      }
    });
    child.once('exit', (code) => reject(new Error(`${command} exited with ${code}: ${errors}`)));
  });
  return {
    url,
    process: child,
    stop: () => stopChild(child),
  };
}

const burrowArgs = (extra: string[]) => ['--import', 'tsx', 'bin/burrow.ts', 'serve', '--port', '0', '--quiet', '--api-key', TOKEN, ...extra];
const startBurrow = (extra: string[] = []) => startProcess(process.execPath, burrowArgs(extra), /listening on (\S+)/);
const startBare = (count: number) => startProcess(process.execPath, ['--import', 'tsx', 'test/bench/bare-server.ts', String(count)], /listening on (\S+)/);

function jsonServerDb(count: number): string {
  const file = join(dir.path, `db-${count}.json`);
  const ip_policies = Array.from({ length: count }, (_, i) => ({ id: `ipp_${String(i).padStart(27, '0')}`, description: `policy ${i}`, metadata: '', created_at: '2026-01-01T00:00:00Z' }));
  writeFileSync(file, JSON.stringify({ ip_policies }));
  return file;
}
/** json-server in quiet mode (no per-request logging) prints nothing: poll until it answers. */
async function startJsonServer(count: number): Promise<Server> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(join(root, 'node_modules/.bin/json-server'), ['--port', String(port), '--host', '127.0.0.1', '--quiet', jsonServerDb(count)], { cwd: root, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 600) throw new Error('json-server did not start');
    if (await fetch(`${url}/ip_policies?_limit=1`).then((r) => r.ok, () => false)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    process: child,
    stop: () => stopChild(child),
  };
}

const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Service-Version': '2' };

async function rate(url: string, method: 'GET' | 'POST' | 'PATCH', body?: unknown): Promise<number> {
  const result = await autocannon({ url, method, headers, ...(body ? { body: JSON.stringify(body) } : {}), connections: CONNECTIONS, duration: DURATION });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${method} ${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return Math.round(result.requests.average);
}

/** Creates `count` policies on a running server (concurrently), answering one id. */
async function seedOverHttp(server: Server, count: number, path = '/ip_policies'): Promise<string> {
  let id = '';
  await autocannon({ url: `${server.url}${path}`, method: 'POST', headers, body: JSON.stringify({ description: 'seed' }), connections: 32, amount: count });
  const res = await fetch(`${server.url}${path}?limit=1`, { headers });
  const body = (await res.json()) as Record<string, { id: string }[]>;
  id = (Object.values(body).find(Array.isArray) as { id: string }[])[0]!.id;
  return id;
}

/** A Burrow data file with `count` IP policies in the default account, written directly. */
async function seededDataFile(count: number): Promise<string> {
  const file = join(dir.path, `burrow-${count}.json`);
  const first = await startBurrow(['--data', file]);
  await first.stop();
  const data = JSON.parse(readFileSync(file, 'utf8'));
  const account = Object.keys(data.scopes).find((a) => a !== '_instance')!;
  const policies: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    const id = `ipp_${String(i).padStart(27, '0')}`;
    policies[id] = { id, created_at: '2026-01-01T00:00:00Z', description: `policy ${i}`, metadata: '' };
  }
  data.scopes[account].ip_policy = policies;
  writeFileSync(file, JSON.stringify(data));
  return file;
}

async function httpScenarios() {
  const sizes = quick ? [1000] : [1000, 100_000];
  // The ceiling.
  const bare = await startBare(1000);
  const bareId = `ipp_${String(5).padStart(27, '0')}`;
  figures.bare_get = await rate(`${bare.url}/ip_policies/${bareId}`, 'GET');
  figures.bare_list = await rate(`${bare.url}/ip_policies`, 'GET');
  figures.bare_post = await rate(`${bare.url}/ip_policies`, 'POST', { description: 'x' });
  figures.bare_patch = await rate(`${bare.url}/ip_policies/${bareId}`, 'PATCH', { description: 'y' });
  await bare.stop();

  // Burrow, memory store.
  for (const size of sizes) {
    const server = await startBurrow();
    const id = await seedOverHttp(server, size);
    figures[`memory_get_${size}`] = await rate(`${server.url}/ip_policies/${id}`, 'GET');
    figures[`memory_list_${size}`] = await rate(`${server.url}/ip_policies?limit=100`, 'GET');
    if (size === 1000) {
      figures.memory_post_1000 = await rate(`${server.url}/ip_policies`, 'POST', { description: 'x' });
      figures.memory_patch_1000 = await rate(`${server.url}/ip_policies/${id}`, 'PATCH', { description: 'y' });
    }
    await server.stop();
  }

  // Burrow, JSON-file store (durable writes).
  const fileSize = 10_000;
  const file = await seededDataFile(fileSize);
  const fileServer = await startBurrow(['--data', file]);
  const fileId = `ipp_${String(5).padStart(27, '0')}`;
  figures.file_get_10000 = await rate(`${fileServer.url}/ip_policies/${fileId}`, 'GET');
  figures.file_list_10000 = await rate(`${fileServer.url}/ip_policies?limit=100`, 'GET');
  figures.file_post_10000 = await rate(`${fileServer.url}/ip_policies`, 'POST', { description: 'x' });
  figures.file_patch_10000 = await rate(`${fileServer.url}/ip_policies/${fileId}`, 'PATCH', { description: 'y' });
  await fileServer.stop();

  // json-server 0.17, the stateful JSON-file mock a user would otherwise pick.
  const js = await startJsonServer(1000);
  const jsId = `ipp_${String(5).padStart(27, '0')}`;
  figures.jsonserver_get_1000 = await rate(`${js.url}/ip_policies/${jsId}`, 'GET');
  figures.jsonserver_list_1000 = await rate(`${js.url}/ip_policies?_page=1&_limit=100`, 'GET');
  figures.jsonserver_post_1000 = await rate(`${js.url}/ip_policies`, 'POST', { description: 'x' });
  figures.jsonserver_patch_1000 = await rate(`${js.url}/ip_policies/${jsId}`, 'PATCH', { description: 'y' });
  await js.stop();
  const js10k = await startJsonServer(fileSize);
  figures.jsonserver_post_10000 = await rate(`${js10k.url}/ip_policies`, 'POST', { description: 'x' });
  await js10k.stop();
}

async function timeOps(count: number, op: (i: number) => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i++) await op(i);
  return Math.round(count / ((performance.now() - started) / 1000));
}

async function inProcessScenarios() {
  const n = quick ? 5000 : 20_000;
  const burrow = createBurrow({ store: new MemoryStore(), baseUrl: 'http://bench.local' });
  const { token } = await burrow.createAccount();
  const policies = burrow.client(token).resource('ip_policies');
  const ids: string[] = [];
  figures.core_create = await timeOps(n, async () => ids.push((await policies.create({ description: 'x' })).id));
  figures.core_get = await timeOps(n, (i) => policies.get(ids[i]!));
  figures.core_list = await timeOps(quick ? 500 : 2000, () => policies.list({ limit: '100' }));

  // A plain Map doing the same work: validate a little, stamp, store a copy, answer a copy.
  const map = new Map<string, Record<string, unknown>>();
  const mapIds: string[] = [];
  figures.map_create = await timeOps(n, (i) => {
    const input = JSON.parse(JSON.stringify({ description: 'x' }));
    if (typeof input.description !== 'string') throw new Error('bad');
    const id = `ipp_${i}`;
    map.set(id, { id, created_at: new Date().toISOString(), description: input.description, metadata: '' });
    mapIds.push(id);
    return structuredClone(map.get(id));
  });
  figures.map_get = await timeOps(n, (i) => structuredClone(map.get(mapIds[i]!)));
  figures.map_list = await timeOps(quick ? 500 : 2000, () => mapIds.slice(-100).reverse().map((id) => structuredClone(map.get(id))));
}

async function startUp() {
  const samples: number[] = [];
  for (let i = 0; i < (quick ? 3 : 5); i++) {
    const started = performance.now();
    const server = await startBurrow();
    await fetch(`${server.url}/_burrow/health`);
    samples.push(performance.now() - started);
    await server.stop();
  }
  figures.startup_ms = Math.round(samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]!);
  const started = performance.now();
  const burrow = createBurrow({ store: new MemoryStore() });
  const { token } = await burrow.createAccount();
  await burrow.client(token).resource('api_keys').list();
  figures.embedded_startup_ms = Math.round((performance.now() - started) * 10) / 10;
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

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

try {
  await httpScenarios();
  await inProcessScenarios();
  await startUp();
  await memory();
  const ratios: Record<string, number> = {
    get_vs_bare: ratio(figures.memory_get_1000!, figures.bare_get!),
    get_vs_jsonserver: ratio(figures.memory_get_1000!, figures.jsonserver_get_1000!),
    post_vs_bare: ratio(figures.memory_post_1000!, figures.bare_post!),
    patch_vs_bare: ratio(figures.memory_patch_1000!, figures.bare_patch!),
    list_vs_bare: ratio(figures.memory_list_1000!, figures.bare_list!),
    file_post_10k_vs_jsonserver_10k: ratio(figures.file_post_10000!, figures.jsonserver_post_10000!),
    core_create_vs_map: ratio(figures.core_create!, figures.map_create!),
    core_get_vs_map: ratio(figures.core_get!, figures.map_get!),
    core_list_vs_map: ratio(figures.core_list!, figures.map_list!),
  };
  if (figures.memory_list_100000) ratios.list_100k_vs_1k = ratio(figures.memory_list_1000!, figures.memory_list_100000);
  const targets: [string, boolean][] = [
    ['GET by id ≥ 50% of bare node:http', ratios.get_vs_bare! >= 0.5],
    ['GET by id ≥ 10× json-server', ratios.get_vs_jsonserver! >= 10],
    ['POST create ≥ 35% of bare', ratios.post_vs_bare! >= 0.35],
    ['JSON-file POST at 10k ≥ 10× json-server POST', ratios.file_post_10k_vs_jsonserver_10k! >= 10],
    ...(ratios.list_100k_vs_1k ? ([['list page at 100k within 1.5× of 1k', ratios.list_100k_vs_1k <= 1.5]] as [string, boolean][]) : []),
    ['start-up to first answer < 300 ms', figures.startup_ms! < 300],
    ['< 2 KB per resource beyond its JSON', figures.heap_beyond_json_bytes! < 2048],
  ];
  console.log(`\nBurrow benchmark (${quick ? 'quick' : 'full'}; ${DURATION}s per HTTP run, ${CONNECTIONS} connections)\n`);
  console.log('| figure | value |\n|---|---|');
  for (const [name, value] of Object.entries(figures)) console.log(`| ${name} | ${value} |`);
  console.log('\n| ratio | value |\n|---|---|');
  for (const [name, value] of Object.entries(ratios)) console.log(`| ${name} | ${value} |`);
  console.log('\n| target | met |\n|---|---|');
  for (const [name, met] of targets) console.log(`| ${name} | ${met ? 'yes' : 'NO'} |`);
  console.log(`\n${JSON.stringify({ quick, figures, ratios, targets: Object.fromEntries(targets) })}`);
} finally {
  dir.remove();
}
