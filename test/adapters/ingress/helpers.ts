import { createHash, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request, type Agent, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TestContext } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

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
