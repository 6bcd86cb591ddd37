import { LIMITS, limitNote } from '../limits.ts';
import { fail } from './errors.ts';
import { isStorableKey } from './ids.ts';

/**
 * Paging of list endpoints: `limit` (1..100, default 100) and `before_id` (the official TS client
 * sends `beforeId`; both are accepted). Lists are newest first; `next_page_uri` is absolute and
 * points at the records older than the last one on the page, or is null on the last page.
 */

/** The largest `limit` of a list page (lib/limits.ts). */
export const MAX_PAGE_SIZE = LIMITS.page_size.value;

/** Query parameters as the HTTP adapter hands them over: repeated keys become arrays. */
export type QueryParams = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface PageRequest {
  limit: number;
  beforeId?: string;
  /** The `filter` parameter (a CEL expression over `obj`), on lists that take it. */
  filter?: string;
}

const PAGING_PARAMS = ['before_id', 'beforeId', 'limit'];

/** The parameters of lists that take the vendor's `filter` (lib/engine/list-filter.ts). */
export const FILTERED_PAGING_PARAMS = [...PAGING_PARAMS, 'filter'];

/** Reads and validates paging parameters; any other parameter is an error naming the allowed ones. */
export function parsePageRequest(query: QueryParams = {}, allowed: readonly string[] = PAGING_PARAMS): PageRequest {
  const single: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (!allowed.includes(key)) {
      fail('UNKNOWN_QUERY_PARAM', `unknown query parameter '${key}'; supported: ${allowed.filter((p) => p !== 'beforeId').join(', ') || 'none'}`);
    }
    if (typeof value !== 'string') fail('REPEATED_QUERY_PARAM', `query parameter '${key}' given more than once`);
    single[key] = value;
  }
  if (single.before_id !== undefined && single.beforeId !== undefined && single.before_id !== single.beforeId) {
    fail('REPEATED_QUERY_PARAM', "query parameters 'before_id' and 'beforeId' disagree; send one of them");
  }
  let limit: number = MAX_PAGE_SIZE;
  if (single.limit !== undefined) {
    limit = /^\d{1,4}$/.test(single.limit) ? Number(single.limit) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_PAGE_SIZE)) {
      fail('INVALID_LIMIT', `limit: must be a whole number between 1 and ${MAX_PAGE_SIZE} (got ${JSON.stringify(single.limit)}) ${limitNote('page_size')}`);
    }
  }
  const beforeName = single.before_id === undefined ? 'beforeId' : 'before_id';
  const beforeId = single[beforeName];
  if (beforeId !== undefined && beforeId === '') fail('INVALID_QUERY', `${beforeName}: must not be empty`);
  if (beforeId !== undefined && !isStorableKey(beforeId)) {
    fail('INVALID_QUERY', `${beforeName}: must be an id, and ids never hold NUL or unpaired surrogates (got ${JSON.stringify(beforeId)})`);
  }
  const page: PageRequest = beforeId === undefined ? { limit } : { limit, beforeId };
  return single.filter === undefined ? page : { ...page, filter: single.filter };
}

/** The list envelope `{ <listKey>: [...], uri, next_page_uri }`; the next page keeps the filter. */
export function listEnvelope<T>(
  listKey: string,
  items: T[],
  listUri: string,
  page: PageRequest,
  lastId: string | undefined,
  hasMore: boolean,
): Record<string, unknown> {
  const filter = page.filter === undefined ? '' : `&filter=${encodeURIComponent(page.filter)}`;
  const next = hasMore && lastId !== undefined ? `${listUri}?limit=${page.limit}&before_id=${encodeURIComponent(lastId)}${filter}` : null;
  return { [listKey]: items, uri: listUri, next_page_uri: next };
}
