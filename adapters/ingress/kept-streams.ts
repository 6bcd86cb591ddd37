import { Agent } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * Proxy streams kept across the requests of one client connection. The vendor's agent joins each
 * proxy stream to a new connection to its local service (ngrok-rust `forward_to`), so a stream per
 * request costs a stream open and close, a TCP connect and an accept per request. Instead, each
 * client connection gets an HTTP keep-alive pool (node's Agent, one stream per upstream tunnel) whose
 * streams carry that connection's requests one after another, as the client's own connection
 * carries them; the proxy header (the client's address) is the same for all of them.
 *
 * A kept stream idles at most IDLE_MS, or less when the service's `Keep-Alive: timeout=N` hint says
 * so (node's Agent then uses N − 1 s), so that Burrow drops it before the service does; the pool goes
 * with the client's connection.
 */

const IDLE_MS = 4000;

/** What a request names to take a kept stream: which upstream it is, and how to open one. */
export interface KeptStreamRequest {
  /** One key per upstream (the agent session and its tunnel). */
  readonly streamKey: string;
  readonly openStream: () => Duplex;
}

class KeptStreamAgent extends Agent {
  constructor() {
    super({ keepAlive: true, maxSockets: 1, timeout: IDLE_MS });
  }

  override getName(options: object): string {
    return (options as KeptStreamRequest).streamKey;
  }
}
// Not in @types/node's Agent, but node's Agent calls it to make each connection, perhaps later
// (from another stream's 'free'): a stream that cannot open fails that request, never throws.
(KeptStreamAgent.prototype as unknown as { createConnection(options: KeptStreamRequest, callback: (error: Error | null, stream?: Duplex) => void): undefined }).createConnection = (options, callback) => {
  let stream: Duplex;
  try {
    stream = options.openStream();
  } catch (error) {
    return void callback(error as Error);
  }
  callback(null, asSocket(stream));
};

/** The pool of `client`'s connection, made on its first request and destroyed when it closes. */
export function keptStreamsOf(pools: WeakMap<Socket, Agent>, client: Socket): Agent {
  let pool = pools.get(client);
  if (!pool) {
    const created = new KeptStreamAgent();
    pools.set(client, created);
    client.once('close', () => created.destroy());
    pool = created;
  }
  return pool;
}

/**
 * The socket methods node's Agent calls on what it pools, on a proxy stream: keep-alive, no-delay
 * and ref counting mean nothing for a stream (its session's connection has them), and the idle
 * timeout starts again whenever data arrives.
 */
function asSocket(stream: Duplex): Duplex {
  const socket = stream as Duplex & { timeout?: number; setTimeout(ms: number, callback?: () => void): Duplex; setKeepAlive(): Duplex; setNoDelay(): Duplex; ref(): Duplex; unref(): Duplex };
  let timer: NodeJS.Timeout | undefined;
  const self = () => socket;
  socket.setKeepAlive = self;
  socket.setNoDelay = self;
  socket.ref = self;
  socket.unref = self;
  // As net.Socket's: a callback listens for the timeout, or, with 0, stops listening.
  socket.setTimeout = (ms, callback) => {
    if (callback && ms === 0) socket.removeListener('timeout', callback);
    else if (callback) socket.once('timeout', callback);
    clearTimeout(timer);
    socket.timeout = ms;
    timer = ms > 0 ? setTimeout(() => socket.emit('timeout'), ms).unref() : undefined;
    return socket;
  };
  socket.on('data', () => timer?.refresh());
  socket.once('close', () => clearTimeout(timer));
  return socket;
}
