import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { onFirstUse } from './on-first-use.ts';

/**
 * X.509 v3 certificates built in DER (RFC 5280), with keys and signatures from node:crypto, which
 * reads certificates but cannot make them. One builder for every certificate Burrow makes: the
 * simulated ACME issuer's and those of Burrow's own certificate authority (../certificate-authority.ts).
 * Certificate signing requests (PKCS#10, RFC 2986) are read here too, for the CA to sign.
 *
 * Only what Burrow's certificates need is encoded: names as UTF8String attributes, validity,
 * the issuer's signature (ECDSA P-256/P-384 with SHA-256/384, RSA PKCS#1 v1.5 with SHA-256,
 * Ed25519), and the extensions below. DER rules that strict verifiers (rustls/webpki) check are
 * kept: minimal lengths, positive serials of at most 20 bytes, no encoded defaults.
 */

/** A distinguished name as `[attribute OID, value]` pairs, in order (one attribute per RDN). */
export type DistinguishedName = readonly (readonly [string, string])[];

/** Attribute OIDs for names. */
export const NAME_ATTRIBUTES = { commonName: '2.5.4.3', organization: '2.5.4.10' } as const;

/** One certificate extension, encoded. */
export interface Extension {
  readonly der: Buffer;
}

/** The fields of a certificate to build. */
export interface CertificateFields {
  /** 1–20 bytes; made positive (high bit cleared) and non-zero here. */
  readonly serial: Uint8Array;
  /** The issuer's name as DER (a self-signed certificate passes its own subject). */
  readonly issuer: Buffer;
  readonly subject: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** The subject's key (public, or a private key whose public half is meant). */
  readonly publicKey: KeyObject;
  /** The issuer's private key; its type picks the signature algorithm. */
  readonly signingKey: KeyObject;
  readonly extensions: readonly Extension[];
}

/** A DER TLV: tag, minimal definite length, contents. */
export function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  const lengthBytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) lengthBytes.unshift(v & 0xff);
  const length = n < 0x80 ? [n] : [0x80 | lengthBytes.length, ...lengthBytes];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

const sequence = (...parts: Buffer[]) => tlv(0x30, ...parts);

function objectIdentifier(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime up to 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5), whole seconds, `Z`. */
function time(date: Date): Buffer {
  const digits = date.toISOString().slice(0, 19).replace(/[-T:]/g, '');
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${digits}Z`));
}

/** The DER of a distinguished name. */
export function distinguishedName(attributes: DistinguishedName): Buffer {
  return sequence(...attributes.map(([type, value]) => tlv(0x31, sequence(objectIdentifier(type), tlv(0x0c, Buffer.from(value))))));
}

function extension(id: string, critical: boolean, value: Buffer): Extension {
  return { der: sequence(objectIdentifier(id), ...(critical ? [Buffer.from([0x01, 0x01, 0xff])] : []), tlv(0x04, value)) };
}

/** basicConstraints (critical): a CA (optionally with a path length limit) or an end entity. */
export function basicConstraints(ca: boolean, pathLength?: number): Extension {
  const parts = ca ? [Buffer.from([0x01, 0x01, 0xff]), ...(pathLength === undefined ? [] : [tlv(0x02, Buffer.from([pathLength]))])] : [];
  return extension('2.5.29.19', true, sequence(...parts));
}

const KEY_USAGE_BITS = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

/** keyUsage (critical), as a minimal BIT STRING (RFC 5280 §4.2.1.3; bit 0 is the high bit). */
export function keyUsage(...usages: (keyof typeof KEY_USAGE_BITS)[]): Extension {
  let bits = 0;
  for (const usage of usages) bits |= 0x80 >> KEY_USAGE_BITS[usage];
  let unused = 0;
  while (unused < 7 && !(bits & (1 << unused))) unused += 1;
  return extension('2.5.29.15', true, tlv(0x03, Buffer.from([unused, bits])));
}

const KEY_PURPOSES = { serverAuth: '1.3.6.1.5.5.7.3.1', clientAuth: '1.3.6.1.5.5.7.3.2' } as const;

/** extKeyUsage (not critical). */
export function extendedKeyUsage(...purposes: (keyof typeof KEY_PURPOSES)[]): Extension {
  return extension('2.5.29.37', false, sequence(...purposes.map((purpose) => objectIdentifier(KEY_PURPOSES[purpose]))));
}

/** subjectAltName (not critical) with DNS names and IP addresses (IPv4 or IPv6 text). */
export function subjectAltName(names: { readonly dns?: readonly string[]; readonly ips?: readonly string[] }): Extension {
  const dns = (names.dns ?? []).map((name) => {
    if (!/^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(name)) throw new TypeError(`subjectAltName: '${name}' is not a DNS name`);
    return tlv(0x82, Buffer.from(name, 'ascii'));
  });
  const ips = (names.ips ?? []).map((ip) => tlv(0x87, ipAddressBytes(ip)));
  return extension('2.5.29.17', false, sequence(...dns, ...ips));
}

/** subjectKeyIdentifier: the SHA-1 of the subject's public key bits (RFC 5280 §4.2.1.2, method 1). */
export function subjectKeyIdentifier(publicKey: KeyObject): Extension {
  return extension('2.5.29.14', false, tlv(0x04, keyIdentifier(publicKey)));
}

/** authorityKeyIdentifier naming the issuer's key by its identifier (the issuer's subjectKeyIdentifier). */
export function authorityKeyIdentifier(issuerKeyIdentifier: Buffer): Extension {
  return extension('2.5.29.35', false, sequence(tlv(0x80, issuerKeyIdentifier)));
}

/** The SubjectPublicKeyInfo DER of a public key, or of a private key's public half. */
function spkiDer(key: KeyObject): Buffer {
  return (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' });
}

function keyIdentifier(publicKey: KeyObject): Buffer {
  const spki = spkiDer(publicKey);
  const [, bitString] = children(spki, 0);
  return createHash('sha1').update(spki.subarray(bitString!.contentStart + 1, bitString!.end)).digest();
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** The 4 or 16 bytes of an IP address given as text; a TypeError for anything else. */
export function ipAddressBytes(text: string): Buffer {
  if (IPV4.test(text)) return Buffer.from(text.split('.').map(Number));
  let canonical: string;
  try {
    // The URL parser validates IPv6 and serialises it as hex groups around at most one '::'.
    canonical = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    throw new TypeError(`'${text}' is not an IP address`);
  }
  const [head = '', tail] = canonical.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const missing = tail === undefined ? 0 : 8 - groups(head).length - groups(tail).length;
  const all = [...groups(head), ...Array<string>(missing).fill('0'), ...groups(tail ?? '')];
  return Buffer.from(all.flatMap((group) => [parseInt(group, 16) >> 8, parseInt(group, 16) & 0xff]));
}

interface Element {
  readonly tag: number;
  readonly start: number;
  readonly contentStart: number;
  readonly end: number;
}

function element(der: Buffer, start: number): Element {
  if (start + 2 > der.length) throw new TypeError('truncated DER');
  const tag = der[start]!;
  let length = der[start + 1]!;
  let contentStart = start + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || contentStart + count > der.length) throw new TypeError('unsupported DER length');
    length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + der[contentStart + i]!;
    contentStart += count;
  }
  if (contentStart + length > der.length) throw new TypeError('truncated DER');
  return { tag, start, contentStart, end: contentStart + length };
}

/** The elements inside the constructed element at `start`. */
function children(der: Buffer, start: number): Element[] {
  const parent = element(der, start);
  const out: Element[] = [];
  for (let at = parent.contentStart; at < parent.end; at = out[out.length - 1]!.end) out.push(element(der, at));
  return out;
}

/** The fields of a certificate's tbsCertificate, the optional version [0] left out. */
function tbsFields(certificateDer: Buffer): Element[] {
  const [tbs] = children(certificateDer, 0);
  if (!tbs) throw new TypeError('not an X.509 certificate');
  const fields = children(certificateDer, tbs.start);
  return fields[0]?.tag === 0xa0 ? fields.slice(1) : fields;
}

/** The subject name (DER) of a certificate, to name it as the issuer of the certificates it signs. */
export function certificateSubject(certificateDer: Buffer): Buffer {
  // serial, signature, issuer, validity, subject
  const subject = tbsFields(certificateDer)[4];
  if (!subject) throw new TypeError('not an X.509 certificate');
  return certificateDer.subarray(subject.start, subject.end);
}

// Tables of encoded OIDs are made on first use: a server that handles no certificate runs no X.509 code.
const subjectKeyIdentifierOid = onFirstUse(() => objectIdentifier('2.5.29.14'));

/** A certificate's subjectKeyIdentifier, if it has one. */
export function certificateKeyIdentifier(certificateDer: Buffer): Buffer | undefined {
  const extensions = tbsFields(certificateDer).find((field) => field.tag === 0xa3);
  if (!extensions) return undefined;
  for (const ext of children(certificateDer, element(certificateDer, extensions.contentStart).start)) {
    const parts = children(certificateDer, ext.start);
    const id = certificateDer.subarray(parts[0]!.start, parts[0]!.end);
    if (!id.equals(subjectKeyIdentifierOid())) continue;
    const value = parts[parts.length - 1]!;
    const inner = element(certificateDer, value.contentStart);
    return certificateDer.subarray(inner.contentStart, inner.end);
  }
  return undefined;
}

function signatureAlgorithm(key: KeyObject): { algorithm: Buffer; digest: string | null } {
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'prime256v1') return { algorithm: sequence(objectIdentifier('1.2.840.10045.4.3.2')), digest: 'sha256' };
      if (curve === 'secp384r1') return { algorithm: sequence(objectIdentifier('1.2.840.10045.4.3.3')), digest: 'sha384' };
      throw new TypeError(`unsupported EC curve ${curve} for signing certificates (P-256 or P-384)`);
    }
    case 'rsa':
      return { algorithm: sequence(objectIdentifier('1.2.840.113549.1.1.11'), tlv(0x05)), digest: 'sha256' };
    case 'ed25519':
      return { algorithm: sequence(objectIdentifier('1.3.101.112')), digest: null };
    default:
      throw new TypeError(`unsupported key type ${key.asymmetricKeyType} for signing certificates (EC, RSA or Ed25519)`);
  }
}

/** Builds and signs a certificate; answers its DER. */
export function buildCertificate(fields: CertificateFields): Buffer {
  if (fields.serial.length < 1 || fields.serial.length > 20) throw new TypeError('a serial number has 1 to 20 bytes');
  const serial = Buffer.from(fields.serial);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  const { algorithm, digest } = signatureAlgorithm(fields.signingKey);
  const tbs = sequence(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    algorithm,
    fields.issuer,
    sequence(time(fields.notBefore), time(fields.notAfter)),
    fields.subject,
    spkiDer(fields.publicKey),
    ...(fields.extensions.length > 0 ? [tlv(0xa3, sequence(...fields.extensions.map((ext) => ext.der)))] : []),
  );
  const signature = sign(digest, tbs, fields.signingKey);
  return sequence(tbs, algorithm, tlv(0x03, Buffer.from([0]), signature));
}

/** PEM text of a certificate's DER. */
export function certificatePem(der: Buffer): string {
  return `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`;
}

/** The DER of the first certificate in PEM text; a TypeError when there is none. */
export function certificateDer(pem: string): Buffer {
  const match = /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(pem);
  if (!match) throw new TypeError('no PEM certificate found');
  return Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64');
}

/** What a certificate signing request asks for, once its signature checked out. */
export interface CertificationRequest {
  /** The subject name, DER (an empty SEQUENCE when the request names none). */
  readonly subject: Buffer;
  /** The key to certify. */
  readonly publicKey: KeyObject;
}

/** The signature algorithms a request may be signed with, by OID: their digests. */
const requestSignatures = onFirstUse((): ReadonlyMap<string, string | null> => new Map([
  ['1.2.840.10045.4.3.2', 'sha256'],
  ['1.2.840.10045.4.3.3', 'sha384'],
  ['1.2.840.10045.4.3.4', 'sha512'],
  ['1.2.840.113549.1.1.11', 'sha256'],
  ['1.2.840.113549.1.1.12', 'sha384'],
  ['1.2.840.113549.1.1.13', 'sha512'],
  ['1.3.101.112', null],
].map(([oid, digest]) => [objectIdentifier(oid!).toString('hex'), digest ?? null])));

/**
 * Reads a PEM certificate signing request and checks its self-signature (the requester holds the
 * key it asks to have certified). Throws a TypeError saying what is wrong: not PEM, not a request,
 * a signature algorithm other than ECDSA, RSA PKCS#1 v1.5 (SHA-256/384/512) or Ed25519, or a
 * signature that does not verify.
 */
export function readCertificationRequest(pem: string): CertificationRequest {
  const match = /-----BEGIN (NEW )?CERTIFICATE REQUEST-----([\s\S]+?)-----END (NEW )?CERTIFICATE REQUEST-----/.exec(pem);
  if (!match) throw new TypeError('not a PEM certificate request (-----BEGIN CERTIFICATE REQUEST-----)');
  const der = Buffer.from(match[2]!.replace(/\s+/g, ''), 'base64');
  let info: Element, algorithm: Element, signature: Element, subject: Element, spki: Element, oid: Element;
  try {
    const outer = element(der, 0);
    if (outer.tag !== 0x30 || outer.end !== der.length) throw new TypeError('not a DER SEQUENCE');
    [info, algorithm, signature] = children(der, 0) as [Element, Element, Element];
    const fields = children(der, info.start);
    [, subject, spki] = fields as [Element, Element, Element];
    [oid] = children(der, algorithm.start) as [Element];
    if (fields.length < 3 || subject.tag !== 0x30 || spki.tag !== 0x30 || oid.tag !== 0x06 || signature.tag !== 0x03) throw new TypeError('fields missing or of the wrong type');
  } catch (error) {
    throw new TypeError(`not a PKCS#10 certificate request (${(error as Error).message})`);
  }
  const digest = requestSignatures().get(der.subarray(oid.start, oid.end).toString('hex'));
  if (digest === undefined) throw new TypeError('signed with an unsupported algorithm (use ECDSA, RSA with SHA-256/384/512, or Ed25519)');
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: der.subarray(spki.start, spki.end), format: 'der', type: 'spki' });
  } catch (error) {
    throw new TypeError(`its public key cannot be read (${(error as Error).message})`);
  }
  const signed = der.subarray(info.start, info.end);
  const signatureBytes = der.subarray(signature.contentStart + 1, signature.end);
  let valid = false;
  try {
    valid = verify(digest, signed, publicKey, signatureBytes);
  } catch {
    valid = false;
  }
  if (!valid) throw new TypeError('its signature does not verify with the key it carries');
  return { subject: Buffer.from(der.subarray(subject.start, subject.end)), publicKey };
}
