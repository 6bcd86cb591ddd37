import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex, Readable } from 'node:stream';
import type { PolicyLogEntry, PolicyTerminal, RuleRecord } from '../../lib/traffic/decisions.ts';
import type { ConnectionFacts, HeaderList } from '../../lib/traffic/facts.ts';
import type { HttpTraffic, TcpTraffic, TrafficEndpoint, UpstreamRelay } from '../../lib/traffic/exchanges.ts';
import { LIMITS } from '../../lib/limits.ts';

/**
 * What the ingress saw of one HTTP exchange (`HttpTrace`) or one TCP/TLS connection carried as
 * bytes (`TcpTrace`), gathered as it is served and reported once as the plain `HttpTraffic` or
 * `TcpTraffic` the traffic journal keeps (lib/journal/traffic-journal.ts): an exchange when the client's
 * response closes (answered, or its connection gone), a connection when its socket closes. The
 * ingress tells it where the traffic went (`routed`), what each policy phase decided (`decided`)
 * and what the client was sent; bodies and bytes are counted as they stream, and of each body
 * only a copy of the first `journal_body_bytes` is held, for the journal's detail.
 */

/** The first `journal_body_bytes` of a body as it streams, copied (a chunk may be a view of a larger buffer). */
class BodyCapture {
  readonly #chunks: Buffer[] = [];
  #size = 0;

  add(chunk: Uint8Array): void {
    const room = LIMITS.journal_body_bytes.value - this.#size;
    if (room <= 0 || chunk.byteLength === 0) return;
    const part = Buffer.from(chunk.subarray(0, room));
    this.#chunks.push(part);
    this.#size += part.length;
  }

  get bytes(): Uint8Array | undefined {
    return this.#size === 0 ? undefined : this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks);
  }
}

/** What a policy phase answered the ingress (lib/traffic/decisions.ts), as far as the trace reads it. */
interface PhaseOutcome {
  readonly terminal?: PolicyTerminal;
  readonly rules: readonly RuleRecord[];
  readonly logs: readonly PolicyLogEntry[];
}

type Answer = NonNullable<HttpTraffic['response']>;

/** What an exchange is answered on: node's response, or the socket of an upgrade. */
type AnswerChannel = ServerResponse | Duplex;

const traces = new WeakMap<AnswerChannel, HttpTrace>();

/** The trace of the exchange answered on `channel`, if one was started. */
export const traceOf = (channel: AnswerChannel): HttpTrace | undefined => traces.get(channel);

export class HttpTrace {
  readonly #startedAt: Date;
  readonly #started = performance.now();
  readonly #endpoints: TrafficEndpoint[] = [];
  readonly #rules: RuleRecord[] = [];
  readonly #logs: PolicyLogEntry[] = [];
  #account: string | undefined;
  #conn: ConnectionFacts | undefined;
  #policyEnded = false;
  #upstream = false;
  #answer: Omit<Answer, 'bodyBytes'> | undefined;
  #answerBytes = 0;
  #requestBytes: () => number = () => 0;
  #request: Omit<HttpTraffic['request'], 'bodyBytes'> | undefined;
  readonly #requestBody = new BodyCapture();
  readonly #answerBody = new BodyCapture();
  #upstreamHead: HttpTraffic['upstream'];
  #message: string | undefined;

  /**
   * Starts tracing the exchange of `req`, answered on `channel` (its response, or an upgrade's
   * socket, whose bytes after the switch count as the bodies); `report` gets it once `channel` closes.
   */
  constructor(req: IncomingMessage, channel: AnswerChannel, startedAt: Date, report: (traffic: HttpTraffic) => void) {
    this.#startedAt = startedAt;
    traces.set(channel, this);
    channel.once('close', () => report(this.#traffic(req)));
  }

  /** The request reached `endpoint` (first by Host, then each forward-internal hop); the first one's account is the exchange's. */
  routed(endpoint: TrafficEndpoint, account: string, conn?: ConnectionFacts): void {
    this.#endpoints.push({ id: endpoint.id, url: endpoint.url });
    if (this.#endpoints.length === 1) this.#account = account || undefined;
    if (conn) this.#conn = conn;
  }

  /** The request as the ingress read it (absolute URL, headers as received); without it the trace has the request line and Host. */
  received(request: { readonly method: string; readonly url: string; readonly headers: HeaderList }): void {
    this.#request = { method: request.method, url: request.url, headers: request.headers };
  }

  /** A policy phase ran; one that answered, closed or failed the exchange ends it for the policy. */
  decided(outcome: PhaseOutcome): void {
    this.#rules.push(...outcome.rules);
    this.#logs.push(...outcome.logs);
    if (outcome.terminal && outcome.terminal.kind !== 'forward') this.#policyEnded = true;
  }

  /** The request body as it is read and forwarded: `bytes` answers how much so far. */
  requestBody(bytes: () => number): void {
    this.#requestBytes = bytes;
  }

  /** A chunk of the request body as it is read (a copy of the first bytes is kept). */
  requestChunk(chunk: Uint8Array): void {
    this.#requestBody.add(chunk);
  }

  /** The client is sent this answer (an error page, a policy's response), with its whole body; `message` says what failed. */
  answered(status: number, headers: HeaderList, body: string | Uint8Array, message?: string): void {
    this.#answer = { status, headers };
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    this.#answerBytes = bytes.byteLength;
    this.#answerBody.add(bytes);
    if (message !== undefined) this.#message = message;
  }

  /** The upstream's answer arrived (by `relay`), as it was before the response phases. */
  upstreamHead(status: number, headers: HeaderList, relay: UpstreamRelay): void {
    this.#upstreamHead = { status, headers, afterMs: Math.round((performance.now() - this.#started) * 1000) / 1000, relay };
  }

  /** The client is sent the upstream's answer, its body streamed from `body` (counted as it flows). */
  upstreamAnswered(status: number, headers: HeaderList, body: Readable, compression: Answer['compression'], connectionReused: boolean): void {
    this.#upstream = true;
    this.#answer = { status, headers, ...(compression ? { compression } : {}), connectionReused };
    body.on('data', (chunk: Buffer) => {
      this.#answerBytes += chunk.length;
      this.#answerBody.add(chunk);
    });
  }

  #traffic(req: IncomingMessage): HttpTraffic {
    return {
      protocol: 'http',
      account: this.#account,
      endpoints: this.#endpoints,
      conn: this.#conn,
      rules: this.#rules,
      logs: this.#logs,
      answeredBy: this.#policyEnded ? 'policy' : this.#upstream ? 'upstream' : 'ingress',
      ...(this.#message !== undefined ? { message: this.#message } : {}),
      startedAt: this.#startedAt,
      durationMs: Math.round((performance.now() - this.#started) * 1000) / 1000,
      request: { ...(this.#request ?? { method: req.method ?? 'GET', url: `${scheme(req)}://${String(req.headers[':authority'] ?? req.headers.host ?? '')}${req.url ?? ''}`, headers: [] }), bodyBytes: this.#requestBytes(), ...optionalBody(this.#requestBody) },
      response: this.#answer ? { ...this.#answer, bodyBytes: this.#answerBytes, ...optionalBody(this.#answerBody) } : undefined,
      ...(this.#upstreamHead ? { upstream: this.#upstreamHead } : {}),
    };
  }
}

const optionalBody = (capture: BodyCapture) => {
  const body = capture.bytes;
  return body ? { body } : {};
};

const scheme = (req: IncomingMessage) => ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');

/**
 * One client connection carried as bytes (TCP endpoints and edges, TLS passed through or
 * terminated for a TLS endpoint or edge), reported when its socket closes. Bytes are the socket's
 * own counts (with TLS, the TLS records).
 */
export class TcpTrace {
  readonly #started = performance.now();
  #endpoint: TrafficEndpoint | undefined;
  #account: string | undefined;
  readonly #rules: RuleRecord[] = [];
  readonly #logs: PolicyLogEntry[] = [];
  #answeredBy: TcpTraffic['answeredBy'] = 'ingress';

  /** Starts tracing the connection on `socket` (`conn` as the policy sees it); `report` gets it once the socket closes. */
  #handedOver = false;

  constructor(socket: Socket, conn: ConnectionFacts, serverName: string, report: (traffic: TcpTraffic) => void) {
    socket.once('close', () =>
      this.#handedOver ||
      report({
        protocol: 'tcp',
        account: this.#account,
        endpoints: this.#endpoint ? [this.#endpoint] : [],
        conn,
        rules: this.#rules,
        logs: this.#logs,
        answeredBy: this.#answeredBy,
        startedAt: conn.startedAt,
        durationMs: Math.round((performance.now() - this.#started) * 1000) / 1000,
        bytesIn: socket.bytesRead,
        bytesOut: socket.bytesWritten,
        serverName,
      }),
    );
  }

  /** The connection reached `endpoint` of `account`. */
  routed(endpoint: TrafficEndpoint, account: string): void {
    this.#endpoint = { id: endpoint.id, url: endpoint.url };
    this.#account = account || undefined;
  }

  /** on_tcp_connect ran; one that closed the connection ends it for the policy. */
  decided(outcome: PhaseOutcome): void {
    this.#rules.push(...outcome.rules);
    this.#logs.push(...outcome.logs);
    if (outcome.terminal) this.#answeredBy = 'policy';
  }

  /** The connection is served as HTTPS from now on: its exchanges are journaled, not the connection. */
  handOver(): void {
    this.#handedOver = true;
  }

  /** The connection's bytes go to the upstream from now on. */
  carried(): void {
    this.#answeredBy = 'upstream';
  }
}
