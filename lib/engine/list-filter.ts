import type { OperationContext } from './context.ts';
import { compileFilter, FilterProblem, type CompiledFilter } from '../conventions/cel.ts';
import { ApiError, ERRORS } from '../conventions/errors.ts';
import type { PageRequest } from '../conventions/paging.ts';
import { LIMITS } from '../limits.ts';
import type { PageQuery, Scope, StoredRecord } from '../store.ts';

/**
 * The `filter` list parameter of the vendor's newer API: a CEL expression over `obj`, the resource
 * exactly as the list answers it (lib/conventions/cel.ts). A filtered page holds up to `limit`
 * matching records, newest first, starting below `before_id`; its `next_page_uri` carries the
 * filter and the id of its last record, and is null when no older record matches.
 *
 * Records are read through the store's ordinary page query in batches of SCAN_BATCH, so a
 * filtered list holds at most one batch plus the page in memory, on every store (PostgreSQL
 * included: each batch is one index range scan). Burrow keeps no index on the fields a filter
 * reads, so a page costs the records it scans, and when matches are rare that is many: each record
 * scanned costs the filter's evaluation cost (its syntax nodes, lib/conventions/cel.ts) plus
 * FILTER_RECORD_COST (answering the record and converting it for CEL), and one page may spend
 * `filter_page_cost` (lib/limits.ts), which keeps a page under 50 ms of work. A page that runs out
 * of budget answers the matches it found, possibly none, with a `next_page_uri` whose `before_id`
 * is the last record it scanned, as paged scans elsewhere do (DynamoDB's LastEvaluatedKey): a
 * client that follows `next_page_uri` sees every match exactly once, and no query is refused for
 * being rare. Every page scans at least one record (a filter's cost, and the endpoint selectors'
 * together, fit the budget; FILTER_RECORD_COST included), so following `next_page_uri` always
 * ends: each batch starts below the last id of the one before.
 */

/** Records read from the store per step of a filtered scan. */
export const SCAN_BATCH = 200;

/**
 * What answering one record and converting it for CEL costs, in syntax nodes of evaluation (about
 * 50 on this machine: `false` over a collection costs what a 50-node filter adds to it).
 */
export const FILTER_RECORD_COST = 50;

/** A bad filter, or one whose evaluation fails: 400 250 naming `filter`. */
function invalidFilter(problem: FilterProblem): ApiError {
  return new ApiError(ERRORS.FILTER_INVALID, `filter: invalid CEL query: ${problem.message}`);
}

/** The 400 for a filter problem; other errors pass through. */
function rethrow(error: unknown): never {
  if (error instanceof FilterProblem) throw invalidFilter(error);
  throw error;
}

/**
 * Compiles `filter` for the caller's clock, or throws the 400; the predicate throws the 400 too
 * when evaluating it on a response fails.
 */
export function compileListFilter(ctx: OperationContext, filter: string): CompiledFilter {
  let compiled: CompiledFilter;
  try {
    compiled = compileFilter(filter, () => ctx.clock.now());
  } catch (error) {
    rethrow(error);
  }
  const predicate = (response: Record<string, unknown>) => {
    try {
      return compiled(response);
    } catch (error) {
      rethrow(error);
    }
  };
  return Object.assign(predicate, { cost: compiled.cost });
}

/**
 * One filtered page of `scope`: the responses of up to `page.limit` records whose response matches,
 * the id the next page continues below (the last match, or the last record scanned when the page
 * ran out of its budget), and whether an older record matches too (or may, when the page ran out
 * of its budget).
 */
export function filteredPage<R extends StoredRecord>(
  ctx: OperationContext,
  scope: Scope,
  page: PageRequest & { filter: string },
  respond: (record: R) => Record<string, unknown>,
): Promise<{ items: Record<string, unknown>[]; lastId: string | undefined; hasMore: boolean }> {
  return scanPage(ctx, scope, page, respond, compileListFilter(ctx, page.filter));
}

/**
/** The store page a scan reads below `cursor` (the first: below the page's before id). */
export const scanQuery = (cursor: string | undefined): PageQuery => (cursor === undefined ? { limit: SCAN_BATCH } : { beforeId: cursor, limit: SCAN_BATCH });

/**
 * One page of `scope` scanned as `filteredPage` scans (batches, the same budget), keeping the
 * records whose response `matches` (a predicate with its evaluation cost in syntax nodes, such as
 * a compiled filter or a Kubernetes operator's endpoint selectors).
 */
export async function scanPage<R extends StoredRecord>(
  ctx: OperationContext,
  scope: Scope,
  page: PageRequest,
  respond: (record: R) => Record<string, unknown>,
  matches: CompiledFilter,
): Promise<{ items: Record<string, unknown>[]; lastId: string | undefined; hasMore: boolean }> {
  const budget = LIMITS.filter_page_cost.value;
  const perRecord = matches.cost + FILTER_RECORD_COST;
  const items: Record<string, unknown>[] = [];
  let lastId: string | undefined;
  let cursor = page.beforeId;
  let scanned = 0;
  let lastScanned: string | undefined;
  for (;;) {
    const rows = (await ctx.tx.page(scope, scanQuery(cursor))) as R[];
    for (const record of rows) {
      if ((scanned + 1) * perRecord > budget) return { items, lastId: lastScanned, hasMore: true };
      scanned++;
      lastScanned = record.id;
      const response = respond(record);
      if (!matches(response)) continue;
      if (items.length === page.limit) return { items, lastId, hasMore: true };
      items.push(response);
      lastId = record.id;
    }
    if (rows.length < SCAN_BATCH) return { items, lastId, hasMore: false };
    cursor = rows[rows.length - 1]!.id;
  }
}
