import * as v from 'valibot';
import { indexToken, unindexToken } from '../../engine/auth.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { description, metadata, passes, sha256Hex, stringList, storedOwnerId } from '../../conventions/fields.ts';
import { ownerReferences, resolveOwner } from '../../engine/owners.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { AclRuleError, parseAcl } from '../../conventions/acl.ts';
import { CREDENTIALS_ERRORS } from './errors.ts';

/**
 * Tunnel credentials (/credentials): authtokens that agents start sessions with, limited by ACL
 * bind rules (see acl.ts). Like API keys, the token is shown once and stored only as a hash.
 */

export const CREDENTIAL_KIND = 'credential';

export interface CredentialRecord extends BaseRecord {
  readonly owner_id: string;
  readonly acl: readonly string[];
  readonly token_hash: string;
}

/** Validates ACL rules, mapping a bad rule to a 400 that names it (vendor code 600). */
export function validAcl(rules: readonly string[] | undefined): string[] {
  if (rules === undefined) return [];
  try {
    parseAcl(rules);
  } catch (error) {
    if (error instanceof AclRuleError) throw new ApiError(CREDENTIALS_ERRORS.INVALID_ACL_RULE, error.message);
    throw error;
  }
  return [...rules];
}

/** ACL rules as a credential keeps them: each one valid (agents' binds are checked against them). */
export const storedAcl = v.pipe(stringList, passes<string[]>(parseAcl));

/** The create body fields shared by tunnel and SSH credentials. */
export const credentialFields = {
  description: v.optional(description),
  metadata: v.optional(metadata),
  acl: v.optional(stringList),
  owner_id: v.optional(v.string()),
};

/** The update body shared by tunnel and SSH credentials. */
export const CredentialUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  acl: v.optional(stringList),
});

const CredentialCreate = v.strictObject(credentialFields);

export const credentials = defineResource<CredentialRecord, typeof CredentialCreate, typeof CredentialUpdate>({
  name: 'credentials',
  label: 'tunnel credential',
  prefix: 'cr',
  filterable: true,
  event: 'tunnel_credential',
  createSchema: CredentialCreate,
  updateSchema: CredentialUpdate,
  storedFields: { owner_id: storedOwnerId, acl: storedAcl, token_hash: sha256Hex },
  async create(ctx, input, base) {
    const acl = validAcl(input.acl);
    const owner_id = await resolveOwner(ctx, input.owner_id);
    const token = ctx.ids.token(base.id);
    const token_hash = await indexToken(ctx.tx, token, { account: ctx.account, kind: CREDENTIAL_KIND, record_id: base.id });
    return { record: { ...base, owner_id, acl, token_hash }, reveal: { token } };
  },
  references: ownerReferences,
  update: (_ctx, record, patch) => (patch.acl === undefined ? record : { ...record, acl: validAcl(patch.acl) }),
  toResponse: (_ctx, record, base) => ({
    ...base,
    token: null,
    acl: [...record.acl],
    owner_id: record.owner_id,
  }),
  beforeDelete: (ctx, record) => unindexToken(ctx.tx, record.token_hash),
});
