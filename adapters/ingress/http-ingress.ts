import { constants, createServer as createHttp2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { createServer, request as upstreamRequest, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline, type Duplex, type Readable, type Transform, type Writable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { createBrotliCompress, createDeflate, createGzip } from 'node:zlib';
import type { BurrowCore } from '../../lib/burrow.ts';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import type { BodyReplacement, HttpResponseOutcome, PolicyTerminal } from '../../lib/traffic/decisions.ts';
import { ActionFailure } from '../../lib/policy/actions/types.ts';
import type { HttpExchange } from '../../lib/policy/engine.ts';
import type { UpstreamRelay } from '../../lib/traffic/exchanges.ts';
import { headerPairs, type ConnectionFacts, type HeaderList, type HttpRequestFacts, type HttpResponseFacts, type RequestBody } from '../../lib/traffic/facts.ts';
import { heldAnswer, heldBytes, isEventStream, rewrittenBody, rewrittenEventStream, type HeldAnswer } from './body-rewrite.ts';
import { AgentRelayError } from '../agent-gateway/session-handler.ts';
import type { InternalRequests } from './internal-requests.ts';
import { connectionFacts, joinStreams, type Connections } from './connections.ts';
import type { EdgeTarget } from './edge-routes.ts';
import { errorPage, INGRESS_CODES, type ErrorPage } from './error-page.ts';
import { keptStreamsOf, type KeptStreams } from './kept-streams.ts';
import { http1Call } from './http1-upstream.ts';
import type { IngressPolicies } from './policies.ts';
import { HttpTrace, traceOf } from './traffic-trace.ts';
import { http2Call, type UpstreamAnswer, type UpstreamCall } from './h2-upstream.ts';
import { joinWebSocketToStream, websocketAccepted, websocketHandshakeProblem } from './websocket-tcp.ts';
import { hostnameOf, openStream, type AgentTarget, type HttpScheme, type IngressRoutes } from './routes.ts';

/**
 * The HTTP ingress: HTTP/1.1 (keep-alive) routed by Host to the endpoint that serves the name,
 * through the endpoint's traffic policy (lib/policy decides, this file applies), down a proxy
 * stream of the agent's tunnel (adapters/agent-gateway `openProxy`) to the agent's local service.
 * The same server takes plain connections and TLS ones the TLS ingress terminated (HTTPS
 * endpoints); a TLS client whose ALPN chose `h2` is served HTTP/2 by a second server whose
 * requests take the same path (the upstream still gets HTTP/1.1, or HTTP/2 when the agent's app
 * speaks it, h2-upstream.ts). Request and response bodies stream both ways; only a body the policy reads
 * (verify-webhook, jwt-validation) is held, up to the engine's own bound, and forwarded after.
 * Upgrades (WebSocket) pass through the request phase, then carry bytes both ways once the
 * agent's service answers 101. A client's bad input answers that client alone (an error page
 * naming the limit, or its connection closed); an agent's bad answer is a 502 for that request.
 */

export interface HttpIngressOptions {
  readonly routes: IngressRoutes;
  readonly policies: IngressPolicies;
  /** What the listeners know of each connection (connections.ts). */
  readonly connections: Connections;
  /** Connections the http-request action opened to the account's internal endpoints (internal-requests.ts). */
  readonly internalRequests?: InternalRequests;
  readonly onError: (error: unknown) => void;
}

/**
 * Sends the agent's answer body `from` to the client through `through` (a compressor), as
 * stream.pipeline would, without the AbortController and DOMException it makes per call (a tenth of
 * the ingress's time per request): a failure or an early end of either side cuts the client's
 * answer; a client that goes away already takes the upstream request with it (serve).
 */
function relayBody(from: Readable, to: Writable, through?: Transform): void {
  const cut = () => {
    from.destroy();
    through?.destroy();
    to.destroy();
  };
  for (const stream of through ? [from, through] : [from]) {
    stream.once('error', cut);
    stream.once('close', () => {
      if (!stream.readableEnded) cut();
    });
  }
  (through ? from.pipe(through) : from).pipe(to);
}

/** Fields that may not be trailers (RFC 9110 §6.5.1: framing, routing, how to read the content), besides hop-by-hop ones. */
const NOT_TRAILERS = new Set(['content-length', 'content-encoding', 'content-type', 'content-range', 'host']);

/**
 * The trailer fields of a message that go on: not hop-by-hop ones nor those that may not be
 * trailers; by name, a repeated field's values joined (RFC 9110 §5.3: node's HTTP/2 messages take
 * no list). Undefined when none are left.
 */
function trailersOf(fields: HeaderList): Record<string, string> | undefined {
  let trailers: Record<string, string> | undefined;
  for (const [name, value] of fields) {
    const key = name.toLowerCase();
    if (HOP_BY_HOP.has(key) || NOT_TRAILERS.has(key)) continue;
    trailers ??= Object.create(null) as Record<string, string>;
    trailers[key] = key in trailers ? `${trailers[key]}, ${value}` : value;
  }
  return trailers;
}

/**
 * The agent's trailers (a chunked HTTP/1.1 answer's, an HTTP/2 answer's trailing HEADERS: gRPC's
 * `grpc-status`) go on to the client after the body, set before `relayBody` ends the answer: an
 * HTTP/2 client gets them as trailing HEADERS, an HTTP/1.1 one after the last chunk (node sends
 * none on an answer framed by Content-Length).
 */
function passTrailers(answer: UpstreamAnswer, res: ServerResponse): void {
  const send = () => {
    const trailers = trailersOf(headerPairs(answer.rawTrailers ?? []));
    if (trailers) res.addTrailers(trailers);
  };
  if (answer.readableEnded) send();
  else answer.once('end', send);
}

/** How often the server looks for connections past `ingress_head_ms`. */
const HEAD_CHECK_MS = 500;

/** The vendor's words for ERR_NGROK_3206. */
const NOT_A_WEBSOCKET = 'Expected a websocket request with a "Connection: upgrade" header but did not receive one.';

/** Header fields that describe one connection, not the message (RFC 9110 §7.6.1), never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

const COMPRESSORS = { gzip: createGzip, deflate: createDeflate, br: createBrotliCompress } as const;

/** How an answer reaches the client: through node's response, or written raw on an upgrade's socket. */
interface Reply {
  send(answer: ErrorPage): void;
  /** Ends the connection without an answer (close-connection, or a failure once the answer began). */
  drop(): void;
  /** Whether the answer has begun (a failure can then only cut the connection). */
  begun(): boolean;
}

/** A request the policy let through to an agent or an edge's upstream: where it goes and as what. */
interface Admitted {
  readonly target: AgentTarget | EdgeTarget;
  readonly exchanges: readonly HttpExchange[];
  readonly facts: HttpRequestFacts;
  readonly conn: ConnectionFacts;
  readonly authority: string;
  readonly scheme: HttpScheme;
  readonly body: HeldBody;
  /** The body request-body-find-replace made, sent instead of the client's. */
  readonly replacedBody?: Uint8Array;
  readonly seen: HttpTrace | undefined;
}

/** The HTTP ingress's servers (not listening: the ingress listens, the TLS ingress hands it the connections it terminated). */
export interface HttpIngress {
  /** The HTTP/1.1 server: plain connections, and TLS ones that did not choose HTTP/2. */
  readonly server: Server;
  /** Serves a TLS connection the TLS ingress terminated: HTTP/2 when its ALPN chose `h2`, else HTTP/1.1. */
  serveTls(socket: TLSSocket): void;
}

/** The HTTP ingress; see the file comment. */
export function createHttpIngress(burrow: BurrowCore<any>, options: HttpIngressOptions): HttpIngress {
  const { routes, policies, onError } = options;
  const keptStreams = new WeakMap<Socket, KeptStreams>();
  /** Every exchange is journaled once its answer is done (lib/journal/traffic-journal.ts). */
  const trace = (req: IncomingMessage, channel: ServerResponse | Duplex) => new HttpTrace(req, channel, burrow.clock.now(), (traffic) => void burrow.traffic.record(traffic).catch(onError));
  const page = (status: number, code: number | string | undefined, message: string, headers: HeaderList = []) => errorPage(burrow.errorPrefix, status, code, message, headers);

  /**
   * Routes the request and runs the request phases; answers the client itself (and resolves
   * undefined) when the policy, or the lack of a target, ends the request.
   */
  async function admit(req: IncomingMessage, reply: Reply, seen?: HttpTrace): Promise<Admitted | undefined> {
    const socket = socketOf(req);
    const encrypted = (socket as Partial<TLSSocket>).encrypted === true;
    // An http-request action's call reaches the internal endpoints of its account alone (internal-requests.ts).
    const internal = options.internalRequests?.of(socket);
    const scheme: HttpScheme = internal?.scheme ?? (encrypted ? 'https' : 'http');
    const coding = req.headers['transfer-encoding'];
    if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
      return void reply.send(page(501, undefined, `the request's Transfer-Encoding ${JSON.stringify(coding)} is not served: a request body is framed by chunked alone, or by a Content-Length`));
    }
    const authority = authorityOf(req);
    const hostname = hostnameOf(authority);
    let target = internal ? await routes.internal(`${scheme}://${authority}`, internal.account) : await routes.http(hostname, encrypted ? ['https'] : ['http', 'https'], req.url ?? '/');
    if (!target) return void reply.send(page(404, INGRESS_CODES.endpointOffline, `The endpoint ${scheme}://${hostname} is offline.`));
    if (!URL.canParse(req.url ?? '', `${scheme}://${authority}`)) return void reply.send(page(400, undefined, `the request target ${JSON.stringify(req.url)} is not a valid URL`));
    const url = new URL(req.url ?? '', `${scheme}://${authority}`);
    const known = options.connections.get(socket);
    const conn = connectionFacts(socket, known?.startedAt ?? burrow.clock.now(), known?.tls);
    seen?.routed(target.endpoint, target.account, conn);
    // The TLS ingress ran on_tcp_connect once for the connection, before its handshake.
    if (known?.connectRanFor !== target.endpoint.id) {
      const connected = await policies.engine.connect(policies.of(target), target.endpoint, conn);
      seen?.decided(connected);
      if (connected.terminal) return void answer(reply, connected.terminal);
      if (connected.tls?.mutualTls && !encrypted) return void reply.send(page(501, undefined, `${target.endpoint.url} asks for client certificates (mutual TLS), which only a TLS connection can present; this request came over plain HTTP`));
    }
    const body = new HeldBody(req, seen);
    let facts: HttpRequestFacts = { method: req.method ?? 'GET', url: url.href, version: req.httpVersion, headers: requestHeaders(req), receivedAt: burrow.clock.now(), body };
    seen?.received(facts);
    seen?.requestBody(() => body.bytes);
    // forward-internal hands the request on to an internal endpoint, whose policy runs in turn; the
    // answer comes back through every response phase, the innermost first.
    const exchanges: HttpExchange[] = [];
    let replacedBody: Uint8Array | undefined;
    for (;;) {
      const exchange = policies.engine.http(policies.of(target), target.endpoint, conn, facts);
      exchanges.unshift(exchange);
      const decided = await exchange.request();
      seen?.decided(decided);
      facts = { ...facts, method: decided.request.method, url: decided.request.url, headers: decided.request.headers };
      if (decided.request.body) facts = { ...facts, body: heldBytes((replacedBody = decided.request.body)) };
      if (decided.terminal?.kind !== 'forward') {
        if (decided.terminal) return void answer(reply, decided.terminal);
        if (target.kind !== 'cloud') return { target, exchanges, facts, conn, authority, scheme, body, ...(replacedBody ? { replacedBody } : {}), seen };
        // A cloud endpoint has no upstream of its own: its policy must answer or forward.
        return void reply.send(page(502, INGRESS_CODES.nonTerminatingCloudPolicy, `The traffic policy configured for cloud endpoint ${target.endpoint.id} is non-terminating: no rule answered (custom-response, redirect, deny) or forwarded (forward-internal) ${facts.method} ${new URL(facts.url).pathname}.`));
      }
      if (exchanges.length > LIMITS.ingress_forward_hops.value) {
        return void reply.send(page(508, undefined, `forward-internal to ${decided.terminal.url}: more than ${LIMITS.ingress_forward_hops.value} hops ${limitNote('ingress_forward_hops')}`));
      }
      const next = await routes.internal(decided.terminal.url, target.account);
      if (!next) return void reply.send(page(404, INGRESS_CODES.endpointOffline, `The endpoint ${decided.terminal.url} is offline.`));
      target = next;
      seen?.routed(target.endpoint, target.account);
    }
  }

  /**
   * The request as it goes down the agent's proxy stream; undefined (the client answered) when the
   * stream cannot open. A request to an agent's tunnel (not an upgrade) takes a stream kept for
   * the client's connection (kept-streams.ts) when `client` is given (`sideBySide`: one no other
   * request of that connection has, for an HTTP/2 client's); to an agent whose upstream
   * speaks HTTP/2, it goes as HTTP/2 on a stream of its own (h2-upstream.ts).
   */
  function upstreamOf(admitted: Admitted, reply: Reply, upgrading: boolean, extraHeaders: HeaderList = [], client?: Socket, sideBySide = false): UpstreamCall | undefined {
    const { target, facts, conn, authority, scheme } = admitted;
    const open = () => openStream(target, conn);
    const url = new URL(facts.url);
    // The body's framing is the one the ingress parsed, whatever the header list (a policy's, or a
    // Connection that names Content-Length) says: the upstream must read the body the policy saw
    // as one body, never as a second request.
    const headers: HeaderList = [
      ...forwardable(facts.headers).filter(([name]) => name.toLowerCase() !== 'content-length'),
      ...(upgrading ? [] : admitted.replacedBody ? [['Content-Length', String(admitted.replacedBody.byteLength)] as const] : admitted.body.framing),
      ...extraHeaders,
      ['X-Forwarded-For', conn.clientIp],
      ['X-Forwarded-Host', authority],
      ['X-Forwarded-Proto', scheme],
    ];
    /** A proxy stream of its own, or undefined once the client has the offline page. */
    const ownStream = (): Duplex | undefined => {
      try {
        return open();
      } catch (error) {
        return void reply.send(offline(target, error as Error));
      }
    };
    if (!upgrading && target.kind === 'agent' && target.http2) {
      const stream = ownStream();
      if (!stream) return undefined;
      // HTTP/2 frames the body itself (DATA frames ending with the stream): no Transfer-Encoding; the Host is the :authority.
      const host = headers.find(([name]) => name.toLowerCase() === 'host')?.[1] ?? url.host;
      const fields = headers.filter(([name]) => !['host', 'transfer-encoding'].includes(name.toLowerCase()));
      return http2Call(stream, { method: facts.method, path: `${url.pathname}${url.search}`, scheme, authority: host, headers: fields });
    }
    const path = `${url.pathname}${url.search}`;
    if (client && target.kind === 'agent' && !target.session.ended) {
      return http1Call(keptStreamsOf(keptStreams, client), `${target.session.id} ${target.tunnel.tunnelId}`, open, { method: facts.method, path, headers }, sideBySide);
    }
    const stream = ownStream();
    if (!stream) return undefined;
    return upstreamRequest({ createConnection: () => stream as unknown as Socket, method: facts.method, path, headers: flatten(headers), setHost: false });
  }

  const upstreamBroken = (admitted: Admitted, error: Error) =>
    error instanceof AgentRelayError
      ? offline(admitted.target, error)
      : page(502, INGRESS_CODES.invalidUpstreamResponse, `The agent's answer for ${admitted.target.endpoint.url} was not a complete HTTP response: ${error.message}`);
  /** The agent's session or tunnel went before a proxy stream could open. */
  const offline = (target: AgentTarget | EdgeTarget, error: Error) => page(404, INGRESS_CODES.endpointOffline, `The endpoint ${target.endpoint.url} is offline: ${error.message}`);

  const reportFailure = (admitted: Admitted) => void Promise.all(admitted.exchanges.map((exchange) => exchange.upstreamFailed())).catch(onError);

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const seen = trace(req, res);
    const reply = responseReply(req, res);
    const admitted = await admit(req, reply, seen);
    if (!admitted) return;
    if (admitted.target.websocketTcp) return void reply.send(page(400, INGRESS_CODES.websocketExpected, NOT_A_WEBSOCKET));
    // An HTTP/2 client's requests run side by side: each takes a kept stream no other request has.
    const http2 = http2Streams.get(req);
    const upstream = http2 ? upstreamOf(admitted, reply, false, [], h2Sockets.get(http2.session), true) : upstreamOf(admitted, reply, false, [], req.socket);
    if (!upstream) return;
    // A client that goes away takes its upstream request with it (the agent sees the stream reset).
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.on('error', (error) => {
      reportFailure(admitted);
      if (res.headersSent) res.destroy();
      else send(res, upstreamBroken(admitted, error), http2Streams.has(req));
    });
    const relayUpstream = (response: UpstreamAnswer) =>
      relayAnswer(admitted, reply, response, response, upstream.relay ?? 'own_stream', (outcome) => {
        const relay = (given: HeaderList, body: Readable) => {
          let headers = given;
          const compressor = outcome.compression ? COMPRESSORS[outcome.compression]() : undefined;
          if (outcome.compression) headers = [...headers.filter(([name]) => name.toLowerCase() !== 'content-length'), ['Content-Encoding', outcome.compression], ['Vary', 'Accept-Encoding']];
          seen.upstreamAnswered(outcome.response.status, headers, body, outcome.compression, upstream.reusedSocket);
          res.writeHead(outcome.response.status, flatten(headers));
          passTrailers(response, res);
          relayBody(body, res, compressor);
        };
        // An event stream's messages each go through on_event_stream_message (sse-find-replace) as they come.
        if (isEventStream(outcome.response.headers) && admitted.exchanges.some((exchange) => exchange.handlesEventStream)) {
          return relay(forwardable(outcome.response.headers).filter(([name]) => name.toLowerCase() !== 'content-length'), rewrittenEventStream(response, admitted.exchanges));
        }
        if (!outcome.bodyReplacements) return relay(forwardable(outcome.response.headers), response);
        rewrittenBody(response, forwardable(outcome.response.headers), outcome.bodyReplacements).then(
          (rewritten) => relay(rewritten.headers, rewritten.body),
          (error: Error) => reply.send(error instanceof ActionFailure ? page(error.error.status, error.error.code, error.error.message) : page(502, undefined, error.message)),
        );
      });
    upstream.on('response', whenTrailersRead(admitted, reply, relayUpstream));
    if (admitted.replacedBody) upstream.end(admitted.replacedBody);
    else admitted.body.forward(upstream);
  }

  /**
   * An upgrade (WebSocket): the request phases as for any request, then the handshake goes down a
   * proxy stream; a 101 (after on_http_response) joins the two connections byte for byte, any
   * other answer is relayed and the connection closed.
   */
  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const seen = trace(req, socket);
    const reply = socketReply(socket);
    const admitted = await admit(req, reply, seen);
    if (!admitted) return;
    if (admitted.target.websocketTcp) return convertWebsocket(admitted, req, socket as Socket, head, reply, seen);
    // An upgrade's request has no body: what follows its head is the upgraded protocol's, sent on after a 101.
    const upstream = upstreamOf(admitted, reply, true, [
      ['Connection', 'Upgrade'],
      ['Upgrade', req.headers.upgrade ?? ''],
    ]);
    if (!upstream) return;
    socket.once('close', () => upstream.destroy());
    upstream.on('error', (error) => {
      reportFailure(admitted);
      if (socket.writable) reply.send(upstreamBroken(admitted, error));
    });
    upstream.on('upgrade', (response: IncomingMessage, tunnel: Duplex, tunnelHead: Buffer) =>
      relayAnswer(admitted, reply, response, tunnel, 'own_stream', (outcome) => {
        // The bytes each way after the switch are the exchange's bodies in the journal.
        let fromClient = head.length;
        socket.on('data', (chunk: Buffer) => (fromClient += chunk.length));
        seen.requestBody(() => fromClient);
        seen.upstreamAnswered(outcome.response.status, outcome.response.headers, tunnel, undefined, false);
        socket.write(rawHead(outcome.response.status, outcome.response.headers));
        if (tunnelHead.length > 0) socket.write(tunnelHead);
        if (head.length > 0) tunnel.write(head);
        joinStreams(socket, tunnel);
      }),
    );
    upstream.on('response', whenTrailersRead(admitted, reply, (response: UpstreamAnswer) =>
      relayAnswer(admitted, reply, response, response, 'own_stream', (outcome) => {
        // Not switching: the answer is relayed and the connection ends with it (no length to keep it alive by).
        seen.upstreamAnswered(outcome.response.status, outcome.response.headers, response, undefined, false);
        socket.write(rawHead(outcome.response.status, [...forwardable(outcome.response.headers).filter(([name]) => name.toLowerCase() !== 'content-length'), ['Connection', 'close']]));
        pipeline(response, socket, () => socket.destroy());
      }),
    ));
    upstream.end();
  }

  /**
   * An upgrade to an endpoint that converts WebSockets to TCP (websocket-tcp.ts): the ingress
   * accepts the handshake itself and carries the messages' bytes as TCP (down a proxy stream, or
   * to an edge's upstream); any other upgrade is refused (3206). No response phase runs: no
   * upstream answered over HTTP.
   */
  function convertWebsocket(admitted: Admitted, req: IncomingMessage, socket: Socket, head: Buffer, reply: Reply, seen: HttpTrace): void {
    const problem = websocketHandshakeProblem(req);
    if (problem) return reply.send(page(400, INGRESS_CODES.websocketExpected, problem));
    let stream: Duplex;
    try {
      stream = openStream(admitted.target, admitted.conn);
    } catch (error) {
      return reply.send(offline(admitted.target, error as Error));
    }
    const accepted = websocketAccepted(req);
    let fromClient = head.length;
    socket.on('data', (chunk: Buffer) => (fromClient += chunk.length));
    seen.requestBody(() => fromClient);
    seen.upstreamAnswered(101, accepted, stream, undefined, false);
    socket.write(rawHead(101, accepted));
    joinWebSocketToStream(socket, stream, head, LIMITS.ingress_idle_ms.value);
  }

  /**
   * `relay` of the agent's answer; when a policy of the exchange reads res.trailers, once the
   * answer's body has ended (body-rewrite.ts heldAnswer; past its bound, a 502).
   */
  const whenTrailersRead = (admitted: Admitted, reply: Reply, relay: (response: UpstreamAnswer) => void) => (response: UpstreamAnswer) => {
    if (!admitted.exchanges.some((exchange) => exchange.readsTrailers.response)) return relay(response);
    void heldAnswer(response).then(relay, (error: Error) => (reply.begun() ? reply.drop() : reply.send(page(502, undefined, error.message))));
  };

  /**
   * Runs the response phases over the agent's answer: an ending of the policy answers the client
   * (and drops `upstream`, the agent's answer), else `relay` sends the answer as the policy left it.
   */
  function relayAnswer(admitted: Admitted, reply: Reply, response: Pick<UpstreamAnswer, 'statusCode' | 'rawHeaders'>, upstream: { destroy(): void }, by: UpstreamRelay, relay: (outcome: HttpResponseOutcome) => void): void {
    const upstreamAnswer = { status: response.statusCode ?? 502, headers: headerPairs(response.rawHeaders), ...('trailerList' in response ? { trailers: (response as HeldAnswer).trailerList } : response.statusCode === 101 ? { trailers: [] } : {}) };
    admitted.seen?.upstreamHead(upstreamAnswer.status, upstreamAnswer.headers, by);
    void respond(admitted.exchanges, upstreamAnswer, admitted.seen)
      .then((outcome) => {
        if (!outcome.terminal) return relay(outcome);
        upstream.destroy();
        answer(reply, outcome.terminal);
      })
      .catch((error: unknown) => {
        upstream.destroy();
        fail(reply, error);
      });
  }

  /** Runs the response phases, innermost first, each over what the one before left. */
  async function respond(exchanges: readonly HttpExchange[], upstream: HttpResponseFacts, seen: HttpTrace | undefined): Promise<HttpResponseOutcome> {
    let outcome: HttpResponseOutcome | undefined;
    let compression: HttpResponseOutcome['compression'];
    const replacements: BodyReplacement[] = [];
    for (const exchange of exchanges) {
      outcome = await exchange.response(outcome ? outcome.response : upstream);
      seen?.decided(outcome);
      compression ??= outcome.compression;
      if (outcome.terminal) return outcome;
      replacements.push(...(outcome.bodyReplacements ?? []));
    }
    return { ...outcome!, ...(compression ? { compression } : {}), ...(replacements.length > 0 ? { bodyReplacements: replacements } : {}) };
  }

  /** Applies a policy's ending: its response, its error page, or the connection closed. */
  function answer(reply: Reply, terminal: PolicyTerminal): void {
    switch (terminal.kind) {
      case 'respond': {
        const body = Buffer.from(terminal.response.body);
        const headers = terminal.response.headers.filter(([name]) => name.toLowerCase() !== 'content-length');
        return reply.send({ status: terminal.response.status, headers: [...headers, ['Content-Length', String(body.length)]], body: terminal.response.body });
      }
      case 'error':
        return reply.send(page(terminal.error.status, terminal.error.code, terminal.error.message, terminal.error.headers));
      case 'close':
        return reply.drop();
      case 'forward':
        // Only on_tcp_connect ends so here; HTTP endpoints take no connection forwarding.
        return reply.send(page(501, undefined, `forward-internal to ${terminal.url} on connect is not served by the HTTP ingress`));
    }
  }

  /** A failure of the ingress itself: a 500 page, or the connection cut when the answer had begun. */
  function fail(reply: Reply, error: unknown): void {
    onError(error);
    if (reply.begun()) reply.drop();
    else reply.send(page(500, undefined, `the ingress failed to serve the request: ${(error as Error).message}`));
  }

  const server: Server = createServer(
    {
      maxHeaderSize: LIMITS.ingress_header_bytes.value,
      headersTimeout: LIMITS.ingress_head_ms.value,
      // Node looks for late heads every 30 s by default, so a dribbled head outlived its deadline by
      // up to that long; looked for every half second, the 408 comes within 500 ms of it.
      connectionsCheckingInterval: HEAD_CHECK_MS,
      // Bodies stream for as long as bytes keep moving; ingress_idle_ms ends a silent connection.
      requestTimeout: 0,
      keepAliveTimeout: LIMITS.ingress_idle_ms.value,
    },
    (req, res) => void serve(req, res).catch((error: unknown) => fail(responseReply(req, res), error)),
  );
  server.timeout = LIMITS.ingress_idle_ms.value;
  // A client that ends its side once its request is sent (`printf … | nc`, a half-closing proxy)
  // still gets its answers, as from the vendor's edge: node's server would drop requests in flight.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => void upgrade(req, socket, head).catch((error: unknown) => fail(socketReply(socket), error)));
  server.on('connection', (socket: Socket) => {
    if (!options.connections.has(socket)) options.connections.set(socket, { startedAt: burrow.clock.now() });
  });
  /**
   * HTTP/2 clients (ALPN `h2` on the TLS ingress): their requests take the same path as HTTP/1.1
   * ones (node's compatibility API), each bounded as a connection's: the head by
   * `ingress_header_bytes`, a silent connection by `ingress_idle_ms`, at most H2_STREAMS requests
   * at a time on one connection.
   */
  const h2 = createHttp2Server({ settings: { maxHeaderListSize: LIMITS.ingress_header_bytes.value, maxConcurrentStreams: H2_STREAMS } }, (req, res) => {
    const request = req as unknown as IncomingMessage;
    http2Streams.set(request, { session: req.stream.session!, stream: res.stream });
    void serve(request, res as unknown as ServerResponse).catch((error: unknown) => fail(responseReply(request, res as unknown as ServerResponse), error));
  });
  h2.setTimeout(LIMITS.ingress_idle_ms.value);
  /** The TLS connection under each HTTP/2 session (node shows requests only a stand-in of it). */
  const h2Sockets = new WeakMap<Http2Session, Socket>();
  const http2Streams = new WeakMap<IncomingMessage, { readonly session: Http2Session; readonly stream: ServerHttp2Stream }>();
  /** The client's connection of a request. */
  const socketOf = (req: IncomingMessage): Socket => {
    const streams = http2Streams.get(req);
    return (streams && h2Sockets.get(streams.session)) ?? req.socket;
  };
  const responseReply = (req: IncomingMessage, res: ServerResponse): Reply => ({
    send: (answer) => send(res, answer, http2Streams.has(req)),
    // An HTTP/2 request's "connection" is its stream: closing it leaves the client's other requests be.
    drop: () => {
      const streams = http2Streams.get(req);
      if (streams) streams.stream.close(constants.NGHTTP2_CANCEL);
      else req.socket.destroy();
    },
    begun: () => res.headersSent,
  });
  /** The fields of a request as the policy reads them: an HTTP/2 request's without its pseudo-headers, with its `:authority` as the Host. */
  const requestHeaders = (req: IncomingMessage): HeaderList => {
    const fields = headerPairs(req.rawHeaders);
    if (!http2Streams.has(req)) return fields;
    return [['Host', authorityOf(req)], ...fields.filter(([name]) => !name.startsWith(':') && name !== 'host')];
  };

  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const refusal =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? page(431, undefined, `the request head is longer than ${LIMITS.ingress_header_bytes.value} bytes ${limitNote('ingress_header_bytes')}`)
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? page(408, undefined, `the request head did not arrive within ${LIMITS.ingress_head_ms.value} ms ${limitNote('ingress_head_ms')}`)
          : page(400, undefined, `the request is not valid HTTP/1.1: ${error.message}`);
    socket.end(rawResponse(refusal));
  });
  return {
    server,
    serveTls(socket) {
      if (socket.alpnProtocol !== 'h2') return void server.emit('connection', socket);
      // A server-side TLSSocket made by hand keeps secureConnecting set after its handshake (node
      // clears it only for a tls.Server's own), and node's HTTP/2 session would wait for a
      // 'secureConnect' that never comes: the handshake is done.
      (socket as unknown as { secureConnecting: boolean }).secureConnecting = false;
      // node makes the session as the connection is handed over, and tells it before returning.
      h2.once('session', (session: Http2Session) => h2Sockets.set(session, socket));
      h2.emit('connection', socket);
    },
  };
}

/** Requests one HTTP/2 connection may have open at a time. */
const H2_STREAMS = 100;

/** The authority a request names: an HTTP/2 request's `:authority`, else its Host. */
const authorityOf = (req: IncomingMessage): string => String(req.headers[':authority'] ?? req.headers.host ?? '');

/**
 * The request body as the policy engine may read it: held up to the size asked (the engine's
 * bound), then forwarded upstream with whatever was not read.
 */
class HeldBody implements RequestBody {
  readonly #req: IncomingMessage;
  readonly #seen: HttpTrace | undefined;
  readonly #held: Buffer[] = [];
  #bytes = 0;
  #ended = false;
  #reading: Promise<Uint8Array | undefined> | undefined;

  /** `seen` is told each chunk as it is read (the journal keeps the first bytes). */
  constructor(req: IncomingMessage, seen: HttpTrace | undefined) {
    this.#req = req;
    this.#seen = seen;
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
        this.#seen?.requestChunk(chunk);
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

  /** The trailers that followed the body (HTTP/1.1 chunked, HTTP/2), once it was read to its end. */
  trailers(): HeaderList | undefined {
    return this.#ended ? headerPairs(this.#req.rawTrailers) : undefined;
  }

  /**
   * Sends the body on to `to`: what was held, then the rest as it arrives, and the client's trailers
   * after it where `to` takes them (HTTP/1.1 upstreams, on a chunked body).
   */
  forward(to: UpstreamCall): void {
    for (const chunk of this.#held) to.write(chunk);
    if (this.#ended) {
      this.#passTrailers(to);
      return void to.end();
    }
    this.#req.on('data', (chunk: Buffer) => {
      this.#bytes += chunk.length;
      this.#seen?.requestChunk(chunk);
    });
    // Before pipe's own 'end' listener, which ends `to`.
    this.#req.once('end', () => this.#passTrailers(to));
    this.#req.pipe(to);
  }

  #passTrailers(to: UpstreamCall): void {
    const trailers = trailersOf(headerPairs(this.#req.rawTrailers));
    if (!trailers || !to.addTrailers) return;
    try {
      to.addTrailers(trailers);
    } catch {
      // A field node's parser let in that is no valid HTTP to write: the trailers stay behind, the body goes on.
    }
  }

  /**
   * The framing the body had as the ingress parsed it, for the upstream request: chunked, a
   * Content-Length, or none (no body). Node's client chunk-encodes what it is given under the
   * first, and sends a request without either with no body at all.
   */
  get framing(): HeaderList {
    const { headers } = this.#req;
    if (headers['transfer-encoding'] !== undefined) return [['Transfer-Encoding', 'chunked']];
    if (headers['content-length'] !== undefined) return [['Content-Length', headers['content-length']]];
    // HTTP/2 frames a body by its stream (node checks a Content-Length against it): one that goes on past the head is sent chunked.
    const http2 = (this.#req as { stream?: { endAfterHeaders: boolean } }).stream;
    return http2 && !http2.endAfterHeaders ? [['Transfer-Encoding', 'chunked']] : [];
  }

  /** Body bytes read from the client so far (held and forwarded). */
  get bytes(): number {
    return this.#bytes;
  }
}

const flatten = (headers: HeaderList): string[] => headers.flatMap(([name, value]) => [name, value]);

/** The fields of a message that travel on: not the hop-by-hop ones, nor those its Connection names. */
function forwardable(headers: HeaderList): HeaderList {
  let named: Set<string> | undefined;
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== 'connection') continue;
    named ??= new Set();
    for (const one of value.split(',')) named.add(one.trim().toLowerCase());
  }
  return headers.filter(([name]) => {
    const lower = name.toLowerCase();
    return !HOP_BY_HOP.has(lower) && !named?.has(lower);
  });
}

/**
 * The reply on the socket node's HTTP server hands over with an upgrade (a net.Socket, or the TLS
 * ingress's TLSSocket); its answers are written raw, once.
 */
const socketReply = (socket: Duplex): Reply => ({
  send: (answer) => {
    traceOf(socket)?.answered(answer.status, answer.headers, answer.body, answer.message);
    socket.end(rawResponse(answer));
  },
  drop: () => socket.destroy(),
  begun: () => (socket as Socket).bytesWritten > 0,
});

/** Sends `answer` on `res`; over HTTP/2 (`http2`) without the connection's fields, which HTTP/2 has none of. */
function send(res: ServerResponse, answer: ErrorPage, http2 = false): void {
  traceOf(res)?.answered(answer.status, answer.headers, answer.body, answer.message);
  res.writeHead(answer.status, flatten(http2 ? answer.headers.filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase())) : answer.headers));
  res.end(answer.body);
}

/** A response head as bytes, for a connection node's HTTP server has handed over (upgrades, errors). */
const rawHead = (status: number, headers: HeaderList) => `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Status'}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;

/** A whole answer as bytes, ending the connection. */
const rawResponse = (answer: ErrorPage) => `${rawHead(answer.status, [...answer.headers, ['Connection', 'close']])}${answer.body}`;
