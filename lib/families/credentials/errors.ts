import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Credentials, API keys, SSH keys (vendor 600–638).
 */
export const CREDENTIALS_ERRORS = {
  INVALID_ACL_RULE: errorSpec(600, 400),
} as const satisfies Record<string, ErrorSpec>;
