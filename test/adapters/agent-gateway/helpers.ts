import ngrok, { type Session, type SessionBuilder } from '@ngrok/ngrok';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TestContext } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import {
  AgentGatewayError,
  createAgentGateway,
  type AgentGateway,
  type AgentGatewayOptions,
  type AgentSession,
  type AgentSessionHandler,
  type BindResult,
  type SessionEndReason,
} from '../../../adapters/agent-gateway/index.ts';
import { MuxadoSession, type MuxadoCloseReason } from '../../../adapters/agent-gateway/muxado/session.ts';
import { encodeFrame, FRAME_LENGTH_MAX, FrameDecoder, type Frame } from '../../../adapters/agent-gateway/muxado/frames.ts';
import type { MuxadoStream } from '../../../adapters/agent-gateway/muxado/stream.ts';
import { HEARTBEAT_STREAM_TYPE, openTypedStream, readStreamType } from '../../../adapters/agent-gateway/muxado/typed.ts';
import { STREAM_TYPES, STREAM_WINDOW_BYTES, type AgentAuth, type BindRequest } from '../../../adapters/agent-gateway/protocol.ts';
import { AGENT_MESSAGE_BOUNDS, readMessage } from '../../../adapters/agent-gateway/rpc.ts';
import type { Timers } from '../../../adapters/gateway-connection/timers.ts';
import { LIMITS } from '../../../lib/limits.ts';
import { VendorAgents } from '../../fixtures/vendor-agents.ts';
import { generateCertificateAuthority, signServerCertificate, type CertificateAuthority, type SignedCertificate } from '../../../lib/ca/certificate-authority.ts';

/** Timers that fire only when a test advances virtual time: no test waits on the wall clock. */
export interface ManualTimers extends Timers {
  /** Fires, in order, every timer due within `ms` from now (also those set while firing). */
  advance(ms: number): void;
  /** Delays (from now) of the timers still pending. */
  pending(): number[];
  /** Resolves once a timer with `delay` is pending (set by work the test is waiting for). */
  whenPending(delay: number): Promise<void>;
}

export function manualTimers(): ManualTimers {
  let now = 0;
  const timers: { at: number; callback: () => void; cancelled: boolean }[] = [];
  const watchers: { delay: number; resolve: () => void }[] = [];
  const notify = () => {
    for (const watcher of [...watchers]) {
      if (timers.some((timer) => !timer.cancelled && timer.at - now === watcher.delay)) {
        watchers.splice(watchers.indexOf(watcher), 1);
        watcher.resolve();
      }
    }
  };
  return {
    setTimeout(callback, ms) {
      const timer = { at: now + ms, callback, cancelled: false };
      timers.push(timer);
      notify();
      return { cancel: () => void (timer.cancelled = true) };
    },
    advance(ms) {
      const target = now + ms;
      for (;;) {
        const due = timers.filter((timer) => !timer.cancelled && timer.at <= target).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        due.cancelled = true;
        now = due.at;
        due.callback();
      }
      now = target;
    },
    pending: () => timers.filter((timer) => !timer.cancelled).map((timer) => timer.at - now),
    whenPending(delay) {
      return new Promise((resolve) => {
        watchers.push({ delay, resolve });
        notify();
      });
    },
  };
}

/** A list of events that tests wait on: `next` resolves with the first match, past or future. */
export class Recorder<E> {
  readonly events: E[] = [];
  readonly #waiters: { match: (event: E) => boolean; resolve: (event: E) => void }[] = [];

  push(event: E): void {
    this.events.push(event);
    for (const waiter of [...this.#waiters]) {
      if (waiter.match(event)) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  }

  next<T extends E>(match: (event: E) => event is T): Promise<T>;
  next(match: (event: E) => boolean): Promise<E>;
  next(match: (event: E) => boolean): Promise<E> {
    const seen = this.events.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }
}

let pki: Promise<{ ca: CertificateAuthority; server: SignedCertificate }> | undefined;

/** A CA of this test process and a gateway certificate for localhost and 127.0.0.1. */
export function testPki(): Promise<{ ca: CertificateAuthority; server: SignedCertificate }> {
  pki ??= (async () => {
    const now = new Date();
    const ca = await generateCertificateAuthority({ now, commonName: 'Burrow Test CA' });
    return { ca, server: await signServerCertificate(ca, { now, dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] }) };
  })();
  return pki;
}

export interface TestContextData {
  readonly token: string;
}

export type GatewayEvent =
  | { readonly kind: 'auth'; readonly auth: AgentAuth; readonly ip: string }
  | { readonly kind: 'bind'; readonly session: AgentSession<TestContextData>; readonly request: BindRequest; readonly result: BindResult }
  | { readonly kind: 'unbind'; readonly session: AgentSession<TestContextData>; readonly tunnelId: string }
  | { readonly kind: 'ended'; readonly session: AgentSession<TestContextData>; readonly reason: SessionEndReason };

/** Tokens the test handler refuses, with the refusal's code. */
export const REFUSED_TOKEN = 'refused-token';
export const REFUSED_CODE = 107;
export const REFUSED_MESSAGE = 'The authtoken you specified is not valid.';

export interface GatewayFixture {
  readonly gateway: AgentGateway<TestContextData>;
  readonly port: number;
  readonly caPem: string;
  readonly events: Recorder<GatewayEvent>;
  /** The handler's behaviour; tests replace methods. */
  readonly handler: AgentSessionHandler<TestContextData>;
  readonly errors: unknown[];
  /** The gateway's timers: manual unless the test gave its own, so no timeout fires by itself. */
  readonly timers: Timers;
  /** The vendor's agents connected to it (connectAgent). */
  readonly agents: VendorAgents;
}

/**
 * A gateway on 127.0.0.1:0 with a recording handler: tokens other than REFUSED_TOKEN are
 * accepted as sessions ts_1, ts_2…; binds become tunnels tn_1, tn_2… with URLs under
 * burrow.test (or the domain / address the agent asked for). Its timers are manual unless given:
 * no handshake, heartbeat or command timeout fires unless the test advances time. Closed when
 * the test ends.
 */
export async function startGateway(t: TestContext, options: Partial<Omit<AgentGatewayOptions<TestContextData>, 'handler' | 'tls' | 'onError'>> = {}): Promise<GatewayFixture> {
  const { ca, server } = await testPki();
  const events = new Recorder<GatewayEvent>();
  let sessions = 0;
  let tunnels = 0;
  const handler: AgentSessionHandler<TestContextData> = {
    async authenticate(auth, remote) {
      events.push({ kind: 'auth', auth, ip: remote.ip });
      if (auth.authtoken === REFUSED_TOKEN) throw new AgentGatewayError(REFUSED_CODE, REFUSED_MESSAGE);
      sessions += 1;
      return { sessionId: `ts_${sessions}`, context: { token: auth.authtoken }, region: 'eu', cookie: `cookie-${sessions}`, accountName: 'Test Account' };
    },
    async bind(session, request) {
      tunnels += 1;
      const tunnelId = `tn_${tunnels}`;
      let url: string | undefined;
      if (request.kind === 'endpoint') {
        if (request.proto === 'tcp') url = `tcp://${request.options.addr || `tcp.burrow.test:${20000 + tunnels}`}`;
        else url = `${request.proto}://${request.options.domain || `t${tunnels}.burrow.test`}`;
      }
      const result = { tunnelId, url };
      events.push({ kind: 'bind', session, request, result });
      return result;
    },
    async unbind(session, tunnelId) {
      events.push({ kind: 'unbind', session, tunnelId });
    },
    sessionEnded(session, reason) {
      events.push({ kind: 'ended', session, reason });
    },
  };
  const errors: unknown[] = [];
  const timers = options.timers ?? manualTimers();
  const gateway = createAgentGateway<TestContextData>({
    handler: {
      authenticate: (...args) => handler.authenticate(...args),
      bind: (...args) => handler.bind(...args),
      unbind: (...args) => handler.unbind(...args),
      sessionEnded: (...args) => handler.sessionEnded(...args),
    },
    tls: { cert: server.certificatePem, key: server.privateKeyPem },
    ...options,
    timers,
    onError: (error) => errors.push(error),
  });
  const { port } = await gateway.listen('127.0.0.1', 0);
  // The vendor's agents end with the gateway, before the test's other servers go (VendorAgents).
  const agents = new VendorAgents();
  t.after(() => agents.end(() => gateway.close()));
  return { gateway, port, caPem: ca.certificatePem, events, handler, errors, timers, agents };
}

/**
 * The vendor's agent (the @ngrok/ngrok SDK) connected to `port` (the gateway's, or a relay's)
 * and trusting the test CA. It reconnects after a lost connection unless `reconnect` is false,
 * and never once the test ends (the gateway's close ends it: VendorAgents).
 */
export async function connectAgent(
  fixture: GatewayFixture,
  configure: (builder: SessionBuilder) => SessionBuilder = (builder) => builder,
  { port = fixture.port, reconnect = true }: { port?: number; reconnect?: boolean } = {},
): Promise<Session> {
  const builder = new ngrok.SessionBuilder().authtoken('agent-token').serverAddr(`localhost:${port}`).caCert(Buffer.from(fixture.caPem));
  return fixture.agents.connect(configure(builder), reconnect);
}

/** A TCP relay in front of the gateway that a test can freeze (stop forwarding) or cut. */
export interface Relay {
  readonly port: number;
  /** Stops reading both ways: the peers go silent to each other. */
  freeze(): void;
  /** Destroys every relayed connection. */
  cut(): void;
  /**
   * Destroys the agents' side of every relayed connection and leaves the gateway's side open and
   * silent: the agent knows its connection is gone, the gateway does not (a network that failed
   * on the agent's side).
   */
  dropAgentSide(): void;
  /** While on, closes every new connection at once (the agent cannot get through); existing ones are kept. */
  refuseNew(refusing: boolean): void;
}

export async function startRelay(t: TestContext, targetPort: number): Promise<Relay> {
  const sockets = new Set<Socket>();
  const pairs = new Set<{ readonly inbound: Socket; readonly outbound: Socket; orphaned: boolean }>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  };
  let refusing = false;
  const server: Server = createServer((inbound) => {
    if (refusing) {
      inbound.on('error', () => {}).destroy();
      return;
    }
    track(inbound);
    const outbound = connect(targetPort, '127.0.0.1');
    track(outbound);
    const pair = { inbound, outbound, orphaned: false };
    pairs.add(pair);
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('close', () => {
      pairs.delete(pair);
      if (!pair.orphaned) outbound.destroy();
    });
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  t.after(() => {
    cut();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    port: (server.address() as { port: number }).port,
    freeze() {
      for (const socket of sockets) {
        socket.unpipe();
        socket.pause();
      }
    },
    cut,
    dropAgentSide() {
      for (const pair of pairs) {
        pair.orphaned = true;
        pair.outbound.unpipe();
        pair.outbound.pause();
        pair.inbound.destroy();
      }
    },
    refuseNew(on) {
      refusing = on;
    },
  };
}

/** A TLS connection to the gateway that trusts the test CA, closed when the test ends. */
export async function connectTls(t: TestContext, fixture: GatewayFixture): Promise<TLSSocket> {
  const socket = tlsConnect({ host: '127.0.0.1', port: fixture.port, servername: 'localhost', ca: fixture.caPem });
  socket.on('error', () => {});
  t.after(() => void socket.destroy());
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  return socket;
}

/** The peer's side as raw frames: what a hostile or hand-written peer sends and sees. */
export function framePeer(socket: Duplex) {
  const decoder = new FrameDecoder(FRAME_LENGTH_MAX);
  const frames = new Recorder<Frame>();
  socket.on('data', (chunk: Buffer) => decoder.push(chunk).forEach((frame) => frames.push(frame)));
  const closed = once(socket, 'close');
  return {
    frames,
    closed,
    send: (...toSend: (Frame | Buffer)[]) => socket.write(Buffer.concat(toSend.map((frame) => (Buffer.isBuffer(frame) ? frame : encodeFrame(frame))))),
    goaway: () => frames.next((frame): frame is Extract<Frame, { type: 'goaway' }> => frame.type === 'goaway'),
  };
}

/** An agent written with this repository's muxado (client side), for what the SDK never does. */
export interface RawAgent {
  readonly socket: TLSSocket;
  readonly mux: MuxadoSession;
  /** Streams the gateway opened, by type (heartbeats are answered, not listed). */
  readonly incoming: Recorder<{ readonly type: number; readonly stream: MuxadoStream }>;
  /** Resolves when the session ends (with the gateway's GOAWAY, if it sent one). */
  readonly closed: Promise<MuxadoCloseReason>;
  /** One RPC: a typed stream, the message as JSON (text as is; without ending), the reply. */
  call(type: number, message: unknown): Promise<any>;
  /** Auth with the protocol versions the SDK sends. */
  auth(extra?: Record<string, unknown>): Promise<any>;
}

export async function connectRawAgent(t: TestContext, fixture: GatewayFixture): Promise<RawAgent> {
  const socket = await connectTls(t, fixture);
  const mux = new MuxadoSession(socket, {
    role: 'client',
    window: STREAM_WINDOW_BYTES,
    maxStreams: LIMITS.agent_streams.value,
    maxFrameBytes: LIMITS.agent_frame_bytes.value,
    // What a hand-written agent holds is the test's business, not a bound under test.
    maxHeldBytes: Number.MAX_SAFE_INTEGER,
  });
  const closed = new Promise<MuxadoCloseReason>((resolve) => mux.once('close', resolve));
  const incoming = new Recorder<{ readonly type: number; readonly stream: MuxadoStream }>();
  mux.on('stream', async (stream: MuxadoStream) => {
    stream.on('error', () => {});
    const type = await readStreamType(stream);
    if (type === HEARTBEAT_STREAM_TYPE) stream.pipe(stream);
    else incoming.push({ type, stream });
  });
  const call = async (type: number, message: unknown) => {
    const stream = openTypedStream(mux, type);
    stream.on('error', () => {});
    stream.write(typeof message === 'string' ? message : JSON.stringify(message));
    return readMessage(stream, AGENT_MESSAGE_BOUNDS);
  };
  return {
    socket,
    mux,
    closed,
    incoming,
    call,
    auth: (extra = {}) => call(STREAM_TYPES.auth, { Version: ['3', '2'], ClientId: '', Extra: { OS: 'linux', AuthToken: 'raw-token', Version: '0.0.1', ...extra } }),
  };
}

/** Two ends of one loopback TCP connection, destroyed when the test ends. */
export async function socketPair(t: TestContext): Promise<[Socket, Socket]> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  const ends: [Socket, Socket] = [client, await accepted];
  server.close();
  for (const end of ends) {
    end.on('error', () => {});
    t.after(() => void end.destroy());
  }
  return ends;
}

/** Waits until `check` holds on what `read` answers (the API, polled); the wait ends on the state, not on a delay. */
export async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
  for (let tries = 0; ; tries++) {
    const value = await read();
    if (check(value)) return value;
    // Only a guard against a hang, generous for a loaded machine.
    if (tries > 1500) throw new Error(`${what} did not happen; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
