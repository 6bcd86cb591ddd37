import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { coded, description, metadata, ownerId, rfc3339 } from '../../conventions/fields.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { referrersOf } from '../../engine/references.ts';
import { defineResource, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { VAULTS_ERRORS } from './errors.ts';

/**
 * Vaults (/vaults, vendor API 0.15): named containers of secrets (secrets.ts). A name is unique in
 * its account (23004) and made of `a-zA-Z0-9_/.` (23000); a vault that still holds secrets is not
 * deleted (23003). Responses carry `created_by`/`last_updated_by` as bare owner ids (strings), as
 * the vendor's Vault type does (its Secret type has Refs there).
 */

export const VAULT_KIND = 'vault';
/** The store kind of secrets (secrets.ts), which name their vault. */
export const SECRET_KIND = 'secret';

export interface VaultRecord extends BaseRecord {
  readonly name: string;
  readonly updated_at: string;
  readonly created_by: string;
  readonly last_updated_by: string;
}

/** Names of vaults and secrets: the vendor's character set (its 23000/24000 messages). */
export const NAME_CHARACTERS = /^[A-Za-z0-9_/.]*$/;
const VAULT_NAME_MAX = 255;

const vaultName = v.pipe(
  v.string(),
  v.check((name) => name !== '', coded(VAULTS_ERRORS.VAULT_NAME_EMPTY, 'must not be empty')),
  v.check((name) => NAME_CHARACTERS.test(name), (issue) => coded(VAULTS_ERRORS.VAULT_NAME_INVALID, `${JSON.stringify(issue.input)} is not a vault name: use only the characters a-z, A-Z, 0-9, _, / and .`)),
  v.check((name) => name.length <= VAULT_NAME_MAX, (issue) => `must be at most ${VAULT_NAME_MAX} characters (got ${issue.input.length})`),
);

// The Python client sends `name: ""` when no name is given: that is the vendor's 23001, not a 215.
const VaultCreate = v.strictObject({
  name: v.optional(vaultName, ''),
  description: v.optional(description),
  metadata: v.optional(metadata),
});

const VaultUpdate = v.strictObject({
  name: v.optional(vaultName),
  description: v.optional(description),
  metadata: v.optional(metadata),
});

/** The owner behind a write (`usr_…`/`bot_…`; `""` for the operator). */
export const actorOf = (ctx: OperationContext) => ctx.principal.ownerId ?? '';

export const vaults = defineResource<VaultRecord, typeof VaultCreate, typeof VaultUpdate>({
  name: 'vaults',
  label: 'vault',
  prefix: 'vault',
  filterable: true,
  event: 'vault',
  inUseError: VAULTS_ERRORS.VAULT_NOT_EMPTY,
  createSchema: VaultCreate,
  updateSchema: VaultUpdate,
  storedFields: { updated_at: rfc3339, created_by: ownerId, last_updated_by: ownerId },
  unique: [{ field: 'name', conflict: (name, holder) => new ApiError(VAULTS_ERRORS.VAULT_NAME_EXISTS, `name: vault '${holder}' is already named ${JSON.stringify(name)}; vault names are unique in an account`, { id: holder }) }],
  create: (ctx, input, base) => ({ ...base, name: input.name, updated_at: base.created_at, created_by: actorOf(ctx), last_updated_by: actorOf(ctx) }),
  async update(ctx, record, patch) {
    const renamed = patch.name !== undefined && patch.name !== record.name;
    const next: VaultRecord = { ...record, ...(patch.name !== undefined ? { name: patch.name } : {}), updated_at: formatTime(ctx.clock.now()), last_updated_by: actorOf(ctx) };
    // Secrets answer their vault's name; a rename rewrites them (the only O(secrets) vault write).
    if (renamed) {
      for (const secret of await referrersOf(ctx, record.id)) {
        const stored = await ctx.tx.get(scopeOf(ctx, SECRET_KIND), secret.id);
        if (stored) await ctx.tx.put(scopeOf(ctx, SECRET_KIND), { ...stored, vault_name: next.name });
      }
    }
    return next;
  },
  toResponse: (_ctx, record, base) => ({
    ...base,
    updated_at: record.updated_at,
    name: record.name,
    created_by: record.created_by,
    last_updated_by: record.last_updated_by,
  }),
});
