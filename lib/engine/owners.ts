import type { OperationContext } from './context.ts';
import { ApiError, ERRORS, fail } from '../conventions/errors.ts';
import { makeRef, type Ref } from '../conventions/refs.ts';

/**
 * Owners: the users and bots of an account, who own API keys, tunnel credentials and SSH
 * credentials. Users are made with the account (and by the control plane); bots also through the
 * bot users API (lib/families/bot-users). Both are core records: authentication, ownership checks
 * and every family that records an owner read them here, by the id's prefix.
 */

/** Store kind and id prefix of each kind of owner. */
export const OWNER_KINDS = {
  user: { kind: 'user', prefix: 'usr', path: '/users' },
  bot: { kind: 'bot', prefix: 'bot', path: '/bot_users' },
} as const;

export type OwnerKind = keyof typeof OWNER_KINDS;

const OWNER_ID = /^(usr|bot)_[0-9A-Za-z]+$/;

/** The kind of owner an id names: `bot` for `bot_…`, `user` otherwise. */
export function ownerKind(ownerId: string): OwnerKind {
  return ownerId.startsWith(`${OWNER_KINDS.bot.prefix}_`) ? 'bot' : 'user';
}

/** Whether `id` has the shape of an owner id (`usr_…` or `bot_…`). */
export function isOwnerId(id: string): boolean {
  return OWNER_ID.test(id);
}

/** `{ id, uri }` of an owner. */
export function ownerRef(baseUrl: string, ownerId: string): Ref {
  return makeRef(baseUrl, OWNER_KINDS[ownerKind(ownerId)].path, ownerId);
}

/** Reads an owner record (user or bot) of the context's account. */
export function readOwner(ctx: Pick<OperationContext, 'tx' | 'account'>, ownerId: string) {
  return ctx.tx.get({ account: ctx.account, kind: OWNER_KINDS[ownerKind(ownerId)].kind }, ownerId);
}

/** The references a key or credential keeps to its owner: bots only (users are never deleted). */
export function ownerReferences(record: { readonly owner_id: string }): readonly string[] {
  return ownerKind(record.owner_id) === 'bot' ? [record.owner_id] : [];
}

/** Whether an owner record (user or bot) is deactivated. */
export function isInactive(owner: Readonly<Record<string, unknown>> | undefined): boolean {
  return owner?.active === false;
}

/** The 403 for a key or credential whose owner is inactive (vendor 636). */
export function inactiveOwnerError(ownerId: string, what: string): ApiError {
  return new ApiError(ERRORS.OWNER_INACTIVE_CREDENTIAL, `${what} belongs to bot user '${ownerId}', which is inactive; activate it (PATCH /bot_users/${ownerId} {"active": true}) or use another key`, { owner_id: ownerId });
}

/**
 * The owner of a new key or credential: the caller by default (the account's admin user when the
 * operator acts); another user or bot of the same account only when the caller is an admin (403
 * otherwise); an unknown owner is a 400, an inactive bot too (vendor 636).
 */
export async function resolveOwner(ctx: OperationContext, requested: string | undefined): Promise<string> {
  if (requested === undefined || requested === ctx.principal.ownerId) return ctx.principal.ownerId || (await accountUser(ctx));
  if (!isOwnerId(requested)) {
    fail('OWNER_UNKNOWN', `owner_id: must be the id of a user (usr_…) or bot (bot_…) of this account (got ${JSON.stringify(requested)})`, { field: 'owner_id' });
  }
  if (!ctx.principal.admin) {
    fail('OWNER_FORBIDDEN', `owner_id: only admins may create keys or credentials for another owner ('${requested}')`, { field: 'owner_id' });
  }
  const owner = await readOwner(ctx, requested);
  if (!owner) fail('OWNER_UNKNOWN', `owner_id: no user or bot '${requested}' in this account`, { field: 'owner_id' });
  if (isInactive(owner)) fail('OWNER_INACTIVE', `owner_id: bot user '${requested}' is inactive; activate it before giving it keys or credentials`, { field: 'owner_id' });
  return requested;
}

/** The account's first admin user: the owner of what the operator creates without naming one. */
async function accountUser(ctx: OperationContext): Promise<string> {
  const users = await ctx.tx.page({ account: ctx.account, kind: OWNER_KINDS.user.kind }, { limit: 100 });
  const admin = users.filter((user) => user.admin === true).at(-1);
  if (!admin) fail('OWNER_UNKNOWN', `owner_id: account '${ctx.account}' has no admin user to own this; name an owner_id`, { field: 'owner_id' });
  return admin.id;
}
