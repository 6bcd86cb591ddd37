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
 *
 * Made once per random source and shared by every engine and checker that draws from it (with
 * Math.random, every instance in the process): making them registers every function in three CEL
 * environments (~20 ms of CPU), which each instance paid at start (a test suite's
 * `startBurrow({ ingress: true })`). They hold no state between evaluations (cel.ts), so sharing
 * them changes nothing.
 */
export function createPhaseLanguages(random: () => number): PhaseLanguages {
  let languages = madeFor.get(random);
  if (!languages) madeFor.set(random, (languages = makePhaseLanguages(random)));
  return languages;
}

/** The languages of each random source, kept while the source is (a seeded instance's goes with it). */
const madeFor = new WeakMap<() => number, PhaseLanguages>();

/** The languages of `random`, made when a phase's language is first read (by a policy with rules), not before. */
export function lazyPhaseLanguages(random: () => number): PhaseLanguages {
  const made = onFirstUse(() => createPhaseLanguages(random));
  const getters = TRAFFIC_POLICY_PHASES.map((phase) => [phase, { get: () => made()[phase], enumerable: true }] as const);
  return Object.defineProperties({}, Object.fromEntries(getters)) as PhaseLanguages;
}

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
