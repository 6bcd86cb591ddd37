import { generateKeyPair, randomBytes, sign, type KeyObject, createPrivateKey, createPublicKey } from 'node:crypto';
import { createRequire } from 'node:module';
import type sshpkModule from 'sshpk';
import { onFirstUse } from '../../conventions/on-first-use.ts';

/**
 * SSH key handling: parsing users' public keys (sshpk), generating CA key pairs (node:crypto) and
 * signing OpenSSH certificates. Certificates are built in the wire format of OpenSSH's
 * PROTOCOL.certkeys by hand, because that format is small and fixed and we need exact control over
 * critical options, extensions and the signature algorithm (RSA CAs sign with rsa-sha2-512, which
 * current OpenSSH requires). This is the only module that touches key material, and the only one
 * that imports sshpk, on the first key it reads (lib/conventions/on-first-use.ts).
 */

const sshpk = onFirstUse(() => createRequire(import.meta.url)('sshpk') as typeof sshpkModule);

export const SSH_KEY_TYPES = ['rsa', 'ecdsa', 'ed25519'] as const;
export type SshKeyType = (typeof SSH_KEY_TYPES)[number];
export type EcCurve = 'P-256' | 'P-384' | 'P-521';

/** A key or certificate input that cannot be used; the message says why. */
export class SshKeyError extends Error {}

export interface ParsedPublicKey {
  readonly keyType: SshKeyType;
  /** `<algorithm> <base64>` without a comment. */
  readonly authorizedKey: string;
  /** `SHA256:<base64 without padding>`, as ssh-keygen -l prints it. */
  readonly fingerprint: string;
  /** RFC 4253 public key blob. */
  readonly blob: Buffer;
}

const SUPPORTED_KEY_TYPES: Record<string, SshKeyType> = { rsa: 'rsa', ecdsa: 'ecdsa', ed25519: 'ed25519' };

/** Parses an authorized-keys line or a PEM public key. Private keys, certificates and DSA are refused. */
export function parseSshPublicKey(text: string): ParsedPublicKey {
  const trimmed = text.trim();
  if (/PRIVATE KEY/.test(trimmed)) throw new SshKeyError('a private key was given; send only the public key');
  if (/-cert-v01@openssh\.com/.test(trimmed)) throw new SshKeyError('an SSH certificate was given; send the plain public key');
  let key: sshpkModule.Key;
  try {
    key = sshpk().parseKey(trimmed, 'auto');
  } catch {
    throw new SshKeyError('is not a valid SSH public key (expected an authorized_keys line such as "ssh-ed25519 AAAA…" or a PEM public key)');
  }
  if (sshpk().PrivateKey.isPrivateKey(key, [1, 0])) throw new SshKeyError('a private key was given; send only the public key');
  const keyType = SUPPORTED_KEY_TYPES[key.type];
  if (keyType === undefined) throw new SshKeyError(`key type '${key.type}' is not supported (use rsa, ecdsa or ed25519)`);
  if (keyType === 'rsa' && key.size < 2048) throw new SshKeyError(`RSA keys must be at least 2048 bits (got ${key.size})`);
  const line = key.toString('ssh').split(' ');
  return {
    keyType,
    authorizedKey: `${line[0]} ${line[1]}`,
    fingerprint: key.fingerprint('sha256').toString(),
    blob: key.toBuffer('rfc4253'),
  };
}

const CURVE_ALIASES: Record<string, EcCurve> = {
  'p-256': 'P-256', p256: 'P-256', secp256r1: 'P-256', prime256v1: 'P-256', nistp256: 'P-256',
  'p-384': 'P-384', p384: 'P-384', secp384r1: 'P-384', nistp384: 'P-384',
  'p-521': 'P-521', p521: 'P-521', secp521r1: 'P-521', nistp521: 'P-521',
};

/** Accepted spellings of the supported curves, for error messages. */
export const EC_CURVE_NAMES = ['P-256', 'P-384', 'P-521', 'secp256r1', 'secp384r1', 'secp521r1', 'nistp256', 'nistp384', 'nistp521', 'prime256v1'] as const;

/** Maps any accepted curve spelling to its canonical name, or undefined. */
export function canonicalCurve(name: string): EcCurve | undefined {
  return CURVE_ALIASES[name.trim().toLowerCase()];
}

export interface CaKeyPair {
  /** PKCS#8 PEM; stored, never returned by the API. */
  readonly privateKeyPem: string;
  /** authorized-keys line of the public key. */
  readonly publicKey: string;
}

/** Generates a CA key pair. Defaults: RSA 4096, P-256. */
export async function generateCaKeyPair(options: { keyType: SshKeyType; keySize?: number; curve?: EcCurve }): Promise<CaKeyPair> {
  const privateKey = await new Promise<KeyObject>((resolve, reject) => {
    const done = (error: Error | null, _pub: KeyObject, priv: KeyObject) => (error ? reject(error) : resolve(priv));
    if (options.keyType === 'rsa') generateKeyPair('rsa', { modulusLength: options.keySize ?? 4096 }, done);
    else if (options.keyType === 'ecdsa') generateKeyPair('ec', { namedCurve: options.curve ?? 'P-256' }, done);
    else generateKeyPair('ed25519', {}, done);
  });
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return { privateKeyPem, publicKey: publicKeyLine(privateKey) };
}

/** Curve order n of each NIST curve, and its OID's DER body. */
const CURVES: Record<EcCurve, { order: bigint; oid: string; bytes: number }> = {
  'P-256': { order: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n, oid: '2a8648ce3d030107', bytes: 32 },
  'P-384': { order: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n, oid: '2b81040022', bytes: 48 },
  'P-521': {
    order: 0x01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409n,
    oid: '2b81040023',
    bytes: 66,
  },
};

function der(tag: number, body: Buffer): Buffer {
  const n = body.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

/**
 * Deterministic mode: a CA key pair from seeded bytes. Ed25519's private key is 32 bytes of seed;
 * an ECDSA private scalar is the bytes reduced into [1, n-1] (SEC1 DER without the public point,
 * which OpenSSL computes). RSA has no seedable generator in node:crypto, so it is not offered.
 */
export function deriveCaKeyPair(options: { keyType: 'ed25519' | 'ecdsa'; curve?: EcCurve }, bytes: (size: number) => Uint8Array): CaKeyPair {
  let privateKey: KeyObject;
  if (options.keyType === 'ed25519') {
    const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(bytes(32))]);
    privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  } else {
    const curve = CURVES[options.curve ?? 'P-256'];
    const wide = BigInt(`0x${Buffer.from(bytes(curve.bytes + 16)).toString('hex')}`);
    const scalar = (wide % (curve.order - 1n)) + 1n;
    const d = Buffer.from(scalar.toString(16).padStart(curve.bytes * 2, '0'), 'hex');
    const sec1 = der(0x30, Buffer.concat([Buffer.from([2, 1, 1]), der(0x04, d), der(0xa0, der(0x06, Buffer.from(curve.oid, 'hex')))]));
    privateKey = createPrivateKey({ key: sec1, format: 'der', type: 'sec1' });
  }
  return { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey: publicKeyLine(privateKey) };
}

/** The authorized-keys line for a private key (PEM or KeyObject). */
export function publicKeyLine(privateKey: KeyObject | string): string {
  const object = typeof privateKey === 'string' ? createPrivateKey(privateKey) : privateKey;
  const spki = createPublicKey(object).export({ type: 'spki', format: 'pem' }).toString();
  const line = sshpk().parseKey(spki, 'pem').toString('ssh').split(' ');
  return `${line[0]} ${line[1]}`;
}

export interface CertificateRequest {
  readonly caPrivateKeyPem: string;
  /** The subject's public key (authorized-keys line or PEM). */
  readonly publicKey: string;
  readonly certType: 'user' | 'host';
  readonly keyId: string;
  readonly serial: bigint;
  /** The certificate's 32-byte nonce (random unless in deterministic mode). */
  readonly nonce?: Uint8Array;
  /** Empty = valid for any principal. */
  readonly principals: readonly string[];
  readonly validAfter: Date;
  readonly validBefore: Date;
  /** name → value, e.g. force-command, source-address. */
  readonly criticalOptions?: Readonly<Record<string, string>>;
  /** name → value ('' for flag extensions such as permit-pty). */
  readonly extensions?: Readonly<Record<string, string>>;
}

export interface SignedCertificate {
  /** `<algorithm>-cert-v01@openssh.com <base64>` — the content of an id_*-cert.pub file. */
  readonly certificate: string;
  readonly keyType: SshKeyType;
}

/** Signs an OpenSSH certificate for `request.publicKey` with the CA's private key. */
export function signSshCertificate(request: CertificateRequest): SignedCertificate {
  const subject = parseSshPublicKey(request.publicKey);
  const subjectReader = new WireReader(subject.blob);
  const algorithm = subjectReader.string().toString();
  const keyFields = subjectReader.rest();
  const certAlgorithm = `${algorithm}-cert-v01@openssh.com`;

  const caKey = createPrivateKey(request.caPrivateKeyPem);
  const caBlob = parseSshPublicKey(publicKeyLine(caKey)).blob;

  const body = Buffer.concat([
    wireString(certAlgorithm),
    wireString(request.nonce ? Buffer.from(request.nonce) : randomBytes(32)),
    keyFields,
    uint64(request.serial),
    uint32(request.certType === 'user' ? 1 : 2),
    wireString(request.keyId),
    wireString(Buffer.concat(request.principals.map((p) => wireString(p)))),
    uint64(BigInt(Math.floor(request.validAfter.getTime() / 1000))),
    uint64(BigInt(Math.floor(request.validBefore.getTime() / 1000))),
    wireString(optionList(request.criticalOptions ?? {})),
    wireString(optionList(request.extensions ?? {})),
    wireString(''),
    wireString(caBlob),
  ]);
  const certificate = Buffer.concat([body, wireString(signatureBlob(caKey, body))]);
  return { certificate: `${certAlgorithm} ${certificate.toString('base64')}`, keyType: subject.keyType };
}

/** Options and extensions are sorted by name; a non-empty value is itself wrapped in a string. */
function optionList(options: Readonly<Record<string, string>>): Buffer {
  const names = Object.keys(options).sort();
  return Buffer.concat(
    names.flatMap((name) => {
      const value = options[name] ?? '';
      const data = value === '' ? Buffer.alloc(0) : wireString(value);
      return [wireString(name), wireString(data)];
    }),
  );
}

const ECDSA_HASH: Record<string, { hash: string; name: string }> = {
  prime256v1: { hash: 'sha256', name: 'ecdsa-sha2-nistp256' },
  secp384r1: { hash: 'sha384', name: 'ecdsa-sha2-nistp384' },
  secp521r1: { hash: 'sha512', name: 'ecdsa-sha2-nistp521' },
};

function signatureBlob(caKey: KeyObject, data: Buffer): Buffer {
  switch (caKey.asymmetricKeyType) {
    case 'rsa':
      return Buffer.concat([wireString('rsa-sha2-512'), wireString(sign('sha512', data, caKey))]);
    case 'ed25519':
      return Buffer.concat([wireString('ssh-ed25519'), wireString(sign(null, data, caKey))]);
    case 'ec': {
      const curve = ECDSA_HASH[caKey.asymmetricKeyDetails?.namedCurve ?? ''];
      if (!curve) throw new SshKeyError(`unsupported CA curve ${caKey.asymmetricKeyDetails?.namedCurve}`);
      const raw = sign(curve.hash, data, { key: caKey, dsaEncoding: 'ieee-p1363' });
      const half = raw.length / 2;
      const rs = Buffer.concat([mpint(raw.subarray(0, half)), mpint(raw.subarray(half))]);
      return Buffer.concat([wireString(curve.name), wireString(rs)]);
    }
    default:
      throw new SshKeyError(`unsupported CA key type ${caKey.asymmetricKeyType}`);
  }
}

function wireString(value: string | Buffer): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([uint32(bytes.length), bytes]);
}

function uint32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

function uint64(value: bigint): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(value);
  return out;
}

/** An unsigned big-endian integer as an SSH mpint: no leading zeros, a 0x00 pad when the top bit is set. */
function mpint(unsigned: Buffer): Buffer {
  let start = 0;
  while (start < unsigned.length && unsigned[start] === 0) start++;
  let bytes = unsigned.subarray(start);
  if (bytes.length > 0 && (bytes[0]! & 0x80) !== 0) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return wireString(bytes);
}

class WireReader {
  private offset = 0;
  constructor(private readonly buffer: Buffer) {}
  string(): Buffer {
    const length = this.buffer.readUInt32BE(this.offset);
    const value = this.buffer.subarray(this.offset + 4, this.offset + 4 + length);
    this.offset += 4 + length;
    return value;
  }
  rest(): Buffer {
    return this.buffer.subarray(this.offset);
  }
}
