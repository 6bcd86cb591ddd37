import type { OperationContext } from './context.ts';
import { ApiError, ERRORS, type ErrorSpec } from '../conventions/errors.ts';
import { addPair, pageOfPairs, pairsOf, removePair, type PairIndex } from './indexes.ts';

/**
 * The reverse-reference index: which records point at a record. Definitions declare what a record
 * references (`ResourceDefinition.references`); the engine keeps this index in step on create,
 * update and delete, and refuses to delete a record that something still references. The index
 * is a pair index (lib/engine/indexes.ts): one record per (target, referrer), so a check costs
 * O(referrers), not a scan, and two records that reference one target never write the same row.
 */

export interface Referrer {
  readonly id: string;
  readonly label: string;
}

/** The store kind of the reverse-reference records. */
export const REFERRER_KIND = '_referrer';

const referrers = (ctx: OperationContext): PairIndex => ({ account: ctx.account, kind: REFERRER_KIND });

/** The records that reference `target`, oldest first (ids sort by creation time after their prefix). */
export async function referrersOf(ctx: OperationContext, target: string): Promise<readonly Referrer[]> {
  const created = (id: string) => id.slice(id.indexOf('_') + 1);
  return (await pairsOf(ctx.tx, referrers(ctx), target))
    .map((pair) => ({ id: pair.member, label: String(pair.label) }))
    .sort((a, b) => (created(a.id) < created(b.id) ? -1 : created(a.id) > created(b.id) ? 1 : 0));
}

/**
 * One page of the ids of the records that reference `target` and whose ids start with `prefix`
 * (one kind), highest id first (newest first), below `beforeId` when given: O(limit) reads when
 * only that kind references `target`.
 */
export async function referrerPage(ctx: OperationContext, target: string, prefix: string, page: { readonly beforeId?: string; readonly limit: number }): Promise<string[]> {
  const out: string[] = [];
  let before = page.beforeId;
  for (;;) {
    const members = await pageOfPairs(ctx.tx, referrers(ctx), target, before === undefined ? { limit: page.limit } : { beforeMember: before, limit: page.limit });
    for (const member of members) {
      if (member.startsWith(prefix)) out.push(member);
      if (out.length === page.limit) return out;
    }
    if (members.length < page.limit) return out;
    before = members[members.length - 1];
  }
}

/** Records that `user` now references `next` instead of `previous` (ids may repeat; order is irrelevant). */
export async function updateReferences(ctx: OperationContext, user: Referrer, previous: readonly string[], next: readonly string[]): Promise<void> {
  const before = new Set(previous);
  const after = new Set(next);
  for (const target of before) if (!after.has(target)) await removePair(ctx.tx, referrers(ctx), target, user.id);
  for (const target of after) if (!before.has(target)) await addPair(ctx.tx, referrers(ctx), target, user.id, { label: user.label });
}

/** Throws a 409 naming the referrers when anything still references `target`. */
export async function refuseIfReferenced(ctx: OperationContext, label: string, target: string, spec: ErrorSpec = ERRORS.CONFLICT): Promise<void> {
  const users = await referrersOf(ctx, target);
  if (users.length === 0) return;
  const names = users.map((u) => `${u.label} '${u.id}'`);
  throw new ApiError(spec, `${label} '${target}' is still used by ${names.join(', ')}; remove those references first`, {
    id: target,
    used_by: users.map((u) => u.id).join(','),
  });
}

/**
 * The ids a request references, each once in first-seen order, after `check` (which throws the
 * kind's 404) has passed for each; `index` is the id's position in that list.
 */
export async function existingIds(ids: readonly string[], check: (id: string, index: number) => Promise<unknown>): Promise<string[]> {
  const unique = [...new Set(ids)];
  for (const [index, id] of unique.entries()) await check(id, index);
  return unique;
}
