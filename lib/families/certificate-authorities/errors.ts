import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * X.509 certificate authorities (vendor 1900–1926).
 */
export const CERTIFICATE_AUTHORITIES_ERRORS = {
  CA_PEM_UNPARSEABLE: errorSpec(1900, 400),
  CA_PEM_HEADERS: errorSpec(1910, 400),
  CA_PEM_WRONG_TYPE: errorSpec(1911, 400),
  CA_PEM_SEVERAL: errorSpec(1912, 400),
  CA_NOT_A_CA: errorSpec(1913, 400),
  CA_PEM_EMPTY: errorSpec(1919, 400),
  CA_PEM_NOT_PEM: errorSpec(1920, 400),
  CA_PEM_TOO_LARGE: errorSpec(1921, 400),
} as const satisfies Record<string, ErrorSpec>;
