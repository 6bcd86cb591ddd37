import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/** The error conditions of this family, with the vendor's catalogue numbers (27001–27009, 27509). */
export const AI_GATEWAY_API_KEYS_ERRORS = {
  AI_GATEWAY_ENDPOINT_NOT_FOUND: errorSpec(27002, 404),
  AI_GATEWAY_DESCRIPTION_TOO_LONG: errorSpec(27004, 400),
  AI_GATEWAY_METADATA_TOO_LONG: errorSpec(27005, 400),
  AI_GATEWAY_FIELD_REQUIRED: errorSpec(27006, 400),
  AI_GATEWAY_KEY_NOT_FOUND: errorSpec(27509, 404),
} as const satisfies Record<string, ErrorSpec>;
