import { defineFamily } from '../../engine/family.ts';
import { TLS_CERTIFICATES_ERRORS } from './errors.ts';
import { tlsCertificates } from './tls-certificates.ts';

/** TLS certificates uploaded with their private keys. */
export const tlsCertificatesFamily = defineFamily({
  name: 'tls-certificates',
  errors: TLS_CERTIFICATES_ERRORS,
  kinds: { tls_certificates: tlsCertificates },
  examples: { tls_certificates: { body: (seed) => ({ certificate_pem: seed.certificates().cert, private_key_pem: seed.certificates().key }) } },
});

export { storeIssuedCertificate, TLS_CERTIFICATE_KIND, tlsCertificates, type TlsCertificateRecord } from './tls-certificates.ts';

export { TLS_CERTIFICATES_ERRORS } from './errors.ts';
