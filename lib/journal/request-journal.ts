import type { QueryParams } from '../conventions/paging.ts';
import { fail } from '../conventions/errors.ts';
import { headerPairs } from '../traffic/facts.ts';
import { bodyEntry, keepText, REDACTED, redactRawHeaders, type BodyEntry, type KeptBodies } from './detail.ts';
import { compileRequestFind, type RequestFindInput } from './find.ts';
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
 * Query values whose names look secret are replaced by `REDACTED` before they are kept (the
 * query is parsed for that: a percent-encoded name is still a name). The control plane is not
 * journaled (the inspector polls it).
 *
 * The detail of an entry (`get`: headers and bodies both ways) is what the HTTP adapter attaches
 * to the kept record once it has serialised the answer (`attach`): the body text it read and the
 * JSON it wrote, kept by reference within the caps of detail.ts, and the request's headers,
 * copied with their secrets masked, so no API key is ever kept (a replay is given one anew:
 * lib/journal/replay.ts). Calls of the in-process client have no detail: they have no HTTP form.
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
  /** The message of an error answer (its envelope's `msg`). */
  readonly message?: string | undefined;
  /** What the HTTP adapter attached (`RequestJournal.attach`). */
  detail?: RequestDetail;
}

/** The HTTP form of a journaled request, as kept: its headers and its bodies (one object, the journal's total counts it). */
export interface RequestDetail extends KeptBodies {
  /** The request's headers, name, value, name, value…, secret values masked. */
  readonly requestHeaders: readonly string[];
  /** The answer's headers as sent (they carry no secret). */
  readonly responseHeaders: Readonly<Record<string, string>>;
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
  /** The message of an error answer, else null. */
  readonly message: string | null;
}

/** One entry with what was sent and answered (`GET /_burrow/requests/{operation_id}`); bodies null when none was kept. */
export interface JournalEntryDetail extends JournalEntry {
  readonly request: { readonly headers: readonly (readonly [string, string])[]; readonly body: BodyEntry | null };
  readonly response: { readonly headers: readonly (readonly [string, string])[]; readonly body: BodyEntry | null } | null;
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

  /** Keeps one answered request (the pipeline calls it once per API request); answers the record kept, undefined when the journal is off. */
  record(record: RequestRecord): RequestRecord | undefined {
    if (this.size === 0) return undefined;
    const kept = record.search === '' ? record : { ...record, search: redactQuery(record.search, REDACTED) };
    this.keep(record.account, kept);
    return kept;
  }

  /**
   * Attaches the HTTP form of a kept request (the HTTP adapter, once per API request): the headers
   * as received (node's `rawHeaders`: name, value, …), masked now; the body it read and the JSON it
   * sent (`JSON.stringify`'s text), within the caps.
   */
  attach(record: RequestRecord, rawHeaders: readonly string[], requestBody: string | undefined, responseHeaders: Readonly<Record<string, string>>, responseBody: string | undefined): void {
    const detail: RequestDetail = {
      requestHeaders: redactRawHeaders(rawHeaders),
      responseHeaders,
      request: requestBody ? keepText(requestBody, requestContentType(rawHeaders)) : undefined,
      // The adapter's JSON.stringify of the answer (adapters/http/handler.ts).
      response: responseBody ? keepText(responseBody, undefined, true) : undefined,
      held: 0,
      evicted: false,
    };
    record.detail = detail;
    this.bodies.add(detail);
  }

  /** The entry of `operationId` with its detail; a 404 when the journal no longer has it. */
  get(operationId: string): JournalEntryDetail {
    const slot = this.findSlot((slot) => slot.record.operationId === operationId);
    if (!slot) fail('NOT_FOUND', `the request journal has no request ${operationId} (it keeps the last ${this.size} of each account)`, { operation_id: operationId });
    return this.#detail(slot);
  }

  /** The entries with their detail that match the criteria of lib/journal/find.ts, newest first (400 for bad criteria). */
  find(criteria: RequestFindInput = {}): JournalEntryDetail[] {
    const { account, limit, matches, operation } = compileRequestFind(criteria);
    const found = this.slots(account, (r) => (operation === undefined || (r.operation !== undefined && operation.test(r.operation))) && matches({ method: r.method, path: r.path, status: r.status, body: () => bodyEntry(r.detail?.request) }), limit);
    return found.map((slot) => this.#detail(slot));
  }

  #detail(slot: RingSlot<RequestRecord>): JournalEntryDetail {
    const detail = slot.record.detail;
    return {
      ...this.entry(slot),
      request: { headers: headerPairs(detail?.requestHeaders ?? []), body: bodyEntry(detail?.request) },
      response: detail ? { headers: Object.entries(detail.responseHeaders), body: bodyEntry(detail.response) } : null,
    };
  }

  protected bodiesOf(record: RequestRecord): KeptBodies | undefined {
    return record.detail;
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
      message: r.message ?? null,
    };
  }
}

/** The Content-Type among raw headers, or undefined. */
function requestContentType(raw: readonly string[]): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.length === 12 && raw[i]!.toLowerCase() === 'content-type') return raw[i + 1];
  return undefined;
}

/** The filter of `GET /_burrow/requests`; unknown, repeated or bad parameters are 400s. */
export function parseRequestQuery(query: QueryParams): JournalFilter {
  const { filter, own } = parseJournalQuery(query, ['path']);
  return { ...filter, ...(own.path !== undefined ? { path: own.path } : {}) };
}
