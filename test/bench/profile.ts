/**
 * `node --import tsx test/bench/profile.ts [seconds] [--bare] [--data=URL|FILE] [--post=PATH]`: where the microseconds
 * of one request go. Starts the CLI (`burrow serve`, memory store unless `--data` names another) under `--cpu-prof`, creates 1,000 IP policies, drives
 * GET /ip_policies/{id} and then POST /ip_policies (or `--post`'s collection) with autocannon (each in its own server process), and
 * prints per request: the server's CPU time (from /proc, steadier than req/s on a shared machine)
 * and top-down and bottom-up tables of the CPU profile in µs per request.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { cpuMicros } from '../fixtures/first-answer.ts';
import { tempDir } from '../fixtures/openssh.ts';

const seconds = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 5);
// `--data=URL|FILE`: the store to profile (default the memory store), e.g. a PostgreSQL database.
const data = process.argv.find((a) => a.startsWith('--data='))?.slice('--data='.length);
// `--post=PATH`: the collection the POST scenario creates in (default /ip_policies), e.g. /api_keys.
const postPath = process.argv.find((a) => a.startsWith('--post='))?.slice('--post='.length) ?? '/ip_policies';
const TOKEN = 'bench-admin-token-0123456789';
const root = new URL('../../', import.meta.url).pathname;
const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Service-Version': '2' };

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

async function startServer(profileDir: string): Promise<{ url: string; child: ChildProcess }> {
  const profiling = !process.argv.includes('--no-profile');
  const args = [...(profiling ? ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', profileDir] : []), '--import', 'tsx', 'bin/burrow.ts', 'serve', '--port', '0', ...(data ? ['--data', data] : []), ...(process.argv.includes('--log') ? [] : ['--quiet']), '--api-key', TOKEN];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /listening on (\S+)/.exec(line);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`burrow exited with ${code}`)));
  });
  return { url, child };
}

/** Label of a profile node: its function and where it lives (package, node internal, our file). */
function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  if (!url) return name;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `${name} [${pkg[1]}]`;
  if (url.startsWith('node:')) return `${name} [${url}]`;
  return `${name} [${url.replace(/^file:\/\/.*?\/(lib|adapters|bin|test)\//, '$1/')}:${lineNumber + 1}]`;
}

/** Where a sample's time goes, coarsely, by the innermost frame that says something. */
function category(stack: ProfileNode[]): string {
  for (let i = stack.length - 1; i >= 0; i--) {
    const { functionName, url } = stack[i]!.callFrame;
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8/native (program)';
    if (/valibot/.test(url)) return 'valibot';
    if (/itty-router|adapters\/http\/router/.test(url)) return 'routing';
    if (/node:internal\/url|^URL$|URLSearchParams/.test(url + functionName) && !/adapters|lib\//.test(url)) return 'WHATWG URL';
    if (/internal\/deps\/undici|node:internal\/webstreams|internal\/webidl|^(Request|Response|Headers)$/.test(url + functionName)) return 'WHATWG Request/Response';
    if (/createHash|Hash|digest|timingSafeEqual|randomBytes/.test(functionName)) return 'crypto';
    if (/^(stringify|parse)$/.test(functionName) && !url) return 'JSON';
  }
  const innermost = stack[stack.length - 1]!.callFrame.url;
  if (/node:_http|node:internal\/http|node:http/.test(innermost)) return 'node:http';
  if (/node:net|node:stream|node:internal\/streams|node:events|node:internal\/stream_base|node:internal\/net/.test(innermost)) return 'node streams/net';
  if (/memory-store/.test(innermost)) return 'store';
  if (/adapters\//.test(innermost)) return 'adapter';
  if (/lib\//.test(innermost)) return 'core (lib/)';
  if (/node:internal\/process\/task_queues|node:internal\/timers/.test(innermost)) return 'promise/timer queues';
  return innermost ? `other (${innermost.replace(/^file:\/\/.*node_modules\//, '')})` : 'native';
}

/** A measured window: how many requests were answered between two CLOCK_MONOTONIC times (µs). */
interface Window {
  requests: number;
  from: number;
  to: number;
}

const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

function analyse(profile: Profile, window: Window, title: string): void {
  const { requests } = window;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  // V8 stamps samples with the same monotonic clock as process.hrtime: keep the measured window only.
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= window.from && at <= window.to) self.set(id, (self.get(id) ?? 0) + delta);
  });
  const stackOf = (id: number) => {
    const stack: ProfileNode[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.unshift(byId.get(cur)!);
    return stack;
  };
  const perRequest = (us: number) => (us / requests).toFixed(2);
  const selfByLabel = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const categories = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const stack = stackOf(id);
    const leaf = stack[stack.length - 1]!;
    const cat = category(stack);
    categories.set(cat, (categories.get(cat) ?? 0) + us);
    if (cat === 'idle') continue;
    busy += us;
    selfByLabel.set(label(leaf), (selfByLabel.get(label(leaf)) ?? 0) + us);
    for (const name of new Set(stack.map(label))) inclusive.set(name, (inclusive.get(name) ?? 0) + us);
  }
  const table = (heading: string, rows: [string, number][], limit: number) => {
    console.log(`\n| ${heading} | µs/request | share |\n|---|---|---|`);
    for (const [name, us] of rows.sort((a, b) => b[1] - a[1]).slice(0, limit)) console.log(`| ${name.replace(/\|/g, '\\|')} | ${perRequest(us)} | ${((us / busy) * 100).toFixed(1)}% |`);
  };
  console.log(`\n### ${title}: ${requests} requests, ${perRequest(busy)} µs of busy CPU (sampled) per request`);
  table('category (innermost frame that says)', [...categories].filter(([c]) => c !== 'idle'), 30);
  table('function, inclusive (top-down)', [...inclusive].filter(([n]) => !/^\((root|program|garbage collector)\)$/.test(n)), 40);
  table('function, self (bottom-up)', [...selfByLabel], 30);
}

async function scenario(title: string, drive: (url: string, pid: number) => Promise<Window & { cpu: number }>): Promise<void> {
  const dir = tempDir('burrow-profile-');
  try {
    const { url, child } = await startServer(dir.path);
    const window = await drive(url, child.pid!);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    console.log(`${title}: server CPU ${(window.cpu / window.requests).toFixed(1)} µs per request (/proc, user + system)`);
    const file = readdirSync(dir.path).find((f) => f.endsWith('.cpuprofile'));
    if (file) analyse(JSON.parse(readFileSync(join(dir.path, file), 'utf8')) as Profile, window, title);
  } finally {
    dir.remove();
  }
}

async function seed(url: string): Promise<string> {
  await autocannon({ url: `${url}/ip_policies`, method: 'POST', headers, body: '{"description":"seed"}', connections: 16, amount: 1000 });
  const list = (await (await fetch(`${url}/ip_policies?limit=1`, { headers })).json()) as { ip_policies: { id: string }[] };
  return list.ip_policies[0]!.id;
}

/** Warms the JIT, then measures one autocannon run: requests, its time window and the server's CPU. */
async function load(url: string, pid: number, method: 'GET' | 'POST', path: string, body?: string): Promise<Window & { cpu: number }> {
  const options = { url: `${url}${path}`, method, headers, ...(body ? { body } : {}), connections: 32 };
  await autocannon({ ...options, duration: 1 });
  const cpuBefore = cpuMicros(pid);
  const from = monotonicMicros();
  const result = await autocannon({ ...options, duration: seconds });
  const to = monotonicMicros();
  const cpu = cpuMicros(pid) - cpuBefore;
  if (result.non2xx || result.errors) throw new Error(`${method} ${path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  console.log(`${method} ${path}: ${Math.round(result.requests.average)} req/s (autocannon on the same cores)`);
  return { requests: result.requests.total, from, to, cpu };
}

/** The bare node:http server (test/bench/bare-server.ts): its CPU per request is the floor. */
async function bare(): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/bare-server.ts', '1000'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const url = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).on('line', (line) => resolve(line.split(' ').pop()!)));
    for (const [method, path, body] of [['GET', `/ip_policies/ipp_${'5'.padStart(27, '0')}`], ['POST', '/ip_policies', '{"description":"bench"}']] as const) {
      const window = await load(url, child.pid!, method, path, body);
      console.log(`bare ${method}: server CPU ${(window.cpu / window.requests).toFixed(1)} µs per request (/proc, user + system)`);
    }
  } finally {
    child.kill('SIGTERM');
  }
}

if (process.argv.includes('--bare')) await bare();
await scenario('GET /ip_policies/{id}', async (url, pid) => load(url, pid, 'GET', `/ip_policies/${await seed(url)}`));
await scenario(`POST ${postPath}`, async (url, pid) => {
  await seed(url);
  return load(url, pid, 'POST', postPath, '{"description":"bench"}');
});
