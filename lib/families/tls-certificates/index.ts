import { defineFamily } from '../../family.ts';
import { tlsCertificates } from './tls-certificates.ts';

/** TLS certificates uploaded with their private keys. */
export const tlsCertificatesFamily = defineFamily({
  name: 'tls-certificates',
  kinds: { tls_certificates: tlsCertificates },
});

export { storeIssuedCertificate, tlsCertificates } from './tls-certificates.ts';
