import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Event destinations, subscriptions and sources (vendor 235–240, 5100–5139).
 */
export const EVENTS_ERRORS = {
  EVENT_FORMAT_INVALID: errorSpec(235, 400),
  EVENT_TYPE_INVALID: errorSpec(238, 400),
  EVENT_AUTH_INVALID: errorSpec(240, 400),
  EVENT_TARGET_INVALID: errorSpec(5100, 400),
  EVENT_DESTINATION_NOT_FOUND: errorSpec(5103, 404),
  EVENT_TARGET_IMMUTABLE: errorSpec(5108, 400),
  EVENT_DESTINATION_IN_USE: errorSpec(5112, 409),
  EVENT_SUBSCRIPTION_NOT_FOUND: errorSpec(5123, 404),
  EVENT_SOURCE_NOT_FOUND: errorSpec(5125, 404),
  EVENT_SOURCE_DUPLICATE: errorSpec(5127, 409),
} as const satisfies Record<string, ErrorSpec>;
