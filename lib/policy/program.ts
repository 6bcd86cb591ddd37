import { PolicyExpressionProblem, type PolicyExpression, type PolicyLanguage } from '../conventions/cel.ts';
import { ACTION_PHASES, TRAFFIC_POLICY_PHASES, type PolicyErrorName, type TrafficPolicyRule } from '../conventions/traffic-policy.ts';
import { DOCUMENT_ACTIONS, MODULE_ACTIONS } from './actions/index.ts';
import { ActionConfigProblem, templateOf, type ActionDefinition } from './actions/types.ts';
import type { Phase } from '../traffic/decisions.ts';
import { secretReferences } from './functions.ts';
import { secretVariable } from './scope.ts';

/**
 * A policy compiled for evaluation: the rules of each phase, from every source in order (edge
 * modules and agent options translated into rules first, then the traffic policy document), with
 * expressions and action configurations compiled once. Compiling never fails: a part that cannot
 * run (an expression that does not type-check, a configuration an action cannot use) is kept with
 * its problem, listed in `problems`, and answers a 5xx naming it when traffic reaches it.
 */

/** A rule as a document states it (modules and agent options are translated into the same form). */
export type PolicyRule = TrafficPolicyRule;

/** Rules by phase. */
export type PolicyRules = { readonly [phase in Phase]?: readonly PolicyRule[] | null };

/** One source of rules: `traffic_policy`, `module:ip_restriction`, `agent:basic_auth` …; `internal` sources may use module-only actions. */
export interface RuleSource {
  readonly source: string;
  readonly rules: PolicyRules;
  readonly internal?: boolean;
  /** Why the source could not be read (a stored document that no longer parses): every phase then answers 500 naming it. */
  readonly problem?: string;
}

export type CompiledExpression = { readonly source: string; readonly expression: PolicyExpression } | { readonly source: string; readonly problem: string };

export type CompiledAction =
  | { readonly type: string; readonly key: string; readonly definition: ActionDefinition<unknown>; readonly config: unknown }
  | { readonly type: string; readonly key: string; readonly problem: string };

export interface CompiledRule {
  readonly source: string;
  readonly name?: string;
  readonly expressions: readonly CompiledExpression[];
  readonly actions: readonly CompiledAction[];
}

/**
 * A part of a policy that cannot run: its source, where it is in its phase (`on_http_request[2].expressions[0]`,
 * `on_http_request[0].actions[1]`), the reason (an action's starts with its field, `config.issuer: is required`)
 * and the vendor's number for it.
 */
export interface CompileIssue {
  readonly source: string;
  readonly at: string;
  readonly message: string;
  readonly code: PolicyErrorName;
}

export interface CompiledPolicy {
  readonly phases: { readonly [phase in Phase]: readonly CompiledRule[] };
  /** The vault secrets its expressions and interpolations name (`secrets.get('vault', 'name')`), read before each phase. */
  readonly secrets: readonly (readonly [vault: string, name: string])[];
  /** Whether some `secrets.get` call's arguments are computed: the account's secrets are then read once per request. */
  readonly computedSecrets: boolean;
  /**
   * Whether its expressions or interpolations name `req.trailers` / `res.trailers` (as text, so a
   * mention inside a string counts too): trailers follow the body, so the engine reads the request
   * body to its end before the request phase, and the ingress must read the response body to its
   * end before the response phase (no streaming, no splicing fast path) for such a policy.
   */
  readonly readsTrailers: { readonly request: boolean; readonly response: boolean };
  /** What will fail when reached, as `source phase[i].…: reason`. */
  readonly problems: readonly string[];
  /** The same parts of rules, for the write-time check (a source that could not be read is in `problems` only). */
  readonly issues: readonly CompileIssue[];
}

/**
 * The language of each phase: its expressions may read only what that phase has (no `res.*` before
 * the response); and of each phase's http-request `retry_condition`s (also `attempts`, `last_attempt`).
 */
export type PhaseLanguages = { readonly [phase in Phase]: PolicyLanguage } & { readonly retryConditions: { readonly [phase in Phase]: PolicyLanguage } };

/** Every string in a configuration (its interpolations may call secrets.get). */
const stringsOf = (value: unknown): string[] =>
  typeof value === 'string' ? [value] : value !== null && typeof value === 'object' ? Object.values(value).flatMap(stringsOf) : [];

/** `text` compiled in `language`; a problem names `field`. */
function compiledIn(language: PolicyLanguage, text: string, field: string): PolicyExpression {
  try {
    return language.compile(text);
  } catch (error) {
    throw new ActionConfigProblem(`${field}: ${(error as Error).message}`);
  }
}

export function compilePolicy(languages: PhaseLanguages, sources: readonly RuleSource[]): CompiledPolicy {
  const problems: string[] = [];
  const issues: CompileIssue[] = [];
  const phases = Object.fromEntries(TRAFFIC_POLICY_PHASES.map((phase) => [phase, [] as CompiledRule[]])) as Record<Phase, CompiledRule[]>;
  for (const { source, rules, internal, problem: unreadable } of sources) {
    if (unreadable) {
      problems.push(`${source}: ${unreadable}`);
      for (const phase of TRAFFIC_POLICY_PHASES) phases[phase].push({ source, expressions: [], actions: [{ type: 'traffic-policy', key: `${source} ${phase}`, problem: unreadable }] });
      continue;
    }
    for (const phase of TRAFFIC_POLICY_PHASES) {
      for (const [r, rule] of (rules[phase] ?? []).entries()) {
        // Read for a rule only: an engine's languages are made when first read (languages.ts).
        const language = languages[phase];
        const where = `${source} ${phase}[${r}]`;
        const expressions = (rule.expressions ?? []).map((text, e): CompiledExpression => {
          try {
            const expression = language.compile(text);
            if (expression.type !== 'bool' && expression.type !== 'dyn') throw new PolicyExpressionProblem(`must be a condition (a bool), not ${/^[aeiou]/.test(expression.type) ? 'an' : 'a'} ${expression.type}`);
            return { source: text, expression };
          } catch (error) {
            const problem = `expressions[${e}]: ${(error as Error).message}`;
            problems.push(`${where}.${problem}`);
            issues.push({ source, at: `${phase}[${r}].expressions[${e}]`, message: (error as Error).message, code: 'POLICY_EXPRESSION_INVALID' });
            return { source: text, problem };
          }
        });
        const actions = rule.actions.map((action, a): CompiledAction => {
          const key = `${where}.actions[${a}]`;
          const problem = (message: string, code: PolicyErrorName = 'POLICY_ACTION_CONFIG_INVALID'): CompiledAction => {
            problems.push(`${key} (${action.type}): ${message}`);
            issues.push({ source, at: `${phase}[${r}].actions[${a}]`, message, code });
            return { type: action.type, key, problem: message };
          };
          const definition = DOCUMENT_ACTIONS[action.type] ?? (internal ? MODULE_ACTIONS[action.type] : undefined);
          if (!definition) return problem('unknown action type', 'POLICY_ACTION_UNKNOWN');
          const runsIn = ACTION_PHASES[action.type];
          if (runsIn && !runsIn.includes(phase)) return problem(`does not run in ${phase} (it runs in ${runsIn.join(', ')})`, 'POLICY_ACTION_PHASE');
          try {
            const config = definition.compile(action.config, {
              language,
              phase,
              key,
              template: (text, field) => templateOf(language, text, field),
              expression: (text, field) => compiledIn(language, text, field),
              retryCondition: (text, field) => compiledIn(languages.retryConditions[phase], text, field),
            });
            return { type: action.type, key, definition: definition as ActionDefinition<unknown>, config };
          } catch (error) {
            if (error instanceof ActionConfigProblem || error instanceof PolicyExpressionProblem) return problem(error.message);
            throw error;
          }
        });
        phases[phase].push({ source, ...(rule.name ? { name: rule.name } : {}), expressions, actions });
      }
    }
  }
  const secrets = new Map<string, readonly [string, string]>();
  let computedSecrets = false;
  const trailers = { request: false, response: false };
  for (const { rules } of sources) {
    for (const phase of TRAFFIC_POLICY_PHASES) {
      for (const rule of rules[phase] ?? []) {
        for (const text of [...(rule.expressions ?? []), ...rule.actions.flatMap((action) => stringsOf(action.config))]) {
          const { literal, computed } = secretReferences(text);
          for (const [vault, name] of literal) secrets.set(secretVariable(vault, name), [vault, name]);
          computedSecrets ||= computed;
          trailers.request ||= /\breq\s*\.\s*trailers\b/.test(text);
          trailers.response ||= /\bres\s*\.\s*trailers\b/.test(text);
        }
      }
    }
  }
  return { phases, problems, issues, secrets: [...secrets.values()], computedSecrets, readsTrailers: trailers };
}
