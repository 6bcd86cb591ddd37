import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Vaults and secrets (vendor 23000–23005, 24000–24009); Burrow's own range.
 */
export const VAULTS_ERRORS = {
  VAULT_NAME_INVALID: errorSpec(23000, 400),
  VAULT_NAME_EMPTY: errorSpec(23001, 400),
  VAULT_NOT_EMPTY: errorSpec(23003, 409),
  VAULT_NAME_EXISTS: errorSpec(23004, 409),
  SECRET_NAME_INVALID: errorSpec(24000, 400),
  SECRET_NAME_EMPTY: errorSpec(24001, 400),
  SECRET_NAME_TOO_LONG: errorSpec(24002, 400),
  SECRET_VALUE_EMPTY: errorSpec(24003, 400),
  SECRET_VALUE_TOO_LARGE: errorSpec(24004, 400),
  SECRET_NAME_EXISTS: errorSpec(24005, 409),
  SECRET_VAULT_NOT_FOUND: errorSpec(24006, 404),
  SECRET_VAULT_MISSING: errorSpec(24008, 400),
  SECRET_VAULT_NAME_NOT_FOUND: errorSpec(24009, 404),
  SECRETS_KEY_MISMATCH: errorSpec(9008, 500),
} as const satisfies Record<string, ErrorSpec>;
