import { fail } from '../conventions/errors.ts';
import { bodyEntry, keepBytes, REDACTED, redactHeaders, type BodyEntry, type KeptBodies } from './detail.ts';
import type { ReplayRequest } from './replay.ts';
import type { QueryParams } from '../conventions/paging.ts';
import { decidingRule, type PolicyLogEntry } from '../traffic/decisions.ts';
import { compileTrafficFind, type TrafficFindInput } from './find.ts';
import { DROPPED, Journal, parseJournalQuery, redactUrl, statusMatcher, type JournalFilterBase } from './journal.ts';
import type { RingSlot } from './ring.ts';
import { httpRequestComplete, tcpConnectionClosed, TRAFFIC_EVENT_TYPES } from '../traffic/events.ts';
import type { AnsweredBy, HttpTraffic, TcpTraffic, Traffic, TrafficEndpoint, UpstreamRelay } from '../traffic/exchanges.ts';

/**
 * The traffic journal: what the ingress carried, seen rather than guessed. Each completed HTTP
 * exchange (and each closed TCP connection) is kept with the endpoint that took it, every rule its
 * policy evaluated with the actions that ran and the error that stopped one, and how it was
 * answered; the last N of each account (default 1,000, `trafficJournalSize`), in the per-account
 * rings every journal keeps (journal.ts). The same report becomes the vendor's traffic
 * event (`http_request_complete.v0`, `tcp_connection_closed.v0`) for the account's event
 * subscriptions that ask for it (lib/traffic/events.ts); nobody subscribed costs one index lookup.
 *
 * Recording keeps a copy of the ingress's report with the secrets of its headers masked
 * (detail.ts) and its bodies (their first `journal_body_bytes`) counted against the journal's
 * total; entries are built when the journal is read, secret-looking query values redacted as in
 * the request journal. `get` answers one with its detail; `replay` sends one again through the
 * ingress that attached itself (`attachSender`), policy and all.
 */

/** One rule as the journal shows it. */
export interface TrafficRuleEntry {
  readonly phase: string;
  /** Where it came from: `traffic_policy`, `agent:basic_auth`, `module:ip_restriction` … */
  readonly source: string;
  readonly index: number;
  readonly name: string | null;
  readonly matched: boolean;
  readonly actions: readonly { readonly type: string; readonly ended: boolean; readonly note: string | null }[];
  /** What stopped the rule (an expression or action that failed), or null. */
  readonly error: string | null;
}

/** One journal entry as the control plane and `TrafficJournal.list` answer it. */
export interface TrafficEntry {
  /** Instance-wide sequence number: a later entry has a larger one. */
  readonly seq: number;
  /** When the exchange completed, by the instance clock (RFC 3339 with milliseconds). */
  readonly time: string;
  readonly account_id: string | null;
  readonly protocol: 'http' | 'tcp';
  readonly endpoint: TrafficEndpoint | null;
  /** The internal endpoints forward-internal handed the request to, in order. */
  readonly forwarded_to: readonly TrafficEndpoint[];
  readonly client_ip: string | null;
  readonly method: string | null;
  /** The URL as received, secret-looking query values redacted. */
  readonly url: string | null;
  /** The status the client was sent; 0 when its connection ended without one; null for TCP. */
  readonly status: number | null;
  /** `ngrok-error-code` of an error page (the policy's or the ingress's), else null. */
  readonly error_code: string | null;
  readonly answered_by: AnsweredBy;
  readonly duration_ms: number;
  /** Body bytes from the client and to it (HTTP), or connection bytes (TCP). */
  readonly bytes_in: number;
  readonly bytes_out: number;
  readonly rules: readonly TrafficRuleEntry[];
  /** The errors of rules that failed, in order (also on their rules). */
  readonly errors: readonly string[];
  /**
   * The rule that decided the exchange: the last whose action ended it (`action`: its type), else
   * the first that failed (`action`: null); null when no rule did.
   */
  readonly decided_by: { readonly phase: string; readonly source: string; readonly index: number; readonly name: string | null; readonly action: string | null } | null;
  /** What failed, in words: the error page's message, else the first rule's error; null when nothing did. */
  readonly message: string | null;
  readonly logs: readonly PolicyLogEntry[];
}

/** One HTTP entry with what was sent and answered (`GET /_burrow/traffic/{seq}`). */
export interface TrafficEntryDetail extends TrafficEntry {
  /** The request as received (headers masked); null for TCP. */
  readonly request: { readonly method: string; readonly url: string; readonly headers: readonly (readonly [string, string])[]; readonly body: BodyEntry | null } | null;
  /** What the client was sent; null when nothing was (or for TCP). */
  readonly response: { readonly status: number; readonly headers: readonly (readonly [string, string])[]; readonly body: BodyEntry | null } | null;
  /** What the upstream answered before the response phases, and when; null when no upstream answered. */
  readonly upstream: { readonly status: number; readonly headers: readonly (readonly [string, string])[]; readonly after_ms: number; readonly relay: UpstreamRelay } | null;
  /** When the request arrived, by the instance clock. */
  readonly started_at: string;
}

/**
 * Sends a request to the ingress's HTTP listener as a client would, answering the journal's
 * sequence number of the exchange it made (the ingress attaches it: adapters/ingress).
 */
export type TrafficSender = (request: ReplayRequest) => Promise<number>;

/** A filter over traffic entries (`status` matches HTTP exchanges only). */
export interface TrafficFilter extends JournalFilterBase {
  /** Only traffic an endpoint with this id took (first or by forward-internal). */
  readonly endpoint?: string;
  /** Only traffic whose policy had a rule fail. */
  readonly errors?: boolean;
}

/** How the journal hands a traffic event to the account's subscriptions. */
export interface TrafficPublisher {
  /** Whether some subscription of `account` asks for events of `type`. */
  listens(account: string, type: string): Promise<boolean>;
  /** Records the event for the subscriptions that ask for it. */
  publish(account: string, type: string, object: unknown): Promise<void>;
}

export const DEFAULT_TRAFFIC_JOURNAL_SIZE = 1000;

/** The `ngrok-error-code` header names the error of a page. */
const ERROR_CODE_HEADER = 'ngrok-error-code';

export class TrafficJournal extends Journal<Traffic, TrafficFilter, TrafficEntry> {
  readonly #publisher: TrafficPublisher;
  readonly #watchers = new Set<(traffic: Traffic, seq: number) => void>();
  /** The bodies of kept HTTP exchanges, within the journal's total. */
  readonly #bodies = new WeakMap<Traffic, KeptBodies>();
  #sender: TrafficSender | undefined;

  constructor(size: number, now: () => number, publisher: TrafficPublisher) {
    super(size, now, 'trafficJournalSize');
    this.#publisher = publisher;
  }

  /**
   * Keeps one completed exchange (the ingress calls it once per HTTP exchange or TCP connection),
   * then hands its traffic event to the subscriptions that ask for it; resolves once they have it.
   * A size of 0 keeps nothing; events are still sent.
   */
  async record(traffic: Traffic): Promise<void> {
    const seq = this.size === 0 ? 0 : this.#keepRedacted(traffic);
    for (const watcher of this.#watchers) watcher(traffic, seq);
    const account = traffic.account;
    if (!account) return;
    const type = traffic.protocol === 'http' ? TRAFFIC_EVENT_TYPES.http : TRAFFIC_EVENT_TYPES.tcp;
    if (!(await this.#publisher.listens(account, type))) return;
    await this.#publisher.publish(account, type, traffic.protocol === 'http' ? httpRequestComplete(traffic) : tcpConnectionClosed(traffic));
  }

  /** Calls `watcher` with each exchange as it is recorded, and its sequence number (0: not kept); answers the function that stops it. */
  watch(watcher: (traffic: Traffic, seq: number) => void): () => void {
    this.#watchers.add(watcher);
    return () => void this.#watchers.delete(watcher);
  }

  /** Makes `sender` the way replays reach the ingress (the last attached wins); answers the function that detaches it. */
  attachSender(sender: TrafficSender): () => void {
    this.#sender = sender;
    return () => {
      if (this.#sender === sender) this.#sender = undefined;
    };
  }

  /** The HTTP exchange `seq` with its detail; a 404 when the journal no longer has it. */
  get(seq: number): TrafficEntryDetail {
    const slot = this.findSlot((slot) => slot.seq === seq);
    if (!slot) fail('NOT_FOUND', `the traffic journal has no exchange ${seq} (it keeps the last ${this.size} of each account)`, { seq: String(seq) });
    return this.#detail(slot);
  }

  /**
   * The exchanges with their detail that match the criteria of lib/journal/find.ts, newest first
   * (400 for bad criteria); with `wait_ms`, resolves at the first match recorded within that time
   * when there is none yet.
   */
  async find(criteria: TrafficFindInput = {}): Promise<TrafficEntryDetail[]> {
    const compiled = compileTrafficFind(criteria);
    const found = this.#find(compiled);
    if (found.length > 0 || compiled.waitMs === 0) return found;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        resolve(this.#find(compiled));
      };
      const stop = this.watch((traffic, seq) => {
        if (seq !== 0 && this.#find({ ...compiled, limit: 1 }).length > 0) done();
      });
      const timer = setTimeout(done, compiled.waitMs);
    });
  }

  #find({ account, limit, matches, host, endpoint }: ReturnType<typeof compileTrafficFind>): TrafficEntryDetail[] {
    const found = this.slots(
      account,
      (t) => {
        if (endpoint !== undefined && !t.endpoints.some((e) => e.id === endpoint)) return false;
        const http = t.protocol === 'http' ? t : undefined;
        const url = http ? parsedUrl(http.request.url) : undefined;
        if (host !== undefined && url?.hostname !== host) return false;
        return matches({ method: http?.request.method, path: url?.pathname, status: http ? (http.response?.status ?? DROPPED) : undefined, body: () => bodyEntry(this.#bodies.get(t)?.request) });
      },
      limit,
    );
    return found.map((slot) => this.#detail(slot));
  }

  #detail(slot: RingSlot<Traffic>): TrafficEntryDetail {
    const t = slot.record;
    const http = t.protocol === 'http' ? t : undefined;
    const bodies = this.#bodies.get(t);
    return {
      ...this.entry(slot),
      started_at: t.startedAt.toISOString(),
      request: http ? { method: http.request.method, url: redactUrl(http.request.url, REDACTED), headers: http.request.headers, body: bodyEntry(bodies?.request) } : null,
      response: http?.response ? { status: http.response.status, headers: http.response.headers, body: bodyEntry(bodies?.response) } : null,
      upstream: http?.upstream ? { status: http.upstream.status, headers: http.upstream.headers, after_ms: http.upstream.afterMs, relay: http.upstream.relay } : null,
    };
  }

  protected bodiesOf(record: Traffic): KeptBodies | undefined {
    return this.#bodies.get(record);
  }

  /** Sends `request` through the ingress again; answers the new exchange (400 when no ingress of this process listens for HTTP). */
  async replay(request: ReplayRequest): Promise<TrafficEntryDetail> {
    if (!this.#sender) fail('INVALID_FIELD', 'no HTTP ingress runs in this process to replay traffic through (start Burrow with --http-ingress-addr)');
    const seq = await this.#sender(request);
    return this.get(seq);
  }

  /** Keeps a copy of `traffic` without secrets in its headers, its bodies counted; answers its sequence number. */
  #keepRedacted(traffic: Traffic): number {
    if (traffic.protocol !== 'http') return this.keep(traffic.account, traffic);
    const { request, response, upstream } = traffic;
    const kept: HttpTraffic = {
      ...traffic,
      request: { method: request.method, url: request.url, headers: redactHeaders(request.headers), bodyBytes: request.bodyBytes },
      response: response && { ...response, headers: redactHeaders(response.headers), body: undefined },
      ...(upstream ? { upstream: { ...upstream, headers: redactHeaders(upstream.headers) } } : {}),
    };
    const contentType = (headers: HttpTraffic['request']['headers']) => headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1];
    const bodies: KeptBodies = { held: 0, evicted: false };
    if (request.body) bodies.request = keepBytes(request.body, request.bodyBytes, contentType(request.headers));
    if (response?.body) bodies.response = keepBytes(response.body, response.bodyBytes, contentType(response.headers));
    const seq = this.keep(traffic.account, kept);
    this.#bodies.set(kept, bodies);
    this.bodies.add(bodies);
    return seq;
  }

  protected matcher(filter: Partial<TrafficFilter>): (traffic: Traffic) => boolean {
    const status = filter.status === undefined ? undefined : statusMatcher(filter.status);
    return (traffic) =>
      (status === undefined || (traffic.protocol === 'http' && status(traffic.response?.status ?? DROPPED))) &&
      (filter.endpoint === undefined || traffic.endpoints.some((endpoint) => endpoint.id === filter.endpoint)) &&
      (!filter.errors || traffic.rules.some((rule) => rule.error !== undefined));
  }

  protected entry(slot: RingSlot<Traffic>): TrafficEntry {
    const t = slot.record;
    const [endpoint, ...forwarded] = t.endpoints;
    const http = t.protocol === 'http' ? t : undefined;
    const rules = t.rules.map(
      (rule): TrafficRuleEntry => ({
        phase: rule.phase,
        source: rule.source,
        index: rule.index,
        name: rule.name ?? null,
        matched: rule.matched,
        actions: rule.actions.map((action) => ({ type: action.type, ended: action.ended, note: action.note ?? null })),
        error: rule.error ?? null,
      }),
    );
    const errors = rules.flatMap((rule) => (rule.error === null ? [] : [rule.error]));
    const decided = decidingRule(rules);
    return {
      seq: slot.seq,
      time: new Date(slot.timeMs).toISOString(),
      account_id: t.account ?? null,
      protocol: t.protocol,
      endpoint: endpoint ?? null,
      forwarded_to: forwarded,
      client_ip: t.conn?.clientIp ?? null,
      method: http ? http.request.method : null,
      url: http ? redactUrl(http.request.url, REDACTED) : null,
      status: http ? (http.response?.status ?? DROPPED) : null,
      error_code: http?.response?.headers.find(([name]) => name.toLowerCase() === ERROR_CODE_HEADER)?.[1] ?? null,
      answered_by: t.answeredBy,
      duration_ms: t.durationMs,
      bytes_in: http ? http.request.bodyBytes : (t as TcpTraffic).bytesIn,
      bytes_out: http ? (http.response?.bodyBytes ?? 0) : (t as TcpTraffic).bytesOut,
      rules,
      errors,
      decided_by: decided ? { phase: decided.rule.phase, source: decided.rule.source, index: decided.rule.index, name: decided.rule.name, action: decided.action } : null,
      message: t.message ?? errors[0] ?? null,
      logs: t.logs,
    };
  }
}

/** A URL as received, parsed; undefined for one that does not parse. */
function parsedUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/** The filter of `GET /_burrow/traffic`; unknown, repeated or bad parameters are 400s. */
export function parseTrafficQuery(query: QueryParams): TrafficFilter {
  const { filter, own } = parseJournalQuery(query, ['endpoint_id', 'errors']);
  if (own.errors !== undefined && own.errors !== 'true' && own.errors !== 'false') fail('INVALID_QUERY', `errors: must be true or false (got ${JSON.stringify(own.errors)})`);
  return {
    ...filter,
    ...(own.endpoint_id !== undefined ? { endpoint: own.endpoint_id } : {}),
    ...(own.errors === 'true' ? { errors: true } : {}),
  };
}
