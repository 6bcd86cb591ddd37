import { createHash } from 'node:crypto';

/**
 * The JA4 fingerprint of a TLS ClientHello (FoxIO's JA4, technical_details/JA4.md of
 * github.com/FoxIO-LLC/ja4), the vendor's `conn.tls.ja4_fingerprint`: `t` (TLS over TCP), the
 * version, `d`/`i` (SNI present or not), the counts of cipher suites and extensions (two digits, at
 * most 99), the first and last character of the first ALPN value (`00` without one); `_`, the
 * first 12 hex digits of the SHA-256 of the cipher suites sorted; `_`, the same of the extensions
 * sorted without SNI and ALPN, then `_` and the signature algorithms in their order. GREASE values
 * (RFC 8701) are left out everywhere.
 */

/** What of a ClientHello JA4 reads, in the order the client sent them. */
export interface Ja4Hello {
  /** legacy_version. */
  readonly version: number;
  readonly cipherSuites: readonly number[];
  readonly extensions: readonly number[];
  /** The supported_versions extension's list; absent: none. */
  readonly supportedVersions?: readonly number[];
  /** The signature_algorithms extension's list. */
  readonly signatureAlgorithms: readonly number[];
  /** The first protocol of the ALPN extension. */
  readonly firstAlpn?: Buffer;
}

export const SERVER_NAME_EXTENSION = 0x0000;
export const SIGNATURE_ALGORITHMS_EXTENSION = 0x000d;
export const ALPN_EXTENSION = 0x0010;
export const SUPPORTED_VERSIONS_EXTENSION = 0x002b;

const VERSIONS = new Map([
  [0x0304, '13'],
  [0x0303, '12'],
  [0x0302, '11'],
  [0x0301, '10'],
  [0x0300, 's3'],
  [0x0002, 's2'],
  [0xfeff, 'd1'],
  [0xfefd, 'd2'],
  [0xfefc, 'd3'],
]);

/** A GREASE value (RFC 8701): 0x0a0a, 0x1a1a, … 0xfafa. */
const isGrease = (value: number) => (value & 0x0f0f) === 0x0a0a && value >> 8 === (value & 0xff);

export function ja4Fingerprint(hello: Ja4Hello): string {
  const ciphers = hello.cipherSuites.filter((value) => !isGrease(value));
  const extensions = hello.extensions.filter((value) => !isGrease(value));
  const versions = hello.supportedVersions?.filter((value) => !isGrease(value)) ?? [];
  const version = VERSIONS.get(versions.length > 0 ? Math.max(...versions) : hello.version) ?? '00';
  const sni = extensions.includes(SERVER_NAME_EXTENSION) ? 'd' : 'i';
  const count = (values: readonly number[]) => String(Math.min(values.length, 99)).padStart(2, '0');
  const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);
  const signatures = hex(hello.signatureAlgorithms.filter((value) => !isGrease(value)));
  const named = hex(sorted(extensions.filter((value) => value !== SERVER_NAME_EXTENSION && value !== ALPN_EXTENSION)));
  return `t${version}${sni}${count(ciphers)}${count(extensions)}${alpnMark(hello.firstAlpn)}_${hash12(hex(sorted(ciphers)))}_${hash12(signatures ? `${named}_${signatures}` : named)}`;
}

/** The values as 4-digit lower-case hex, comma-separated. */
const hex = (values: readonly number[]) => values.map((value) => value.toString(16).padStart(4, '0')).join(',');

/** The first 12 hex digits of the text's SHA-256; twelve zeros for no text. */
const hash12 = (text: string) => (text === '' ? '000000000000' : createHash('sha256').update(text).digest('hex').slice(0, 12));

/**
 * The first and last character of the first ALPN value; `00` without one; when either is not an
 * ASCII letter or digit, the first and last digit of the value in hex.
 */
function alpnMark(alpn: Buffer | undefined): string {
  if (!alpn || alpn.length === 0) return '00';
  const first = alpn[0]!;
  const last = alpn[alpn.length - 1]!;
  const alphanumeric = (byte: number) => (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
  if (alphanumeric(first) && alphanumeric(last)) return String.fromCharCode(first, last);
  const digits = alpn.toString('hex');
  return `${digits[0]}${digits[digits.length - 1]}`;
}
