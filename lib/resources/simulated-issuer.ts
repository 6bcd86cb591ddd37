import { createPublicKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';

/**
 * The simulated certificate authority of automatic certificate management: it issues real X.509
 * certificates (DER built here, keys and signatures from node:crypto) for a managed domain, so a
 * reserved domain's `certificate` is a TLS certificate that any X.509 tool reads. The issuer's key
 * lives only in this process (generated on first use); its own certificate is not published, so
 * nothing chains to it: the certificates are for inspection, not for trust.
 */

const generate = promisify(generateKeyPair);
const VALID_DAYS = 90;

/** What an issuance yields: PEM certificate (the leaf only) and its PEM (PKCS#8) private key. */
export interface IssuedCertificate {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

const seq = (...parts: Buffer[]) => tlv(0x30, ...parts);

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = arc >> 7; v > 0; v >>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime `YYMMDDHHMMSSZ` (RFC 5280 §4.1.2.5.1: for years up to 2049). */
const utcTime = (date: Date) => tlv(0x17, Buffer.from(`${date.toISOString().slice(2, 19).replace(/[-T:]/g, '')}Z`));
const name = (attributes: readonly [string, string][]) => seq(...attributes.map(([type, value]) => tlv(0x31, seq(oid(type), tlv(0x0c, Buffer.from(value))))));
const extension = (id: string, critical: boolean, value: Buffer) => seq(oid(id), ...(critical ? [Buffer.from([0x01, 0x01, 0xff])] : []), tlv(0x04, value));

let issuerKey: Promise<KeyObject> | undefined;

/**
 * Issues a certificate for `domain` (a wildcard too) valid from `now` for 90 days, with a new key
 * of `keyType` (rsa: 2048 bits; ecdsa: P-256). Slow (key generation): call it before a transaction.
 */
export async function issueCertificate(options: { domain: string; keyType: 'rsa' | 'ecdsa'; now: Date; serial: Uint8Array; issuerName: string }): Promise<IssuedCertificate> {
  issuerKey ??= generate('ec', { namedCurve: 'P-256' }).then((pair) => pair.privateKey);
  const { privateKey } = options.keyType === 'rsa' ? await generate('rsa', { modulusLength: 2048 }) : await generate('ec', { namedCurve: 'P-256' });
  const serial = Buffer.from(options.serial);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  const signatureAlgorithm = seq(oid('1.2.840.10045.4.3.2'));
  const notAfter = new Date(options.now.getTime() + VALID_DAYS * 24 * 3600 * 1000);
  // digitalSignature, plus keyEncipherment for RSA keys (RFC 5280 §4.2.1.3; bit 0 is the high bit).
  const keyUsage = options.keyType === 'rsa' ? Buffer.from([0x03, 0x02, 0x05, 0xa0]) : Buffer.from([0x03, 0x02, 0x07, 0x80]);
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    signatureAlgorithm,
    name([['2.5.4.10', 'Burrow'], ['2.5.4.3', options.issuerName]]),
    seq(utcTime(options.now), utcTime(notAfter)),
    name([['2.5.4.3', options.domain]]),
    createPublicKey(privateKey).export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(
      extension('2.5.29.15', true, keyUsage),
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))),
      extension('2.5.29.19', true, seq()),
      extension('2.5.29.17', false, seq(tlv(0x82, Buffer.from(options.domain)))),
    )),
  );
  const signature = sign('sha256', tbs, await issuerKey);
  const der = seq(tbs, signatureAlgorithm, tlv(0x03, Buffer.from([0]), signature));
  const body = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return {
    certificatePem: `-----BEGIN CERTIFICATE-----\n${body}-----END CERTIFICATE-----\n`,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}
