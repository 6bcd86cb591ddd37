import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, ERRORS, type ErrorSpec } from '../../conventions/errors.ts';
import { description, metadata, passes, rfc3339, zeroIsUnset } from '../../conventions/fields.ts';
import { defineResource, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { isAddressOrCidr } from '../../conventions/cidr.ts';
import { SSH_CA_KIND, type SshCaRecord } from './certificate-authorities.ts';
import { parseSshPublicKey, signSshCertificate, SSH_KEY_TYPES, SshKeyError, type SshKeyType } from './ssh-keys.ts';
import { SSH_ERRORS } from './errors.ts';

/**
 * SSH host certificates (/ssh_host_certificates) and SSH user certificates
 * (/ssh_user_certificates): public keys signed by one of the account's SSH CAs into real OpenSSH
 * certificates. Both kinds come from one definition factory; user certificates add critical
 * options and extensions. The key id of a certificate is its resource id, its serial is random.
 * `valid_after` defaults to now and `valid_until` to now + 1 year (host) or + 24 hours (user);
 * `""` counts as not sent, and so does `extensions: {}` (the default extensions then apply).
 * Only description and metadata can change afterwards; a CA with certificates is not deleted.
 */

export interface SshCertificateRecord extends BaseRecord {
  readonly ssh_certificate_authority_id: string;
  readonly public_key: string;
  readonly key_type: SshKeyType;
  readonly principals: readonly string[];
  readonly valid_after: string;
  readonly valid_until: string;
  readonly certificate: string;
  readonly critical_options?: Readonly<Record<string, string>>;
  readonly extensions?: Readonly<Record<string, string>>;
}

const principal = v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.regex(/^[^,\s]+$/, 'must not contain commas or spaces'));

const commonFields = {
  description: v.optional(description),
  metadata: v.optional(metadata),
  ssh_certificate_authority_id: v.string(),
  public_key: v.optional(v.string()),
  principals: v.optional(v.array(principal)),
  valid_after: zeroIsUnset(rfc3339),
  valid_until: zeroIsUnset(rfc3339),
};

const KNOWN_CRITICAL_OPTIONS = ['force-command', 'source-address'];
const STANDARD_EXTENSIONS = ['no-touch-required', 'permit-X11-forwarding', 'permit-agent-forwarding', 'permit-port-forwarding', 'permit-pty', 'permit-user-rc'];
const DEFAULT_EXTENSIONS = { 'permit-pty': '', 'permit-user-rc': '' };

const criticalOptions = v.pipe(
  v.record(v.string(), v.string()),
  v.check(
    (options) => Object.keys(options).every((name) => KNOWN_CRITICAL_OPTIONS.includes(name)),
    (issue) => `supported critical options are ${KNOWN_CRITICAL_OPTIONS.join(', ')} (got ${Object.keys(issue.input).filter((n) => !KNOWN_CRITICAL_OPTIONS.includes(n)).join(', ')})`,
  ),
);

const extensions = v.pipe(
  v.record(v.string(), v.string()),
  v.check(
    (exts) => Object.entries(exts).every(([name, value]) => (STANDARD_EXTENSIONS.includes(name) ? value === '' : name.includes('@'))),
    `standard extensions (${STANDARD_EXTENSIONS.join(', ')}) take the value ""; other extensions must be named name@domain`,
  ),
);

const CertUpdate = v.strictObject({ description: v.optional(description), metadata: v.optional(metadata) });

/** Validates `source-address`: a comma-separated list of addresses or CIDRs, as sshd reads it. */
function validSourceAddress(value: string): string {
  const items = value.split(',').map((item) => item.trim());
  for (const item of items) {
    if (!isAddressOrCidr(item)) throw new ApiError(ERRORS.INVALID_FIELD, `critical_options.source-address: ${JSON.stringify(item)} is not an IP address or CIDR`);
  }
  return items.join(',');
}

interface CertificateKind<S extends v.GenericSchema<unknown, Record<string, unknown>>> {
  readonly certType: 'host' | 'user';
  readonly name: string;
  readonly label: string;
  readonly prefix: string;
  readonly event: string;
  readonly defaultValiditySeconds: number;
  readonly durationError: ErrorSpec;
  readonly schema: S;
}

async function requireCa(ctx: OperationContext, id: string): Promise<SshCaRecord> {
  const ca = await ctx.tx.get(scopeOf(ctx, SSH_CA_KIND), id);
  if (!ca) throw new ApiError(SSH_ERRORS.SSH_CA_NOT_FOUND, `ssh_certificate_authority_id: SSH certificate authority '${id}' was not found`, { id });
  return ca as SshCaRecord;
}

function certificateResource<S extends v.GenericSchema<unknown, Record<string, unknown>>>(kind: CertificateKind<S>) {
  return defineResource<SshCertificateRecord, S, typeof CertUpdate>({
    name: kind.name,
    label: kind.label,
    prefix: kind.prefix,
    event: kind.event,
    notFoundError: SSH_ERRORS.SSH_CERT_NOT_FOUND,
    createSchema: kind.schema,
    updateSchema: CertUpdate,
    storedFields: {
      public_key: v.pipe(v.string(), passes(parseSshPublicKey)),
      key_type: v.picklist(SSH_KEY_TYPES),
      principals: v.array(v.string()),
      valid_after: rfc3339,
      valid_until: rfc3339,
      certificate: v.pipe(v.string(), v.regex(/^\S+-cert-v01@openssh\.com [A-Za-z0-9+/]+=*$/, 'must be an OpenSSH certificate line')),
    },
    references: (record) => [record.ssh_certificate_authority_id],
    async create(ctx, input: Record<string, any>, base) {
      if (input.public_key === undefined || input.public_key.trim() === '') {
        throw new ApiError(SSH_ERRORS.SSH_PUBLIC_KEY_MISSING, 'public_key: the public key to sign is required');
      }
      let subject;
      try {
        subject = parseSshPublicKey(input.public_key);
      } catch (error) {
        if (error instanceof SshKeyError) throw new ApiError(SSH_ERRORS.SSH_PUBLIC_KEY_INVALID, `public_key: ${error.message}`);
        throw error;
      }
      const ca = await requireCa(ctx, input.ssh_certificate_authority_id);
      const validAfter = input.valid_after ? new Date(input.valid_after) : ctx.clock.now();
      const validUntil = input.valid_until ? new Date(input.valid_until) : new Date(ctx.clock.now().getTime() + kind.defaultValiditySeconds * 1000);
      if (validUntil.getTime() <= validAfter.getTime()) {
        throw new ApiError(kind.durationError, `valid_until: must be later than valid_after (${formatTime(validAfter)}); got ${formatTime(validUntil)}`);
      }
      const principals = [...(input.principals ?? [])];
      const critical_options = kind.certType === 'user' ? validCriticalOptions(input.critical_options ?? {}) : undefined;
      const exts = kind.certType === 'user' ? { ...(input.extensions ?? DEFAULT_EXTENSIONS) } : undefined;
      const serial = Buffer.from(ctx.ids.bytes(8)).readBigUInt64BE();
      const { certificate } = signSshCertificate({
        caPrivateKeyPem: ca.private_key_pem,
        publicKey: subject.authorizedKey,
        certType: kind.certType,
        keyId: base.id,
        serial,
        nonce: ctx.ids.bytes(32),
        principals,
        validAfter,
        validBefore: validUntil,
        ...(critical_options ? { criticalOptions: critical_options } : {}),
        ...(exts ? { extensions: exts } : {}),
      });
      return {
        ...base,
        ssh_certificate_authority_id: ca.id,
        public_key: subject.authorizedKey,
        key_type: subject.keyType,
        principals,
        valid_after: formatTime(validAfter),
        valid_until: formatTime(validUntil),
        certificate,
        ...(critical_options ? { critical_options } : {}),
        ...(exts ? { extensions: exts } : {}),
      };
    },
    toResponse: (_ctx, record, base) => ({
      ...base,
      ssh_certificate_authority_id: record.ssh_certificate_authority_id,
      public_key: record.public_key,
      key_type: record.key_type,
      principals: [...record.principals],
      ...(kind.certType === 'user' ? { critical_options: { ...record.critical_options }, extensions: { ...record.extensions } } : {}),
      valid_after: record.valid_after,
      valid_until: record.valid_until,
      certificate: record.certificate,
    }),
  });
}

function validCriticalOptions(options: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = { ...options };
  if (out['source-address'] !== undefined) out['source-address'] = validSourceAddress(out['source-address']);
  if (out['force-command'] !== undefined && out['force-command'].trim() === '') {
    throw new ApiError(ERRORS.INVALID_FIELD, 'critical_options.force-command: must not be empty');
  }
  return out;
}

const YEAR = 365 * 24 * 3600;
const DAY = 24 * 3600;

export const sshHostCertificates = certificateResource({
  certType: 'host',
  name: 'ssh_host_certificates',
  label: 'SSH host certificate',
  prefix: 'shcrt',
  event: 'ssh_host_certificate',
  defaultValiditySeconds: YEAR,
  durationError: SSH_ERRORS.SSH_HOST_CERT_DURATION,
  schema: v.strictObject(commonFields),
});

export const sshUserCertificates = certificateResource({
  certType: 'user',
  name: 'ssh_user_certificates',
  label: 'SSH user certificate',
  prefix: 'sucrt',
  event: 'ssh_user_certificate',
  defaultValiditySeconds: DAY,
  durationError: SSH_ERRORS.SSH_USER_CERT_DURATION,
  schema: v.strictObject({ ...commonFields, critical_options: v.optional(criticalOptions), extensions: zeroIsUnset(extensions) }),
});
