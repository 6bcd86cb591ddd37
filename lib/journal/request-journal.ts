import { fail } from '../conventions/errors.ts';
import { LIMITS, limitNote } from '../limits.ts';
import type { QueryParams } from '../conventions/paging.ts';
import { AccountRings, type RingSlot } from './ring.ts';

/**
 * The request journal: the last N API requests of each account (default 1,000), kept in memory
 * for operators and test harnesses to see what came in and what failed. Each account has its own
 * ring buffer, allocated on its first request, so one noisy account never pushes another's
 * requests out and memory stays at most N entries per account (plus one ring for requests that
 * named no valid API key). Recording keeps the adapter's record object and two numbers in
 * preallocated arrays: no formatting or I/O happens on the request path; times are formatted when
 * the journal is read.
 *
 * An entry never holds a token or a body: the Authorization header is not read, and query values
 * whose names look secret are replaced by `REDACTED` before they are kept (the query is parsed
 * for that: a percent-encoded name is still a name). The control plane is not journaled (the
 * inspector polls it).
 */

/** What the HTTP adapter records about one answered API request. */
export interface RequestRecord {
  /** The per-request id (`op_…`, also in the Burrow-Operation-Id header and error details). */
  readonly operationId: string;
  /** The account of the API key used; undefined when the request named no valid key. */
  readonly account: string | undefined;
  readonly method: string;
  readonly path: string;
  /** The raw query string (`?limit=5`, or `''`). */
  readonly search: string;
  readonly status: number;
  /** `error_code` of an error answer. */
  readonly errorCode: string | undefined;
  readonly durationMs: number;
  /** The matched operation's id (`credentials.create`); undefined when no route matched. */
  readonly operation: string | undefined;
  /** The fault rule that applied to it (lib/simulation/faults.ts), and the latency it added. */
  readonly fault?: JournalFault | undefined;
}

/** A fault that applied to a request: the rule's id and the latency it added (ms), if any. */
export interface JournalFault {
  readonly id: string;
  readonly latency_ms: number | null;
}

/** One journal entry as the control plane and `RequestJournal.list` answer it. */
export interface JournalEntry {
  readonly operation_id: string;
  /** When the request was answered, by the instance clock (RFC 3339 with milliseconds). */
  readonly time: string;
  readonly account_id: string | null;
  readonly method: string;
  readonly path: string;
  /** The query string without `?` (secret-looking values redacted), `''` when none. */
  readonly query: string;
  /** `0` when a fault dropped the connection (no answer was sent). */
  readonly status: number;
  readonly error_code: string | null;
  readonly duration_ms: number;
  readonly operation: string | null;
  readonly fault: JournalFault | null;
}

/** A filter over journal entries. */
export interface JournalFilter {
  /** Only this account's requests (`null`: requests that named no valid API key). */
  readonly account?: string | null;
  /** `404`, a class such as `4xx`, or `failed` (every status from 400 up, and dropped connections). */
  readonly status?: string;
  /** Only requests whose path contains this text. */
  readonly path?: string;
  /** At most this many entries, newest first (default 100). */
  readonly limit?: number;
}

export const DEFAULT_JOURNAL_SIZE = 1000;

/**
 * Query parameter names whose values may be secrets: never kept in the journal or a log line.
 * A name is secret when it contains one of the usual words for a secret (`access_token`,
 * `client_secret`, `api_key`, `db_pwd`, `credential_id`, `session_cookie`…), ends in `sig`, or is
 * `value` (a vault secret's value, should a client send it in the query) or `code` (an OAuth code).
 */
const SECRET_NAME = /token|secret|passw|passphrase|pwd|credential|auth|key|signature|cookie|jwt|bearer|sig$|^value$|^code$/i;

export class RequestJournal {
  readonly #entries: AccountRings<RequestRecord>;

  constructor(size: number, now: () => number) {
    this.#entries = new AccountRings(size, now, 'requestJournalSize');
  }

  /** Entries kept per account; 0 turns the journal off. */
  get size(): number {
    return this.#entries.size;
  }

  /** Keeps one answered request (called by the HTTP adapter once per API request). */
  record(record: RequestRecord): void {
    if (this.size === 0) return;
    this.#entries.push(record.account, record.search === '' ? record : { ...record, search: redactQuery(record.search, 'REDACTED') });
  }

  /** Matching entries, newest first; every account's merged when `filter.account` is absent. */
  list(filter: JournalFilter = {}): JournalEntry[] {
    const matches = statusMatcher(filter.status);
    const path = filter.path;
    return this.#entries.find(filter.account, (record) => matches(record.status) && (path === undefined || record.path.includes(path)), filter.limit ?? 100).map(toEntry);
  }

  /** Forgets the requests of one account (`null`: of unauthenticated requests), or all; answers how many. */
  clear(account?: string | null): number {
    return this.#entries.clear(account);
  }
}

function toEntry(slot: RingSlot<RequestRecord>): JournalEntry {
  const r = slot.record;
  return {
    operation_id: r.operationId,
    time: new Date(slot.timeMs).toISOString(),
    account_id: r.account ?? null,
    method: r.method,
    path: r.path,
    query: r.search.startsWith('?') ? r.search.slice(1) : r.search,
    status: r.status,
    error_code: r.errorCode ?? null,
    duration_ms: r.durationMs,
    operation: r.operation ?? null,
    fault: r.fault ?? null,
  };
}

/**
 * The query string with the value of every secret-looking parameter replaced by `mask`; `search`
 * itself when it has none (the journal and the log line both redact through here).
 */
export function redactQuery(search: string, mask: string): string {
  const params = new URLSearchParams(search);
  const secret = [...new Set(params.keys())].filter((name) => SECRET_NAME.test(name));
  if (secret.length === 0) return search;
  for (const name of secret) params.set(name, mask);
  return `?${params.toString()}`;
}

export function statusMatcher(status: string | undefined): (code: number) => boolean {
  if (status === undefined || status === '' || status === 'all') return () => true;
  if (status === 'failed') return (code) => code >= 400 || code === DROPPED;
  if (/^[1-5]\d\d$/.test(status)) {
    const exact = Number(status);
    return (code) => code === exact;
  }
  if (/^[1-5]xx$/i.test(status)) {
    const hundred = Number(status[0]);
    return (code) => Math.floor(code / 100) === hundred;
  }
  fail('INVALID_QUERY', `status: must be a status such as 404, a class such as 4xx, or failed (got ${JSON.stringify(status)})`);
}

/** The status the journal keeps for a request whose connection a fault dropped. */
export const DROPPED = 0;

const JOURNAL_QUERY = ['account_id', 'status', 'path', 'limit'];

/** The one value of each allowed query parameter; repeated or unknown ones are 400s. */
export function single(query: QueryParams, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (!allowed.includes(key)) fail('UNKNOWN_QUERY_PARAM', `unknown query parameter '${key}'; supported: ${allowed.join(', ')}`);
    if (typeof value !== 'string') fail('REPEATED_QUERY_PARAM', `query parameter '${key}' given more than once`);
    out[key] = value;
  }
  return out;
}

/** `account_id=none` names the requests that carried no valid API key. */
export function accountOf(value: string | undefined): string | null | undefined {
  return value === undefined ? undefined : value === 'none' ? null : value;
}

/** The `limit` of a journal's listing: 1 to journal_page_size, 100 when absent. */
export function journalLimit(value: string | undefined): number {
  if (value === undefined) return 100;
  const limit = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (!(limit >= 1 && limit <= LIMITS.journal_page_size.value)) fail('INVALID_LIMIT', `limit: must be a whole number between 1 and ${LIMITS.journal_page_size.value} (got ${JSON.stringify(value)}) ${limitNote('journal_page_size')}`);
  return limit;
}

export function parseJournalQuery(query: QueryParams): JournalFilter {
  const q = single(query, JOURNAL_QUERY);
  const limit = journalLimit(q.limit);
  // Validates the status filter before any entry is read.
  statusMatcher(q.status);
  const account = accountOf(q.account_id);
  return {
    limit,
    ...(account !== undefined ? { account } : {}),
    ...(q.status !== undefined ? { status: q.status } : {}),
    ...(q.path !== undefined ? { path: q.path } : {}),
  };
}
