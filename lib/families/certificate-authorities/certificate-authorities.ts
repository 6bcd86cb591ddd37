import { X509Certificate } from 'node:crypto';
import * as v from 'valibot';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, type ErrorSpec } from '../../conventions/errors.ts';
import { description, metadata, rfc3339 } from '../../conventions/fields.ts';
import { LIMITS, limitNote } from '../../limits.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import type { StoreReader } from '../../store.ts';
import { CERTIFICATE_AUTHORITIES_ERRORS } from './errors.ts';

/**
 * X.509 certificate authorities (/certificate_authorities): CA certificates uploaded to validate
 * client certificates in the mutual_tls module of TLS and HTTPS edges. Burrow holds no private key
 * for them. `ca_pem` must be exactly one PEM `CERTIFICATE` block (text around it is ignored), at
 * most 32 KiB, whose Basic Constraints mark it as a CA. The response adds what the certificate
 * says: subject common name, validity window and its (extended) key usages. `ca_pem` cannot change;
 * a CA that an edge uses is not deleted (409 naming the edge).
 */

export const CERTIFICATE_AUTHORITY_KIND = 'certificate_authority';

/** What any X.509 certificate says that CAs and TLS certificates both answer (`certificateSummary`). */
export interface CertificateSummary {
  readonly subject_common_name: string;
  readonly not_before: string;
  readonly not_after: string;
  readonly key_usages: readonly string[];
  readonly extended_key_usages: readonly string[];
}

/** A `CertificateSummary`'s fields as a snapshot import checks them. */
export const CERTIFICATE_SUMMARY_STORED = { subject_common_name: v.string(), not_before: rfc3339, not_after: rfc3339, key_usages: v.array(v.string()), extended_key_usages: v.array(v.string()) };

/** What a CA certificate says, as the response shows it. */
export interface CaCertificateFields extends CertificateSummary {
  readonly ca_pem: string;
}

export interface CertificateAuthorityRecord extends BaseRecord, CaCertificateFields {}

const CaCreate = v.strictObject({ description: v.optional(description), metadata: v.optional(metadata), ca_pem: v.string() });
const CaUpdate = v.strictObject({ description: v.optional(description), metadata: v.optional(metadata) });

/** RFC 5280 §4.2.1.3 key usage bits, in bit order, named as the vendor's Go-based API names them. */
const KEY_USAGE_BITS = [
  'digital_signature',
  'content_commitment',
  'key_encipherment',
  'data_encipherment',
  'key_agreement',
  'cert_sign',
  'crl_sign',
  'encipher_only',
  'decipher_only',
];

const EXTENDED_KEY_USAGES: Record<string, string> = {
  '2.5.29.37.0': 'any',
  '1.3.6.1.5.5.7.3.1': 'server_auth',
  '1.3.6.1.5.5.7.3.2': 'client_auth',
  '1.3.6.1.5.5.7.3.3': 'code_signing',
  '1.3.6.1.5.5.7.3.4': 'email_protection',
  '1.3.6.1.5.5.7.3.8': 'time_stamping',
  '1.3.6.1.5.5.7.3.9': 'ocsp_signing',
};

interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly end: number;
}

function readTlv(der: Buffer, offset: number): Tlv {
  let length = der[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + der[start++]!;
  }
  return { tag: der[offset]!, start, end: start + length };
}

function childrenOf(der: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = parent.start; offset < parent.end; offset = out[out.length - 1]!.end) out.push(readTlv(der, offset));
  return out;
}

const KEY_USAGE_OID = Buffer.from([0x55, 0x1d, 0x0f]);

/**
 * The key usage bits of a certificate node:crypto has already parsed. node:crypto does not expose
 * them, so the Extensions of the TBSCertificate are walked in DER: Certificate → tbsCertificate →
 * [3] → Extension { OID 2.5.29.15, critical?, OCTET STRING { BIT STRING } }.
 */
export function keyUsages(der: Buffer): string[] {
  const tbs = childrenOf(der, readTlv(der, 0))[0]!;
  const extensions = childrenOf(der, tbs).find((tlv) => tlv.tag === 0xa3);
  if (!extensions) return [];
  for (const extension of childrenOf(der, childrenOf(der, extensions)[0]!)) {
    const [oid, ...rest] = childrenOf(der, extension);
    if (!oid || !der.subarray(oid.start, oid.end).equals(KEY_USAGE_OID)) continue;
    const value = rest.find((tlv) => tlv.tag === 0x04)!;
    const bits = readTlv(der, value.start);
    const bytes = der.subarray(bits.start + 1, bits.end);
    return KEY_USAGE_BITS.filter((_name, bit) => ((bytes[bit >> 3] ?? 0) & (0x80 >> (bit & 7))) !== 0);
  }
  return [];
}

/** The attributes of a certificate's subject or issuer as node writes them (`CN=…` lines), the first of each name, unescaped. */
export function distinguishedName(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at <= 0) continue;
    const name = line.slice(0, at);
    if (!(name in out)) out[name] = line.slice(at + 1).replace(/\\(.)/g, '$1');
  }
  return out;
}

const commonName = (cert: X509Certificate) => distinguishedName(cert.subject).CN ?? '';

/** The summary fields of `cert`. */
export function certificateSummary(cert: X509Certificate): CertificateSummary {
  return {
    subject_common_name: commonName(cert),
    not_before: formatTime(new Date(cert.validFrom)),
    not_after: formatTime(new Date(cert.validTo)),
    key_usages: keyUsages(cert.raw),
    extended_key_usages: extendedKeyUsages(cert),
  };
}

function refuse(spec: ErrorSpec, message: string): never {
  throw new ApiError(spec, `ca_pem: ${message}`);
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/** The PEM blocks of a text, in order: their type (`CERTIFICATE`) and base64 body (with any headers). */
export function pemBlocks(text: string): { type: string; body: string }[] {
  return [...text.matchAll(PEM_BLOCK)].map((m) => ({ type: m[1]!, body: m[2]! }));
}

/** Extended key usages by name (`server_auth`), unknown ones as dotted OIDs. */
export function extendedKeyUsages(cert: X509Certificate): string[] {
  return (cert.keyUsage ?? []).map((oid) => EXTENDED_KEY_USAGES[oid] ?? oid);
}

/** Reads `ca_pem` into the response fields, or throws the 400 that says what is wrong with it. */
export function parseCaPem(pem: string): CaCertificateFields {
  if (pem.trim() === '') refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_PEM_EMPTY, 'is empty; send one PEM-encoded CA certificate');
  const bytes = Buffer.byteLength(pem, 'utf8');
  if (bytes > LIMITS.ca_pem_bytes.value) refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_PEM_TOO_LARGE, `must be at most ${LIMITS.ca_pem_bytes.value} bytes (got ${bytes}) ${limitNote('ca_pem_bytes')}`);
  const blocks = pemBlocks(pem);
  if (blocks.length === 0) refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_PEM_NOT_PEM, `no PEM block found (expected -----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----; got ${JSON.stringify(pem.slice(0, 40))}…)`);
  const wrong = blocks.find((block) => block.type !== 'CERTIFICATE');
  if (wrong) refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_PEM_WRONG_TYPE, `holds a PEM block of type ${JSON.stringify(wrong.type)}; it must be "CERTIFICATE" (never send a private key)`);
  if (blocks.some((block) => /^[\w-]+:/m.test(block.body))) refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_PEM_HEADERS, 'PEM headers (such as Proc-Type:) are not allowed');
  const certificates = blocks.map((block) => {
    try {
      return new X509Certificate(`-----BEGIN CERTIFICATE-----${block.body}-----END CERTIFICATE-----\n`);
    } catch (error) {
      return refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_PEM_UNPARSEABLE, `not a readable X.509 certificate (${(error as Error).message})`);
    }
  });
  if (certificates.length > 1) {
    refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_PEM_SEVERAL, `holds ${certificates.length} certificates (${certificates.map((c) => JSON.stringify(commonName(c))).join(', ')}); upload one CA certificate at a time`);
  }
  const cert = certificates[0]!;
  if (!cert.ca) refuse(CERTIFICATE_AUTHORITIES_ERRORS.CA_NOT_A_CA, `the certificate ${JSON.stringify(commonName(cert))} is not a CA: its Basic Constraints do not set cA (RFC 5280 §4.2.1.9)`);
  return { ca_pem: pem, ...certificateSummary(cert) };
}

export const certificateAuthorities = defineResource<CertificateAuthorityRecord, typeof CaCreate, typeof CaUpdate>({
  name: 'certificate_authorities',
  label: 'certificate authority',
  prefix: 'ca',
  filterable: true,
  event: 'certificate_authority',
  createSchema: CaCreate,
  updateSchema: CaUpdate,
  storedFields: CERTIFICATE_SUMMARY_STORED,
  create: (_ctx, input, base) => ({ ...base, ...parseCaPem(input.ca_pem) }),
  toResponse: (_ctx, record, base) => ({
    ...base,
    ca_pem: record.ca_pem,
    subject_common_name: record.subject_common_name,
    not_before: record.not_before,
    not_after: record.not_after,
    key_usages: [...record.key_usages],
    extended_key_usages: [...record.extended_key_usages],
  }),
});

/**
 * The certificates (PEM) of the account's certificate authorities `ids` (what mutual TLS checks
 * client certificates against); throws naming an id that is not a CA of the account.
 */
export async function certificateAuthorityPems(reader: StoreReader, account: string, ids: readonly string[]): Promise<string[]> {
  const pems: string[] = [];
  for (const id of ids) {
    const record = (await reader.get({ account, kind: CERTIFICATE_AUTHORITY_KIND }, id)) as CertificateAuthorityRecord | undefined;
    if (!record) throw new Error(`certificate authority '${id}' was not found`);
    pems.push(record.ca_pem);
  }
  return pems;
}
