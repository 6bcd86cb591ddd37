import type { OperationContext } from './context.ts';
import { ApiError, ERRORS, type ErrorSpec } from './conventions/errors.ts';

/**
 * The reverse-reference index: which records point at a record. Definitions declare what a record
 * references (`ResourceDefinition.references`); the engine keeps this index in step on create,
 * update and delete, and refuses to delete a record that something still references. The index
 * lives in the store (one entry per referenced id), so a check costs O(referrers), not a scan, and
 * it works the same for every store.
 */

const REFERRERS = '_referrers';

export interface Referrer {
  readonly id: string;
  readonly label: string;
}

interface ReferrerEntry {
  readonly id: string;
  readonly users: readonly Referrer[];
}

async function entry(ctx: OperationContext, target: string): Promise<ReferrerEntry | undefined> {
  return (await ctx.tx.get({ account: ctx.account, kind: REFERRERS }, target)) as ReferrerEntry | undefined;
}

/** The records that reference `target`, oldest first. */
export async function referrersOf(ctx: OperationContext, target: string): Promise<readonly Referrer[]> {
  return (await entry(ctx, target))?.users ?? [];
}

/** Records that `user` now references `next` instead of `previous` (ids may repeat; order is irrelevant). */
export async function updateReferences(ctx: OperationContext, user: Referrer, previous: readonly string[], next: readonly string[]): Promise<void> {
  const before = new Set(previous);
  const after = new Set(next);
  const scope = { account: ctx.account, kind: REFERRERS };
  for (const target of before) {
    if (after.has(target)) continue;
    const users = ((await entry(ctx, target))?.users ?? []).filter((u) => u.id !== user.id);
    if (users.length === 0) await ctx.tx.delete(scope, target);
    else await ctx.tx.put(scope, { id: target, users });
  }
  for (const target of after) {
    if (before.has(target)) continue;
    const users = (await entry(ctx, target))?.users ?? [];
    if (!users.some((u) => u.id === user.id)) await ctx.tx.put(scope, { id: target, users: [...users, user] });
  }
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
