import ngrok from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import fc from 'fast-check';
import { encodeFrame, encodeHeader, FLAG_FIN, FLAG_SYN, FrameDecoder, FRAME_LENGTH_MAX, type Frame } from '../../../adapters/agent-gateway/muxado/frames.ts';
import { STREAM_TYPES } from '../../../adapters/agent-gateway/protocol.ts';
import { LIMITS } from '../../../lib/limits.ts';
import { startServer, type RunningServer } from '../../helpers.ts';
import { EVENT_LOOP_MONITOR, eventLoopReport, startHealthProber, type EventLoopFigures, type ProberFigures } from '../../fixtures/raw-socket-fuzz.ts';
import { VendorAgents } from '../../fixtures/vendor-agents.ts';
import { until } from './helpers.ts';

/**
 * A raw fuzz of the agent gateway's listener behind `burrow serve --agent-addr`: connections that
 * send garbage instead of frames, malformed muxado frames (unknown types, bad lengths, truncated
 * bodies, wrong stream ids), and typed streams with random RPC bodies (JSON of any shape, deep
 * nesting, oversized, cut short), before Auth and after a real Auth. Meanwhile a separate process
 * probes /_burrow/health every 10 ms, the server's event loop is watched (EVENT_LOOP_MONITOR), and
 * the vendor's agent (a bystander) stays connected; the server's memory is read before and after.
 */

export const FUZZ_API_KEY = 'agent-gateway-fuzz-admin-token';
const FUZZ_OPERATOR_TOKEN = 'agent-gateway-fuzz-operator-token';

/**
 * A preload beside EVENT_LOOP_MONITOR: on SIGUSR2 it collects garbage and prints the heap and
 * buffer figures (`memory report N: {...}`), so "memory came back" is the server's, read in it.
 */
const MEMORY_SOURCE = `
let reports = 0;
process.on('SIGUSR2', () => {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  process.stdout.write('memory report ' + ++reports + ': ' + JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers }) + '\\n');
});`;
const MONITORS = { NODE_OPTIONS: `${EVENT_LOOP_MONITOR.NODE_OPTIONS} --expose-gc --import=data:text/javascript,${encodeURIComponent(MEMORY_SOURCE)}` };

export interface MemoryFigures {
  rss: number;
  heapUsed: number;
  arrayBuffers: number;
}

/** The server started for the fuzz: its agent gateway's port, its CA and a tunnel credential's token. */
export interface FuzzedServer {
  readonly server: RunningServer;
  readonly agentPort: number;
  readonly caPem: string;
  readonly authtoken: string;
}

export async function startFuzzedServer(): Promise<FuzzedServer> {
  const server = await startServer(['--quiet', '--agent-addr', '127.0.0.1:0', '--api-key', FUZZ_API_KEY, '--operator-token', FUZZ_OPERATOR_TOKEN], MONITORS);
  const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
  const caPem = await (await fetch(`${server.url}/_burrow/ca.pem`)).text();
  const credential = await server.request('POST', '/credentials', { description: 'fuzz' }, { token: FUZZ_API_KEY });
  assert.equal(credential.status, 201, credential.text);
  return { server, agentPort: Number(String(health.body.listeners.agent).split(':').pop()), caPem, authtoken: credential.body.token };
}

/** Reports the event loop's longest hold (and resets it) and the memory figures, both read in the server. */
async function reports(server: RunningServer): Promise<{ loop: EventLoopFigures; memory: MemoryFigures }> {
  const count = server.output.filter((line) => line.startsWith('memory report ')).length + 1;
  const loop = await eventLoopReport(server);
  const prefix = `memory report ${count}: `;
  const lines = await server.outputUntil((seen) => seen.some((line) => line.startsWith(prefix)));
  return { loop, memory: JSON.parse(lines.find((line) => line.startsWith(prefix))!.slice(prefix.length)) as MemoryFigures };
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value) ?? 'null');
const typed = (type: number, body: Buffer) => {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(type >>> 0, 0);
  return Buffer.concat([header, body]);
};
const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((array) => Buffer.from(array));

/** An RPC body: JSON of any shape, real message shapes with wrong values, deep, huge, or cut short. */
const rpcBody = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }).map(json) },
  { weight: 3, arbitrary: fc.record({ Proto: fc.constantFrom('http', 'https', 'tcp', 'tls', 'udp', 7), Opts: fc.jsonValue({ maxDepth: 3 }), Id: fc.oneof(fc.string(), fc.integer()) }, { requiredKeys: [] }).map(json) },
  { weight: 2, arbitrary: fc.record({ Version: fc.oneof(fc.constant(['3', '2']), fc.jsonValue({ maxDepth: 2 })), Extra: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }).map(json) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((depth) => Buffer.from(`{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }).map((kib) => Buffer.from(`{"pad":"${'x'.repeat(kib * 100 * 1024)}"}`)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).chain((value) => fc.nat().map((cut) => json(value).subarray(0, cut % (json(value).length + 1)))) },
  { weight: 1, arbitrary: bytes(64) },
);
const streamType = fc.oneof(fc.constantFrom(...Object.values(STREAM_TYPES), 10, 0xffffffff), fc.nat());
const streamId = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 64 }) }, { weight: 1, arbitrary: fc.nat({ max: 0x7fffffff }) });

/** One thing a connection sends: bytes, already framed (or deliberately not). */
const action: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 1, arbitrary: bytes(200) },
  { weight: 4, arbitrary: fc.tuple(streamId, streamType, rpcBody, fc.boolean()).map(([id, type, body, fin]) => encodeFrame({ type: 'data', streamId: id | 1, flags: FLAG_SYN | (fin ? FLAG_FIN : 0), data: typed(type, body.subarray(0, LIMITS.agent_frame_bytes.value - 4)) })) },
  { weight: 2, arbitrary: fc.tuple(streamId, fc.integer({ min: 0, max: 15 }), bytes(100)).map(([id, flags, data]) => encodeFrame({ type: 'data', streamId: id, flags, data })) },
  { weight: 1, arbitrary: fc.tuple(streamId, fc.nat()).map(([id, increment]): Frame => ({ type: 'wndinc', streamId: id, flags: 0, increment })).map(encodeFrame) },
  { weight: 1, arbitrary: fc.tuple(streamId, fc.nat({ max: 20 })).map(([id, error]): Frame => ({ type: 'rst', streamId: id, flags: 0, error })).map(encodeFrame) },
  { weight: 1, arbitrary: fc.tuple(fc.nat(), fc.nat({ max: 20 }), bytes(20)).map(([last, error, message]): Frame => ({ type: 'goaway', streamId: 0, flags: 0, lastStreamId: last, error, message })).map(encodeFrame) },
  // Headers that lie: unknown types, lengths past the limit or the body, bodies of the wrong size.
  { weight: 2, arbitrary: fc.tuple(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 15 }), fc.nat({ max: 0x7fffffff }), fc.integer({ min: 0, max: FRAME_LENGTH_MAX }), bytes(40)).map(([type, flags, id, length, body]) => {
    const header = encodeHeader('data', flags, id, length);
    header[3] = (type << 4) | flags;
    return Buffer.concat([header, body]);
  }) },
  // A stream that fills its window without reading its echo.
  { weight: 1, arbitrary: streamId.map((id) => encodeFrame({ type: 'data', streamId: id | 1, flags: FLAG_SYN, data: typed(0xffffffff, Buffer.alloc(200 * 1024)) })) },
);

const connection = fc.record({
  authenticate: fc.boolean(),
  actions: fc.array(action, { minLength: 1, maxLength: 8 }),
  hangUp: fc.constantFrom('end', 'destroy', 'wait'),
});

/** Opens a TLS connection to the gateway; resolves once it is secure (or failed). */
function connectGateway(target: FuzzedServer): Promise<TLSSocket> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: target.agentPort, servername: 'localhost', ca: target.caPem });
    socket.on('error', () => {});
    socket.once('secureConnect', () => resolve(socket));
    socket.once('close', () => resolve(socket));
  });
}

/** Sends Auth on stream 1 as raw frames and waits for its reply (or the connection's end). */
function authenticate(socket: TLSSocket, authtoken: string): Promise<boolean> {
  const decoder = new FrameDecoder(FRAME_LENGTH_MAX);
  let reply = Buffer.alloc(0);
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        if (frame.type !== 'data' || frame.streamId !== 1) continue;
        reply = Buffer.concat([reply, frame.data]);
        try {
          const answer = JSON.parse(reply.toString()) as { Error: string };
          socket.off('data', onData);
          resolve(answer.Error === '');
        } catch {
          // Not all of it yet.
        }
      }
    };
    socket.on('data', onData);
    socket.once('close', () => resolve(false));
    socket.write(encodeFrame({ type: 'data', streamId: 1, flags: FLAG_SYN, data: typed(STREAM_TYPES.auth, json({ Version: ['3', '2'], ClientId: '', Extra: { AuthToken: authtoken, OS: 'linux', Version: '0.0.1' } })) }));
  });
}

export interface AgentFuzzFigures {
  cases: number;
  connections: number;
  authenticated: number;
  /** Connections the gateway closed before the fuzz hung up. */
  closedByGateway: number;
}

/** Runs `cases` cases of one to four connections at once; each hangs up (or is cut) within a second. */
export async function fuzzAgentGateway(target: FuzzedServer, cases: number, seed: number): Promise<AgentFuzzFigures> {
  const figures: AgentFuzzFigures = { cases, connections: 0, authenticated: 0, closedByGateway: 0 };
  await fc.assert(
    fc.asyncProperty(fc.array(connection, { minLength: 1, maxLength: 4 }), async (connections) => {
      await Promise.all(
        connections.map(async ({ authenticate: auth, actions, hangUp }) => {
          const socket = await connectGateway(target);
          figures.connections++;
          if (auth && !socket.destroyed && (await authenticate(socket, target.authtoken))) figures.authenticated++;
          // Stream ids the fuzz picks start above the Auth stream's.
          for (const bytes of actions) if (!socket.destroyed) socket.write(bytes);
          socket.resume();
          const closed = new Promise<boolean>((resolve) => {
            if (socket.destroyed) return resolve(true);
            const timer = setTimeout(() => resolve(false), hangUp === 'wait' ? 500 : 50);
            socket.once('close', () => {
              clearTimeout(timer);
              resolve(true);
            });
          });
          if (hangUp === 'end') socket.end();
          if (await closed) figures.closedByGateway++;
          socket.destroy();
        }),
      );
    }),
    { numRuns: cases, seed, endOnFailure: true },
  );
  return figures;
}

/** What a storm did, read on the server: the probes' waits, its event loop, its memory before and after. */
export interface StormFigures {
  fuzz: AgentFuzzFigures;
  probes: ProberFigures;
  loop: EventLoopFigures;
  memoryBefore: MemoryFigures;
  memoryAfter: MemoryFigures;
}

/**
 * The fuzz with the health prober running and the vendor's agent connected beside it. The agent
 * must still be served afterwards: its session listed and a new endpoint bound on it.
 */
export async function stormWithBystander(target: FuzzedServer, cases: number, seed: number): Promise<StormFigures> {
  const agents = new VendorAgents();
  const session = await agents.connect(new ngrok.SessionBuilder().authtoken(target.authtoken).serverAddr(`localhost:${target.agentPort}`).caCert(Buffer.from(target.caPem)), false);
  try {
    await session.tcpEndpoint().listen(false);
    const before = await reports(target.server);
    // The collections the memory report ran hold the loop too: a report after them starts the storm's window clean.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await eventLoopReport(target.server);
    const prober = await startHealthProber(target.server.url);
    const fuzzing = fuzzAgentGateway(target, cases, seed);
    const probes = await fuzzing.then(
      () => prober.stop(),
      async (error) => {
        await prober.stop();
        throw error;
      },
    );
    const fuzz = await fuzzing;
    const bound = await session.tcpEndpoint().listen(false);
    assert.match(bound.url() ?? '', /^tcp:\/\//, 'the bystander still binds');
    const sessions = () => target.server.request('GET', '/tunnel_sessions', undefined, { token: FUZZ_API_KEY }).then((listed) => listed.body.tunnel_sessions as unknown[]);
    await until(sessions, (list) => list.length === 1, 'only the bystander\'s session is left');
    const after = await reports(target.server);
    return { fuzz, probes, loop: after.loop, memoryBefore: before.memory, memoryAfter: after.memory };
  } finally {
    agents.stop();
    await session.close().catch(() => undefined);
    await agents.ended();
  }
}

/** The checks both the short and the long run make, but for the probes' waits (see each). */
export function assertStormSurvived(target: FuzzedServer, figures: StormFigures, heldLimitMs: number): void {
  assert.equal(target.server.process.exitCode, null, `the server exited:\n${target.server.output.join('\n')}`);
  assert.doesNotMatch(target.server.output.join('\n'), /agent gateway error|internal error/);
  assert.ok(figures.probes.probes > 0);
  assert.deepEqual({ failed: figures.probes.failed, failures: figures.probes.failures }, { failed: 0, failures: [] }, 'every health probe answered 200');
  assert.ok(figures.loop.heldMs < heldLimitMs, `the server's event loop was held ${figures.loop.heldMs} ms`);
  // Every storm connection is gone: what it made the server hold must be too (16 MiB is one authenticated connection's bound).
  const grown = figures.memoryAfter.arrayBuffers - figures.memoryBefore.arrayBuffers;
  assert.ok(grown < 16 * 1024 * 1024, `the server's buffers grew by ${grown} bytes over the storm`);
  const heapGrown = figures.memoryAfter.heapUsed - figures.memoryBefore.heapUsed;
  assert.ok(heapGrown < 32 * 1024 * 1024, `the server's heap grew by ${heapGrown} bytes over the storm`);
}
