import * as v from 'valibot';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { coded, description, metadata, passes, zeroIsUnset } from '../../conventions/fields.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { canonicalCurve, deriveCaKeyPair, EC_CURVE_NAMES, generateCaKeyPair, parseSshPublicKey, publicKeyLine, SSH_KEY_TYPES, type CaKeyPair, type EcCurve, type SshKeyType } from './ssh-keys.ts';
import { SSH_ERRORS } from './errors.ts';

/**
 * SSH certificate authorities (/ssh_certificate_authorities). The key pair is generated here
 * (node:crypto, asynchronously and before the write transaction opens, so an RSA 4096 key does not
 * hold up other requests). The private key is stored and never returned; `public_key` is the
 * authorized-keys line users put in known_hosts (@cert-authority) or TrustedUserCAKeys.
 *
 * Defaults: `private_key_type` ed25519; RSA keys 4096 bits; ECDSA curve P-256. `""` and `0` count as
 * not sent (the vendor's newer clients always send `private_key_type: ""`, `elliptic_curve: ""`,
 * `key_size: 0`).
 */

export const SSH_CA_KIND = 'ssh_certificate_authority';

export interface SshCaRecord extends BaseRecord {
  readonly key_type: SshKeyType;
  readonly public_key: string;
  readonly private_key_pem: string;
}

const KEY_TYPES = ['rsa', 'ecdsa', 'ed25519'] as const;
const KEY_SIZES = [2048, 4096];

const CaCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  private_key_type: zeroIsUnset(
    v.picklist(KEY_TYPES, (issue) => coded(SSH_ERRORS.SSH_PRIVATE_KEY_TYPE_INVALID, `must be one of ${KEY_TYPES.join(', ')} (got ${JSON.stringify(issue.input)})`)),
  ),
  elliptic_curve: zeroIsUnset(v.string()),
  key_size: zeroIsUnset(v.pipe(v.number(), v.integer())),
});

const CaUpdate = v.strictObject({ description: v.optional(description), metadata: v.optional(metadata) });

type CaInput = v.InferOutput<typeof CaCreate>;

/** Checks the type/size/curve combination and fills in the defaults. */
export function caKeyOptions(input: CaInput): { keyType: SshKeyType; keySize?: number; curve?: EcCurve } {
  const keyType = input.private_key_type ?? 'ed25519';
  if (input.key_size !== undefined && keyType !== 'rsa') {
    throw new ApiError(SSH_ERRORS.SSH_KEY_SIZE_NOT_RSA, `key_size: only allowed with private_key_type rsa (got ${keyType})`);
  }
  if (input.key_size !== undefined && !KEY_SIZES.includes(input.key_size)) {
    throw new ApiError(SSH_ERRORS.SSH_KEY_SIZE_INVALID, `key_size: must be one of ${KEY_SIZES.join(', ')} (got ${input.key_size})`);
  }
  if (input.elliptic_curve !== undefined && keyType !== 'ecdsa') {
    throw new ApiError(SSH_ERRORS.SSH_CURVE_NOT_ECDSA, `elliptic_curve: only allowed with private_key_type ecdsa (got ${keyType})`);
  }
  const curve = input.elliptic_curve === undefined ? undefined : canonicalCurve(input.elliptic_curve);
  if (input.elliptic_curve !== undefined && !curve) {
    throw new ApiError(SSH_ERRORS.SSH_CURVE_INVALID, `elliptic_curve: must be one of ${EC_CURVE_NAMES.join(', ')} (got ${JSON.stringify(input.elliptic_curve)})`);
  }
  if (keyType === 'rsa') return { keyType, keySize: input.key_size ?? 4096 };
  if (keyType === 'ecdsa') return { keyType, curve: curve ?? 'P-256' };
  return { keyType };
}

export const sshCertificateAuthorities = defineResource<SshCaRecord, typeof CaCreate, typeof CaUpdate>({
  name: 'ssh_certificate_authorities',
  label: 'SSH certificate authority',
  prefix: 'sshca',
  filterable: true,
  event: 'ssh_certificate_authority',
  notFoundError: SSH_ERRORS.SSH_CA_NOT_FOUND,
  inUseError: SSH_ERRORS.SSH_CA_IN_USE,
  createSchema: CaCreate,
  updateSchema: CaUpdate,
  storedFields: {
    key_type: v.picklist(SSH_KEY_TYPES),
    public_key: v.pipe(v.string(), passes(parseSshPublicKey)),
    // Certificates are signed with it: a key that does not load would fail every later signing.
    private_key_pem: v.pipe(v.string(), passes<string>(publicKeyLine)),
  },
  prepareCreate: (input) => generateCaKeyPair(caKeyOptions(input)),
  create(ctx, input, base, prepared) {
    const options = caKeyOptions(input);
    // Seeded Ed25519 and ECDSA keys come from the account's id sequence (lib/simulation/id-sequence.ts), inside
    // the transaction; RSA keys cannot be seeded with node:crypto and stay random.
    const keys =
      ctx.ids.deterministic && options.keyType !== 'rsa'
        ? deriveCaKeyPair({ keyType: options.keyType, ...(options.curve ? { curve: options.curve } : {}) }, (size) => ctx.ids.bytes(size))
        : (prepared as CaKeyPair);
    return { ...base, key_type: options.keyType, public_key: keys.publicKey, private_key_pem: keys.privateKeyPem };
  },
  toResponse: (_ctx, record, base) => ({ ...base, public_key: record.public_key, key_type: record.key_type }),
});
