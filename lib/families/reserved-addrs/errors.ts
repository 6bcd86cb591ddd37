import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Reserved domains (vendor 400–461) and reserved addresses (500–517).
 */
export const RESERVED_ADDRS_ERRORS = {
  RESERVED_ADDR_REGION_INVALID: errorSpec(500, 400),
  RESERVED_ADDR_EXHAUSTED: errorSpec(503, 409),
} as const satisfies Record<string, ErrorSpec>;
