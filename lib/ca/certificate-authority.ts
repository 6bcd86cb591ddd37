import { createPrivateKey, generateKeyPair, generateKeyPairSync, randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import {
  authorityKeyIdentifier,
  basicConstraints,
  buildCertificate,
  certificateDer,
  certificateKeyIdentifier,
  certificatePem,
  certificateSubject,
  distinguishedName,
  extendedKeyUsage,
  keyUsage,
  NAME_ATTRIBUTES,
  subjectAltName,
  subjectKeyIdentifier,
} from '../conventions/x509.ts';

/**
 * Burrow's own certificate authority: a key and a self-signed CA certificate, and the server
 * certificates it signs (the agent gateway's, later the ingress's). Pure code: the caller keeps
 * the CA (in the store) and serves the certificates. The vendor's agent trusts it when given its
 * certificate (`caCert()` / `session_ca_cert` in the SDK, `root_cas` in the CLI).
 *
 * Certificates start an hour before `now`, so that a peer whose clock is a little behind still
 * accepts a certificate made a moment ago. `now` must be real time for certificates that real TLS
 * clients check, even when the instance runs on an injected clock.
 */

const generate = promisify(generateKeyPair);
const DAY_MS = 24 * 3600 * 1000;
const BACKDATE_MS = 3600 * 1000;
/** Validity of a generated CA certificate. */
export const CA_VALID_DAYS = 3650;
/** Validity of a server certificate (the longest the CA/Browser Forum allows for public ones). */
export const SERVER_CERTIFICATE_VALID_DAYS = 397;

/** A certificate authority: its PEM certificate and PEM (PKCS#8) private key. */
export interface CertificateAuthority {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

/** A certificate signed by a CA, with its own new private key (PEM, PKCS#8). */
export interface SignedCertificate {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

/** Generates a CA: a P-256 key and a self-signed certificate valid for CA_VALID_DAYS from `now`. */
export async function generateCertificateAuthority(options: { now: Date; commonName?: string }): Promise<CertificateAuthority> {
  const { privateKey, publicKey } = await generate('ec', { namedCurve: 'P-256' });
  const name = distinguishedName([[NAME_ATTRIBUTES.organization, 'Burrow'], [NAME_ATTRIBUTES.commonName, options.commonName ?? 'Burrow Root CA']]);
  const der = buildCertificate({
    serial: randomBytes(16),
    issuer: name,
    subject: name,
    notBefore: new Date(options.now.getTime() - BACKDATE_MS),
    notAfter: new Date(options.now.getTime() + CA_VALID_DAYS * DAY_MS),
    publicKey,
    signingKey: privateKey,
    extensions: [basicConstraints(true), keyUsage('digitalSignature', 'keyCertSign', 'cRLSign'), subjectKeyIdentifier(publicKey)],
  });
  return { certificatePem: certificatePem(der), privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

/**
 * Checks that `ca` is usable: a parsable CA certificate, whose public key matches its private key.
 * Throws a TypeError that says what is wrong (for a CA brought with `--ca-cert/--ca-key`).
 */
export function checkCertificateAuthority(ca: CertificateAuthority): void {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(ca.certificatePem);
  } catch (error) {
    throw new TypeError(`the CA certificate is not a PEM X.509 certificate (${(error as Error).message})`);
  }
  if (!certificate.ca) throw new TypeError(`the CA certificate (${certificate.subject.replace(/\n/g, ', ')}) is not a CA certificate (basicConstraints CA:TRUE)`);
  let key;
  try {
    key = createPrivateKey(ca.privateKeyPem);
  } catch (error) {
    throw new TypeError(`the CA private key is not a PEM private key (${(error as Error).message})`);
  }
  if (!certificate.checkPrivateKey(key)) throw new TypeError('the CA private key does not belong to the CA certificate');
}

/** What signing with a CA reads of it: its key, its subject and its key identifier. */
interface Issuer {
  readonly caKey: KeyObject;
  readonly issuer: ReturnType<typeof certificateSubject>;
  readonly caKeyIdentifier: ReturnType<typeof certificateKeyIdentifier>;
}

/** Issuers read once per CA object (an instance keeps its one), not at every signing: parsing the key was a fifth of one. */
const issuers = new WeakMap<CertificateAuthority, Issuer>();

function issuerOf(ca: CertificateAuthority): Issuer {
  let issuer = issuers.get(ca);
  if (!issuer) {
    const caDer = certificateDer(ca.certificatePem);
    issuer = { caKey: createPrivateKey(ca.privateKeyPem), issuer: certificateSubject(caDer), caKeyIdentifier: certificateKeyIdentifier(caDer) };
    issuers.set(ca, issuer);
  }
  return issuer;
}

/**
 * Signs a server certificate for `dnsNames` and `ipAddresses` (text, IPv4 or IPv6) with a new
 * P-256 key, valid for SERVER_CERTIFICATE_VALID_DAYS from `now`. The first DNS name (else the
 * first address) is the subject's common name. With `clientAuth` it also serves as a client
 * certificate (both ends of a link between servers, adapters/peer).
 */
export async function signServerCertificate(
  ca: CertificateAuthority,
  options: { now: Date; dnsNames: readonly string[]; ipAddresses?: readonly string[]; clientAuth?: boolean },
): Promise<SignedCertificate> {
  const ipAddresses = options.ipAddresses ?? [];
  const commonName = options.dnsNames[0] ?? ipAddresses[0];
  if (commonName === undefined) throw new TypeError('a server certificate needs at least one DNS name or IP address');
  const { caKey, issuer, caKeyIdentifier } = issuerOf(ca);
  // A P-256 key takes ~0.1 ms of CPU: made here rather than on the thread pool, whose round trip
  // cost more than that (and milliseconds on a loaded machine) in an HTTPS endpoint's first answer.
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const der = buildCertificate({
    serial: randomBytes(16),
    issuer,
    subject: distinguishedName([[NAME_ATTRIBUTES.commonName, commonName]]),
    notBefore: new Date(options.now.getTime() - BACKDATE_MS),
    notAfter: new Date(options.now.getTime() + SERVER_CERTIFICATE_VALID_DAYS * DAY_MS),
    publicKey,
    signingKey: caKey,
    extensions: [
      basicConstraints(false),
      keyUsage('digitalSignature'),
      options.clientAuth ? extendedKeyUsage('serverAuth', 'clientAuth') : extendedKeyUsage('serverAuth'),
      subjectAltName({ dns: options.dnsNames, ips: ipAddresses }),
      subjectKeyIdentifier(publicKey),
      ...(caKeyIdentifier ? [authorityKeyIdentifier(caKeyIdentifier)] : []),
    ],
  });
  return { certificatePem: certificatePem(der), privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

/**
 * Signs a client certificate (extKeyUsage clientAuth) for a key someone else holds, such as the
 * key of a certificate signing request (conventions/x509.ts `readCertificationRequest`), named
 * `commonName`, valid for `validDays` from `now`. `serial` gives the serial number's bytes (an
 * instance's seeded bytes in deterministic mode); random by default.
 */
export function signClientCertificate(
  ca: CertificateAuthority,
  options: { now: Date; publicKey: KeyObject; commonName: string; validDays: number; serial?: Uint8Array },
): { certificatePem: string; notBefore: Date; notAfter: Date } {
  const { caKey, issuer, caKeyIdentifier } = issuerOf(ca);
  const notBefore = new Date(options.now.getTime() - BACKDATE_MS);
  const notAfter = new Date(options.now.getTime() + options.validDays * DAY_MS);
  const der = buildCertificate({
    serial: options.serial ?? randomBytes(16),
    issuer,
    subject: distinguishedName([[NAME_ATTRIBUTES.commonName, options.commonName]]),
    notBefore,
    notAfter,
    publicKey: options.publicKey,
    signingKey: caKey,
    extensions: [
      basicConstraints(false),
      keyUsage('digitalSignature'),
      extendedKeyUsage('clientAuth'),
      subjectKeyIdentifier(options.publicKey),
      ...(caKeyIdentifier ? [authorityKeyIdentifier(caKeyIdentifier)] : []),
    ],
  });
  return { certificatePem: certificatePem(der), notBefore, notAfter };
}
