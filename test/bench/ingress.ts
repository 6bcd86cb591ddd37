import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import type { AgentPart, BurrowPart, MemoryReport } from './ingress-parts.ts';
import { cpuMicros } from '../fixtures/first-answer.ts';

/**
 * Traffic through Burrow (`npm run bench -- --ingress`, and part of the whole bench): a load
 * generator sends requests to a local app through Burrow's HTTP ingress and the vendor's agent
 * (@ngrok/ngrok), and to the same app directly, in alternating rounds on the same machine, each
 * side in its own process (test/bench/ingress-parts.ts: Burrow with its gateway and ingress; the
 * agent with the app). Measured:
 *
 * - requests per second (autocannon, keep-alive connections) through and direct, and the ratio of
 *   each round's pair (median, min–max), with Burrow's CPU time per request;
 * - latency of one request at a time on one kept-alive connection (node:http), p50 and p99 of
 *   each side per round, and what the ingress and agent add (through minus direct, per round);
 * - 10 MiB uploads and downloads through the ingress: the growth of Burrow's live memory (heap and
 *   buffers, sampled after garbage collections every 20 ms while they run, which slows them), so a
 *   body held whole would show as 10 MiB or more.
 */

export interface IngressBenchOptions {
  readonly rounds: number;
  /** Seconds per autocannon run. */
  readonly durationS: number;
  readonly connections: number;
  /** Sequential requests per latency run. */
  readonly latencyRequests: number;
}

export interface IngressBenchResult {
  readonly figures: Record<string, number>;
  readonly samples: Record<string, number[]>;
  readonly ratios: Record<string, { median: number; min: number; max: number }>;
  readonly targets: [string, boolean][];
}

const MIB = 1024 * 1024;
const TRANSFER_BYTES = 10 * MIB;
const TRANSFERS = 3;

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const percentile = (values: readonly number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))]!;
const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;

function forkPart(role: 'burrow' | 'agent'): ChildProcess {
  return fork(new URL('./ingress-parts.ts', import.meta.url).pathname, [role], { execArgv: ['--import', 'tsx', '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

async function message<T>(child: ChildProcess): Promise<T> {
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`an ingress bench process exited with ${code} before it was ready`);
  });
  return Promise.race([once(child, 'message').then(([value]) => value as T), exited]);
}

/** One request on `agent`'s connection; resolves when the whole answer has arrived. */
function exchange(port: number, host: string | undefined, agent: Agent, path = '/', body?: Buffer | (() => AsyncIterable<Buffer>)): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: body ? 'POST' : 'GET', agent, headers: host ? { host } : {} }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${path}: status ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (typeof body === 'function') {
      void (async () => {
        for await (const chunk of body()) if (!req.write(chunk)) await once(req, 'drain');
        req.end();
      })().catch(reject);
    } else req.end(body);
  });
}

/** Latencies (ms) of `count` requests sent one at a time on one kept-alive connection. */
async function sequential(port: number, host: string | undefined, count: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      await exchange(port, host, agent);
      times.push(performance.now() - started);
    }
    return times;
  } finally {
    agent.destroy();
  }
}

/** Requests per second (and how many were sent) from autocannon's kept-alive connections. */
async function throughput(port: number, host: string | undefined, options: IngressBenchOptions): Promise<{ rate: number; total: number }> {
  const result = await autocannon({ url: `http://127.0.0.1:${port}/`, ...(host ? { headers: { host } } : {}), connections: options.connections, duration: options.durationS });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`ingress bench: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rate: result.requests.average, total: result.requests.total };
}

export async function measureIngress(options: IngressBenchOptions): Promise<IngressBenchResult> {
  const burrow = forkPart('burrow');
  const agentPart = forkPart('agent');
  try {
    const parts = await message<BurrowPart>(burrow);
    agentPart.send(parts);
    const { appPort } = await message<AgentPart>(agentPart);
    const through = { port: parts.ingressPort, host: parts.domain };
    const direct = { port: appPort, host: undefined };
    // Warm both paths (JIT, the agent's connection pool to the app).
    for (const side of [through, direct]) await sequential(side.port, side.host, 300);

    const samples: Record<string, number[]> = {};
    const add = (name: string, value: number) => (samples[name] ??= []).push(round(value));
    for (let i = 0; i < options.rounds; i++) {
      add('ingress_direct_rps', (await throughput(direct.port, direct.host, options)).rate);
      const cpuBefore = cpuMicros(burrow.pid!);
      const { rate, total } = await throughput(through.port, through.host, options);
      add('ingress_through_rps', rate);
      add('ingress_burrow_cpu_us_per_request', (cpuMicros(burrow.pid!) - cpuBefore) / Math.max(1, total));
      await latencyRound(add, { ingress_direct: direct, ingress_through: through }, options.latencyRequests);
    }

    // 10 MiB each way through the ingress, Burrow's peak memory against its size before.
    burrow.send('watch');
    const before = await message<MemoryReport>(burrow);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const upload = async function* () {
      const chunk = Buffer.alloc(64 * 1024, 'u');
      for (let sent = 0; sent < TRANSFER_BYTES; sent += chunk.length) yield chunk;
    };
    const started = performance.now();
    for (let i = 0; i < TRANSFERS; i++) {
      await exchange(through.port, through.host, agent, '/upload', upload);
      const received = await exchange(through.port, through.host, agent, `/download?bytes=${TRANSFER_BYTES}`);
      if (received !== TRANSFER_BYTES) throw new Error(`ingress bench: downloaded ${received} bytes of ${TRANSFER_BYTES}`);
    }
    const transferSeconds = (performance.now() - started) / 1000;
    agent.destroy();
    burrow.send('memory');
    const after = await message<MemoryReport>(burrow);

    const { figures, ratios } = sameRoundComparison(samples, 'ingress_through', 'ingress_direct', {
      ratio: 'ingress_through_vs_direct',
      p50: 'ingress_added_p50_ms',
      p99: 'ingress_added_p99_ms',
    });
    figures.ingress_10mib_transfers = TRANSFERS * 2;
    // Slowed by the memory sampler's collections.
    figures.ingress_10mib_mib_per_s = round((TRANSFERS * 2 * TRANSFER_BYTES) / MIB / transferSeconds, 1);
    figures.ingress_live_before_mib = round(before.live / MIB, 1);
    figures.ingress_live_peak_growth_mib = round((after.peakLive - before.live) / MIB, 1);
    figures.ingress_live_growth_after_mib = round((after.live - before.live) / MIB, 1);
    const targets: [string, boolean][] = [
      ['ingress: requests per second through Burrow and the agent ≥ 0.3 of direct', ratios.ingress_through_vs_direct.median >= 0.3],
      ['ingress: added p50 latency < 0.5 ms', ratios.ingress_added_p50_ms.median < 0.5],
      ['ingress: 10 MiB bodies stream (live memory grows < 10 MiB while they pass)', figures.ingress_live_peak_growth_mib < 10],
    ];
    return { figures, samples, ratios, targets };
  } finally {
    burrow.kill();
    agentPart.kill();
  }
}

/**
 * Traffic through two servers on one PostgreSQL database (`npm run bench -- --cluster`; issue 45):
 * the vendor's agent connects to server A; the same requests go through A's ingress (local: A holds
 * the agent) and through B's (relayed to A over the peer link, adapters/peer), in alternating
 * rounds. Measured as for one server: requests per second of each and their ratio per round, and
 * p50/p99 of one request at a time, with what the relay adds (B minus A, per round).
 */
export async function measureCluster(options: IngressBenchOptions): Promise<IngressBenchResult> {
  const { createDatabase, startPostgresCluster } = await import('../fixtures/postgres-cluster.ts');
  const { startServer } = await import('../helpers.ts');
  const cluster = await startPostgresCluster();
  const agentPart = forkPart('agent');
  const servers: Awaited<ReturnType<typeof startServer>>[] = [];
  try {
    const url = await createDatabase(cluster, 'bench_cluster');
    const serve = () => startServer(['--data', url, '--quiet', '--agent-addr', '127.0.0.1:0', '--http-ingress-addr', '127.0.0.1:0', '--peer-addr', '127.0.0.1:0']);
    servers.push(await serve());
    servers.push(await serve());
    const [a, b] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const token = a.token!;
    const listeners = async (server: typeof a) => (await server.request('GET', '/_burrow/health', undefined, { token: null })).body.listeners as Record<string, string>;
    const portOf = (hostport: string) => Number(hostport.slice(hostport.lastIndexOf(':') + 1));
    const [la, lb] = [await listeners(a), await listeners(b)];
    const domain = 'cluster-bench.example.com';
    await a.request('POST', '/reserved_domains', { domain }, { token });
    const credential = (await a.request('POST', '/credentials', {}, { token })).body as { token: string };
    const caPem = await (await fetch(`${a.url}/_burrow/ca.pem`)).text();
    agentPart.send({ ingressPort: portOf(la.http_ingress!), gatewayPort: portOf(la.agent!), caPem, token: credential.token, domain } satisfies BurrowPart);
    await message<AgentPart>(agentPart);
    const local = { port: portOf(la.http_ingress!), host: domain };
    const relayed = { port: portOf(lb.http_ingress!), host: domain };
    for (const side of [local, relayed]) await sequential(side.port, side.host, 300);

    const samples: Record<string, number[]> = {};
    const add = (name: string, value: number) => (samples[name] ??= []).push(round(value));
    for (let i = 0; i < options.rounds; i++) {
      add('cluster_local_rps', (await throughput(local.port, local.host, options)).rate);
      add('cluster_relayed_rps', (await throughput(relayed.port, relayed.host, options)).rate);
      await latencyRound(add, { cluster_local: local, cluster_relayed: relayed }, options.latencyRequests);
    }
    const { figures, ratios } = sameRoundComparison(samples, 'cluster_relayed', 'cluster_local', {
      ratio: 'cluster_relayed_vs_local',
      p50: 'cluster_relay_added_p50_ms',
      p99: 'cluster_relay_added_p99_ms',
    });
    const targets: [string, boolean][] = [
      ['cluster: requests per second through B (relayed to the agent on A) ≥ 0.7 of through A', ratios.cluster_relayed_vs_local.median >= 0.7],
      ['cluster: the relay adds < 1 ms at p50', ratios.cluster_relay_added_p50_ms.median < 1],
    ];
    return { figures, samples, ratios, targets };
  } finally {
    agentPart.kill();
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    await cluster.stop();
  }
}

/** One round's latency: `requests` sequential requests to each target in turn, their p50 and p99 added as `<name>_p50_ms` and `<name>_p99_ms`. */
async function latencyRound(add: (name: string, value: number) => void, targets: Record<string, { port: number; host: string | undefined }>, requests: number): Promise<void> {
  for (const [name, target] of Object.entries(targets)) {
    const times = await sequential(target.port, target.host, requests);
    add(`${name}_p50_ms`, percentile(times, 0.5));
    add(`${name}_p99_ms`, percentile(times, 0.99));
  }
}

/** A figure's median over rounds, with the smallest and largest round. */
interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/**
 * Every sample's median, and `subject` against `base` round by round (`<name>_rps`, `_p50_ms`,
 * `_p99_ms` samples of each): the throughput ratio and the added p50 and p99, each as its median
 * and spread over the rounds, under the names given.
 */
function sameRoundComparison<N extends string>(samples: Record<string, number[]>, subject: string, base: string, names: { ratio: N; p50: N; p99: N }) {
  const figures: Record<string, number> = {};
  for (const [name, values] of Object.entries(samples)) figures[name] = round(median(values));
  const perRound = (figure: string, combine: (a: number, b: number) => number): Spread => {
    const values = samples[`${subject}_${figure}`]!.map((value, i) => combine(value, samples[`${base}_${figure}`]![i]!));
    return { median: round(median(values)), min: round(Math.min(...values)), max: round(Math.max(...values)) };
  };
  const ratios = {
    [names.ratio]: perRound('rps', (a, b) => a / b),
    [names.p50]: perRound('p50_ms', (a, b) => a - b),
    [names.p99]: perRound('p99_ms', (a, b) => a - b),
  } as Record<N, Spread>;
  return { figures, ratios };
}
