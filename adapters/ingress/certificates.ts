import { createSecureContext, type SecureContext } from 'node:tls';
import type { BurrowCore } from '../../lib/burrow.ts';
import { findCoveringDomain, signServerCertificate } from '../../lib/index.ts';
import { LruCache } from './lru-cache.ts';

/**
 * The certificate the TLS ingress serves for a name: the account's own when the reserved domain
 * covering the name has one (uploaded through /tls_certificates, or issued by certificate
 * management), else one Burrow's CA signs (`services.ca()`), so a client that trusts
 * `GET /_burrow/ca.pem` verifies it. Contexts are kept, a bounded number of each kind: account
 * certificates by certificate id (a domain given another certificate serves it from its next
 * connection), CA-signed ones by the names they hold.
 *
 * Signing costs some 5 ms of CPU, so a name is signed only for what an account configured: the
 * reserved domain covering it (a wildcard domain's one certificate serves all its names), or the
 * name itself when an endpoint or edge serves it. Any other name gets the service zone's one
 * certificate (`*.<zone>`), as the vendor serves its own wildcard to names it does not know: a
 * client sending thousands of made-up names costs one signing, not thousands.
 */
export interface ServedCertificate {
  readonly context: SecureContext;
  /** The leaf certificate, PEM (for `conn.tls.server.*`). */
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

export interface IngressCertificates {
  /** The certificate for `hostname`; `routed` when an endpoint or edge serves the name. */
  for(hostname: string, routed: boolean): Promise<ServedCertificate>;
}

/** Contexts kept of each kind; past it the least recently used one is made again when needed. */
const CERTIFICATES_KEPT = 512;

export function createIngressCertificates(burrow: BurrowCore<any>): IngressCertificates {
  const accounts = new LruCache<ServedCertificate>(CERTIFICATES_KEPT);
  const signed = new LruCache<Promise<ServedCertificate>>(CERTIFICATES_KEPT);
  return {
    async for(hostname, routed) {
      const covering = await findCoveringDomain(burrow.reader, hostname);
      const own = covering?.certificate;
      if (own) return accounts.get(own.id, () => served(own.certificatePem, own.privateKeyPem));
      const zone = burrow.services.simulation.serviceZone;
      const dnsNames = covering ? [covering.domain] : routed ? [hostname] : [`*.${zone}`, zone];
      const key = dnsNames.join(' ');
      const made = signed.get(key, async () => {
        // Real time, not the instance clock: clients check validity against theirs.
        const certificate = await signServerCertificate(await burrow.services.ca(), { now: new Date(), dnsNames });
        return served(certificate.certificatePem, certificate.privateKeyPem);
      });
      // A failed signing is not kept: the next connection tries again.
      return made.catch((error: unknown) => {
        signed.delete(key);
        throw error;
      });
    },
  };
}

function served(certificatePem: string, privateKeyPem: string): ServedCertificate {
  return { context: createSecureContext({ cert: certificatePem, key: privateKeyPem }), certificatePem: leafOf(certificatePem), privateKeyPem };
}

const leafOf = (chainPem: string) => /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\s*/.exec(chainPem)?.[0] ?? chainPem;
