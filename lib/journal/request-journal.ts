import type { QueryParams } from '../conventions/paging.ts';
import { Journal, parseJournalQuery, redactQuery, statusMatcher, type JournalFilterBase } from './journal.ts';
import type { RingSlot } from './ring.ts';

/**
 * The request journal: the last N API requests of each account (default 1,000), kept in memory
 * for operators and test harnesses to see what came in and what failed, in the rings every journal
 * keeps (journal.ts): at most N entries per account (plus one ring for requests that named no
 * valid API key). Recording keeps the adapter's record object and two numbers in
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
export interface JournalFilter extends JournalFilterBase {
  /** Only requests whose path contains this text. */
  readonly path?: string;
}

export const DEFAULT_JOURNAL_SIZE = 1000;

export class RequestJournal extends Journal<RequestRecord, JournalFilter, JournalEntry> {
  constructor(size: number, now: () => number) {
    super(size, now, 'requestJournalSize');
  }

  /** Keeps one answered request (called by the HTTP adapter once per API request). */
  record(record: RequestRecord): void {
    if (this.size === 0) return;
    this.keep(record.account, record.search === '' ? record : { ...record, search: redactQuery(record.search, 'REDACTED') });
  }

  protected matcher(filter: Partial<JournalFilter>): (record: RequestRecord) => boolean {
    const matches = statusMatcher(filter.status);
    const path = filter.path;
    return (record) => matches(record.status) && (path === undefined || record.path.includes(path));
  }

  protected entry(slot: RingSlot<RequestRecord>): JournalEntry {
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
}

/** The filter of `GET /_burrow/requests`; unknown, repeated or bad parameters are 400s. */
export function parseRequestQuery(query: QueryParams): JournalFilter {
  const { filter, own } = parseJournalQuery(query, ['path']);
  return { ...filter, ...(own.path !== undefined ? { path: own.path } : {}) };
}
