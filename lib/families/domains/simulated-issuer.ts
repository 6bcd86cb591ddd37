import { generateKeyPair, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { basicConstraints, buildCertificate, certificatePem, distinguishedName, extendedKeyUsage, keyUsage, NAME_ATTRIBUTES, subjectAltName } from '../../conventions/x509.ts';

/**
 * The simulated certificate authority of automatic certificate management: it issues real X.509
 * certificates (built by ../conventions/x509.ts) for a managed domain, so a reserved domain's
 * `certificate` is a TLS certificate that any X.509 tool reads. The issuer's key lives only in this
 * process (generated on first use); its own certificate is not published, so nothing chains to it:
 * the certificates are for inspection, not for trust.
 */

const generate = promisify(generateKeyPair);
const VALID_DAYS = 90;

/** What an issuance yields: PEM certificate (the leaf only) and its PEM (PKCS#8) private key. */
export interface IssuedCertificate {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

let issuerKey: Promise<KeyObject> | undefined;

/**
 * Issues a certificate for `domain` (a wildcard too) valid from `now` for 90 days, with a new key
 * of `keyType` (rsa: 2048 bits; ecdsa: P-256). Slow (key generation): call it before a transaction.
 */
export async function issueCertificate(options: { domain: string; keyType: 'rsa' | 'ecdsa'; now: Date; serial: Uint8Array; issuerName: string }): Promise<IssuedCertificate> {
  issuerKey ??= generate('ec', { namedCurve: 'P-256' }).then((pair) => pair.privateKey);
  const { privateKey } = options.keyType === 'rsa' ? await generate('rsa', { modulusLength: 2048 }) : await generate('ec', { namedCurve: 'P-256' });
  const der = buildCertificate({
    serial: options.serial,
    issuer: distinguishedName([[NAME_ATTRIBUTES.organization, 'Burrow'], [NAME_ATTRIBUTES.commonName, options.issuerName]]),
    subject: distinguishedName([[NAME_ATTRIBUTES.commonName, options.domain]]),
    notBefore: options.now,
    notAfter: new Date(options.now.getTime() + VALID_DAYS * 24 * 3600 * 1000),
    publicKey: privateKey,
    signingKey: await issuerKey,
    extensions: [
      // keyEncipherment only for RSA keys (RFC 5280 §4.2.1.3).
      options.keyType === 'rsa' ? keyUsage('digitalSignature', 'keyEncipherment') : keyUsage('digitalSignature'),
      extendedKeyUsage('serverAuth'),
      basicConstraints(false),
      subjectAltName({ dns: [options.domain] }),
    ],
  });
  return { certificatePem: certificatePem(der), privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
