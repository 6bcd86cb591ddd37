import { defineFamily } from '../../engine/family.ts';
import { CREDENTIALS_ERRORS } from './errors.ts';
import { credentials } from './credentials.ts';

/** Tunnel credentials: the authtokens agents connect with, with their ACLs. */
export const credentialsFamily = defineFamily({
  name: 'credentials',
  errors: CREDENTIALS_ERRORS,
  kinds: { credentials },
  examples: { credentials: { body: () => ({ acl: ['bind:*.example.com'] }) } },
});

export { CREDENTIAL_KIND, CredentialUpdate, credentialFields, storedAcl, validAcl } from './credentials.ts';

export { CREDENTIALS_ERRORS } from './errors.ts';
