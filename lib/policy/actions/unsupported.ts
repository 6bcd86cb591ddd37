import { defineAction, type ActionDefinition } from './types.ts';

/**
 * Actions the vendor documents that Burrow does not perform, each with the reason: running one
 * answers 501 naming it, never a silent pass. `third-party`: what they need is a third party's
 * (a rule set, model providers), not Burrow's to have.
 */
const REASONS: Readonly<Record<string, { readonly reason: string; readonly support: 'third-party' | 'no' }>> = {
  'ai-gateway': { reason: "it forwards to AI model providers, which Burrow neither is nor reaches", support: 'third-party' },
  'owasp-crs-request': { reason: 'Burrow ships no OWASP Core Rule Set', support: 'third-party' },
  'owasp-crs-response': { reason: 'Burrow ships no OWASP Core Rule Set', support: 'third-party' },
};

export const UNSUPPORTED_ACTIONS: readonly ActionDefinition<null>[] = Object.entries(REASONS).map(([type, { reason, support }]) =>
  defineAction({
    type,
    support,
    compile: () => null,
    run: () => ({ end: { kind: 'error', error: { status: 501, message: `Burrow cannot run the ${type} action: ${reason}`, headers: [] } }, note: 'not supported by Burrow' }),
  }),
);
