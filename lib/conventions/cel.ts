import type * as CelJs from '@marcbachmann/cel-js';
import type { Environment, ParseResult } from '@marcbachmann/cel-js';
import { createRequire } from 'node:module';
import { LIMITS, limitNote, type LimitName } from '../limits.ts';
import { onFirstUse } from './on-first-use.ts';
import { quotedPattern, re2Problem, re2Test as re2Matches } from './patterns.ts';

/**
 * Common Expression Language (CEL), the vendor's language for list filters (`filter=obj.… == …`)
 * and for traffic-policy rule expressions. This is the only module that imports the CEL library,
 * @marcbachmann/cel-js: pure JavaScript with no dependencies, a parser with structural limits
 * (AST nodes, depth) and an AST that can be walked. (@bufbuild/cel, the other maintained one,
 * needs @bufbuild/protobuf and its own RE2 package; Burrow evaluates plain JSON objects only.)
 * It is loaded on the first expression (lib/conventions/on-first-use.ts).
 */

const celJs = onFirstUse(() => createRequire(import.meta.url)('@marcbachmann/cel-js') as typeof CelJs);
/** cel-js's duration class, which the package does not export: taken from a duration it makes. */
const DurationClass = onFirstUse(() => (celJs().evaluate("duration('0s')") as object).constructor as new (seconds: bigint, nanos?: number) => object);

/** A CEL `google.protobuf.Duration` of `seconds` (a variable's value, such as a cookie's max_age). */
export const celDuration = (seconds: bigint): object => new (DurationClass())(seconds, 0);

/** The longest `filter` Burrow evaluates, in characters (lib/limits.ts; the vendor publishes none). */
export const MAX_FILTER_LENGTH = LIMITS.filter_length.value;

/** cel-js's structural limits (checked while parsing) and the rows of lib/limits.ts they are. */
type CelLimits = { maxAstNodes: number; maxDepth: number; maxListElements: number; maxMapEntries: number; maxCallArguments: number };
const LIMIT_NAMES: Partial<Record<keyof CelLimits, LimitName>> = { maxDepth: 'cel_depth', maxListElements: 'cel_list_elements', maxMapEntries: 'cel_map_entries' };
const FILTER_LIMITS: CelLimits = {
  maxAstNodes: LIMITS.filter_nodes.value,
  maxDepth: LIMITS.cel_depth.value,
  maxListElements: LIMITS.cel_list_elements.value,
  maxMapEntries: 0,
  maxCallArguments: 4,
};
const POLICY_LIMITS: CelLimits = { ...FILTER_LIMITS, maxAstNodes: LIMITS.policy_expression_nodes.value, maxMapEntries: LIMITS.cel_map_entries.value };

/**
 * The first line of a cel-js error; its "Exceeded maxAstNodes (256)" for a structural limit
 * becomes a sentence that names the row of lib/limits.ts (`nodes`: the row of this environment's
 * node count).
 */
function celMessage(error: unknown, nodes: LimitName): string {
  const line = firstLine(error);
  const exceeded = /^Exceeded (\w+) \((\d+)\)/.exec(line);
  const name = exceeded && (exceeded[1] === 'maxAstNodes' ? nodes : LIMIT_NAMES[exceeded[1] as keyof CelLimits]);
  if (!name) return line;
  const { value, unit } = LIMITS[name];
  return `${unit === 'levels' ? `nested deeper than ${value}` : `more than ${value}`} ${unit} ${limitNote(name)}`;
}

/** What a filter may use: the vendor's documented subset of CEL (its "API Filtering" guide). */
const FILTER_OPERATORS = new Set(['value', 'id', '.', '&&', '||', '!_', '==', '!=', '<', '<=', '>', '>=', 'in', 'list', '-_', 'rcall', 'call']);
const FILTER_METHODS = new Set(['startsWith', 'contains', 'endsWith', 'size']);
const FILTER_FUNCTIONS = new Set(['size', 'timestamp', 'now', 'daysAgo', 'has']);
const SUBSTRING_METHODS = new Set(['startsWith', 'contains', 'endsWith']);

interface AstNode {
  op: string;
  args: unknown;
}

/** A compiled filter: call it with a record's response object; answers whether it matches. */
export type FilterPredicate = (obj: Record<string, unknown>) => boolean;

/**
 * A filter from `compileFilter`: the predicate, and what one evaluation costs, in syntax nodes
 * (each `timestamp()` call counts TIMESTAMP_COST: it parses its text on every evaluation).
 */
export interface CompiledFilter extends FilterPredicate {
  readonly cost: number;
}

/** What a `timestamp()` call costs, in syntax nodes: parsing an RFC 3339 text takes about as long as evaluating 25 nodes. */
const TIMESTAMP_COST = 25;

/** A 400 reason for a bad filter (the caller wraps it in its error). */
export class FilterProblem extends Error {}

const syntaxEnvironment = onFirstUse(
  (): Environment =>
    new (celJs().Environment)({
      unlistedVariablesAreDyn: true,
      homogeneousAggregateLiterals: false,
      enableOptionalTypes: true,
      limits: POLICY_LIMITS,
    }),
);


/**
 * Why `expression` is not a syntactically valid CEL expression, or undefined when it is. A
 * pattern written into it (`matches('…')`) is checked as RE2 too, within the pattern budget
 * (lib/conventions/patterns.ts): it is compiled when the expression runs.
 */
export function celSyntaxProblem(expression: string): string | undefined {
  let ast: AstNode;
  try {
    ast = syntaxEnvironment().parse(expression).ast as unknown as AstNode;
  } catch (error) {
    return celMessage(error, 'policy_expression_nodes');
  }
  for (const pattern of literalPatterns(ast)) {
    const problem = re2Problem(pattern);
    if (problem) return `matches(${quotedPattern(pattern)}): ${problem}`;
  }
  return undefined;
}

/** The string literals an expression passes to `matches()` as the pattern (`s.matches(p)`, `matches(s, p)`). */
function literalPatterns(root: AstNode): string[] {
  const patterns: string[] = [];
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const item = pending.pop();
    if (Array.isArray(item)) pending.push(...item);
    else if (isAstNode(item) && item.op !== 'value') {
      const args = item.args as unknown[];
      const pattern = item.op === 'rcall' && args[0] === 'matches' ? (args[2] as AstNode[])[0] : item.op === 'call' && args[0] === 'matches' ? (args[1] as AstNode[])[1] : undefined;
      if (pattern?.op === 'value' && typeof pattern.args === 'string') patterns.push(pattern.args);
      pending.push(item.args);
    }
  }
  return patterns;
}

function firstLine(error: unknown): string {
  return String((error as Error).message ?? error).split('\n')[0]!;
}

/** The field a node reads, `obj.a.b` → `a.b`, or undefined when it is not a plain field path. */
function fieldPath(node: AstNode): string | undefined {
  if (node.op === 'id') return node.args === 'obj' ? '' : undefined;
  if (node.op !== '.') return undefined;
  const [target, name] = node.args as [AstNode, string];
  const base = fieldPath(target);
  return base === undefined ? undefined : base ? `${base}.${name}` : name;
}

const isHighEntropy = (path: string | undefined) => path !== undefined && /(^|\.|_)id$/.test(path);

/** Refuses what the vendor's filter subset leaves out: arithmetic, ternaries, indexing, regexes, macros, maps. */
function checkFilterNode(node: AstNode): void {
  if (!FILTER_OPERATORS.has(node.op)) throw new FilterProblem(`'${describeOp(node.op)}' is not supported in filters (only field comparisons, &&, ||, !, in, size(), startsWith(), contains(), endsWith(), timestamp(), now() and daysAgo())`);
  if (node.op === 'id' && node.args !== 'obj') throw new FilterProblem(`unknown name '${String(node.args)}'; a filter reads the resource as obj (obj.description, obj.created_at …)`);
  if (node.op === '-_' && (node.args as AstNode).op !== 'value') throw new FilterProblem('arithmetic is not supported in filters');
  if (node.op === 'rcall') {
    const [name, target, args] = node.args as [string, AstNode, AstNode[]];
    if (!FILTER_METHODS.has(name)) throw new FilterProblem(`${name}() is not supported in filters`);
    if (SUBSTRING_METHODS.has(name) && isHighEntropy(fieldPath(target))) {
      throw new FilterProblem(`${name}() is not allowed on the id field obj.${fieldPath(target)}; compare ids with ==`);
    }
    [target, ...args].forEach(checkFilterNode);
    return;
  }
  if (node.op === 'call') {
    const [name, args] = node.args as [string, AstNode[]];
    if (!FILTER_FUNCTIONS.has(name)) throw new FilterProblem(`${name}() is not supported in filters`);
    args.forEach(checkFilterNode);
    return;
  }
  if (node.op === '.') return checkFilterNode((node.args as [AstNode, string])[0]);
  if (node.op === 'value' || node.op === 'id') return;
  const args = node.args;
  if (Array.isArray(args)) args.forEach((arg) => checkFilterNode(arg as AstNode));
  else if (args && typeof args === 'object') checkFilterNode(args as AstNode);
}

function describeOp(op: string): string {
  return { '?:': 'cond ? a : b', '[]': 'a[index]', map: '{map literal}', '+': '+', '-': '-', '*': '*', '/': '/', '%': '%' }[op] ?? op;
}

const DAY_MS = 86_400_000;

/**
 * Compiles a `filter` query value into a predicate over a resource's response object (`obj`), as
 * the vendor evaluates it: the resource as answered, its times (`created_at`, `not_after` …) as CEL
 * timestamps, whole numbers as CEL ints. `now()` and `daysAgo(n)` read the instance's clock.
 * Throws FilterProblem for an expression the vendor would refuse; the predicate throws FilterProblem
 * when an evaluation fails (an unknown field, a comparison of mismatched types) or is not a bool.
 */
export function compileFilter(expression: string, now: () => Date): CompiledFilter {
  if (expression.trim() === '') throw new FilterProblem('must not be empty');
  if (expression.length > MAX_FILTER_LENGTH) throw new FilterProblem(`must be at most ${MAX_FILTER_LENGTH} characters (got ${expression.length}) ${limitNote('filter_length')}`);
  const env = new (celJs().Environment)({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, limits: FILTER_LIMITS })
    .registerVariable('obj', 'map')
    .registerFunction('now(): google.protobuf.Timestamp', () => now())
    .registerFunction('daysAgo(int): google.protobuf.Timestamp', (days: bigint) => new Date(now().getTime() - Number(days) * DAY_MS));
  let parsed: ParseResult;
  try {
    parsed = env.parse(expression);
  } catch (error) {
    throw new FilterProblem(celMessage(error, 'filter_nodes'));
  }
  checkFilterNode(parsed.ast as unknown as AstNode);
  const checked = parsed.check();
  if (!checked.valid) throw new FilterProblem(firstLine(checked.error));
  if (checked.type !== 'bool' && checked.type !== 'dyn') throw new FilterProblem(`must be a condition (a bool), not a ${checked.type}`);
  const predicate = (obj: Record<string, unknown>) => {
    let result: unknown;
    try {
      result = parsed({ obj: celValue(obj) });
    } catch (error) {
      throw new FilterProblem(firstLine(error));
    }
    if (typeof result !== 'boolean') throw new FilterProblem(`must be a condition (a bool); it gave ${typeof result === 'bigint' ? 'an int' : typeof result}`);
    return result;
  };
  return Object.assign(predicate, { cost: evaluationCost(parsed.ast as unknown as AstNode) });
}

/** The syntax nodes of a parsed filter, `timestamp()` calls weighed (one walk; the parser bounded its size). */
function evaluationCost(root: AstNode): number {
  let cost = 0;
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const item = pending.pop();
    if (Array.isArray(item)) pending.push(...item);
    else if (isAstNode(item)) {
      cost += item.op === 'call' && (item.args as [string])[0] === 'timestamp' ? TIMESTAMP_COST : 1;
      if (item.op !== 'value') pending.push(item.args);
    }
  }
  return cost;
}

const isAstNode = (item: unknown): item is AstNode => typeof item === 'object' && item !== null && typeof (item as AstNode).op === 'string' && 'args' in item;

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const TIME_FIELD = /(_at|^not_before|^not_after|^valid_after|^valid_until)$/;

/** A JSON response value as CEL sees it: time fields → Date (timestamp), whole numbers → bigint (int). */
function celValue(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return TIME_FIELD.test(key) && RFC3339_UTC.test(value) ? new Date(value) : value;
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map((item) => celValue(item));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(value)) out[name] = celValue(item, name);
    return out;
  }
  return value;
}

// --- traffic policy expressions --------------------------------------------------------------------

/**
 * A variable of the traffic policy language, by its dotted name as the vendor documents it
 * (`req.url.path`), with its CEL type (`string`, `map<string, list<string>>`, `dyn` …).
 */
export interface PolicyVariable {
  readonly name: string;
  readonly type: string;
}

/** Reads a variable's value for one evaluation, by dotted name. */
export type PolicyReader = (name: string) => unknown;

/**
 * A function of the traffic policy language. `signature` is cel-js's form: a global function
 * `inCidrRange(string, string): bool`, a method `string.isPrivateIp(): bool`, or a function in a
 * namespace `base64.decode(string): bytes` (a prefix that is no CEL type is a namespace). The
 * handler receives the evaluation's reader first (request helpers such as `getReqHeader` read
 * `req.headers` through it), then the CEL arguments; it throws PolicyExpressionProblem to fail.
 */
export interface PolicyFunction {
  readonly signature: string;
  readonly handler: (read: PolicyReader, ...args: any[]) => unknown;
  /**
   * The method replaces cel-js's own of the same name, whose results differ from the vendor's
   * (`split(sep, n)`, `lowerAscii()`): every call of that method name then reaches the language's
   * overloads instead, so each overload of the name must be declared here.
   */
  readonly replacesBuiltin?: true;
}

/** What a method that replaces a cel-js built-in is registered as, and written as in rewritten expressions. */
const replaced = (name: string) => `__burrow_${name}`;

/**
 * Why a policy expression does not compile or did not evaluate. A compile problem found at a
 * spot of the expression names it (`unknown variable req.foo at column 1`; line and column when
 * the expression has several lines), counted in characters of the expression as written.
 */
export class PolicyExpressionProblem extends Error {}

/** ` at column N` (or ` at line L, column N`) for offset `at` of `source`. */
function positionNote(source: string, at: number | undefined): string {
  if (at === undefined || at < 0 || at > source.length) return '';
  const before = source.slice(0, at).split('\n');
  const column = before.at(-1)!.length + 1;
  return before.length > 1 ? ` at line ${before.length}, column ${column}` : ` at column ${column}`;
}

/** Where a cel-js error points, as an offset of the text it parsed (undefined when it points nowhere). */
const errorOffset = (error: unknown): number | undefined => (error as { range?: { start?: number } }).range?.start;

/** A compiled policy expression. */
export interface PolicyExpression {
  readonly source: string;
  /** The declared variables it reads, by dotted name, each once. */
  readonly variables: readonly string[];
  /** Its CEL type as the type check found it (`bool`, `string`, `dyn` …). */
  readonly type: string;
  /**
   * Evaluates the expression; `read` is asked once for each of `variables`. Throws
   * PolicyExpressionProblem when the evaluation fails; an error thrown by `read` or by a function
   * handler (other than PolicyExpressionProblem) passes through unchanged.
   */
  evaluate(read: PolicyReader): unknown;
}

/** A traffic policy language: its variables and functions, and a compiler for its expressions. */
export interface PolicyLanguage {
  compile(expression: string): PolicyExpression;
}

/**
 * Policy expressions are compiled with POLICY_LIMITS, the structural limits the syntax check of
 * stored documents (celSyntaxProblem) applies, so a stored expression is never refused later for
 * its size. Macros (`exists`, `all`, `map` …) may nest `policy_macro_nesting` deep.
 */
const MAX_MACRO_NESTING = LIMITS.policy_macro_nesting.value;

/**
 * The most evaluation steps one evaluation of a policy expression may take (`policy_evaluation_steps`):
 * every node cel-js's evaluator dispatches counts one, so every iteration of a macro counts at
 * least one. A few milliseconds of work; past it the evaluation fails (a 500 for that rule), so no
 * expression can stall the ingress, whatever lists it builds or iterates.
 */
const MAX_EVALUATION_STEPS = LIMITS.policy_evaluation_steps.value;

/** Steps left in the policy evaluation under way; undefined when none is counting. */
let stepsLeft: number | undefined;

/**
 * cel-js offers no step budget, so Burrow counts its evaluator's `run` calls (the dispatch every
 * macro iteration goes through) by wrapping that method once on the evaluator's prototype, which a
 * function handler sees as `this`. Only policy evaluations set a budget; filters and everything
 * else pass straight through. test/policy/expressions.test.ts proves the count still happens.
 */
function countEvaluatorSteps(env: Environment): void {
  let prototype: { run: (ast: unknown, ctx: unknown) => unknown; __burrowSteps?: true } | undefined;
  env.registerFunction('__burrow_probe(): bool', function (this: object) {
    prototype = Object.getPrototypeOf(this);
    return true;
  });
  env.evaluate('__burrow_probe()');
  if (!prototype || typeof prototype.run !== 'function') throw new Error('burrow: the CEL evaluator no longer dispatches through run(); policy evaluation budgets need updating');
  if (prototype.__burrowSteps) return;
  const run = prototype.run;
  prototype.run = function (this: unknown, ast: unknown, ctx: unknown) {
    if (stepsLeft !== undefined && --stepsLeft < 0) throw new PolicyExpressionProblem(`the expression took more than ${MAX_EVALUATION_STEPS} evaluation steps ${limitNote('policy_evaluation_steps')}`);
    return run.call(this, ast, ctx);
  };
  prototype.__burrowSteps = true;
}
const MACROS_BINDING_A_VARIABLE = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);
const RE2_MATCHES = '__re2_matches';
/**
 * `has(m['key'])`, the vendor's documented form (`has(req.headers['x-custom-header'])`), which
 * CEL's has() macro refuses (it takes a field selection only): rewritten to this function, true
 * when the map holds the key.
 */
const HAS_ENTRY = '__has_entry';
/**
 * `list.sortBy(e, key)` (the vendor's macro, which cel-js lacks): rewritten to
 * `__sort_by(list.map(e, [key, e]))`, which sorts the pairs by key (stable; keys of one
 * comparable type, else an error, as the reference says) and answers the elements.
 */
const SORT_BY = '__sort_by';

/** The elements of `[key, element]` pairs in the order of their keys. */
function sortByKeys(pairs: readonly (readonly [unknown, unknown])[]): unknown[] {
  const kind = (key: unknown) => (key instanceof Date ? 'timestamp' : typeof key);
  const first = pairs[0] ? kind(pairs[0][0]) : undefined;
  if (pairs.some(([key]) => kind(key) !== first || (typeof key === 'object' && !(key instanceof Date)))) {
    throw new PolicyExpressionProblem('sortBy: the keys must be of one comparable type (int, uint, double, string, bool, timestamp)');
  }
  return [...pairs].sort(([a], [b]) => ((a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0)).map(([, element]) => element);
}
const CEL_TYPE_PREFIX = /^(string|bytes|int|uint|double|bool|list|map|timestamp|duration|dyn|google\.protobuf\.\w+)(<.*>)?$/;

/** A qualified variable name as a CEL identifier (`req.url.path` → `__req__url__path`); a plain name stays. */
const mangle = (name: string) => (name.includes('.') ? `__${name.replaceAll('.', '__')}` : name);

interface Splice {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * Creates a policy language. Variable names are qualified identifiers resolved the way cel-go
 * resolves them: in `req.url.path.startsWith('/a')` the longest declared prefix (`req.url.path`)
 * is the variable and the rest applies to its value, so `req.url` (a string) and `req.url.path`
 * (another string) can both exist, as the vendor documents them. `matches()` uses RE2 (the
 * vendor's Go semantics, linear time) instead of JavaScript's RegExp.
 */
export function createPolicyLanguage(spec: {
  readonly variables: readonly PolicyVariable[];
  readonly functions: readonly PolicyFunction[];
  /** Variables of the language this one does not have (those of other phases), and why: reading one is refused naming it. */
  readonly absent?: { readonly names: readonly string[]; readonly reason: string };
}): PolicyLanguage {
  let reading: PolicyReader | undefined;
  const withReader = (handler: PolicyFunction['handler']) =>
    function (this: unknown, ...args: unknown[]) {
      return handler(reading!, ...args);
    };
  let env = new (celJs().Environment)({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, enableOptionalTypes: true, limits: POLICY_LIMITS });
  const declared = new Map(spec.variables.map((variable) => [variable.name, variable.type]));
  const absent = new Set(spec.absent?.names ?? []);
  const roots = new Set([...spec.variables.map((variable) => variable.name), ...absent].map((name) => name.split('.')[0]!));
  for (const [name, type] of declared) env = env.registerVariable(mangle(name), type);
  const namespaces = new Set<string>();
  const replacedMethods = new Set(spec.functions.filter((fn) => fn.replacesBuiltin).map((fn) => /\.(\w+)\(/.exec(fn.signature)![1]!));
  for (const fn of spec.functions) {
    const method = /^(.*)\.(\w+)(\(.*)$/.exec(fn.signature);
    if (method && replacedMethods.has(method[2]!)) {
      env = env.registerFunction(`${method[1]}.${replaced(method[2]!)}${method[3]}`, withReader(fn.handler));
      continue;
    }
    const match = /^([\w.<>, ]+?)\.(\w+\(.*)$/.exec(fn.signature);
    const prefix = match?.[1];
    if (prefix && !CEL_TYPE_PREFIX.test(prefix)) {
      const typeName = `${prefix.replace(/(^|_)(\w)/g, (_all, _sep, c: string) => c.toUpperCase())}Namespace`;
      if (!namespaces.has(prefix)) {
        namespaces.add(prefix);
        const Namespace = { [typeName]: class {} }[typeName]!;
        env = env.registerType(typeName, Namespace).registerConstant(prefix, typeName, new Namespace());
      }
      env = env.registerFunction(`${typeName}.${match![2]}`, withReader((read, _namespace, ...args) => fn.handler(read, ...args)));
    } else {
      env = env.registerFunction(fn.signature, withReader(fn.handler));
    }
  }
  env = env
    .registerFunction(`string.${RE2_MATCHES}(string): bool`, matchesRe2)
    .registerFunction(`${RE2_MATCHES}(string, string): bool`, matchesRe2)
    .registerFunction(`${SORT_BY}(list): list`, (pairs: readonly (readonly [unknown, unknown])[]) => sortByKeys(pairs))
    .registerFunction(`${HAS_ENTRY}(map, dyn): bool`, (map: unknown, key: unknown) => (map instanceof Map ? map.has(key) : typeof key === 'string' && Object.hasOwn(map as object, key)));
  countEvaluatorSteps(env);

  /** The longest declared variable among the prefixes of `path`, as a count of segments (0: none). */
  const longestDeclared = (path: readonly string[]) => {
    for (let k = path.length; k > 0; k--) if (declared.has(path.slice(0, k).join('.'))) return k;
    return 0;
  };
  /** The longest absent variable among the prefixes of `path` longer than `than` segments (a declared `actions` map does not hide `actions.ngrok.terminate_tls.sni` of another phase). */
  const longestAbsent = (path: readonly string[], than = 0) => {
    for (let k = path.length; k > than; k--) if (absent.has(path.slice(0, k).join('.'))) return path.slice(0, k).join('.');
    return undefined;
  };

  function rewrite(source: string, ast: AstNode): { text: string; variables: string[]; originals: Map<string, string>; sourceOffset: (at: number) => number } {
    const splices: Splice[] = [];
    const variables = new Set<string>();
    const originals = new Map<string, string>([[RE2_MATCHES, 'matches'], [HAS_ENTRY, 'has']]);
    const use = (name: string, node: PositionedNode) => {
      variables.add(name);
      if (!name.includes('.')) return;
      originals.set(mangle(name), name);
      splices.push({ start: node.start, end: node.end, text: mangle(name) });
    };
    const visit = (node: unknown, bound: ReadonlySet<string>, nesting: number): void => {
      if (Array.isArray(node)) return node.forEach((item) => visit(item, bound, nesting));
      if (!isNode(node)) return;
      if (node.op === 'id' || node.op === '.' || node.op === '.?') {
        const chain = selectChain(node);
        if (chain && !bound.has(chain.path[0]!)) {
          const k = longestDeclared(chain.path);
          const elsewhere = longestAbsent(chain.path, k);
          if (k > 0 && !elsewhere) return use(chain.path.slice(0, k).join('.'), chain.nodes[k - 1]!);
          if (elsewhere) throw new PolicyExpressionProblem(`variable ${elsewhere} is not available ${spec.absent!.reason}${positionNote(source, chain.nodes[0]!.start)}`);
          if (roots.has(chain.path[0]!)) throw new PolicyExpressionProblem(`unknown variable ${chain.path.join('.')}${positionNote(source, chain.nodes[0]!.start)}`);
        }
        if (node.op === 'id') return;
        return visit((node.args as unknown[])[0], bound, nesting);
      }
      if (node.op === 'rcall') {
        const [name, receiver, args] = node.args as [string, PositionedNode, PositionedNode[]];
        visit(receiver, bound, nesting);
        const renamed = name === 'matches' ? RE2_MATCHES : replacedMethods.has(name) ? replaced(name) : undefined;
        if (renamed) {
          const at = new RegExp(`^\\s*\\.\\s*${name}\\s*\\(`).exec(source.slice(receiver.end, node.end));
          if (at) {
            const start = receiver.end + at[0].indexOf(name);
            splices.push({ start, end: start + name.length, text: renamed });
            originals.set(renamed, name);
          }
        }
        if (name === 'sortBy' && args.length === 2 && args[0]!.op === 'id') {
          if (nesting >= MAX_MACRO_NESTING) throw new PolicyExpressionProblem(`macros such as sortBy() may nest at most ${MAX_MACRO_NESTING} deep ${limitNote('policy_macro_nesting')}`);
          const [binding, key] = args as [PositionedNode, PositionedNode];
          visit(key, new Set(bound).add(binding.args as string), nesting + 1);
          const at = /^\s*\.\s*sortBy\s*\(/.exec(source.slice(receiver.end, node.end));
          if (at) {
            // Pushed after the receiver's and the key's own splices: at an equal start, those apply first.
            const start = receiver.end + at[0].indexOf('sortBy');
            splices.push(
              { start: receiver.start, end: receiver.start, text: `${SORT_BY}(` },
              { start, end: start + 'sortBy'.length, text: 'map' },
              { start: key.start, end: key.start, text: '[' },
              { start: key.end, end: key.end, text: `, ${binding.args as string}]` },
              { start: node.end, end: node.end, text: ')' },
            );
            originals.set(SORT_BY, 'sortBy');
          }
          return;
        }
        const binds = MACROS_BINDING_A_VARIABLE.has(name) && args[0]?.op === 'id';
        const bindsCel = name === 'bind' && receiver.op === 'id' && receiver.args === 'cel' && args[0]?.op === 'id';
        if (binds && nesting >= MAX_MACRO_NESTING) throw new PolicyExpressionProblem(`macros such as ${name}() may nest at most ${MAX_MACRO_NESTING} deep ${limitNote('policy_macro_nesting')}`);
        if (!binds && !bindsCel) return visit(args, bound, nesting);
        const inner = new Set(bound).add(args[0]!.args as string);
        if (bindsCel) return visit(args[1], bound, nesting), visit(args[2], inner, nesting);
        return visit(args.slice(1), inner, nesting + 1);
      }
      if (node.op === 'call') {
        const [name, args] = node.args as [string, PositionedNode[]];
        if (name === 'matches') splices.push({ start: node.start, end: node.start + source.slice(node.start).indexOf('matches') + 'matches'.length, text: RE2_MATCHES });
        if (name === 'has' && args.length === 1 && args[0]!.op === '[]') {
          // has(A[B]) → __has_entry(A, B), around A's and B's own splices.
          const [map, key] = args[0]!.args as [PositionedNode, PositionedNode];
          splices.push({ start: node.start, end: map.start, text: `${HAS_ENTRY}(` }, { start: map.end, end: key.start, text: ', ' }, { start: key.end, end: node.end, text: ')' });
        }
        return visit(args, bound, nesting);
      }
      visit(node.args, bound, nesting);
    };
    visit(ast, new Set(), 0);
    let text = source;
    for (const splice of splices.sort((a, b) => b.start - a.start)) text = text.slice(0, splice.start) + splice.text + text.slice(splice.end);
    // An offset of the rewritten text, back in the source: splices before it shifted it by their change in length.
    const sourceOffset = (at: number) => {
      let shift = 0;
      for (const splice of [...splices].reverse()) {
        const start = splice.start + shift;
        if (at < start) break;
        if (at < start + splice.text.length) return splice.start;
        shift += splice.text.length - (splice.end - splice.start);
      }
      return at - shift;
    };
    return { text, variables: [...variables], originals, sourceOffset };
  }

  const restore = (message: string, originals: ReadonlyMap<string, string>) =>
    message.replace(/\b__\w+/g, (token) => originals.get(token) ?? token);

  return {
    compile(source) {
      let rewritten: ReturnType<typeof rewrite>;
      let program: ParseResult;
      try {
        rewritten = rewrite(source, env.parse(source).ast as unknown as AstNode);
        program = env.parse(rewritten.text);
      } catch (error) {
        if (error instanceof PolicyExpressionProblem) throw error;
        throw new PolicyExpressionProblem(`${celMessage(error, 'policy_expression_nodes')}${positionNote(source, errorOffset(error))}`);
      }
      const checked = program.check();
      if (!checked.valid) {
        const at = errorOffset(checked.error);
        throw new PolicyExpressionProblem(`${restore(firstLine(checked.error), rewritten.originals)}${positionNote(source, at === undefined ? undefined : rewritten.sourceOffset(at))}`);
      }
      const { variables, originals } = rewritten;
      return {
        source,
        variables,
        type: checked.type ?? 'dyn',
        evaluate(read) {
          const values: Record<string, unknown> = {};
          for (const name of variables) values[mangle(name)] = read(name);
          const outer = reading;
          const outerSteps = stepsLeft;
          reading = read;
          stepsLeft = MAX_EVALUATION_STEPS;
          try {
            const result = program(values);
            if (result instanceof Promise) throw new PolicyExpressionProblem('an expression must not wait for anything');
            return result;
          } catch (error) {
            if (error instanceof celJs().EvaluationError || error instanceof celJs().TypeError) throw new PolicyExpressionProblem(restore(firstLine(error), originals));
            throw error;
          } finally {
            reading = outer;
            stepsLeft = outerSteps;
          }
        },
      };
    },
  };
}

function matchesRe2(text: string, pattern: string): boolean {
  try {
    return re2Matches(pattern, text);
  } catch (error) {
    const reason = firstLine(error);
    throw new PolicyExpressionProblem(reason.startsWith('error parsing regexp: ') ? `matches(): not an RE2 regular expression: ${reason.slice(22)}` : `matches(): the pattern ${reason}`);
  }
}

interface PositionedNode extends AstNode {
  readonly start: number;
  readonly end: number;
}

const isNode = (value: unknown): value is PositionedNode => !!value && typeof value === 'object' && typeof (value as AstNode).op === 'string';

/** `a.b.c` as its segments and the node of each prefix, or undefined when the chain does not start at an identifier. */
function selectChain(node: PositionedNode): { path: string[]; nodes: PositionedNode[] } | undefined {
  if (node.op === 'id') return { path: [node.args as string], nodes: [node] };
  if (node.op !== '.' && node.op !== '.?') return undefined;
  const [target, name] = node.args as [PositionedNode, string];
  const inner = selectChain(target);
  return inner && { path: [...inner.path, name], nodes: [...inner.nodes, node] };
}
