import { createSecureContext, type SecureContext } from 'node:tls';
import type { BurrowCore } from '../../lib/burrow.ts';
import { findDomainCertificate, signServerCertificate } from '../../lib/index.ts';
import { LruCache } from './lru-cache.ts';

/**
 * The certificate the TLS ingress serves for a name: the account's own when the reserved domain
 * covering the name has one (uploaded through /tls_certificates, or issued by certificate
 * management), else one Burrow's CA signs for the name (`services.ca()`), so a client that trusts
 * `GET /_burrow/ca.pem` verifies it. Contexts are kept, a bounded number of each kind: account
 * certificates by certificate id (a domain given another certificate serves it from its next
 * connection), CA-signed ones by name.
 */
export interface ServedCertificate {
  readonly context: SecureContext;
  /** The leaf certificate, PEM (for `conn.tls.server.*`). */
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

export interface IngressCertificates {
  for(hostname: string): Promise<ServedCertificate>;
}

/** Contexts kept of each kind; past it the least recently used one is made again when needed. */
const CERTIFICATES_KEPT = 512;

export function createIngressCertificates(burrow: BurrowCore<any>): IngressCertificates {
  const accounts = new LruCache<ServedCertificate>(CERTIFICATES_KEPT);
  const signed = new LruCache<Promise<ServedCertificate>>(CERTIFICATES_KEPT);
  return {
    async for(hostname) {
      const own = await findDomainCertificate(burrow.reader, hostname);
      if (own) return accounts.get(own.id, () => served(own.certificatePem, own.privateKeyPem));
      const made = signed.get(hostname, async () => {
        // Real time, not the instance clock: clients check validity against theirs.
        const certificate = await signServerCertificate(await burrow.services.ca(), { now: new Date(), dnsNames: [hostname] });
        return served(certificate.certificatePem, certificate.privateKeyPem);
      });
      // A failed signing is not kept: the next connection tries again.
      return made.catch((error: unknown) => {
        signed.delete(hostname);
        throw error;
      });
    },
  };
}

function served(certificatePem: string, privateKeyPem: string): ServedCertificate {
  return { context: createSecureContext({ cert: certificatePem, key: privateKeyPem }), certificatePem: leafOf(certificatePem), privateKeyPem };
}

const leafOf = (chainPem: string) => /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\s*/.exec(chainPem)?.[0] ?? chainPem;
