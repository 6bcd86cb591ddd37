import * as v from 'valibot';
import { indexToken, unindexToken } from '../../engine/auth.ts';
import { description, metadata, sha256Hex, storedOwnerId } from '../../conventions/fields.ts';
import { ownerReferences, resolveOwner } from '../../engine/owners.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';

/**
 * API keys (/api_keys): bearer keys for this API. The token is `<ksuid of the id>_<secret>`, shown
 * only in the create response (null everywhere else) and stored only as its SHA-256 hash.
 */

/** What a caller decides before creating a key: the account bootstrap may choose its token. */
export interface ApiKeyPrepared {
  readonly token?: string;
}

export const API_KEY_KIND = 'api_key';

export interface ApiKeyRecord extends BaseRecord {
  readonly owner_id: string;
  readonly token_hash: string;
}

const ApiKeyCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  owner_id: v.optional(v.string()),
});

const ApiKeyUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
});

export const apiKeys = defineResource<ApiKeyRecord, typeof ApiKeyCreate, typeof ApiKeyUpdate>({
  name: 'api_keys',
  label: 'API key',
  prefix: 'ak',
  listKey: 'keys',
  filterable: true,
  event: 'api_key',
  createSchema: ApiKeyCreate,
  updateSchema: ApiKeyUpdate,
  storedFields: { owner_id: storedOwnerId, token_hash: sha256Hex },
  async create(ctx, input, base, prepared) {
    const owner_id = await resolveOwner(ctx, input.owner_id);
    const token = (prepared as ApiKeyPrepared | undefined)?.token ?? ctx.ids.token(base.id);
    const token_hash = await indexToken(ctx.tx, token, { account: ctx.account, kind: API_KEY_KIND, record_id: base.id });
    return { record: { ...base, owner_id, token_hash }, reveal: { token } };
  },
  references: ownerReferences,
  toResponse: (_ctx, record, base) => ({ ...base, owner_id: record.owner_id, token: null }),
  async beforeDelete(ctx, record) {
    await unindexToken(ctx.tx, record.token_hash);
  },
});
