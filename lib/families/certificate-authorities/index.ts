import { defineFamily } from '../../engine/family.ts';
import { CERTIFICATE_AUTHORITIES_ERRORS } from './errors.ts';
import { certificateAuthorities } from './certificate-authorities.ts';

/** X.509 certificate authorities (for mutual TLS on edges). */
export const certificateAuthoritiesFamily = defineFamily({
  name: 'certificate-authorities',
  errors: CERTIFICATE_AUTHORITIES_ERRORS,
  kinds: { certificate_authorities: certificateAuthorities },
  examples: { certificate_authorities: { body: (seed) => ({ ca_pem: seed.certificates().ca }) } },
});

export {
  CERTIFICATE_AUTHORITY_KIND,
  CERTIFICATE_SUMMARY_STORED,
  certificateAuthorities,
  certificateAuthorityPems,
  certificateSummary,
  distinguishedName,
  extendedKeyUsages,
  keyUsages,
  pemBlocks,
  type CertificateSummary,
} from './certificate-authorities.ts';

export { CERTIFICATE_AUTHORITIES_ERRORS } from './errors.ts';
