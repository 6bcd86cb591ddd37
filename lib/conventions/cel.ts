import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { LIMITS, limitNote, type LimitName } from '../limits.ts';
import { quotedPattern, re2Problem } from './patterns.ts';

/**
 * Common Expression Language (CEL), the vendor's language for list filters (`filter=obj.… == …`)
 * and for traffic-policy rule expressions. This is the only module that imports the CEL library,
 * @marcbachmann/cel-js: pure JavaScript with no dependencies, a parser with structural limits
 * (AST nodes, depth) and an AST that can be walked. (@bufbuild/cel, the other maintained one,
 * needs @bufbuild/protobuf and its own RE2 package; Burrow evaluates plain JSON objects only.)
 */

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

function syntaxEnvironment(): Environment {
  return new Environment({
    unlistedVariablesAreDyn: true,
    homogeneousAggregateLiterals: false,
    enableOptionalTypes: true,
    limits: POLICY_LIMITS,
  });
}

const SYNTAX = syntaxEnvironment();

/**
 * Why `expression` is not a syntactically valid CEL expression, or undefined when it is. A
 * pattern written into it (`matches('…')`) is checked as RE2 too, within the pattern budget
 * (lib/conventions/patterns.ts): it is compiled when the expression runs.
 */
export function celSyntaxProblem(expression: string): string | undefined {
  let ast: AstNode;
  try {
    ast = SYNTAX.parse(expression).ast as unknown as AstNode;
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
  const env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, limits: FILTER_LIMITS })
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
