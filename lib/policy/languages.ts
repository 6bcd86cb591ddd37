import { createPolicyLanguage } from '../conventions/cel.ts';
import { TRAFFIC_POLICY_PHASES } from '../conventions/traffic-policy.ts';
import { policyFunctions } from './functions.ts';
import type { PhaseLanguages } from './program.ts';
import { phaseVariables, POLICY_VARIABLES } from './variables.ts';

/**
 * The policy language of each phase: the same functions, and the variables that phase has. The
 * engine evaluates with these and the write-time check compiles with them, so a policy stored
 * is a policy that compiles. `random` serves `rand.*`.
 */
export function createPhaseLanguages(random: () => number): PhaseLanguages {
  const functions = policyFunctions(random);
  return Object.fromEntries(
    TRAFFIC_POLICY_PHASES.map((phase) => {
      const variables = phaseVariables(phase);
      const names = new Set(variables.map(({ name }) => name));
      const absent = { names: POLICY_VARIABLES.filter(({ name }) => !names.has(name)).map(({ name }) => name), reason: `in ${phase}` };
      return [phase, createPolicyLanguage({ variables, functions, absent })];
    }),
  ) as unknown as PhaseLanguages;
}
