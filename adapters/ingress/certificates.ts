import { createSecureContext, type SecureContext } from 'node:tls';
import type { BurrowCore } from '../../lib/burrow.ts';
import { findCoveringDomain, signServerCertificate, VENDOR_ZONES } from '../../lib/index.ts';
import { LruCache } from './lru-cache.ts';

/**
 * The certificate the TLS ingress serves for a name: the account's own when the reserved domain
 * covering the name has one (uploaded through /tls_certificates, or issued by certificate
 * management), else one Burrow's CA signs (`services.ca()`), so a client that trusts
 * `GET /_burrow/ca.pem` verifies it. Contexts are kept, a bounded number of each kind: account
 * certificates by certificate id (a domain given another certificate serves it from its next
 * connection), CA-signed ones by the names they hold.
 *
 * A signing costs over 1 ms of CPU, so a name is signed only for what an account configured: the
 * reserved domain covering it (a wildcard domain's one certificate serves all its names), or the
 * name itself when an endpoint or edge serves it. A name one label under the service zone or one of
 * the vendor's zones (the names agents bind without a reservation) gets that zone's one wildcard
 * certificate (`*.<zone>`), and so does any name nobody serves (the service zone's): as the vendor
 * serves its own certificate where no domain of the account matches (ngrok-docs
 * universal-gateway/tls-certificates, "Certificate Selection"). A client sending thousands of
 * made-up names costs one signing, not thousands. The service zone's certificate is made as the
 * listener starts (`prepare`), so an agent's first request does not wait for it.
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
  /** Makes the service zone's certificate now, in the background (a failure is tried again at the first connection that needs it). */
  prepare(): void;
}

/** Contexts kept of each kind; past it the least recently used one is made again when needed. */
const CERTIFICATES_KEPT = 512;

export function createIngressCertificates(burrow: BurrowCore<any>): IngressCertificates {
  const accounts = new LruCache<ServedCertificate>(CERTIFICATES_KEPT);
  const signed = new LruCache<Promise<ServedCertificate>>(CERTIFICATES_KEPT);
  const signedFor = (dnsNames: string[]) => {
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
  };
  const zoneNames = (zone: string) => [`*.${zone}`, zone];
  return {
    async for(hostname, routed) {
      const covering = await findCoveringDomain(burrow.reader, hostname);
      const own = covering?.certificate;
      if (own) return accounts.get(own.id, () => served(own.certificatePem, own.privateKeyPem));
      if (covering) return signedFor([covering.domain]);
      const serviceZone = burrow.services.simulation.serviceZone;
      const zone = [serviceZone, ...VENDOR_ZONES].find((base) => hostname.endsWith(`.${base}`) && !hostname.slice(0, -base.length - 1).includes('.'));
      if (zone) return signedFor(zoneNames(zone));
      return signedFor(routed ? [hostname] : zoneNames(serviceZone));
    },
    prepare() {
      signedFor(zoneNames(burrow.services.simulation.serviceZone)).catch(() => undefined);
    },
  };
}

function served(certificatePem: string, privateKeyPem: string): ServedCertificate {
  return { context: createSecureContext({ cert: certificatePem, key: privateKeyPem }), certificatePem: leafOf(certificatePem), privateKeyPem };
}

const leafOf = (chainPem: string) => /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\s*/.exec(chainPem)?.[0] ?? chainPem;
