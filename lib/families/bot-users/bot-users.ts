import * as v from 'valibot';
import type { OperationContext } from '../../context.ts';
import { fail } from '../../conventions/errors.ts';
import { maxBytes } from '../../conventions/fields.ts';
import { OWNER_KINDS } from '../../owners.ts';
import { defineResource, type BaseRecord } from '../../resource.ts';

/**
 * Bot users (/bot_users): owners that are not people. A bot owns API keys, tunnel credentials and
 * SSH credentials (`owner_id: "bot_…"` on create, admins only); the account's users are not in the
 * API (the admin user is made with the account). Bots are records of the store kind `bot`, the
 * same kind the control plane's owners use, so a bot made either way is one thing.
 *
 * Rules where the vendor's reference is silent, chosen as a careful user would expect:
 * - only admins create, change or delete bots (the vendor restricts ownership to admins, 630);
 * - an inactive bot (`active: false`) keeps its keys, but they stop working: its API keys are
 *   refused at authentication and its credentials cannot start agent sessions, and no new key or
 *   credential may name it as owner. The vendor's catalogue has the code: 636, "the credential
 *   owner is marked as inactive on the account";
 * - a bot that still owns keys or credentials cannot be deleted (409 naming them): delete or
 *   re-issue those first. The keys and credentials record their owner as a reference, so the
 *   check is the engine's referrer index, not a scan.
 */


export interface BotRecord extends BaseRecord {
  readonly name: string;
  /** Absent on bots made before bots could be deactivated: those are active. */
  readonly active?: boolean;
  readonly admin?: boolean;
}

const name = v.pipe(v.string(), v.minLength(1, 'must not be empty'), maxBytes(255));

const BotUserCreate = v.strictObject({ name, active: v.optional(v.boolean()) });
const BotUserUpdate = v.strictObject({ name: v.optional(name), active: v.optional(v.boolean()) });

function requireAdmin(ctx: OperationContext, action: string): void {
  if (!ctx.principal.admin) fail('OWNER_FORBIDDEN', `only admins may ${action} bot users`);
}

export const botUsers = defineResource<BotRecord, typeof BotUserCreate, typeof BotUserUpdate>({
  name: 'bot_users',
  label: 'bot user',
  kind: OWNER_KINDS.bot.kind,
  prefix: OWNER_KINDS.bot.prefix,
  createSchema: BotUserCreate,
  updateSchema: BotUserUpdate,
  storedFields: { admin: v.optional(v.boolean()) },
  create(ctx, input, base) {
    requireAdmin(ctx, 'create');
    return { ...base, name: input.name, active: input.active ?? true, admin: false };
  },
  update(ctx, record, patch) {
    requireAdmin(ctx, 'change');
    return { ...record, ...(patch.name !== undefined ? { name: patch.name } : {}), ...(patch.active !== undefined ? { active: patch.active } : {}) };
  },
  toResponse: (_ctx, record, base) => ({ id: base.id, uri: base.uri, name: record.name, active: record.active !== false, created_at: base.created_at }),
  beforeDelete(ctx) {
    requireAdmin(ctx, 'delete');
  },
});
