import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { coded, description, metadata, ownerId, rfc3339, storedId, zeroIsUnset } from '../../conventions/fields.ts';
import { ApiError, ERRORS, fail, notFound } from '../../conventions/errors.ts';
import { makeRef, type Ref } from '../../conventions/refs.ts';
import { findByUnique } from '../../engine/indexes.ts';
import { ownerRef } from '../../engine/owners.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { LIMITS, limitNote } from '../../limits.ts';
import type { StoreReader } from '../../store.ts';
import { sealSecretValue, secretOpener, unsealSecretValue, type SealedValue } from './sealing.ts';
import { actorOf, NAME_CHARACTERS, SECRET_KIND, VAULT_KIND, vaults, type VaultRecord } from './vaults.ts';
import { VAULTS_ERRORS } from './errors.ts';

/**
 * Secrets (/vault_secrets, vendor API 0.15): a named value in a vault. The value is write-only: it
 * is sealed before it is stored (sealing.ts) and appears in no response, event, journal entry, log
 * line or error message; a response says which vault holds the secret (`vault` Ref and
 * `vault_name`) and who created and last changed it (Refs). Names are unique within a vault
 * (24005). The vault is named by `vault_id` (24006 when unknown) or by `vault_name` (24009); one of
 * them is required (24008). `GET /vaults/{id}/secrets` pages the secrets of one vault.
 */

export interface SecretRecord extends BaseRecord {
  readonly name: string;
  readonly vault_id: string;
  /** The vault's name, kept in step by vault renames (vaults.ts). */
  readonly vault_name: string;
  /** `<vault id>/<name>`: the unique key of a name within its vault. */
  readonly name_in_vault: string;
  readonly updated_at: string;
  readonly created_by: string;
  readonly last_updated_by: string;
  readonly sealed: SealedValue;
}

const SECRET_NAME_MAX = 255;

const secretName = v.pipe(
  v.string(),
  v.check((name) => name !== '', coded(VAULTS_ERRORS.SECRET_NAME_EMPTY, 'must not be empty')),
  v.check((name) => NAME_CHARACTERS.test(name), (issue) => coded(VAULTS_ERRORS.SECRET_NAME_INVALID, `${JSON.stringify(issue.input)} is not a secret name: use only the characters a-z, A-Z, 0-9, _, / and .`)),
  v.check((name) => name.length <= SECRET_NAME_MAX, (issue) => coded(VAULTS_ERRORS.SECRET_NAME_TOO_LONG, `must be at most ${SECRET_NAME_MAX} characters (got ${issue.input.length})`)),
);

// Messages about a value never quote it: only its emptiness or its size.
const secretValue = v.pipe(
  v.string(),
  v.metadata({ writeOnly: true, description: 'The secret value: write-only (never answered), at most 64 KiB.' }),
  v.check((value) => value !== '', coded(VAULTS_ERRORS.SECRET_VALUE_EMPTY, 'must not be empty')),
  v.check(
    (value) => Buffer.byteLength(value, 'utf8') <= LIMITS.secret_value_bytes.value,
    (issue) => coded(VAULTS_ERRORS.SECRET_VALUE_TOO_LARGE, `must be at most ${LIMITS.secret_value_bytes.value} bytes (got ${Buffer.byteLength(issue.input, 'utf8')}) ${limitNote('secret_value_bytes')}`),
  ),
);

// The Python client always sends name, value, description, metadata and vault_id ("" by default);
// the Go client sends vault_id or vault_name, leaving the other out.
const SecretCreate = v.strictObject({
  name: v.optional(secretName, ''),
  value: v.optional(secretValue, ''),
  description: v.optional(description),
  metadata: v.optional(metadata),
  vault_id: zeroIsUnset(v.string()),
  vault_name: zeroIsUnset(v.string()),
});

const SecretUpdate = v.strictObject({
  name: v.optional(secretName),
  value: v.optional(secretValue),
  description: v.optional(description),
  metadata: v.optional(metadata),
});

/** The vault a create names by id or by name, in the caller's account. */
async function vaultNamed(ctx: OperationContext, input: { vault_id?: string | undefined; vault_name?: string | undefined }): Promise<VaultRecord> {
  const byId = input.vault_id === undefined ? undefined : ((await ctx.tx.get({ account: ctx.account, kind: VAULT_KIND }, input.vault_id)) as VaultRecord | undefined);
  if (input.vault_id !== undefined && !byId) {
    throw new ApiError(VAULTS_ERRORS.SECRET_VAULT_NOT_FOUND, `vault_id: vault '${input.vault_id}' was not found`, { id: input.vault_id });
  }
  if (input.vault_name === undefined) {
    if (!byId) fail(VAULTS_ERRORS.SECRET_VAULT_MISSING, 'vault_id: is required (or vault_name, the name of the vault)');
    return byId;
  }
  const byName = (await findByUnique(ctx.tx, ctx.account, VAULT_KIND, 'name', input.vault_name)) as VaultRecord | undefined;
  if (!byName) throw new ApiError(VAULTS_ERRORS.SECRET_VAULT_NAME_NOT_FOUND, `vault_name: no vault is named ${JSON.stringify(input.vault_name)}`, { name: input.vault_name });
  if (byId && byId.id !== byName.id) {
    fail('INVALID_FIELD', `vault_name: names vault '${byName.id}', but vault_id is '${byId.id}'; send one of them`);
  }
  return byName;
}

/** `{ id, uri }` of the user or bot behind a write; null for the operator. */
function writerRef(ctx: OperationContext, ownerId: string): Ref | null {
  return ownerId === '' ? null : ownerRef(ctx.baseUrl, ownerId);
}

export const secrets = defineResource<SecretRecord, typeof SecretCreate, typeof SecretUpdate>({
  name: 'secrets',
  label: 'secret',
  prefix: 'secret',
  path: '/vault_secrets',
  filterable: true,
  event: 'secret',
  createSchema: SecretCreate,
  updateSchema: SecretUpdate,
  storedFields: {
    vault_id: storedId('vault'),
    vault_name: v.string(),
    name_in_vault: v.string(),
    updated_at: rfc3339,
    created_by: ownerId,
    last_updated_by: ownerId,
    sealed: v.strictObject({ alg: v.literal('A256GCM'), iv: v.pipe(v.string(), v.base64()), data: v.pipe(v.string(), v.base64()), tag: v.pipe(v.string(), v.base64()) }),
  },
  listedUnder: { parent: vaults, segment: 'secrets', operation: 'get_secrets_by_vault' },
  unique: [
    {
      field: 'name_in_vault',
      conflict: (key, holder) => new ApiError(VAULTS_ERRORS.SECRET_NAME_EXISTS, `name: secret '${holder}' already has the name ${JSON.stringify(key.slice(key.indexOf('/') + 1))} in this vault; secret names are unique within a vault`, { id: holder }),
    },
  ],
  references: (record) => [record.vault_id],
  async create(ctx, input, base) {
    const vault = await vaultNamed(ctx, input);
    return {
      ...base,
      name: input.name,
      vault_id: vault.id,
      vault_name: vault.name,
      name_in_vault: `${vault.id}/${input.name}`,
      updated_at: base.created_at,
      created_by: actorOf(ctx),
      last_updated_by: actorOf(ctx),
      sealed: await sealSecretValue(ctx, base.id, input.value),
    };
  },
  async update(ctx, record, patch) {
    const name = patch.name ?? record.name;
    return {
      ...record,
      name,
      name_in_vault: `${record.vault_id}/${name}`,
      updated_at: formatTime(ctx.clock.now()),
      last_updated_by: actorOf(ctx),
      ...(patch.value !== undefined ? { sealed: await sealSecretValue(ctx, record.id, patch.value) } : {}),
    };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    updated_at: record.updated_at,
    name: record.name,
    created_by: writerRef(ctx, record.created_by),
    last_updated_by: writerRef(ctx, record.last_updated_by),
    vault: makeRef(ctx.baseUrl, vaults.path, record.vault_id),
    vault_name: record.vault_name,
  }),
});

/**
 * The unsealed value of the secret `name` in the vault named `vaultName` of `account`, as a
 * traffic policy's `secrets.get(vault, name)` reads it; undefined when either does not exist.
 */
export async function readSecretNamed(reader: StoreReader, operatorKey: Uint8Array | undefined, account: string, vaultName: string, name: string): Promise<string | undefined> {
  const vault = (await findByUnique(reader, account, VAULT_KIND, 'name', vaultName)) as VaultRecord | undefined;
  const record = vault && ((await findByUnique(reader, account, SECRET_KIND, 'name_in_vault', `${vault.id}/${name}`)) as SecretRecord | undefined);
  return record && unsealSecretValue(reader, operatorKey, account, record.id, record.sealed);
}

/**
 * Every secret of `account`, by vault name and name, for a traffic policy's `secrets.get` whose
 * arguments are computed (read once per request): at most `max` secrets (more: throws naming the
 * limit), each unsealed only when asked for.
 */
export async function readAccountSecrets(reader: StoreReader, operatorKey: Uint8Array | undefined, account: string, max: number): Promise<(vault: string, name: string) => string | undefined> {
  const records = (await reader.page({ account, kind: SECRET_KIND }, { limit: max + 1 })) as SecretRecord[];
  if (records.length > max) throw new Error(`the account holds more than ${max} secrets ${limitNote('policy_secrets_read')}`);
  const byName = new Map(records.map((record) => [`${record.vault_name}\u0000${record.name}`, record]));
  const open = byName.size > 0 ? await secretOpener(reader, operatorKey, account) : undefined;
  return (vault, name) => {
    const record = byName.get(`${vault}\u0000${name}`);
    return record && open!(record.id, record.sealed);
  };
}

/** The unsealed value of secret `secretId` of `account` (Burrow.revealSecretValue). */
export async function readSecretValue(reader: StoreReader, operatorKey: Uint8Array | undefined, account: string, secretId: string): Promise<string> {
  const record = (await reader.get({ account, kind: SECRET_KIND }, secretId)) as SecretRecord | undefined;
  if (!record) notFound(secrets.label, secretId);
  return unsealSecretValue(reader, operatorKey, account, record.id, record.sealed);
}
