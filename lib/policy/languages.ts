import { createPolicyLanguage, type PolicyVariable } from '../conventions/cel.ts';
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
  const getters = [...TRAFFIC_POLICY_PHASES, 'retryConditions' as const].map((key) => [key, { get: () => made()[key], enumerable: true }] as const);
  return Object.defineProperties({}, Object.fromEntries(getters)) as PhaseLanguages;
}

/**
 * What an http-request `retry_condition` reads besides its phase's variables, as the vendor's
 * reference lists them (traffic-policy/actions/http-request.mdx): `attempts` (int, so far) and
 * `last_attempt` (`req`, `res`, `error`).
 */
export const RETRY_CONDITION_VARIABLES: readonly PolicyVariable[] = [
  { name: 'attempts', type: 'int' },
  { name: 'last_attempt', type: 'map<string, dyn>' },
];

function makePhaseLanguages(random: () => number): PhaseLanguages {
  const functions = policyFunctions(random);
  const languageOf = (phase: (typeof TRAFFIC_POLICY_PHASES)[number], extra: readonly PolicyVariable[] = []) => {
    const variables = [...phaseVariables(phase), ...extra];
    const names = new Set(variables.map(({ name }) => name));
    const absent = { names: POLICY_VARIABLES.filter(({ name }) => !names.has(name)).map(({ name }) => name), reason: `in ${phase}` };
    return createPolicyLanguage({ variables, functions, absent });
  };
  const phases = Object.fromEntries(TRAFFIC_POLICY_PHASES.map((phase) => [phase, languageOf(phase)]));
  // Made when a policy first has a retry_condition.
  const retry = onFirstUse(() => Object.fromEntries(TRAFFIC_POLICY_PHASES.map((phase) => [phase, languageOf(phase, RETRY_CONDITION_VARIABLES)])));
  return Object.defineProperty(phases, 'retryConditions', { get: retry, enumerable: true }) as unknown as PhaseLanguages;
}
