import * as v from 'valibot';
import { ApiError, ERRORS, fail } from '../../conventions/errors.ts';
import { passes, storedOwnerId } from '../../conventions/fields.ts';
import { findUnique } from '../../engine/indexes.ts';
import { ownerReferences, resolveOwner } from '../../engine/owners.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { INSTANCE_SCOPE, readAll, type StoreReader } from '../../store.ts';
import { CredentialUpdate, credentialFields, storedAcl, validAcl } from '../credentials/index.ts';
import { parseSshPublicKey, SshKeyError } from './ssh-keys.ts';
import { SSH_ERRORS } from './errors.ts';

/**
 * SSH credentials (/ssh_credentials): public keys that agents authenticate with through the SSH
 * gateway, with the same ACL rules as tunnel credentials. A key may be registered once per account.
 */

export const SSH_CREDENTIAL_KIND = 'ssh_credential';

export interface SshCredentialRecord extends BaseRecord {
  readonly owner_id: string;
  readonly acl: readonly string[];
  readonly public_key: string;
  readonly fingerprint: string;
}

const SshCredentialCreate = v.strictObject({ ...credentialFields, public_key: v.optional(v.string()) });

/** Parses an SSH public key (authorized-keys line or PEM), mapping failures to 400s. */
export function validSshPublicKey(text: string | undefined, field = 'public_key') {
  if (text === undefined || text.trim() === '') fail(SSH_ERRORS.SSH_KEY_MISSING, `${field}: an SSH public key is required`);
  try {
    return parseSshPublicKey(text);
  } catch (error) {
    if (error instanceof SshKeyError) throw new ApiError(SSH_ERRORS.SSH_KEY_INVALID, `${field}: ${error.message}`);
    throw error;
  }
}

export const sshCredentials = defineResource<SshCredentialRecord, typeof SshCredentialCreate, typeof CredentialUpdate>({
  name: 'ssh_credentials',
  label: 'SSH credential',
  prefix: 'sshcr',
  filterable: true,
  event: 'ssh_public_key',
  createSchema: SshCredentialCreate,
  updateSchema: CredentialUpdate,
  storedFields: {
    owner_id: storedOwnerId,
    acl: storedAcl,
    public_key: v.pipe(v.string(), passes(parseSshPublicKey)),
    fingerprint: v.pipe(v.string(), v.startsWith('SHA256:', 'must be an SSH fingerprint (SHA256:…)')),
  },
  unique: [
    {
      field: 'fingerprint',
      conflict: (_fingerprint, holder) => new ApiError(SSH_ERRORS.SSH_KEY_EXISTS, `public_key: this key is already registered on this account as '${holder}'`, { id: holder }),
    },
  ],
  async create(ctx, input, base) {
    const key = validSshPublicKey(input.public_key);
    const acl = validAcl(input.acl);
    const owner_id = await resolveOwner(ctx, input.owner_id);
    return { ...base, owner_id, acl, public_key: key.authorizedKey, fingerprint: key.fingerprint };
  },
  references: ownerReferences,
  update: (_ctx, record, patch) => (patch.acl === undefined ? record : { ...record, acl: validAcl(patch.acl) }),
  toResponse: (_ctx, record, base) => ({
    ...base,
    public_key: record.public_key,
    acl: [...record.acl],
    owner_id: record.owner_id,
  }),
});

/**
 * The accounts with an SSH credential for the key whose fingerprint is `fingerprint`: the SSH
 * gateway's lookup, since a client names no account and a key is registered per account (one
 * read per account, through the per-account fingerprint index).
 */
export async function findSshCredentialAccounts(reader: StoreReader, fingerprint: string): Promise<string[]> {
  const accounts = await readAll(reader, { account: INSTANCE_SCOPE, kind: 'account' });
  const holders = await Promise.all(accounts.map(async (account) => ((await findUnique(reader, account.id, SSH_CREDENTIAL_KIND, 'fingerprint', fingerprint)) === undefined ? [] : [account.id])));
  return holders.flat();
}
