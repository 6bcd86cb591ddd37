import { ACTION_PHASES } from '../conventions/traffic-policy.ts';
import { DOCUMENT_ACTIONS } from './actions/index.ts';
import { variableSupport } from './variables.ts';

/**
 * How far Burrow supports what the vendor's traffic policy reference documents, read from the
 * registries the checker and the engine use (the action definitions, the variable specs), so that
 * docs/traffic-policy.md's support table (checked by test/policy/support.test.ts) stays true.
 */

/** `yes`; `third-party`: accepted on write, needs a provider, data or rule set Burrow does not have; `no`. */
export type Support = 'yes' | 'third-party' | 'no';

export const SUPPORT_WORDS: Readonly<Record<Support, string>> = { yes: 'yes', 'third-party': 'accepted, needs a third party', no: 'no' };

/** An action type of a document. */
export function actionSupport(type: string): Support {
  const definition = DOCUMENT_ACTIONS[type];
  return definition && ACTION_PHASES[type] ? (definition.support ?? 'yes') : 'no';
}

/**
 * A variable: `req.method`; a field of a list or map variable's items (`res.cookies[k][i].max_age`)
 * as its variable; an action's result (`actions.ngrok.rate_limit.limited`) as the action that sets
 * `rate_limit` results, or, when none does, as the action of that name (`third-party` for those).
 */
export function documentedVariableSupport(name: string): Support {
  const result = /^actions\.ngrok\.(\w+)/.exec(name)?.[1];
  if (result !== undefined) {
    if (Object.values(DOCUMENT_ACTIONS).some((definition) => definition.results === result)) return 'yes';
    const action = actionSupport(result === 'oidc' ? 'openid-connect' : result.replaceAll('_', '-'));
    return action === 'third-party' ? 'third-party' : 'no';
  }
  return variableSupport(name.replace(/\[.*$/, ''));
}
