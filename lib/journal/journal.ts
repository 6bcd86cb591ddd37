import { fail } from '../conventions/errors.ts';
import type { QueryParams } from '../conventions/paging.ts';
import { LIMITS, limitNote } from '../limits.ts';
import { AccountRings, type RingSlot } from './ring.ts';
import { BodyBudget, type KeptBodies } from './detail.ts';

export { isSecretName, redactQuery, redactUrl } from './secrets.ts';

/**
 * What the request journal (request-journal.ts) and the traffic journal (traffic-journal.ts) are
 * alike: the last N records of each account in rings of their own (ring.ts), listed newest first
 * through a filter (an account, a status, at most `limit`, and the journal's own fields), cleared
 * per account, and queried by the control plane with the same parameters and errors. A journal
 * says only what it keeps, how a filter matches it, and how a record reads as an entry.
 */

/** The part of a filter every journal takes. */
export interface JournalFilterBase {
  /** Only this account's records (`null`: those of no account). */
  readonly account?: string | null;
  /** `404`, a class such as `4xx`, or `failed` (every status from 400 up, and no answer). */
  readonly status?: string;
  /** At most this many entries, newest first (default 100). */
  readonly limit?: number;
}

/** The status a journal keeps when no answer was sent (a fault dropped the connection, or the client's ended first). */
export const DROPPED = 0;

export abstract class Journal<R, F extends JournalFilterBase, E> {
  readonly #entries: AccountRings<R>;
  /** The bodies the entries keep, within `journal_bodies_bytes` together (detail.ts). */
  protected readonly bodies = new BodyBudget();

  /** `option` names the size in the error a bad one gets (`requestJournalSize`). */
  constructor(size: number, now: () => number, option: string) {
    this.#entries = new AccountRings(size, now, option, (record) => this.bodies.release(this.bodiesOf(record)));
  }

  /** Entries kept per account; 0 turns the journal off. */
  get size(): number {
    return this.#entries.size;
  }

  /** Matching entries, newest first; every account's merged when `filter.account` is absent. */
  list(filter: Partial<F> = {}): E[] {
    return this.#entries.find(filter.account, this.matcher(filter), filter.limit ?? 100).map((slot) => this.entry(slot));
  }

  /** Forgets the records of one account (`null`: of no account), or all; answers how many. */
  clear(account?: string | null): number {
    const removed = this.#entries.clear(account);
    if (account === undefined) this.bodies.clear();
    return removed;
  }

  /** Keeps `record` in the ring of `account` (undefined: of no account); answers its sequence number. */
  protected keep(account: string | undefined, record: R): number {
    return this.#entries.push(account, record);
  }

  /** At most `limit` kept entries `matches` accepts, newest first: of `account` (`null`: of no account), or of all. */
  protected slots(account: string | null | undefined, matches: (record: R) => boolean, limit: number): RingSlot<R>[] {
    return this.#entries.find(account, matches, limit);
  }

  /** The kept entry `matches` accepts, if the journal still has it. */
  protected findSlot(matches: (slot: RingSlot<R>) => boolean): RingSlot<R> | undefined {
    return this.#entries.first(matches);
  }

  /** The bodies `record` keeps, if any (counted in `bodies` until the record is dropped). */
  protected abstract bodiesOf(record: R): KeptBodies | undefined;

  /** Whether a record passes `filter` (its account and limit aside). */
  protected abstract matcher(filter: Partial<F>): (record: R) => boolean;

  /** A kept record as the control plane shows it. */
  protected abstract entry(slot: RingSlot<R>): E;
}

/** Whether a status passes a `status` filter; throws the 400 for a filter that is none of the forms. */
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

/** The one value of each allowed query parameter; repeated or unknown ones are 400s. */
function single(query: QueryParams, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (!allowed.includes(key)) fail('UNKNOWN_QUERY_PARAM', `unknown query parameter '${key}'; supported: ${allowed.join(', ')}`);
    if (typeof value !== 'string') fail('REPEATED_QUERY_PARAM', `query parameter '${key}' given more than once`);
    out[key] = value;
  }
  return out;
}

/** `account_id=none` names the records of no account. */
function accountOf(value: string | undefined): string | null | undefined {
  return value === undefined ? undefined : value === 'none' ? null : value;
}

/** The `limit` of a journal's listing: 1 to journal_page_size, 100 when absent. */
function journalLimit(value: string | undefined): number {
  if (value === undefined) return 100;
  const limit = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (!(limit >= 1 && limit <= LIMITS.journal_page_size.value)) fail('INVALID_LIMIT', `limit: must be a whole number between 1 and ${LIMITS.journal_page_size.value} (got ${JSON.stringify(value)}) ${limitNote('journal_page_size')}`);
  return limit;
}

/**
 * A journal listing's query: `account_id`, `status` and `limit`, checked before any entry is read,
 * as the filter's common part, and the values of the listing's own parameters (`own`), one each.
 * Unknown, repeated or bad parameters are 400s.
 */
export function parseJournalQuery(query: QueryParams, own: readonly string[]): { filter: JournalFilterBase; own: Record<string, string> } {
  const { account_id, status, limit, ...rest } = single(query, ['account_id', 'status', ...own, 'limit']);
  const checkedLimit = journalLimit(limit);
  statusMatcher(status);
  const account = accountOf(account_id);
  return { filter: { limit: checkedLimit, ...(account !== undefined ? { account } : {}), ...(status !== undefined ? { status } : {}) }, own: rest };
}

/** The account a clear names (`account_id`, `none` for no account; absent: every account). */
export function parseClearQuery(query: QueryParams): string | null | undefined {
  return accountOf(single(query, ['account_id']).account_id);
}
