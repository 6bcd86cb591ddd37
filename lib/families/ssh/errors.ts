import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Credentials, API keys, SSH keys (vendor 600–638); SSH certificate authorities and certificates (vendor 1900–1966).
 */
export const SSH_ERRORS = {
  SSH_KEY_EXISTS: errorSpec(609, 409),
  SSH_KEY_MISSING: errorSpec(611, 400),
  SSH_KEY_INVALID: errorSpec(612, 400),
  SSH_PRIVATE_KEY_TYPE_INVALID: errorSpec(1909, 400),
  SSH_PUBLIC_KEY_INVALID: errorSpec(1934, 400),
  SSH_KEY_SIZE_INVALID: errorSpec(1939, 400),
  SSH_KEY_SIZE_NOT_RSA: errorSpec(1940, 400),
  SSH_CURVE_INVALID: errorSpec(1941, 400),
  SSH_CURVE_NOT_ECDSA: errorSpec(1942, 400),
  SSH_CA_NOT_FOUND: errorSpec(1949, 404),
  SSH_PUBLIC_KEY_MISSING: errorSpec(1952, 400),
  SSH_USER_CERT_DURATION: errorSpec(1962, 400),
  SSH_HOST_CERT_DURATION: errorSpec(1963, 400),
  SSH_CA_IN_USE: errorSpec(1964, 409),
  SSH_CERT_NOT_FOUND: errorSpec(1965, 404),
} as const satisfies Record<string, ErrorSpec>;
