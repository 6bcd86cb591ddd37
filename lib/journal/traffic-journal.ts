import { fail } from '../conventions/errors.ts';
import type { QueryParams } from '../conventions/paging.ts';
import type { PolicyLogEntry } from '../traffic/decisions.ts';
import { DROPPED, Journal, parseJournalQuery, redactQuery, statusMatcher, type JournalFilterBase } from './journal.ts';
import type { RingSlot } from './ring.ts';
import { httpRequestComplete, tcpConnectionClosed, TRAFFIC_EVENT_TYPES } from '../traffic/events.ts';
import type { AnsweredBy, TcpTraffic, Traffic, TrafficEndpoint } from '../traffic/exchanges.ts';

/**
 * The traffic journal: what the ingress carried, seen rather than guessed. Each completed HTTP
 * exchange (and each closed TCP connection) is kept with the endpoint that took it, every rule its
 * policy evaluated with the actions that ran and the error that stopped one, and how it was
 * answered; the last N of each account (default 1,000, `trafficJournalSize`), in the per-account
 * rings every journal keeps (journal.ts). The same report becomes the vendor's traffic
 * event (`http_request_complete.v0`, `tcp_connection_closed.v0`) for the account's event
 * subscriptions that ask for it (lib/traffic/events.ts); nobody subscribed costs one index lookup.
 *
 * Recording keeps the ingress's report object as is; entries are built when the journal is read.
 * An entry holds no header and no body, and secret-looking query values are redacted, as in the
 * request journal.
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
  readonly logs: readonly PolicyLogEntry[];
}

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
  readonly #watchers = new Set<(traffic: Traffic) => void>();

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
    this.keep(traffic.account, traffic);
    for (const watcher of this.#watchers) watcher(traffic);
    const account = traffic.account;
    if (!account) return;
    const type = traffic.protocol === 'http' ? TRAFFIC_EVENT_TYPES.http : TRAFFIC_EVENT_TYPES.tcp;
    if (!(await this.#publisher.listens(account, type))) return;
    await this.#publisher.publish(account, type, traffic.protocol === 'http' ? httpRequestComplete(traffic) : tcpConnectionClosed(traffic));
  }

  /** Calls `watcher` with each exchange as it is recorded (in-process observers, tests); answers the function that stops it. */
  watch(watcher: (traffic: Traffic) => void): () => void {
    this.#watchers.add(watcher);
    return () => void this.#watchers.delete(watcher);
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
    return {
      seq: slot.seq,
      time: new Date(slot.timeMs).toISOString(),
      account_id: t.account ?? null,
      protocol: t.protocol,
      endpoint: endpoint ?? null,
      forwarded_to: forwarded,
      client_ip: t.conn?.clientIp ?? null,
      method: http ? http.request.method : null,
      url: http ? redactedUrl(http.request.url) : null,
      status: http ? (http.response?.status ?? DROPPED) : null,
      error_code: http?.response?.headers.find(([name]) => name.toLowerCase() === ERROR_CODE_HEADER)?.[1] ?? null,
      answered_by: t.answeredBy,
      duration_ms: t.durationMs,
      bytes_in: http ? http.request.bodyBytes : (t as TcpTraffic).bytesIn,
      bytes_out: http ? (http.response?.bodyBytes ?? 0) : (t as TcpTraffic).bytesOut,
      rules,
      errors: rules.flatMap((rule) => (rule.error === null ? [] : [rule.error])),
      logs: t.logs,
    };
  }
}

function redactedUrl(url: string): string {
  const query = url.indexOf('?');
  if (query < 0) return url;
  const hash = url.indexOf('#', query);
  const search = url.slice(query, hash < 0 ? undefined : hash);
  return `${url.slice(0, query)}${redactQuery(search, 'REDACTED')}${hash < 0 ? '' : url.slice(hash)}`;
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
