import { Environment, type ParseResult } from '@marcbachmann/cel-js';

/**
 * Common Expression Language (CEL), the vendor's language for list filters (`filter=obj.… == …`)
 * and for traffic-policy rule expressions. This is the only module that imports the CEL library,
 * @marcbachmann/cel-js: pure JavaScript with no dependencies, a parser with structural limits
 * (AST nodes, depth) and an AST that can be walked. (@bufbuild/cel, the other maintained one,
 * needs @bufbuild/protobuf and its own RE2 package; Burrow evaluates plain JSON objects only.)
 */

/** The longest `filter` Burrow evaluates, in characters (the vendor publishes no limit). */
export const MAX_FILTER_LENGTH = 2048;

const LIMITS = { maxAstNodes: 256, maxDepth: 32, maxListElements: 100, maxMapEntries: 0, maxCallArguments: 4 };

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

/** A 400 reason for a bad filter (the caller wraps it in its error). */
export class FilterProblem extends Error {}

function syntaxEnvironment(): Environment {
  return new Environment({ unlistedVariablesAreDyn: true, homogeneousAggregateLiterals: false, enableOptionalTypes: true, limits: { ...LIMITS, maxAstNodes: 2048, maxMapEntries: 100 } });
}

const SYNTAX = syntaxEnvironment();

/** Why `expression` is not a syntactically valid CEL expression, or undefined when it is. */
export function celSyntaxProblem(expression: string): string | undefined {
  try {
    SYNTAX.parse(expression);
    return undefined;
  } catch (error) {
    return firstLine(error);
  }
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
export function compileFilter(expression: string, now: () => Date): FilterPredicate {
  if (expression.trim() === '') throw new FilterProblem('must not be empty');
  if (expression.length > MAX_FILTER_LENGTH) throw new FilterProblem(`must be at most ${MAX_FILTER_LENGTH} characters (got ${expression.length})`);
  const env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, limits: LIMITS })
    .registerVariable('obj', 'map')
    .registerFunction('now(): google.protobuf.Timestamp', () => now())
    .registerFunction('daysAgo(int): google.protobuf.Timestamp', (days: bigint) => new Date(now().getTime() - Number(days) * DAY_MS));
  let parsed: ParseResult;
  try {
    parsed = env.parse(expression);
  } catch (error) {
    throw new FilterProblem(firstLine(error));
  }
  checkFilterNode(parsed.ast as unknown as AstNode);
  const checked = parsed.check();
  if (!checked.valid) throw new FilterProblem(firstLine(checked.error));
  if (checked.type !== 'bool' && checked.type !== 'dyn') throw new FilterProblem(`must be a condition (a bool), not a ${checked.type}`);
  return (obj) => {
    let result: unknown;
    try {
      result = parsed({ obj: celValue(obj) });
    } catch (error) {
      throw new FilterProblem(firstLine(error));
    }
    if (typeof result !== 'boolean') throw new FilterProblem(`must be a condition (a bool); it gave ${typeof result === 'bigint' ? 'an int' : typeof result}`);
    return result;
  };
}

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
