import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import * as v from 'valibot';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, type ErrorSpec } from '../../conventions/errors.ts';
import { description, limitBytes, metadata, refusedField, rfc3339 } from '../../conventions/fields.ts';
import type { OperationContext } from '../../engine/context.ts';
import { defineResource, emitAudit, keepIndexes, respond, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { canonicalAddress } from '../../conventions/cidr.ts';
import { CERTIFICATE_SUMMARY_STORED, certificateSummary, distinguishedName, pemBlocks, type CertificateSummary } from '../certificate-authorities/index.ts';
import { TLS_CERTIFICATES_ERRORS } from './errors.ts';

/**
 * TLS certificates (/tls_certificates): a certificate chain (leaf first) and its private key,
 * uploaded for reserved domains. Both are parsed for real with node:crypto: the chain must be PEM
 * `CERTIFICATE` blocks, each signed by the next; the key an unencrypted PKCS#8, PKCS#1 or SEC 1
 * PEM key (rsa, ecdsa or ed25519) that belongs to the leaf. The response says what the leaf
 * says: subject fields, SANs, validity, key usages, issuer, serial.
 *
 * Automatic certificate management adds the certificates it issues (`issued_at` set; uploads
 * answer null). The private key is stored (the service would serve it) and never answered, logged
 * or put in an event or an error message. Only description and metadata change after creation; a certificate
 * a reserved domain uses is not deleted (409 naming the domain).
 */

export const TLS_CERTIFICATE_KIND = 'tls_certificate';

/** What the leaf certificate says, as the response shows it. */
export interface TlsCertificateFields extends CertificateSummary {
  readonly certificate_pem: string;
  readonly subject_alternative_names: { readonly dns_names: readonly string[]; readonly ips: readonly string[] };
  readonly private_key_type: 'rsa' | 'ecdsa' | 'ed25519';
  readonly issuer_common_name: string;
  readonly serial_number: string;
  readonly subject_organization: string;
  readonly subject_organizational_unit: string;
  readonly subject_locality: string;
  readonly subject_province: string;
  readonly subject_country: string;
}

export interface TlsCertificateRecord extends BaseRecord, TlsCertificateFields {
  /** Never answered. */
  readonly private_key_pem: string;
  /** When automatic certificate management issued it; absent for uploads. */
  readonly issued_at?: string;
}

const TlsCertificateCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  certificate_pem: v.pipe(v.string(), limitBytes('certificate_pem_bytes')),
  private_key_pem: v.pipe(v.string(), limitBytes('private_key_pem_bytes')),
});

const TlsCertificateUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  certificate_pem: refusedField('cannot be changed; upload a new TLS certificate and point its users at it'),
  private_key_pem: refusedField('cannot be changed; upload a new TLS certificate and point its users at it'),
});

function refuse(spec: ErrorSpec, field: 'certificate_pem' | 'private_key_pem', message: string): never {
  throw new ApiError(spec, `${field}: ${message}`);
}

/** `C=DE\nO=Acme\, Inc\nCN=x` → the first value of each attribute, unescaped. */
/** `DNS:a.example.com, IP Address:2001:DB8:0:0:0:0:0:1` → names and canonical addresses. */
function alternativeNames(cert: X509Certificate): TlsCertificateFields['subject_alternative_names'] {
  const dns: string[] = [];
  const ips: string[] = [];
  for (const entry of (cert.subjectAltName ?? '').split(', ')) {
    if (entry.startsWith('DNS:')) dns.push(entry.slice(4));
    else if (entry.startsWith('IP Address:')) ips.push(canonicalAddress(entry.slice(11)).toLowerCase());
  }
  return { dns_names: dns, ips };
}

function readChain(pem: string): X509Certificate[] {
  const blocks = pemBlocks(pem);
  const key = blocks.find((block) => block.type.endsWith('PRIVATE KEY'));
  if (key) refuse(TLS_CERTIFICATES_ERRORS.TLS_CERTIFICATE_IS_KEY, 'certificate_pem', `holds a ${key.type} block: send the private key in private_key_pem and the certificates here`);
  if (blocks.length === 0) refuse(TLS_CERTIFICATES_ERRORS.TLS_CERTIFICATE_MISSING, 'certificate_pem', 'no PEM-encoded certificate found (expected -----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----)');
  const wrong = blocks.find((block) => block.type !== 'CERTIFICATE');
  if (wrong) refuse(TLS_CERTIFICATES_ERRORS.TLS_PEM_WRONG_TYPE, 'certificate_pem', `holds a PEM block of type ${JSON.stringify(wrong.type)}; only "CERTIFICATE" blocks belong here`);
  if (blocks.some((block) => /^[\w-]+:/m.test(block.body))) refuse(TLS_CERTIFICATES_ERRORS.TLS_PEM_HEADERS, 'certificate_pem', 'PEM headers (such as Proc-Type:) are not allowed');
  const chain = blocks.map((block, index) => {
    try {
      return new X509Certificate(`-----BEGIN CERTIFICATE-----${block.body}-----END CERTIFICATE-----\n`);
    } catch (error) {
      return refuse(TLS_CERTIFICATES_ERRORS.TLS_CERTIFICATE_UNPARSEABLE, 'certificate_pem', `certificate ${index + 1} is not a readable X.509 certificate (${(error as Error).message})`);
    }
  });
  for (let i = 0; i + 1 < chain.length; i++) {
    const [cert, issuer] = [chain[i]!, chain[i + 1]!];
    if (!cert.checkIssued(issuer) || !cert.verify(issuer.publicKey)) {
      const names = chain.map((c) => JSON.stringify(distinguishedName(c.subject).CN ?? c.subject)).join(', ');
      refuse(TLS_CERTIFICATES_ERRORS.TLS_CHAIN_ORDER, 'certificate_pem', `the chain holds [${names}] in this order (leaf first), but certificate ${i + 1} is not signed by certificate ${i + 2}`);
    }
  }
  return chain;
}

const KEY_TYPES: Record<string, TlsCertificateFields['private_key_type']> = { rsa: 'rsa', ec: 'ecdsa', ed25519: 'ed25519' };
const KEY_BLOCK_TYPES = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY']);

/** Reads the key; messages never quote it. */
function readKey(pem: string): { key: KeyObject; type: TlsCertificateFields['private_key_type'] } {
  const blocks = pemBlocks(pem).filter((block) => block.type !== 'EC PARAMETERS');
  if (blocks.some((block) => block.type === 'CERTIFICATE')) refuse(TLS_CERTIFICATES_ERRORS.TLS_KEY_IS_CERTIFICATE, 'private_key_pem', 'holds a CERTIFICATE block: send the certificate in certificate_pem and the private key here');
  if (blocks.length === 0) refuse(TLS_CERTIFICATES_ERRORS.TLS_PRIVATE_KEY_MISSING, 'private_key_pem', 'no PEM-encoded private key found (expected -----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY-----)');
  if (blocks.some((block) => block.type === 'ENCRYPTED PRIVATE KEY' || /^Proc-Type:.*ENCRYPTED/m.test(block.body))) {
    refuse(TLS_CERTIFICATES_ERRORS.TLS_PRIVATE_KEY_ENCRYPTED, 'private_key_pem', 'the private key is encrypted; upload it without a passphrase');
  }
  if (blocks.length > 1) refuse(TLS_CERTIFICATES_ERRORS.TLS_PRIVATE_KEY_UNSUPPORTED, 'private_key_pem', `holds ${blocks.length} PEM blocks; send exactly one private key`);
  const block = blocks[0]!;
  if (!KEY_BLOCK_TYPES.has(block.type)) refuse(TLS_CERTIFICATES_ERRORS.TLS_PRIVATE_KEY_UNSUPPORTED, 'private_key_pem', `a PEM block of type ${JSON.stringify(block.type)} is not a supported private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)`);
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: `-----BEGIN ${block.type}-----${block.body}-----END ${block.type}-----\n`, format: 'pem' });
  } catch {
    return refuse(TLS_CERTIFICATES_ERRORS.TLS_PRIVATE_KEY_UNSUPPORTED, 'private_key_pem', `the ${block.type} block is not a readable private key`);
  }
  const type = KEY_TYPES[key.asymmetricKeyType ?? ''];
  if (!type) refuse(TLS_CERTIFICATES_ERRORS.TLS_PRIVATE_KEY_UNSUPPORTED, 'private_key_pem', `keys of type ${key.asymmetricKeyType} are not supported (rsa, ecdsa or ed25519)`);
  return { key, type };
}

/** Reads an upload into the stored fields, or throws the 400 that names what is wrong and where. */
export function parseTlsCertificate(certificatePem: string, privateKeyPem: string): TlsCertificateFields & { private_key_pem: string } {
  const chain = readChain(certificatePem);
  const { key, type } = readKey(privateKeyPem);
  const leaf = chain[0]!;
  if (!leaf.checkPrivateKey(key)) refuse(TLS_CERTIFICATES_ERRORS.TLS_KEY_MISMATCH, 'private_key_pem', `does not belong to the certificate ${JSON.stringify(distinguishedName(leaf.subject).CN ?? leaf.subject)} (the first one in certificate_pem)`);
  const subject = distinguishedName(leaf.subject);
  return {
    certificate_pem: certificatePem,
    private_key_pem: privateKeyPem,
    ...certificateSummary(leaf),
    subject_alternative_names: alternativeNames(leaf),
    private_key_type: type,
    issuer_common_name: distinguishedName(leaf.issuer).CN ?? '',
    serial_number: leaf.serialNumber.toLowerCase(),
    subject_organization: subject.O ?? '',
    subject_organizational_unit: subject.OU ?? '',
    subject_locality: subject.L ?? '',
    subject_province: subject.ST ?? '',
    subject_country: subject.C ?? '',
  };
}

export const tlsCertificates = defineResource<TlsCertificateRecord, typeof TlsCertificateCreate, typeof TlsCertificateUpdate>({
  name: 'tls_certificates',
  label: 'TLS certificate',
  prefix: 'cert',
  filterable: true,
  event: 'tls_certificate',
  notFoundError: TLS_CERTIFICATES_ERRORS.TLS_CERTIFICATE_NOT_FOUND,
  createSchema: TlsCertificateCreate,
  updateSchema: TlsCertificateUpdate,
  storedFields: {
    ...CERTIFICATE_SUMMARY_STORED,
    ...Object.fromEntries(['issuer_common_name', 'serial_number', 'subject_organization', 'subject_organizational_unit', 'subject_locality', 'subject_province', 'subject_country'].map((field) => [field, v.string()])),
    subject_alternative_names: v.strictObject({ dns_names: v.array(v.string()), ips: v.array(v.string()) }),
    private_key_type: v.picklist(['rsa', 'ecdsa', 'ed25519']),
    issued_at: v.optional(rfc3339),
  },
  create: (_ctx, input, base) => ({ ...base, ...parseTlsCertificate(input.certificate_pem, input.private_key_pem) }),
  toResponse: (_ctx, record, base) => ({
    ...base,
    certificate_pem: record.certificate_pem,
    subject_common_name: record.subject_common_name,
    subject_alternative_names: { dns_names: [...record.subject_alternative_names.dns_names], ips: [...record.subject_alternative_names.ips] },
    issued_at: record.issued_at ?? null,
    not_before: record.not_before,
    not_after: record.not_after,
    key_usages: [...record.key_usages],
    extended_key_usages: [...record.extended_key_usages],
    private_key_type: record.private_key_type,
    issuer_common_name: record.issuer_common_name,
    serial_number: record.serial_number,
    subject_organization: record.subject_organization,
    subject_organizational_unit: record.subject_organizational_unit,
    subject_locality: record.subject_locality,
    subject_province: record.subject_province,
    subject_country: record.subject_country,
  }),
});

/**
 * Stores a certificate that automatic certificate management issued (PEM leaf and key from
 * ./simulated-issuer.ts), as a create would, with `issued_at` now; answers the new record's id.
 */
export async function storeIssuedCertificate(ctx: OperationContext, certificatePem: string, privateKeyPem: string): Promise<string> {
  const record: TlsCertificateRecord = {
    id: ctx.ids.id(tlsCertificates.prefix),
    created_at: formatTime(ctx.clock.now()),
    description: '',
    metadata: '',
    ...parseTlsCertificate(certificatePem, privateKeyPem),
    issued_at: formatTime(ctx.clock.now()),
  };
  await ctx.tx.put(scopeOf(ctx, tlsCertificates.kind), record);
  await keepIndexes(ctx, tlsCertificates, undefined, record);
  emitAudit(ctx, tlsCertificates, 'created', respond(ctx, tlsCertificates, record));
  return record.id;
}
