import { defineFamily } from '../../engine/family.ts';
import { SSH_ERRORS } from './errors.ts';
import { sshCertificateAuthorities } from './certificate-authorities.ts';
import { sshHostCertificates, sshUserCertificates } from './certificates.ts';
import { sshCredentials } from './ssh-credentials.ts';

/** SSH: credentials (public keys agents connect with), certificate authorities and the certificates they sign. */
export const sshFamily = defineFamily({
  name: 'ssh',
  errors: SSH_ERRORS,
  kinds: {
    ssh_credentials: sshCredentials,
    ssh_certificate_authorities: sshCertificateAuthorities,
    ssh_host_certificates: sshHostCertificates,
    ssh_user_certificates: sshUserCertificates,
  },
  examples: {
    ssh_credentials: { body: (seed) => ({ public_key: seed.sshPublicKey() }) },
    ssh_certificate_authorities: { body: () => ({}) },
    ssh_host_certificates: { body: async (seed) => ({ ssh_certificate_authority_id: await seed.id('ssh_certificate_authorities'), public_key: seed.sshPublicKey() }) },
    ssh_user_certificates: { body: async (seed) => ({ ssh_certificate_authority_id: await seed.id('ssh_certificate_authorities'), public_key: seed.sshPublicKey() }) },
  },
});

export { findSshCredentialAccounts, SSH_CREDENTIAL_KIND, validSshPublicKey } from './ssh-credentials.ts';

export { SSH_ERRORS } from './errors.ts';
