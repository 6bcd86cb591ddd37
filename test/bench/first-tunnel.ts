/**
 * A test's first tunnel (`npm run bench -- --tunnel`, and part of the whole bench): what a test
 * suite waits for before its first request through the vendor's agent, measured in this process
 * once its code is warm:
 *
 * - start: `startBurrow({ ingress: true })`, in-process or `{ process: true }` (a child process);
 * - forward: `ngrok.forward({ addr, ...(await burrow.agentConfig()) })` (a tunnel credential over
 *   the API, then the agent's session: TCP, TLS, Auth, Bind);
 * - first answer: the first request to the endpoint's https URL through the ingress
 *   (`burrow.fetch`), then a second one (next answer: the path once every part is warm);
 * - close: the agent's listener, then Burrow.
 *
 * Each round makes a new Burrow and a new agent session; the local app stays. The first round of
 * each kind runs cold code and is reported apart (`*_cold`); the figures are medians over the
 * warm rounds, which alternate in-process and process. The same-round baseline is one request to
 * the app itself on a new connection (what the first answer would cost without a tunnel).
 *
 * `node --import tsx test/bench/first-tunnel.ts [rounds]` prints each round's phases.
 */
import ngrok from '@ngrok/ngrok';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startBurrow } from '../../adapters/testing/index.ts';
import { median } from '../fixtures/first-answer.ts';
import type { IngressBenchResult } from './ingress.ts';

export interface FirstTunnelRound {
  readonly startMs: number;
  readonly forwardMs: number;
  readonly firstAnswerMs: number;
  readonly nextAnswerMs: number;
  readonly closeMs: number;
  /** One request to the app directly on a new connection, in the same round. */
  readonly directMs: number;
}

/** Figures, samples, ratios and targets, as the ingress bench answers them. */
export type FirstTunnelResult = IngressBenchResult;

const round2 = (n: number) => Math.round(n * 100) / 100;

/** The local app every round's agent forwards to. */
export async function startApp(): Promise<{ port: number; close(): Promise<void> }> {
  const app = createServer((req, res) => res.end(`hello ${req.url}`));
  app.listen(0, '127.0.0.1');
  await once(app, 'listening');
  return {
    port: (app.address() as { port: number }).port,
    close: () =>
      new Promise((resolve) => {
        app.close(() => resolve());
        app.closeAllConnections();
      }),
  };
}

/** One GET to the app on a new connection; resolves when its answer has arrived. */
function direct(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/direct', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end();
  });
}

/** One test suite's first tunnel: a new Burrow, a new agent session forwarding to `appPort`, two requests. */
export async function firstTunnel(appPort: number, asProcess: boolean): Promise<FirstTunnelRound> {
  let at = performance.now();
  const lap = () => {
    const now = performance.now();
    const ms = now - at;
    at = now;
    return round2(ms);
  };
  await direct(appPort);
  const directMs = lap();
  const burrow = await startBurrow({ ingress: true, ...(asProcess ? { process: true } : {}) });
  const startMs = lap();
  const listener = await ngrok.forward({ addr: appPort, ...(await burrow.agentConfig()) });
  const forwardMs = lap();
  const ask = async (path: string) => {
    const answer = await burrow.fetch(`${listener.url()}${path}`);
    const text = await answer.text();
    if (answer.status !== 200 || text !== `hello ${path}`) throw new Error(`first tunnel: ${path} answered ${answer.status} ${text}`);
  };
  await ask('/first');
  const firstAnswerMs = lap();
  await ask('/next');
  const nextAnswerMs = lap();
  await listener.close();
  await burrow.close();
  const closeMs = lap();
  return { startMs, forwardMs, firstAnswerMs, nextAnswerMs, closeMs, directMs };
}

/**
 * `rounds` warm rounds of each kind, alternating in-process and process, after one cold round of
 * each. Figures in ms: medians, every sample, and per kind the first answer against the direct
 * request of the same round (added ms: through minus direct).
 */
export async function measureFirstTunnel(rounds: number): Promise<FirstTunnelResult> {
  const app = await startApp();
  const samples: Record<string, number[]> = {};
  const figures: Record<string, number> = {};
  try {
    for (let i = 0; i <= rounds; i++) {
      for (const [kind, asProcess] of [['inprocess', false], ['process', true]] as const) {
        const round = await firstTunnel(app.port, asProcess);
        const fields = { start: round.startMs, forward: round.forwardMs, first_answer: round.firstAnswerMs, next_answer: round.nextAnswerMs, close: round.closeMs, direct: round.directMs };
        for (const [name, ms] of Object.entries(fields)) {
          if (i === 0) figures[`tunnel_${kind}_${name}_ms_cold`] = ms;
          else (samples[`tunnel_${kind}_${name}_ms`] ??= []).push(ms);
        }
      }
    }
  } finally {
    await app.close();
  }
  for (const [name, values] of Object.entries(samples)) figures[name] = round2(median(values));
  const spread = (values: number[]) => ({ median: round2(median(values)), min: round2(Math.min(...values)), max: round2(Math.max(...values)) });
  const ratios: FirstTunnelResult['ratios'] = {};
  for (const kind of ['inprocess', 'process']) {
    for (const phase of ['start', 'forward', 'first_answer']) ratios[`tunnel_${kind}_${phase}_ms`] = spread(samples[`tunnel_${kind}_${phase}_ms`]!);
    const direct = samples[`tunnel_${kind}_direct_ms`]!;
    ratios[`tunnel_${kind}_first_answer_added_ms`] = spread(samples[`tunnel_${kind}_first_answer_ms`]!.map((ms, i) => round2(ms - direct[i]!)));
  }
  const targets: [string, boolean][] = [];
  for (const kind of ['inprocess', 'process']) {
    const label = kind === 'inprocess' ? 'in-process' : 'process';
    targets.push([`first tunnel (${label}): forward ≤ 20 ms`, figures[`tunnel_${kind}_forward_ms`]! <= 20]);
    targets.push([`first tunnel (${label}): first answer ≤ 3 ms`, figures[`tunnel_${kind}_first_answer_ms`]! <= 3]);
  }
  return { figures, samples, ratios, targets };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rounds = Number(process.argv[2] ?? 5);
  const app = await startApp();
  try {
    for (let i = 0; i < rounds; i++) {
      for (const asProcess of [false, true]) console.log(asProcess ? 'process   ' : 'in-process', i, JSON.stringify(await firstTunnel(app.port, asProcess)));
    }
  } finally {
    await app.close();
  }
}
