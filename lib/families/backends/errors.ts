import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Backends (vendor 6500–6531); Burrow's own range.
 */
export const BACKENDS_ERRORS = {
  BACKEND_REFERENCE_NOT_FOUND: errorSpec(6501, 404),
  BACKEND_IN_USE: errorSpec(6502, 409),
  BACKEND_ADDRESS_INVALID: errorSpec(6505, 400),
  BACKEND_LABELS_MISSING: errorSpec(6508, 400),
  BACKEND_LABEL_KEY_INVALID: errorSpec(6509, 400),
  BACKEND_LABEL_VALUE_INVALID: errorSpec(6510, 400),
  BACKEND_LABEL_EQUALS: errorSpec(6531, 400),
  BACKEND_WEIGHT_INVALID: errorSpec(6512, 400),
  BACKEND_NOT_FOUND: errorSpec(6514, 404),
  BACKEND_STATUS_CODE_INVALID: errorSpec(6517, 400),
  BACKEND_ID_INVALID: errorSpec(6526, 400),
  BACKEND_CYCLE: errorSpec(9030, 400),
} as const satisfies Record<string, ErrorSpec>;
