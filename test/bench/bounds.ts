/**
 * The bounds on request input (lib/limits.ts), timed: for each kind of bounded work, the costliest
 * input Burrow still accepts, sent through the HTTP handler of an in-process instance (memory
 * store), and the longest stretch the event loop was held while it was answered (a setImmediate
 * ticker runs beside the request; its longest gap is the longest block). Each input runs a few
 * times to warm up, then the median of several runs is reported, with the first (cold) run
 * beside it, and the CPU time the event loop's thread ran meanwhile: on a machine shared with
 * other work the wall-clock block stretches while the thread waits for a CPU; its own CPU time is
 * what the block is on a quiet machine (a little more, as sharing a core also slows it). The
 * rule: under 50 ms on a quiet machine.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createFetchHandler } from '../../adapters/http/fetch-handler.ts';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { createBurrow } from '../../lib/index.ts';
import { compileFilter } from '../../lib/conventions/cel.ts';
import { LIMITS } from '../../lib/limits.ts';
import { FILTER_RECORD_COST } from '../../lib/engine/list-filter.ts';
import {
  COSTLY_PATTERNS,
  costliestJsonPolicy,
  costliestYamlPolicy,
  denseExpressions,
  jsonPolicyOfNodes,
  re2PolicyOfCost,
  yamlPolicyOfBytes,
  yamlPolicyOfTokens,
} from '../fixtures/bounded-inputs.ts';

const BASE = 'http://bench.local';
const WARM_UPS = 3;

/** The longest gap between two turns of the event loop while `work` runs, in ms. */
async function longestBlock(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  await new Promise((resolve) => setImmediate(resolve));
  return longest;
}

/**
 * The CPU time the main thread (the event loop) has run, in ms: Linux's scheduler statistics of
 * the thread (nanoseconds, brought up to date at each scheduler tick, so a few ms coarse). Time
 * spent waiting for a CPU on a busy machine is not in it, nor the garbage collector's helpers.
 */
function mainThreadCpuMs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round1 = (n: number) => Math.round(n * 10) / 10;

interface Instance {
  send(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

async function instance(): Promise<Instance> {
  const burrow = createBurrow({ store: new MemoryStore(), baseUrl: BASE });
  const { token } = await burrow.createAccount();
  const handle = createFetchHandler(burrow);
  return {
    async send(method, path, body) {
      const init: RequestInit = { method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } };
      if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
      const res = await handle(new Request(`${BASE}${path}`, init));
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
}

/** One measured input: what it is, and the request that sends it (answered with `status`). */
interface Input {
  readonly name: string;
  readonly status: number;
  send(): Promise<{ status: number; body: any }>;
}

/** The inputs whose work is bounded by traffic policy limits, each PUT as a route's traffic_policy module. */
async function policyInputs(api: Instance): Promise<Input[]> {
  const edge = (await api.send('POST', '/edges/https', {})).body;
  const route = (await api.send('POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/' })).body;
  const put = (value: string) => () => api.send('PUT', `/edges/https/${edge.id}/routes/${route.id}/traffic_policy`, { value });
  const tokens = LIMITS.traffic_policy_yaml_tokens.value;
  const inputs: Input[] = [
    { name: `YAML, ${tokens} tokens, block rules`, status: 200, send: put(yamlPolicyOfTokens(tokens, 'block')) },
    { name: `YAML, ${tokens} tokens, flow rules`, status: 200, send: put(yamlPolicyOfTokens(tokens, 'flow')) },
    ...(['folded', 'plain lines', 'flow line'] as const).map((style) => ({
      name: `YAML, ${LIMITS.traffic_policy_yaml_bytes.value} bytes, ${style}`,
      status: 200,
      send: put(yamlPolicyOfBytes(LIMITS.traffic_policy_yaml_bytes.value, style)),
    })),
    { name: `JSON, ${LIMITS.traffic_policy_nodes.value} values`, status: 200, send: put(jsonPolicyOfNodes(LIMITS.traffic_policy_nodes.value)) },
    {
      name: `CEL, ${LIMITS.traffic_policy_expression_chars.value} characters of dense expressions`,
      status: 200,
      send: put(JSON.stringify({ on_http_request: [{ expressions: denseExpressions(LIMITS.traffic_policy_expression_chars.value), actions: [{ type: 'deny' }] }] })),
    },
    ...Object.entries(COSTLY_PATTERNS).map(([shape, pattern]) => ({
      name: `RE2, ${LIMITS.re2_total_cost.value} cost units of ${shape}`,
      status: 200,
      send: put(re2PolicyOfCost(LIMITS.re2_total_cost.value, pattern)),
    })),
    { name: 'all at once, YAML (tokens, expressions and patterns at their limits)', status: 200, send: put(costliestYamlPolicy()) },
    { name: 'all at once, JSON (values, expressions and patterns at their limits)', status: 200, send: put(costliestJsonPolicy()) },
  ];
  return inputs;
}

/**
 * Comparisons of one kind, about as many as a filter may hold, none matching. The costliest
 * accepted filter page of each: a collection of exactly as many records as one page may scan with
 * it (`filter_page_cost` over its evaluation cost + FILTER_RECORD_COST), so the page scans them all
 * and answers empty.
 */
const FILTERS: Readonly<Record<string, string>> = {
  equality: Array.from({ length: 51 }, (_, i) => `obj.description == "n${i}"`).join(' || '),
  contains: Array.from({ length: 51 }, (_, i) => `obj.metadata.contains("n${i}")`).join(' || '),
  timestamps: Array.from({ length: 36 }, (_, i) => `obj.created_at < timestamp("2000-01-0${(i % 9) + 1}T00:00:00Z")`).join(' || '),
  startsWith: Array.from({ length: 51 }, (_, i) => `obj.description.startsWith("n${i}")`).join(' || '),
  'in a list': ['n', 'm'].map((prefix) => `obj.description in [${Array.from({ length: 100 }, (_, i) => `"${prefix}${i}"`).join(',')}]`).join(' || '),
};

export interface BoundFigure {
  readonly input: string;
  /** Median longest event-loop block over the measured runs, ms (wall time: it grows with the machine's load). */
  readonly blockMs: number;
  /** Median CPU time of the event loop's thread while the request was answered, ms (the block on a quiet machine). */
  readonly cpuMs: number;
  /** The first run's longest block (cold code), ms. */
  readonly coldMs: number;
}

async function measure(input: Input, runs: number): Promise<BoundFigure> {
  const blocks: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < WARM_UPS + runs; i++) {
    let answer: { status: number; body: any } | undefined;
    const started = mainThreadCpuMs();
    const block = await longestBlock(async () => (answer = await input.send()));
    const used = mainThreadCpuMs() - started;
    assert.equal(answer!.status, input.status, `${input.name}: ${JSON.stringify(answer!.body).slice(0, 300)}`);
    blocks.push(block);
    cpu.push(used);
  }
  return { input: input.name, coldMs: round1(blocks[0]!), blockMs: round1(median(blocks.slice(WARM_UPS))), cpuMs: round1(median(cpu.slice(WARM_UPS))) };
}

/** Measures every bounded input kind; `runs` measured runs each (after the warm-ups). */
export async function measureBounds(runs: number): Promise<{ policies: BoundFigure[]; filters: BoundFigure[] }> {
  const policies: BoundFigure[] = [];
  for (const input of await policyInputs(await instance())) policies.push(await measure(input, runs));
  const filters: BoundFigure[] = [];
  for (const [kind, filter] of Object.entries(FILTERS)) {
    const api = await instance();
    const cost = compileFilter(filter, () => new Date()).cost;
    const records = Math.floor(LIMITS.filter_page_cost.value / (cost + FILTER_RECORD_COST));
    for (let i = 0; i < records; i++) await api.send('POST', '/ip_policies', { description: `policy ${i}`, metadata: `{"team":"bench","n":${i}}` });
    const name = `filter page: ${records} records × ${kind} (cost ${cost})`;
    filters.push(await measure({ name, status: 200, send: () => api.send('GET', `/ip_policies?filter=${encodeURIComponent(filter)}`) }, runs));
  }
  return { policies, filters };
}
