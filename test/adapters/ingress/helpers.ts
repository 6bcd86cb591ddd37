import assert from 'node:assert/strict';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request, type Agent, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TestContext } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { listenLocally } from './fixtures.ts';

/** The ingress tests' client and upstream app: node's HTTP client by Host, a local app that answers what it received. */

export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly reusedSocket: boolean;
}

export interface Call {
  readonly method?: string;
  readonly path?: string;
  readonly host: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: Buffer;
  readonly agent?: Agent;
}

/** One request to the ingress on `port`; resolves with the whole answer. */
export async function callIngress(port: number, { method = 'GET', path = '/', host, headers = {}, body, agent }: Call): Promise<Answer> {
  const req = request({ host: '127.0.0.1', port, method, path, headers: { host, ...headers }, ...(agent ? { agent } : { agent: false }) });
  req.end(body);
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), reusedSocket: req.reusedSocket };
}

/** What the app saw of a request. */
export interface Seen {
  readonly app: string;
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly length: number;
  readonly sha256: string;
}

/** The app's answer, read. */
export const seen = (answer: Answer) => JSON.parse(answer.body.toString()) as Seen;

/**
 * An app behind an agent or a static backend, stopped after the test: answers what it received as
 * JSON (`app` its name, the body as its length and hash); `/download` answers 1 MiB. WebSocket
 * handshakes: /ws switches and echoes what it reads upper-cased; any other path is refused.
 */
export async function startApp(t: TestContext, name = 'app'): Promise<number> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (req.url === '/download') {
      res.setHeader('Content-Type', 'application/octet-stream');
      return res.end(Buffer.alloc(1024 * 1024, 7));
    }
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('X-App', 'yes');
    res.end(JSON.stringify({ app: name, method: req.method, url: req.url, headers: req.headers, length: body.length, sha256: createHash('sha256').update(body).digest('hex') }));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    if (req.url !== '/ws') return void socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 4\r\n\r\nnope');
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nX-Forwarded-Proto-Seen: ${req.headers['x-forwarded-proto']}\r\n\r\n`);
    socket.on('data', (chunk: Buffer) => socket.write(chunk.toString().toUpperCase()));
    socket.on('end', () => socket.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    return closed;
  });
  return (server.address() as { port: number }).port;
}

/** Waits for the next value `take` accepts among those `subscribe` hands out. */
export function next<T>(subscribe: (listener: (value: T) => void) => () => void, take: (value: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve) => {
    const stop = subscribe((value) => {
      if (!take(value)) return;
      stop();
      resolve(value);
    });
  });
}

/** The SHA-256 fingerprint of a PEM certificate, to compare with `TlsClient.certificate`. */
export const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

export interface TlsClient {
  readonly socket: TLSSocket;
  /** The fingerprint of the certificate the ingress (or the service behind it) presented. */
  readonly certificate: string;
}

/** A TLS connection to the ingress on `port` for `servername`, trusting `ca`, destroyed after the test; resolves once its handshake is done. */
export async function connectTls(t: TestContext, port: number, servername: string, ca: string): Promise<TlsClient> {
  const socket = tlsConnect({ host: '127.0.0.1', port, servername, ca });
  t.after(() => socket.destroy());
  await once(socket, 'secureConnect');
  return { socket, certificate: new X509Certificate(socket.getPeerCertificate().raw).fingerprint256 };
}

/** A WebSocket handshake to the ingress on `port` for `host`: the switched socket (and bytes that came with the 101), or the refusal as an answer. */
export async function upgradeCall(port: number, host: string, path: string): Promise<{ switched: IncomingMessage; socket: Duplex; head: Buffer } | { refused: Answer }> {
  const key = randomBytes(16).toString('base64');
  const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { host, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': key, 'sec-websocket-version': '13' } });
  req.end();
  const answered = await Promise.race([
    once(req, 'upgrade').then(([switched, socket, head]) => ({ switched, socket, head }) as { switched: IncomingMessage; socket: Duplex; head: Buffer }),
    once(req, 'response').then(([res]) => res as IncomingMessage),
  ]);
  if ('switched' in answered) {
    assert.equal(answered.switched.headers['sec-websocket-accept'], createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64'));
    return answered;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of answered) chunks.push(chunk as Buffer);
  return { refused: { status: answered.statusCode ?? 0, headers: answered.headers, body: Buffer.concat(chunks), reusedSocket: false } };
}

/** A WebSocket frame as read or sent. */
export interface Frame {
  readonly fin: boolean;
  readonly opcode: number;
  readonly payload: Buffer;
}

/**
 * A minimal WebSocket client over a switched socket (RFC 6455 framing; node 20 has no WebSocket
 * of its own): sends frames masked as a client must (or unmasked, to break the protocol), reads
 * the server's frames in order.
 */
export class WebSocketFrames {
  readonly socket: Duplex;
  #pending: Buffer;
  readonly #frames: Frame[] = [];
  readonly #waiting: ((frame: Frame | undefined) => void)[] = [];
  #ended = false;

  constructor(socket: Duplex, head: Buffer) {
    this.socket = socket;
    this.#pending = head;
    socket.on('data', (chunk: Buffer) => {
      this.#pending = Buffer.concat([this.#pending, chunk]);
      this.#parse();
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      this.#ended = true;
      for (const resolve of this.#waiting.splice(0)) resolve(undefined);
    });
    this.#parse();
  }

  send(opcode: number, payload: Buffer | string, { fin = true, masked = true } = {}): void {
    const data = Buffer.from(payload);
    const length = data.length;
    const head = length < 126 ? Buffer.from([0, length]) : length < 65536 ? Buffer.from([0, 126, length >> 8, length & 0xff]) : Buffer.from([0, 127, 0, 0, 0, 0, 0, 0, 0, 0]);
    if (length >= 65536) head.writeUInt32BE(length, 6);
    head[0] = (fin ? 0x80 : 0) | opcode;
    if (!masked) return void this.socket.write(Buffer.concat([head, data]));
    head[1]! |= 0x80;
    const mask = randomBytes(4);
    const body = Buffer.from(data.map((byte, i) => byte ^ mask[i % 4]!));
    this.socket.write(Buffer.concat([head, mask, body]));
  }

  /** The next frame from the server, or undefined once the connection closed without one. */
  next(): Promise<Frame | undefined> {
    const frame = this.#frames.shift();
    if (frame || this.#ended) return Promise.resolve(frame);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Reads data frames until their payloads add up to `bytes` bytes; answers them joined. */
  async read(bytes: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let total = 0;
    while (total < bytes) {
      const frame = await this.next();
      assert.ok(frame, `the connection closed after ${total} of ${bytes} bytes`);
      assert.equal(frame.opcode, 2, 'data comes in binary frames');
      chunks.push(frame.payload);
      total += frame.payload.length;
    }
    return Buffer.concat(chunks);
  }

  #parse(): void {
    for (;;) {
      if (this.#pending.length < 2) return;
      const masked = (this.#pending[1]! & 0x80) !== 0;
      assert.equal(masked, false, 'a server never masks its frames');
      let length = this.#pending[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.#pending.length < 4) return;
        length = this.#pending.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.#pending.length < 10) return;
        length = this.#pending.readUInt32BE(2) * 2 ** 32 + this.#pending.readUInt32BE(6);
        offset = 10;
      }
      if (this.#pending.length < offset + length) return;
      const frame = { fin: (this.#pending[0]! & 0x80) !== 0, opcode: this.#pending[0]! & 0x0f, payload: this.#pending.subarray(offset, offset + length) };
      this.#pending = this.#pending.subarray(offset + length);
      const waiting = this.#waiting.shift();
      if (waiting) waiting(frame);
      else this.#frames.push(frame);
    }
  }
}

/** Listens with `server` on a free loopback port until the test ends (its connections closed then); answers the port. */
export async function serveLocally(t: TestContext, server: NetServer): Promise<number> {
  const local = await listenLocally(server);
  t.after(() => local.close());
  return local.port;
}

/** A TCP service that answers what it reads upper-cased (ASCII), and reports each connection's end and byte count. */
export async function startUpperService(t: TestContext): Promise<{ port: number; ended: Promise<number>[] }> {
  const ended: Promise<number>[] = [];
  const port = await serveLocally(
    t,
    createNetServer({ allowHalfOpen: true }, (socket) => {
      let bytes = 0;
      socket.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        socket.write(chunk.toString('latin1').toUpperCase(), 'latin1');
      });
      ended.push(new Promise((resolve) => socket.once('end', () => {
        resolve(bytes);
        socket.end();
      })));
    }),
  );
  return { port, ended };
}
