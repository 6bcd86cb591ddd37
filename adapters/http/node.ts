import { STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, ERRORS, LIMITS, type BurrowCore } from '../../lib/index.ts';
import { parseTarget, quote, tooLarge, type BodyLimit, type HttpRequest, type HttpResponse } from './body.ts';
import { createHttpHandler, errorResponse, type HttpHandlerOptions } from './handler.ts';
import { callerAddress, compileTrustProxy, type ProxyTrust, type TrustProxySetting } from './trust-proxy.ts';

export interface NodeListenerOptions extends HttpHandlerOptions {
  /**
   * Which reverse proxies' X-Forwarded-For entries name the caller (Express's `trust proxy`): a
   * hop count, or addresses, CIDRs and `loopback`/`linklocal`/`uniquelocal`; `true` is `loopback`.
   * Off by default: the caller is the connection's address.
   */
  trustProxy?: TrustProxySetting;
}

/**
 * A node:http request listener serving a Burrow instance: `http.createServer(createNodeListener(burrow))`.
 * It hands node's request to the shared translation layer directly (no WHATWG Request/Response).
 */
export function createNodeListener(burrow: BurrowCore<any>, options: NodeListenerOptions = {}): RequestListener {
  const handle = createHttpHandler(burrow, options);
  const trust = compileTrustProxy(options.trustProxy);
  // The handler answers every error it meets in the envelope; this catches only a failure to
  // write that answer (or a bug), which must still never escape into node's request event.
  const fail = (res: ServerResponse, error: unknown): void => {
    if (res.headersSent) res.destroy();
    else send(res, errorResponse(burrow, error, burrow.newOperationId(), options.onError));
  };
  return (req: IncomingMessage, res: ServerResponse) => {
    handle(new NodeRequest(req, trust))
      .then((response) => answers.add(res, response, fail))
      .catch((error) => fail(res, error));
  };
}

/**
 * The answers ready in one turn of the event loop, written together at its end (setImmediate,
 * right after the turn's I/O callbacks): a busy server wakes each client once per turn instead of
 * once per answer. On two cores, with the load generator asleep between answers, waking it was
 * the largest single cost of a request (the socket write: 38 µs of 84 per POST); batched, Burrow's
 * CPU per POST fell to ~47 µs and per GET from ~43 to ~29 µs. An idle server answers a lone request
 * in the same turn, as before; answers on one connection keep their order.
 */
class AnswerBatch {
  #ready: [ServerResponse, HttpResponse, (res: ServerResponse, error: unknown) => void][] = [];
  readonly #flush = (): void => {
    const ready = this.#ready;
    this.#ready = [];
    for (const [res, response, fail] of ready) {
      try {
        send(res, response);
      } catch (error) {
        // One answer that cannot be written never holds up (or throws past) the others.
        try {
          fail(res, error);
        } catch {
          res.destroy();
        }
      }
    }
  };

  add(res: ServerResponse, response: HttpResponse, fail: (res: ServerResponse, error: unknown) => void): void {
    if (this.#ready.push([res, response, fail]) === 1) setImmediate(this.#flush);
  }
}
const answers = new AnswerBatch();

/**
 * Answers, in the error envelope, what never reaches a request listener, then closes the
 * connection: a request node's parser refuses (400; 431 for headers past its limit; 408 for one
 * that came too slowly) and CONNECT (405). Create the server with `requireHostHeader: false` to have
 * a request without Host refused in the envelope too (by the listener) instead of by node's bare 400.
 */
export function answerUnparsedRequests(server: Server, burrow: BurrowCore<any>): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As node's own handler: answer only where no answer of an earlier request has begun.
    const inFlight = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
    if (socket.writable && error.code !== 'ECONNRESET' && !inFlight?.headersSent) {
      const spec = error.code === 'HPE_HEADER_OVERFLOW' ? ERRORS.REQUEST_HEADERS_TOO_LARGE : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? ERRORS.REQUEST_TIMEOUT : ERRORS.REQUEST_MALFORMED;
      const reason = error.message.replace(/^Parse Error: /, '');
      socket.write(rawAnswer(burrow, new ApiError(spec, `the request could not be read: ${reason}`)));
    }
    socket.destroy();
  });
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const refusal = new ApiError(ERRORS.METHOD_NOT_ALLOWED, `CONNECT ${quote(req.url ?? '')} is not allowed: Burrow is no proxy`, {}, { Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' });
    socket.end(rawAnswer(burrow, refusal));
  });
}

/** The envelope answer of `error`, as bytes to write straight to a socket (closing the connection). */
function rawAnswer(burrow: BurrowCore<any>, error: ApiError): string {
  const operationId = burrow.newOperationId();
  const response = errorResponse(burrow, error, operationId);
  const body = response.body ?? '';
  const headers = { ...response.headers, 'Burrow-Operation-Id': operationId, Date: new Date().toUTCString(), 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}\r\n${head}\r\n${body}`;
}

/** A Host value: a name or an IP literal with an optional port (RFC 9110 §7.2); URL parsing must accept it too. */
const HOST = /^(?:\[[\dA-Fa-f:.]+\]|[\w.~!$&'()*+,;=%-]+)(?::\d*)?$/;

/** A node request as the translation layer reads it; methods, not per-request closures. */
class NodeRequest implements HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly search: string;
  readonly origin: string = 'http://localhost';
  readonly sourceIp?: string;
  readonly mountPath?: string;
  readonly refusal?: unknown;
  readonly #req: IncomingMessage;

  /** Never throws: what it cannot read becomes `refusal`, which the handler answers. */
  constructor(req: IncomingMessage, trust: ProxyTrust | undefined) {
    this.#req = req;
    this.method = req.method ?? 'GET';
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    [this.path, this.search] = q < 0 ? [target, ''] : [target.slice(0, q), target.slice(q)];
    try {
      const parsed = parseTarget(target);
      this.path = parsed.path;
      this.search = parsed.search;
      // Host is checked even where an absolute-form target's authority replaces it (RFC 9112 §3.2).
      const hostOrigin = originOf(req);
      this.origin = parsed.origin ?? hostOrigin;
      const sourceIp = trust ? callerAddress(req.socket.remoteAddress, this.header('x-forwarded-for') ?? undefined, trust) : req.socket.remoteAddress;
      if (sourceIp) this.sourceIp = sourceIp;
      const mountPath = (req as { originalUrl?: unknown }).originalUrl === undefined ? undefined : mountOf(req);
      if (mountPath) this.mountPath = mountPath;
    } catch (error) {
      this.refusal = error;
    }
  }

  header(name: string): string | null {
    const value = this.#req.headers[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }

  rawHeaders(): readonly string[] {
    return this.#req.rawHeaders;
  }

  text(limit: BodyLimit = 'request_body_bytes'): Promise<string> {
    return readBody(this.#req, limit);
  }
}

/**
 * `http://host:port` of a request from its one Host header; without one (HTTP/1.0) or with an
 * empty one (allowed when the target has no authority), the address it reached. A missing Host on
 * HTTP/1.1, several Host lines or a malformed value throw a 400 ApiError (RFC 9112 §3.2).
 */
function originOf(req: IncomingMessage): string {
  let lines = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.length === 4 && req.rawHeaders[i]!.toLowerCase() === 'host') lines++;
  if (lines > 1) throw new ApiError(ERRORS.REQUEST_MALFORMED, `Host: sent ${lines} times; a request names one host`, { header: 'Host' });
  const host = req.headers.host;
  if (host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
    throw new ApiError(ERRORS.REQUEST_MALFORMED, 'Host: missing; an HTTP/1.1 request must send one', { header: 'Host' });
  }
  if (!host) {
    const { localAddress = '127.0.0.1', localPort } = req.socket;
    return URL.parse(`http://${localAddress.includes(':') ? `[${localAddress}]` : localAddress}:${localPort ?? ''}`)?.origin ?? 'http://localhost';
  }
  const known = origins.get(host);
  if (known !== undefined) return known;
  const url = HOST.test(host) ? URL.parse(`http://${host}`) : null;
  if (!url) throw new ApiError(ERRORS.REQUEST_MALFORMED, `Host: ${quote(host)} is not a host name or IP address with an optional port`, { header: 'Host' });
  if (origins.size >= MAX_ORIGINS) origins.clear();
  origins.set(host, url.origin);
  return url.origin;
}

/**
 * The origins of Host values seen lately: clients send the same few, and parsing one as a URL was
 * a tenth of Burrow's own work on a GET. Bounded; past it the table starts over.
 */
const origins = new Map<string, string>();
const MAX_ORIGINS = 256;

/**
 * Writes a response in one socket write: with a string body and a known length, node sends the
 * head and the body together (a Buffer body would be a second chunk, and a copy).
 */
function send(res: ServerResponse, response: HttpResponse): void {
  // A fault's dropped connection: the client sees its connection reset, with no answer.
  if (response.drop) return void res.socket?.resetAndDestroy();
  const { body, headers } = response;
  if (body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(body));
  res.writeHead(response.status, headers);
  res.end(body);
}

/** A client that closed its connection before its body ended: the request failed on its side, not an internal error. */
const cutShort = (bytes: number) => new ApiError(ERRORS.BODY_UNREADABLE, `the request body ended after ${bytes} bytes: the client closed its connection before the rest`);

function readBody(req: IncomingMessage, limit: BodyLimit): Promise<string> {
  const maxBytes = LIMITS[limit].value;
  // Closed while the request waited for its turn: node has dropped what came (and emits nothing more).
  if (req.destroyed && !req.complete) return Promise.reject(cutShort(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.resume();
        try {
          tooLarge(limit);
        } catch (error) {
          reject(error);
        }
        return;
      }
      chunks.push(chunk);
    });
    // A small body comes in one chunk: decoded as it is, not copied into a new Buffer first.
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    req.on('error', (error: NodeJS.ErrnoException) => reject(error.code === 'ECONNRESET' ? cutShort(size) : error));
  });
}

/**
 * Express (and Connect) strip their mount path from `req.url` and keep the client's path in
 * `req.originalUrl`; the difference is where Burrow is mounted, which every `uri` must include.
 */
function mountOf(req: IncomingMessage): string | undefined {
  const original = (req as { originalUrl?: unknown }).originalUrl;
  if (typeof original !== 'string' || original === req.url) return undefined;
  const originalPath = original.split('?')[0]!;
  const url = (req.url ?? '/').split('?')[0]!;
  const routedPath = url === '/' ? '' : url;
  if (!originalPath.endsWith(routedPath)) return undefined;
  return originalPath.slice(0, originalPath.length - routedPath.length).replace(/\/$/, '') || undefined;
}
