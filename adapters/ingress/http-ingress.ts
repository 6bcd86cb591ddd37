import { createServer, request as upstreamRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { pipeline, type Duplex, type Writable } from 'node:stream';
import { createBrotliCompress, createDeflate, createGzip } from 'node:zlib';
import type { BurrowCore } from '../../lib/burrow.ts';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import type { HttpResponseOutcome, PolicyTerminal } from '../../lib/policy/decisions.ts';
import { createPolicyEngine, type HttpExchange } from '../../lib/policy/engine.ts';
import type { ConnectionFacts, HeaderList, HttpRequestFacts, HttpResponseFacts, RequestBody } from '../../lib/policy/facts.ts';
import type { CompiledPolicy } from '../../lib/policy/program.ts';
import type { AgentSession, AgentTunnel } from '../agent-gateway/index.ts';
import { errorPage, INGRESS_CODES, type ErrorPage } from './error-page.ts';
import { hostnameOf, routeHttp, routeInternal, type IngressRoute, type LiveSessions } from './routes.ts';
import { HttpTrace, traceOf } from './traffic-trace.ts';

/**
 * The HTTP ingress: plain HTTP/1.1 (keep-alive) routed by Host to the endpoint that serves the
 * name, through the endpoint's traffic policy (lib/policy decides, this file applies), down a
 * proxy stream of the agent's tunnel (adapters/agent-gateway `openProxy`) to the agent's local
 * service. Request and response bodies stream both ways; only a body the policy reads
 * (verify-webhook, jwt-validation) is held, up to the engine's own bound, and forwarded after.
 * A client's bad input answers that client alone (an error page naming the limit, or its
 * connection closed); an agent's bad answer is a 502 for that request.
 */

export interface IngressOptions {
  /** The live agent sessions to route to (an agent gateway's `sessions`). */
  readonly sessions: LiveSessions;
  /** Address to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 0: any free one). */
  readonly port?: number;
  /**
   * The account a session belongs to: forward-internal reaches only the same account's internal
   * endpoints. Default: every session is one account's.
   */
  readonly accountOf?: (session: AgentSession<unknown>) => string;
  /** A failure while a request was served (default: ignored; the request got its error page). */
  readonly onError?: (error: unknown) => void;
}

export interface Ingress {
  readonly address: { readonly host: string; readonly port: number };
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** Header fields that describe one connection, not the message (RFC 9110 §7.6.1), never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

const COMPRESSORS = { gzip: createGzip, deflate: createDeflate, br: createBrotliCompress } as const;

/** Starts the HTTP ingress of `burrow`; see the file comment. */
export async function createIngress(burrow: BurrowCore<any>, options: IngressOptions): Promise<Ingress> {
  const prefix = burrow.errorPrefix;
  const onError = options.onError ?? (() => undefined);
  const accountOf = options.accountOf ?? (() => '');
  const engine = createPolicyEngine({
    clock: burrow.clock,
    // Whether some live agent serves the internal endpoint; the hop itself takes only the account's own (routeInternal).
    forwardInternal: async (url) =>
      routeInternal(options.sessions, url, () => true) ? undefined : { status: 404, code: `ERR_NGROK_${INGRESS_CODES.endpointOffline}`, message: `The endpoint ${url} is offline.`, headers: [] },
  });
  const policies = new WeakMap<AgentTunnel, CompiledPolicy>();
  const connectedAt = new WeakMap<Socket, Date>();

  const policyOf = (route: IngressRoute) => {
    let policy = policies.get(route.tunnel);
    if (!policy) policies.set(route.tunnel, (policy = engine.compile(route.sources)));
    return policy;
  };

  const page = (status: number, code: number | string | undefined, message: string, headers: HeaderList = []) => errorPage(prefix, status, code, message, headers);

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Every exchange is journaled once its answer is done (lib/traffic-journal.ts).
    const seen = new HttpTrace(req, res, burrow.clock.now(), (traffic) => void burrow.traffic.record(traffic).catch(onError));
    const authority = req.headers.host ?? '';
    const hostname = hostnameOf(authority);
    let route = routeHttp(options.sessions, hostname);
    if (!route) return send(res, page(404, INGRESS_CODES.endpointOffline, `The endpoint http://${hostname} is offline.`));
    if (!URL.canParse(req.url ?? '', `http://${authority}`)) return send(res, page(400, undefined, `the request target ${JSON.stringify(req.url)} is not a valid URL`));
    const url = new URL(req.url ?? '', `http://${authority}`);
    const conn = connectionFacts(req.socket, connectedAt.get(req.socket) ?? burrow.clock.now());

    seen.routed(route.endpoint, accountOf(route.session), conn);
    const connected = await engine.connect(policyOf(route), route.endpoint, conn);
    seen.decided(connected);
    if (connected.terminal) return answer(req, res, connected.terminal);
    const body = new HeldBody(req);
    let facts: HttpRequestFacts = { method: req.method ?? 'GET', url: url.href, version: req.httpVersion, headers: pairs(req.rawHeaders), receivedAt: burrow.clock.now(), body };
    seen.received(facts);
    seen.requestBody(() => body.bytes);
    // forward-internal hands the request on to an internal endpoint, whose policy runs in turn; the
    // answer comes back through every response phase, the innermost first.
    const exchanges: HttpExchange[] = [];
    for (;;) {
      const exchange = engine.http(policyOf(route), route.endpoint, conn, facts);
      exchanges.unshift(exchange);
      const decided = await exchange.request();
      seen.decided(decided);
      facts = { ...facts, method: decided.request.method, url: decided.request.url, headers: decided.request.headers };
      if (decided.terminal?.kind !== 'forward') {
        if (decided.terminal) return answer(req, res, decided.terminal);
        break;
      }
      if (exchanges.length > LIMITS.ingress_forward_hops.value) {
        return send(res, page(508, undefined, `forward-internal to ${decided.terminal.url}: more than ${LIMITS.ingress_forward_hops.value} hops ${limitNote('ingress_forward_hops')}`));
      }
      const from = accountOf(route.session);
      const next = routeInternal(options.sessions, decided.terminal.url, (session) => accountOf(session) === from);
      if (!next) return send(res, page(404, INGRESS_CODES.endpointOffline, `The endpoint ${decided.terminal.url} is offline.`));
      route = next;
      seen.routed(route.endpoint, accountOf(route.session));
    }

    let stream: Duplex;
    try {
      stream = route.session.openProxy(route.tunnel.tunnelId, { clientAddr: hostPort(conn.clientIp, conn.clientPort) });
    } catch (error) {
      return send(res, page(404, INGRESS_CODES.endpointOffline, `The endpoint ${route.endpoint.url} is offline: ${(error as Error).message}`));
    }
    const target = new URL(facts.url);
    const served = route;
    const upstream = upstreamRequest({
      createConnection: () => stream as unknown as Socket,
      method: facts.method,
      path: `${target.pathname}${target.search}`,
      headers: flatten([...forwardable(facts.headers), ['X-Forwarded-For', conn.clientIp], ['X-Forwarded-Host', authority], ['X-Forwarded-Proto', 'http']]),
      setHost: false,
    });
    // A client that goes away takes its upstream request with it (the agent sees the stream reset).
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.on('error', (error) => {
      void Promise.all(exchanges.map((exchange) => exchange.upstreamFailed())).catch(onError);
      if (res.headersSent) res.destroy();
      else send(res, page(502, INGRESS_CODES.invalidUpstreamResponse, `The agent's answer for ${served.endpoint.url} was not a complete HTTP response: ${error.message}`));
    });
    upstream.on('response', (response) => {
      void respond(exchanges, { status: response.statusCode ?? 502, headers: pairs(response.rawHeaders) }, seen)
        .then((outcome) => {
          if (outcome.terminal) {
            response.destroy();
            return answer(req, res, outcome.terminal);
          }
          let headers = forwardable(outcome.response.headers);
          const compressor = outcome.compression ? COMPRESSORS[outcome.compression]() : undefined;
          if (outcome.compression) headers = [...headers.filter(([name]) => name.toLowerCase() !== 'content-length'), ['Content-Encoding', outcome.compression], ['Vary', 'Accept-Encoding']];
          seen.upstreamAnswered(outcome.response.status, headers, response, outcome.compression);
          res.writeHead(outcome.response.status, flatten(headers));
          const done = (error: Error | null | undefined) => {
            if (error) res.destroy();
          };
          if (compressor) pipeline(response, compressor, res, done);
          else pipeline(response, res, done);
        })
        .catch((error: unknown) => {
          response.destroy();
          fail(res, error);
        });
    });
    body.forward(upstream);
  }

  /** Runs the response phases, innermost first, each over what the one before left. */
  async function respond(exchanges: readonly HttpExchange[], upstream: HttpResponseFacts, seen: HttpTrace): Promise<HttpResponseOutcome> {
    let outcome: HttpResponseOutcome | undefined;
    let compression: HttpResponseOutcome['compression'];
    for (const exchange of exchanges) {
      outcome = await exchange.response(outcome ? outcome.response : upstream);
      seen.decided(outcome);
      compression ??= outcome.compression;
      if (outcome.terminal) return outcome;
    }
    return { ...outcome!, ...(compression ? { compression } : {}) };
  }

  /** Applies a policy's ending: its response, its error page, or the connection closed. */
  function answer(req: IncomingMessage, res: ServerResponse, terminal: PolicyTerminal): void {
    switch (terminal.kind) {
      case 'respond': {
        const body = Buffer.from(terminal.response.body);
        const headers = terminal.response.headers.filter(([name]) => name.toLowerCase() !== 'content-length');
        return send(res, { status: terminal.response.status, headers: [...headers, ['Content-Length', String(body.length)]], body: terminal.response.body });
      }
      case 'error':
        return send(res, page(terminal.error.status, terminal.error.code, terminal.error.message, terminal.error.headers));
      case 'close':
        req.socket.destroy();
        return;
      case 'forward':
        // Only on_tcp_connect ends so here; HTTP endpoints take no connection forwarding.
        return send(res, page(501, undefined, `forward-internal to ${terminal.url} on connect is not served by the HTTP ingress`));
    }
  }

  function fail(res: ServerResponse, error: unknown): void {
    onError(error);
    if (res.headersSent) res.destroy();
    else send(res, page(500, undefined, `the ingress failed to serve the request: ${(error as Error).message}`));
  }

  const server: Server = createServer(
    {
      maxHeaderSize: LIMITS.ingress_header_bytes.value,
      headersTimeout: LIMITS.ingress_head_ms.value,
      // Bodies stream for as long as bytes keep moving; ingress_idle_ms ends a silent connection.
      requestTimeout: 0,
      keepAliveTimeout: LIMITS.ingress_idle_ms.value,
    },
    (req, res) => void serve(req, res).catch((error: unknown) => fail(res, error)),
  );
  server.timeout = LIMITS.ingress_idle_ms.value;
  server.on('connection', (socket: Socket) => connectedAt.set(socket, burrow.clock.now()));
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const refusal =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? page(431, undefined, `the request head is longer than ${LIMITS.ingress_header_bytes.value} bytes ${limitNote('ingress_header_bytes')}`)
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? page(408, undefined, `the request head did not arrive within ${LIMITS.ingress_head_ms.value} ms ${limitNote('ingress_head_ms')}`)
          : page(400, undefined, `the request is not valid HTTP/1.1: ${error.message}`);
    socket.end(rawResponse(refusal, 'close'));
  });

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  return {
    address: { host: bound.address, port: bound.port },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The request body as the policy engine may read it: held up to the size asked (the engine's
 * bound), then forwarded upstream with whatever was not read.
 */
class HeldBody implements RequestBody {
  readonly #req: IncomingMessage;
  readonly #held: Buffer[] = [];
  #bytes = 0;
  #ended = false;
  #reading: Promise<Uint8Array | undefined> | undefined;

  constructor(req: IncomingMessage) {
    this.#req = req;
  }

  read(maxBytes: number): Promise<Uint8Array | undefined> {
    this.#reading ??= new Promise((resolve, reject) => {
      let total = 0;
      const stop = () => {
        this.#req.off('data', onData).off('end', onEnd).off('error', onFailure);
        this.#req.pause();
      };
      const onData = (chunk: Buffer) => {
        this.#held.push(chunk);
        this.#bytes += chunk.length;
        total += chunk.length;
        if (total > maxBytes) {
          stop();
          resolve(undefined);
        }
      };
      const onEnd = () => {
        stop();
        this.#ended = true;
        resolve(new Uint8Array(Buffer.concat(this.#held)));
      };
      const onFailure = (error: Error) => {
        stop();
        reject(error);
      };
      this.#req.on('data', onData).on('end', onEnd).on('error', onFailure);
    });
    return this.#reading;
  }

  /** Sends the body on to `to`: what was held, then the rest as it arrives. */
  forward(to: Writable): void {
    for (const chunk of this.#held) to.write(chunk);
    if (this.#ended) return void to.end();
    this.#req.on('data', (chunk: Buffer) => (this.#bytes += chunk.length));
    this.#req.pipe(to);
  }

  /** Body bytes read from the client so far (held and forwarded). */
  get bytes(): number {
    return this.#bytes;
  }
}

function connectionFacts(socket: Socket, startedAt: Date): ConnectionFacts {
  return { clientIp: plainIp(socket.remoteAddress), clientPort: socket.remotePort ?? 0, serverIp: plainIp(socket.localAddress), serverPort: socket.localPort ?? 0, startedAt };
}

/** IPv4 peers of a dual-stack listener appear as `::ffff:a.b.c.d`. */
const plainIp = (ip: string | undefined) => (ip?.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : (ip ?? ''));

const hostPort = (ip: string, port: number) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/** `rawHeaders` (name, value, name, value…) as a header list. */
function pairs(raw: readonly string[]): [string, string][] {
  const list: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) list.push([raw[i]!, raw[i + 1]!]);
  return list;
}

const flatten = (headers: HeaderList): string[] => headers.flatMap(([name, value]) => [name, value]);

/** The fields of a message that travel on: not the hop-by-hop ones, nor those its Connection names. */
function forwardable(headers: HeaderList): HeaderList {
  const named = new Set(
    headers
      .filter(([name]) => name.toLowerCase() === 'connection')
      .flatMap(([, value]) => value.split(','))
      .map((name) => name.trim().toLowerCase()),
  );
  return headers.filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase()) && !named.has(name.toLowerCase()));
}

function send(res: ServerResponse, answer: ErrorPage): void {
  traceOf(res)?.answered(answer.status, answer.headers, answer.body);
  res.writeHead(answer.status, flatten(answer.headers));
  res.end(answer.body);
}

/** A whole response as bytes, for a connection the HTTP server has given up on. */
function rawResponse(answer: ErrorPage, connection: string): string {
  const head = [`HTTP/1.1 ${answer.status} ${STATUS_TEXT[answer.status] ?? 'Error'}`, ...answer.headers.map(([name, value]) => `${name}: ${value}`), `Connection: ${connection}`];
  return `${head.join('\r\n')}\r\n\r\n${answer.body}`;
}

const STATUS_TEXT: Readonly<Record<number, string>> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };
