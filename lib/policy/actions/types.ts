import * as v from 'valibot';
import { PolicyExpressionProblem, type PolicyExpression, type PolicyLanguage } from '../../conventions/cel.ts';
import type { PolicyError, PolicyTerminal } from '../../traffic/decisions.ts';
import type { DocumentCache } from '../documents.ts';
import type { EndpointFacts, HeaderList } from '../../traffic/facts.ts';
import { compileTemplate, type Template } from '../interpolation.ts';
import type { Scope } from '../scope.ts';
import type { PolicyServices } from '../services.ts';

/** Why an action's configuration cannot run; the message starts with the field (`config.issuer: is required`). */
export class ActionConfigProblem extends Error {}

/** An action that cannot complete; the runner answers `error` (a 5xx unless the action says otherwise). */
export class ActionFailure extends Error {
  constructor(readonly error: PolicyError) {
    super(error.message);
  }
}

/** What compiling an action's configuration may use. */
export interface CompileTools {
  readonly language: PolicyLanguage;
  /** Compiles an interpolated string of field `field`; throws ActionConfigProblem naming it. */
  template(text: string, field: string): Template;
  /** Compiles a whole CEL expression of field `field` (rate-limit bucket keys). */
  expression(text: string, field: string): PolicyExpression;
  /** Compiles an http-request `retry_condition`: the phase's variables and `attempts`, `last_attempt` (languages.ts). */
  retryCondition(text: string, field: string): PolicyExpression;
  /** The phase the action is in. */
  readonly phase: Scope['phase'];
  /** A key unique to this action in its policy and stable across compilations of the same text (state stores key on it). */
  readonly key: string;
}

/** What an action sees when it runs. */
export interface ActionContext {
  readonly scope: Scope;
  readonly services: Required<Pick<PolicyServices, 'rateLimits' | 'circuitBreakers'>> & PolicyServices;
  /** JWKS and discovery documents by URL, cached. */
  readonly documents: DocumentCache;
  /** The action's stable key (CompileTools.key). */
  readonly key: string;
  /** Evaluates an expression in the scope. */
  evaluate(expression: PolicyExpression): unknown;
  /** Evaluates an expression in the scope with variables of the action's own (a retry_condition's `attempts`). */
  evaluateWith(expression: PolicyExpression, variables: Readonly<Record<string, unknown>>): unknown;
  /** Renders an interpolated string; a failure becomes the vendor's interpolation error (ERR_NGROK_3900) naming `field`. */
  text(template: Template, field: string): string;
  /** The value of an interpolated string (a lone `${…}` keeps its type). */
  value(template: Template, field: string): unknown;
}

/** How an action ran: `end` when it ends the phase, `note` for the journal. */
export interface ActionResult {
  readonly end?: PolicyTerminal;
  readonly note?: string;
}

/** One action type: its configuration check and its behaviour. */
export interface ActionDefinition<Config = unknown> {
  readonly type: string;
  /**
   * What Burrow lacks to do what the vendor documents: `third-party` (accepted on write; it needs a
   * provider, data or rule set Burrow does not have, and answers a page naming it), `no` (accepted,
   * answers 501). Absent: supported. docs/traffic-policy.md's support table is checked against it.
   */
  readonly support?: 'third-party' | 'no';
  /** The name of its result variables, `actions.ngrok.<results>.*`, when it sets any. */
  readonly results?: string;
  compile(config: unknown, tools: CompileTools): Config;
  run(config: Config, context: ActionContext): ActionResult | Promise<ActionResult>;
}

/** Declares an action type (keeps the Config type between compile and run). */
export const defineAction = <Config>(definition: ActionDefinition<Config>): ActionDefinition<Config> => definition;

type Path = readonly (string | number)[];
const at = (path: Path) => path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : `${out}.${key}`), 'config');

/** Checks `config` against `schema` (absent config reads as `{}`); throws ActionConfigProblem with the first problem's path. */
export function readConfig<S extends v.GenericSchema>(schema: S, config: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, config ?? {});
  if (result.success) return result.output;
  const issue = result.issues[0];
  const path = (issue.path ?? []).map((item) => item.key as string | number);
  if (issue.kind === 'schema' && issue.input === undefined) throw new ActionConfigProblem(`${at(path)}: is required`);
  throw new ActionConfigProblem(`${at(path)}: ${issue.message}`);
}

/** Compiles interpolated strings, naming the field when one does not compile. */
export function templateOf(language: PolicyLanguage, text: string, field: string): Template {
  try {
    return compileTemplate(text, language);
  } catch (error) {
    if (error instanceof PolicyExpressionProblem) throw new ActionConfigProblem(`${field}: ${error.message}`);
    throw error;
  }
}

/** An error page decision. */
export function errorEnd(status: number, message: string, code?: string, headers: HeaderList = []): PolicyTerminal {
  return { kind: 'error', error: { status, message, headers, ...(code ? { code } : {}) } };
}

/** Common config fields. */
export const enforce = v.optional(v.boolean(), true);
export const statusIn = (min: number, max: number, fallback: number) =>
  v.optional(v.pipe(v.number(), v.check((n) => Number.isInteger(n) && n >= min && n <= max, (issue) => `must be an integer from ${min} to ${max} (got ${issue.input})`)), fallback);

/**
 * Account data by ids through a host lookup: 501 when the host provides none, 500 naming the
 * field when it throws (an id that does not exist).
 */
/** A host lookup of account records, asked about the account of the endpoint being served. */
export function forEndpoint<T>(context: ActionContext, lookup: ((ids: readonly string[], endpoint: EndpointFacts) => Promise<T>) | undefined): ((ids: readonly string[]) => Promise<T>) | undefined {
  return lookup && ((ids) => lookup.call(context.services, ids, context.scope.endpoint));
}

export async function lookUp<T>(lookup: ((ids: readonly string[]) => Promise<T>) | undefined, ids: readonly string[], field: string, what: string): Promise<T> {
  if (!lookup) throw new ActionFailure({ status: 501, message: `${field}: ${what} cannot be read here (no lookup was provided)`, headers: [] });
  try {
    return await lookup(ids);
  } catch (error) {
    throw new ActionFailure({ status: 500, message: `${field}: ${(error as Error).message}`, headers: [] });
  }
}
