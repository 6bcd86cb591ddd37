import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { fail } from '../../conventions/errors.ts';
import { coded } from '../../conventions/fields.ts';
import { OWNER_KINDS } from '../../engine/owners.ts';
import { defineResource, type BaseRecord, type ResourceDefinition } from '../../engine/resource.ts';
import { BOT_USERS_ERRORS } from './errors.ts';

/**
 * Bot users (/bot_users), which the vendor renamed service users (/service_users, its Go client
 * v7.7+; lib/families/service-users): owners that are not people. A bot owns API keys, tunnel
 * credentials and SSH credentials (`owner_id: "bot_…"` on create, admins only); the account's users
 * are not in the API (the admin user is made with the account). Bots are records of the store kind
 * `bot`, the same kind the control plane's owners use, so a bot made either way is one thing, and
 * both paths serve the same records (the vendor: "Service Users were previously called Bot Users").
 *
 * Rules, with the vendor's codes where its catalogue has one:
 * - a name is required and at most 255 bytes (4109, 4110); the Python client sends `""` when none
 *   is given, the Go client leaves it out: both are 4109;
 * - only admins create, change or delete bots (4111);
 * - an inactive bot (`active: false`) keeps its keys, but they stop working: its API keys are
 *   refused at authentication and its credentials cannot start agent sessions, and no new key or
 *   credential may name it as owner (636, "the credential owner is marked as inactive");
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

const NAME_MAX_BYTES = 255;

/** The name rules of one of the two paths (`label` names the kind in messages). */
function nameOf(label: string) {
  return v.pipe(
    v.string(),
    v.check((name) => name !== '', coded(BOT_USERS_ERRORS.BOT_NAME_EMPTY, `must not be empty: a ${label} needs a name`)),
    v.check(
      (name) => Buffer.byteLength(name, 'utf8') <= NAME_MAX_BYTES,
      (issue) => coded(BOT_USERS_ERRORS.BOT_NAME_TOO_LONG, `must be at most ${NAME_MAX_BYTES} bytes (got ${Buffer.byteLength(issue.input, 'utf8')})`),
    ),
  );
}

/** Names and paths of one of the API's views of the bot records. */
export interface BotKindNames {
  readonly name: string;
  readonly label: string;
  /** The list takes the vendor's CEL `filter` (the Go client v8 sends it on service users only). */
  readonly filterable?: boolean;
  /** The kind whose records these are, for the second view. */
  readonly sameRecordsAs?: ResourceDefinition<any, any, any>;
}

/** A view of the bot records under `names` (bot users, service users): one set of rules for both. */
export function botKind(names: BotKindNames) {
  const name = nameOf(names.label);
  const Create = v.strictObject({ name: v.optional(name, ''), active: v.optional(v.boolean()) });
  const Update = v.strictObject({ name: v.optional(name), active: v.optional(v.boolean()) });
  const requireAdmin = (ctx: OperationContext, action: string) => {
    if (!ctx.principal.admin) fail(BOT_USERS_ERRORS.BOT_ADMIN_ONLY, `only admins may ${action} ${names.label}s`);
  };
  return defineResource<BotRecord, typeof Create, typeof Update>({
    ...names,
    kind: OWNER_KINDS.bot.kind,
    prefix: OWNER_KINDS.bot.prefix,
    createSchema: Create,
    updateSchema: Update,
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
}

export const botUsers = botKind({ name: 'bot_users', label: 'bot user' });
