import { defineAction, type ActionDefinition } from './types.ts';

/**
 * Actions the vendor documents that Burrow does not perform, each with the reason: running one
 * answers 501 naming it, never a silent pass.
 */
const REASONS: Readonly<Record<string, string>> = {
  'http-request': 'it calls out to other servers, and Burrow makes no outbound requests from traffic policies',
  'owasp-crs-request': 'Burrow ships no OWASP Core Rule Set',
  'owasp-crs-response': 'Burrow ships no OWASP Core Rule Set',
  'request-body-find-replace': 'Burrow does not rewrite bodies',
  'response-body-find-replace': 'Burrow does not rewrite bodies',
};

export const UNSUPPORTED_ACTIONS: readonly ActionDefinition<null>[] = Object.entries(REASONS).map(([type, reason]) =>
  defineAction({
    type,
    compile: () => null,
    run: () => ({ end: { kind: 'error', error: { status: 501, message: `Burrow cannot run the ${type} action: ${reason}`, headers: [] } }, note: 'not supported by Burrow' }),
  }),
);
