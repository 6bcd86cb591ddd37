import { createPolicyLanguage } from '../conventions/cel.ts';
import { onFirstUse } from '../conventions/on-first-use.ts';
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
  return random === Math.random ? defaultLanguages() : makePhaseLanguages(random);
}

/** The languages of `random`, made when a phase's language is first read (by a policy with rules), not before. */
export function lazyPhaseLanguages(random: () => number): PhaseLanguages {
  const made = onFirstUse(() => createPhaseLanguages(random));
  const getters = TRAFFIC_POLICY_PHASES.map((phase) => [phase, { get: () => made()[phase], enumerable: true }] as const);
  return Object.defineProperties({}, Object.fromEntries(getters)) as PhaseLanguages;
}

/**
 * The languages over Math.random, made once per process on first use and shared by every engine
 * and checker that draws from it: making them registers every function in three CEL environments
 * (~20 ms of CPU), which each instance paid at start (a test suite's `startBurrow({ ingress: true })`).
 * They hold no state between evaluations (cel.ts), so sharing them changes nothing.
 */
const defaultLanguages = onFirstUse(() => makePhaseLanguages(Math.random));

function makePhaseLanguages(random: () => number): PhaseLanguages {
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
