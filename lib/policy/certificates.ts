import { X509Certificate } from 'node:crypto';
import { canonicalAddress } from '../conventions/cidr.ts';

/**
 * X.509 certificates as the vendor's `conn.tls.client.*` / `conn.tls.server.*` variables show them,
 * and the client-certificate check of mutual TLS. Names read like Go's crypto/x509 and pkix, which
 * the vendor's service uses: `subject` is the RFC 2253-like string (`CN=a,O=b,C=US`, last RDN
 * first), `signature_algorithm` Go's name (`SHA256-RSA`, `ECDSA-SHA256`).
 */

const SIGNATURE_ALGORITHMS: Readonly<Record<string, string>> = {
  '1.2.840.113549.1.1.5': 'SHA1-RSA',
  '1.2.840.113549.1.1.11': 'SHA256-RSA',
  '1.2.840.113549.1.1.12': 'SHA384-RSA',
  '1.2.840.113549.1.1.13': 'SHA512-RSA',
  '1.2.840.113549.1.1.10': 'SHA256-RSAPSS',
  '1.2.840.10045.4.3.2': 'ECDSA-SHA256',
  '1.2.840.10045.4.3.3': 'ECDSA-SHA384',
  '1.2.840.10045.4.3.4': 'ECDSA-SHA512',
  '1.3.101.112': 'Ed25519',
};

const NAME_FIELDS: Readonly<Record<string, string>> = {
  C: 'country',
  O: 'organization',
  OU: 'organizational_unit',
  L: 'locality',
  ST: 'province',
  street: 'street_address',
  postalCode: 'postal_code',
};

interface Der {
  readonly tag: number;
  readonly body: Uint8Array;
  /** Offset just past this element in its parent. */
  readonly next: number;
}

/** One DER element at `offset` (definite lengths only, as DER requires). */
function derAt(bytes: Uint8Array, offset: number): Der {
  const tag = bytes[offset]!;
  let length = bytes[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[start + i]!;
    start += count;
  }
  return { tag, body: bytes.subarray(start, start + length), next: start + length };
}

function derChildren(body: Uint8Array): Der[] {
  const out: Der[] = [];
  for (let offset = 0; offset < body.length; ) {
    const element = derAt(body, offset);
    out.push(element);
    offset = element.next;
  }
  return out;
}

function oid(body: Uint8Array): string {
  const parts = [Math.floor(body[0]! / 40), body[0]! % 40];
  let value = 0;
  for (const byte of body.subarray(1)) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

/** An attribute value without the RFC 2253 escapes of the whole-name string (`Acme\\, Inc` → `Acme, Inc`). */
const unescape = (value: string) => value.replace(/\\(.)/g, '$1');

/** The distinguished name fields of a certificate, Go's pkix.Name reading of Node's `subject`/`issuer` lines. */
function nameParts(lines: string | undefined): Record<string, unknown> {
  const entries = (lines ?? '').split('\n').filter(Boolean).map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const);
  const out: Record<string, unknown> = {
    '': [...entries].reverse().map(([key, value]) => `${key}=${value}`).join(','),
    common_name: unescape(entries.findLast(([key]) => key === 'CN')?.[1] ?? ''),
  };
  for (const field of Object.values(NAME_FIELDS)) out[field] = [];
  for (const [key, value] of entries) if (NAME_FIELDS[key]) (out[NAME_FIELDS[key]] as string[]).push(unescape(value));
  return out;
}

function alternativeNames(text: string | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = { dns_names: [], email_addresses: [], ip_addresses: [], uris: [] };
  for (const entry of (text ?? '').split(', ').filter(Boolean)) {
    const colon = entry.indexOf(':');
    const key = { DNS: 'dns_names', email: 'email_addresses', 'IP Address': 'ip_addresses', URI: 'uris' }[entry.slice(0, colon)];
    if (key) out[key]!.push(key === 'ip_addresses' ? canonicalAddress(entry.slice(colon + 1)) : entry.slice(colon + 1));
  }
  return out;
}

/**
 * The variables of one certificate, keyed by the suffix after `conn.tls.client.` (`subject`,
 * `subject.common_name`, `san.dns_names`, `validity.not_after` …); every key is present, "" /
 * empty / epoch when `pem` is undefined (no certificate was presented).
 */
export function certificateVariables(pem: string | undefined): Record<string, unknown> {
  const cert = pem ? new X509Certificate(pem) : undefined;
  const out: Record<string, unknown> = {};
  for (const [prefix, lines] of [['subject', cert?.subject], ['issuer', cert?.issuer]] as const) {
    for (const [key, value] of Object.entries(nameParts(lines))) out[key ? `${prefix}.${key}` : prefix] = value;
  }
  const san = alternativeNames(cert?.subjectAltName);
  out.san = cert?.subjectAltName ?? '';
  for (const [key, value] of Object.entries(san)) out[`san.${key}`] = value;
  out.serial_number = cert ? BigInt(`0x${cert.serialNumber}`).toString() : '';
  out['validity.not_before'] = new Date(cert ? Date.parse(cert.validFrom) : 0);
  out['validity.not_after'] = new Date(cert ? Date.parse(cert.validTo) : 0);
  out.pem = cert ? cert.toString() : '';
  const [tbs, algorithm] = cert ? derChildren(derAt(cert.raw, 0).body) : [];
  out.signature_algorithm = algorithm ? (SIGNATURE_ALGORITHMS[oid(derChildren(algorithm.body)[0]!.body)] ?? 'UnknownSignatureAlgorithm') : '';
  out.extensions = tbs ? extensions(tbs.body) : [];
  return out;
}

/** The `[3]` extensions of a TBSCertificate as `{id, critical, value}` (value: the extension's DER bytes). */
function extensions(tbs: Uint8Array): Record<string, unknown>[] {
  const wrapper = derChildren(tbs).find((element) => element.tag === 0xa3);
  if (!wrapper) return [];
  return derChildren(derChildren(wrapper.body)[0]!.body).map((extension) => {
    const [id, ...rest] = derChildren(extension.body);
    const critical = rest.length === 2 && rest[0]!.tag === 0x01 && rest[0]!.body[0] !== 0;
    return { id: oid(id!.body), critical, value: new Uint8Array(rest[rest.length - 1]!.body) };
  });
}

/** The certificates of one or more concatenated PEM blocks. */
function pemCertificates(text: string): X509Certificate[] {
  return [...text.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)].map((block) => new X509Certificate(block[0]));
}

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_USAGE = '2.5.29.37.0';
const MAX_CHAIN = 8;

/**
 * Why a presented client chain (leaf first, PEM) does not verify against the trusted authorities
 * (PEM, each possibly a bundle), or undefined when it does: a path of valid signatures from the
 * leaf through presented intermediates to an authority whose basic constraints say `cA` (the
 * vendor refuses other authorities), every certificate on it valid at `now`, and the leaf usable
 * for client authentication when it lists extended key usages.
 */
export function clientChainProblem(chain: readonly string[], authorities: readonly string[], now: Date): string | undefined {
  if (chain.length === 0) return 'no client certificate was presented';
  let certs: X509Certificate[];
  let roots: X509Certificate[];
  try {
    certs = chain.map((pem) => new X509Certificate(pem));
    roots = authorities.flatMap(pemCertificates).filter((ca) => ca.ca);
  } catch (error) {
    return `a certificate does not parse: ${(error as Error).message}`;
  }
  const leaf = certs[0]!;
  const usages = leaf.keyUsage;
  if (usages && usages.length > 0 && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_USAGE)) return 'the client certificate is not for client authentication (extended key usage)';
  const issuedBy = (child: X509Certificate, parent: X509Certificate) => child.checkIssued(parent) && child.verify(parent.publicKey);
  let current = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    const time = now.getTime();
    if (time < Date.parse(current.validFrom) || time > Date.parse(current.validTo)) return `certificate ${nameParts(current.subject)['']} is not valid at ${now.toISOString()}`;
    const root = roots.find((ca) => issuedBy(current, ca));
    if (root) return time < Date.parse(root.validFrom) || time > Date.parse(root.validTo) ? 'the certificate authority is not valid now' : undefined;
    const parent = certs.find((cert) => cert !== current && cert.ca && issuedBy(current, cert));
    if (!parent) return 'the client certificate is not signed by a trusted certificate authority';
    current = parent;
  }
  return 'the client certificate chain is too long';
}
