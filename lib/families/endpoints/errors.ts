import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Endpoints (vendor 248, 18001–18025; 9029 is the vendor's agent-side rule for internal bindings).
 */
export const ENDPOINTS_ERRORS = {
  ENDPOINT_TYPE_INVALID: errorSpec(248, 400),
  ENDPOINT_URL_INVALID: errorSpec(18001, 400),
  ENDPOINT_TRAFFIC_POLICY_INVALID: errorSpec(18002, 400),
  ENDPOINT_PORT_INVALID: errorSpec(18003, 400),
  ENDPOINT_URL_TAKEN: errorSpec(18009, 409),
  ENDPOINT_SCHEME_INVALID: errorSpec(18022, 400),
  ENDPOINT_INTERNAL_HOST: errorSpec(9029, 400),
  ENDPOINT_NOT_CLOUD: errorSpec(9040, 400),
  ENDPOINT_NOT_RESERVED: errorSpec(9041, 400),
} as const satisfies Record<string, ErrorSpec>;
