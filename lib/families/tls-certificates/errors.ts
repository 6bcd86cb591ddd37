import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * TLS certificates (vendor 1900–1926).
 */
export const TLS_CERTIFICATES_ERRORS = {
  TLS_CERTIFICATE_UNPARSEABLE: errorSpec(1900, 400),
  TLS_PRIVATE_KEY_MISSING: errorSpec(1901, 400),
  TLS_PRIVATE_KEY_ENCRYPTED: errorSpec(1902, 400),
  TLS_PRIVATE_KEY_UNSUPPORTED: errorSpec(1903, 400),
  TLS_PEM_HEADERS: errorSpec(1910, 400),
  TLS_PEM_WRONG_TYPE: errorSpec(1911, 400),
  TLS_CERTIFICATE_MISSING: errorSpec(1922, 400),
  TLS_KEY_MISMATCH: errorSpec(1923, 400),
  TLS_KEY_IS_CERTIFICATE: errorSpec(1924, 400),
  TLS_CERTIFICATE_IS_KEY: errorSpec(1925, 400),
  TLS_CHAIN_ORDER: errorSpec(1926, 400),
  TLS_CERTIFICATE_NOT_FOUND: errorSpec(1965, 404),
} as const satisfies Record<string, ErrorSpec>;
