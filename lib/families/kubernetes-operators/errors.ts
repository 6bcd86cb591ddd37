import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/** The error conditions of this family, with the vendor's catalogue numbers (19001–19003). */
export const KUBERNETES_OPERATORS_ERRORS = {
  K8S_CSR_INVALID: errorSpec(19001, 400),
  K8S_OPERATOR_INVALID: errorSpec(19002, 400),
  K8S_SELECTORS_INVALID: errorSpec(19003, 400),
} as const satisfies Record<string, ErrorSpec>;
