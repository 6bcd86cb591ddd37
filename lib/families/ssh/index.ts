import { defineFamily } from '../../family.ts';
import { sshCertificateAuthorities } from './certificate-authorities.ts';
import { sshHostCertificates, sshUserCertificates } from './certificates.ts';
import { sshCredentials } from './ssh-credentials.ts';

/** SSH: credentials (public keys agents connect with), certificate authorities and the certificates they sign. */
export const sshFamily = defineFamily({
  name: 'ssh',
  kinds: {
    ssh_credentials: sshCredentials,
    ssh_certificate_authorities: sshCertificateAuthorities,
    ssh_host_certificates: sshHostCertificates,
    ssh_user_certificates: sshUserCertificates,
  },
});

export { SSH_CREDENTIAL_KIND, validSshPublicKey } from './ssh-credentials.ts';
