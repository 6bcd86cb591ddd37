import type { OperationContext } from './context.ts';
import { compileFilter, FilterProblem, type FilterPredicate } from './conventions/cel.ts';
import { ApiError, ERRORS } from './conventions/errors.ts';
import type { PageRequest } from './conventions/paging.ts';
import type { Scope, StoredRecord } from './store.ts';

/**
 * The `filter` list parameter of the vendor's newer API: a CEL expression over `obj`, the resource
 * exactly as the list answers it (lib/conventions/cel.ts). A filtered page holds up to `limit`
 * matching records, newest first, starting below `before_id`; its `next_page_uri` carries the
 * filter and the id of its last record, and is null when no older record matches.
 *
 * Records are read through the store's ordinary page query in batches of SCAN_BATCH, so a
 * filtered list holds at most one batch plus the page in memory, on every store (PostgreSQL
 * included: each batch is one index range scan). Finding out whether one more record matches after
 * a full page may read to the end of the collection when matches are rare; a page costs the records
 * scanned, since Burrow keeps no index on the fields a filter reads. The scan always ends: each
 * batch starts below the last id of the one before.
 */

/** Records read from the store per step of a filtered scan. */
export const SCAN_BATCH = 200;

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
export function compileListFilter(ctx: OperationContext, filter: string): FilterPredicate {
  let predicate: FilterPredicate;
  try {
    predicate = compileFilter(filter, () => ctx.clock.now());
  } catch (error) {
    rethrow(error);
  }
  return (response) => {
    try {
      return predicate(response);
    } catch (error) {
      rethrow(error);
    }
  };
}

/**
 * One filtered page of `scope`: the responses of up to `page.limit` records whose response matches,
 * the id of the last of them, and whether an older record matches too.
 */
export async function filteredPage<R extends StoredRecord>(
  ctx: OperationContext,
  scope: Scope,
  page: PageRequest & { filter: string },
  respond: (record: R) => Record<string, unknown>,
): Promise<{ items: Record<string, unknown>[]; lastId: string | undefined; hasMore: boolean }> {
  const matches = compileListFilter(ctx, page.filter);
  const items: Record<string, unknown>[] = [];
  let lastId: string | undefined;
  let cursor = page.beforeId;
  for (;;) {
    const rows = (await ctx.tx.page(scope, cursor === undefined ? { limit: SCAN_BATCH } : { beforeId: cursor, limit: SCAN_BATCH })) as R[];
    for (const record of rows) {
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
