import * as v from 'valibot';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { CST } from 'yaml';
import { LIMITS, limitNote } from '../limits.ts';
import { celSyntaxProblem } from './cel.ts';
import { ApiError, ERRORS, type ErrorName, type ErrorSpec } from './errors.ts';
import { HTTP_HEADER_NAME } from './fields.ts';
import { onFirstUse } from './on-first-use.ts';
import { re2Pattern, withRe2Budget } from './patterns.ts';

/**
 * Traffic policy documents, as the vendor's newer API takes them: a string (`traffic_policy.value`
 * on edges and routes, `traffic_policy` on cloud endpoints) holding JSON or YAML. Burrow parses the
 * string, checks it as a traffic policy and stores the string exactly as given (responses echo it).
 *
 * A document maps phases to lists of rules:
 *
 *     on_http_request:
 *       - name: block bots
 *         expressions: ["req.headers['user-agent'].exists(h, h.contains('bot'))"]
 *         actions: [{type: deny, config: {status_code: 403}}]
 *
 * Phases: `on_tcp_connect` (every connection), `on_http_request`, `on_http_response`,
 * `on_event_stream_message` (HTTP only: each message of an event-stream answer);
 * the holder says which it has. A rule has an optional `name`, optional `expressions` (CEL,
 * checked for syntax; all must hold for the rule to apply, none = always) and at least one action
 * `{type, config}`. Action types and the phases each runs in follow the vendor's action reference;
 * the configuration of the common actions is checked field by field (other fields of a config are
 * let through, as the vendor adds fields over time), and patterns (url-rewrite and redirect `from`)
 * are RE2, like every pattern in the vendor's Go service.
 *
 * YAML is parsed with the `yaml` package (YAML 1.2 core schema, so `on`/`yes` stay strings, no
 * custom tags; duplicate keys and alias bombs refused). This is the only module that imports it,
 * on the first YAML policy (lib/conventions/on-first-use.ts).
 *
 * The work a document may cause is bounded (lib/limits.ts): YAML bytes and tokens, depth and values before
 * anything else is checked, the characters of its CEL expressions before they are parsed, and its
 * RE2 patterns' estimated cost before they are compiled; each bound's 400 names it and the path.
 */

/** The phases of a traffic policy document. */
export const TRAFFIC_POLICY_PHASES = ['on_tcp_connect', 'on_http_request', 'on_http_response', 'on_event_stream_message'] as const;
export type TrafficPolicyPhase = (typeof TRAFFIC_POLICY_PHASES)[number];

/** The phases of TCP and TLS traffic (edges, `tcp://` and `tls://` endpoints). */
export const CONNECTION_PHASES: readonly TrafficPolicyPhase[] = ['on_tcp_connect'];
/** The phases of an HTTPS edge route: a route is chosen per request, after the connection phase. */
export const HTTP_REQUEST_PHASES: readonly TrafficPolicyPhase[] = ['on_http_request', 'on_http_response', 'on_event_stream_message'];

const TCP: TrafficPolicyPhase = 'on_tcp_connect';
const REQ: TrafficPolicyPhase = 'on_http_request';
const RES: TrafficPolicyPhase = 'on_http_response';
/** Each message of a Server-Sent Events response (`text/event-stream`), after on_http_response. */
const SSE: TrafficPolicyPhase = 'on_event_stream_message';

/** Every action type the vendor documents, with the phases it runs in. */
export const ACTION_PHASES: Readonly<Record<string, readonly TrafficPolicyPhase[]>> = {
  'add-headers': [REQ, RES],
  'ai-gateway': [REQ],
  'basic-auth': [REQ],
  'circuit-breaker': [REQ],
  'close-connection': [TCP, REQ],
  'compress-response': [REQ, RES],
  'custom-response': [REQ, RES],
  deny: [TCP, REQ],
  'forward-internal': [TCP, REQ],
  'http-request': [REQ, RES],
  'jwt-validation': [REQ],
  log: [TCP, REQ, RES],
  oauth: [REQ],
  oidc: [REQ],
  // The reference's name for oidc (snippets/traffic-policy/actions/oidc/config.mdx); `oidc` stays as its alias.
  'openid-connect': [REQ],
  'owasp-crs-request': [REQ],
  'owasp-crs-response': [RES],
  'rate-limit': [REQ],
  redirect: [REQ],
  'remove-headers': [REQ, RES],
  'request-body-find-replace': [REQ],
  'response-body-find-replace': [RES],
  'restrict-ips': [TCP, REQ, RES],
  'set-vars': [TCP, REQ, RES],
  'sse-find-replace': [SSE],
  'terminate-tls': [TCP],
  'url-rewrite': [REQ],
  'verify-webhook': [REQ],
};

const MAX_HEADERS = 10;
const statusCode = (min: number, max: number) =>
  v.pipe(v.number(), v.check((n) => Number.isInteger(n) && n >= min && n <= max, (issue) => `must be an integer from ${min} to ${max} (got ${issue.input})`));
const nonEmpty = v.pipe(v.string(), v.minLength(1, 'must not be empty'));
const headerMap = v.pipe(
  v.record(v.pipe(v.string(), v.regex(HTTP_HEADER_NAME, 'must be an HTTP header name')), v.string()),
  v.check((map) => Object.keys(map).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`),
);
const TLS_VERSIONS = ['1.2', '1.3'] as const;
const tlsVersion = v.picklist(TLS_VERSIONS, (issue) => `must be one of ${TLS_VERSIONS.join(', ')} (got ${JSON.stringify(issue.input)})`);

/** A Go duration such as `60s`, `10m`, `1h30m`, `500ms`, in seconds; NaN when it is not one. */
export function durationSeconds(text: string): number {
  const match = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/.exec(text);
  if (!match || text === '') return Number.NaN;
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0) + Number(match[4] ?? 0) / 1000;
}

const config = <T extends v.ObjectEntries>(entries: T) => v.looseObject(entries);
const optionalConfig = <T extends v.ObjectEntries>(entries: T) => v.optional(v.nullable(config(entries)));

/** Configuration checks of the actions whose fields the vendor's reference spells out. */
const ACTION_CONFIGS: Readonly<Record<string, v.GenericSchema>> = {
  'add-headers': config({
    headers: v.pipe(headerMap, v.check((map) => Object.keys(map).length >= 1, 'needs at least one header')),
  }),
  'remove-headers': config({
    headers: v.pipe(v.array(nonEmpty), v.minLength(1, 'needs at least one header'), v.maxLength(MAX_HEADERS, `at most ${MAX_HEADERS} headers`)),
  }),
  'custom-response': optionalConfig({ status_code: v.optional(statusCode(100, 599)), content: v.optional(v.string()), body: v.optional(v.string()), headers: v.optional(headerMap) }),
  deny: optionalConfig({ status_code: v.optional(statusCode(100, 599)) }),
  'close-connection': optionalConfig({}),
  'url-rewrite': config({ from: v.optional(re2Pattern), to: v.string() }),
  redirect: config({ from: v.optional(re2Pattern), to: v.string(), status_code: v.optional(statusCode(300, 399)), headers: v.optional(headerMap) }),
  log: optionalConfig({ metadata: v.optional(v.record(v.string(), v.unknown())) }),
  'rate-limit': config({
    name: v.pipe(nonEmpty, v.maxLength(1023, 'must be shorter than 1024 characters')),
    algorithm: v.picklist(['sliding_window'], (issue) => `must be sliding_window (got ${JSON.stringify(issue.input)})`),
    capacity: statusCode(1, 2_000_000_000),
    rate: v.pipe(
      v.string(),
      v.check((text) => {
        const seconds = durationSeconds(text);
        return seconds >= 60 && seconds <= 86_400 && seconds % 10 === 0;
      }, (issue) => `must be a duration from 60s to 24h in whole tens of seconds, such as "60s" or "10m" (got ${JSON.stringify(issue.input)})`),
    ),
    bucket_key: v.pipe(v.array(nonEmpty), v.maxLength(10, 'at most 10 bucket keys')),
  }),
  'restrict-ips': config({
    enforce: v.optional(v.boolean()),
    allow: v.optional(v.array(nonEmpty)),
    deny: v.optional(v.array(nonEmpty)),
    ip_policies: v.optional(v.array(nonEmpty)),
  }),
  'basic-auth': config({
    credentials: v.pipe(v.array(v.pipe(v.string(), v.regex(/^[^:]+:.+$/, 'must be "username:password"'))), v.minLength(1, 'needs at least one credential')),
    realm: v.optional(v.string()),
    enforce: v.optional(v.boolean()),
  }),
  'forward-internal': config({ url: nonEmpty }),
  'verify-webhook': config({ provider: nonEmpty, secret: v.optional(v.string()) }),
  'terminate-tls': v.optional(
    v.nullable(
      v.pipe(
        config({ min_version: v.optional(tlsVersion), max_version: v.optional(tlsVersion) }),
        v.forward(v.check((c) => (c.min_version ?? '1.2') <= (c.max_version ?? '1.3'), 'must not be above max_version'), ['min_version']),
      ),
    ),
  ),
};

const anyConfig = v.optional(v.nullable(v.record(v.string(), v.unknown())));

const Action = v.strictObject({ type: v.string(), config: v.optional(v.unknown()) });
const Rule = v.strictObject({
  name: v.optional(v.nullable(v.string())),
  expressions: v.optional(v.nullable(v.array(v.string()))),
  actions: v.pipe(v.array(Action), v.minLength(1, 'a rule needs at least one action')),
});

const EXPECTED: Record<string, string> = { string: 'a string', number: 'a number', boolean: 'a boolean', Object: 'an object', Array: 'a list' };

type Path = readonly (string | number)[];
const at = (path: Path) => path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${key}` : key), '');

/** Checks `value` against `schema`; the first problem as `path: message`, the path relative to `base`. */
function schemaProblem(schema: v.GenericSchema, value: unknown, base: Path): string | undefined {
  const result = v.safeParse(schema, value);
  if (result.success) return undefined;
  const issue = result.issues[0];
  const path = [...base, ...(issue.path ?? []).map((item) => item.key as string | number)];
  if (issue.type === 'strict_object' && issue.expected === 'never') return `${at(path)}: unknown field`;
  if (issue.kind === 'schema' && issue.input === undefined) return `${at(path)}: is required`;
  if (issue.kind === 'schema' && issue.message.startsWith('Invalid type')) return `${at(path)}: must be ${EXPECTED[issue.expected ?? ''] ?? issue.expected} (got ${issue.received})`;
  return `${at(path)}: ${issue.message}`;
}

/** A document that breaks a bound or a rule of Burrow's: its message is the whole reason, path first. */
class DocumentProblem extends Error {}

const yaml = onFirstUse(() => createRequire(import.meta.url)('yaml') as typeof Yaml);
const YAML_BYTES = LIMITS.traffic_policy_yaml_bytes.value;
const TOKENS = LIMITS.traffic_policy_yaml_tokens.value;
const DEPTH = LIMITS.traffic_policy_depth.value;
const NODES = LIMITS.traffic_policy_nodes.value;

/** `path: message`, or the message alone at the top of the document. */
const located = (path: Path, message: string) => (path.length > 0 ? `${at(path)}: ${message}` : message);

/**
 * Parses a JSON or YAML document; throws DocumentProblem for a bound or a duplicate key, and the
 * parser's own error otherwise.
 */
function parseDocument(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return parseYaml(text);
  }
}

/**
 * Reads YAML (1.2 core schema: `on`/`yes` stay strings, no custom tags) within the bounds: at most
 * `traffic_policy_yaml_bytes` (a folded or multi-line scalar is one token, yet costs its length,
 * and a long line slows every token on it); then the lexer and the concrete-syntax parser run
 * token by token and stop at `traffic_policy_yaml_tokens` or past `traffic_policy_depth` levels,
 * before the document is composed (the composer recurses once per level, and costs some
 * microseconds per token). Duplicate keys are found in one pass
 * over the composed document (the yaml package's own check compares each key with every other);
 * aliases expand at most 50 times (alias bombs). Warnings are dropped, not printed (the package's
 * `parse` writes each one to the process's warnings: one line of log per request).
 */
function parseYaml(text: string): unknown {
  const { Composer, Lexer, LineCounter, Parser } = yaml();
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > YAML_BYTES) throw new DocumentProblem(`is not JSON, and as YAML it has ${bytes} bytes, more than ${YAML_BYTES} ${limitNote('traffic_policy_yaml_bytes')}`);
  const lines = new LineCounter();
  lines.addNewLine(0);
  const parser = new Parser(lines.addNewLine);
  const tokens: CST.Token[] = [];
  let count = 0;
  for (const lexeme of new Lexer().lex(text)) {
    if (++count > TOKENS) {
      throw new DocumentProblem(located(cstPath(parser.stack), `the YAML document has more than ${TOKENS} tokens, reading stopped at line ${lines.linePos(parser.offset).line} ${limitNote('traffic_policy_yaml_tokens')}`));
    }
    for (const token of parser.next(lexeme)) tokens.push(token);
    if (parser.stack.length > DEPTH && collectionDepth(parser.stack) > DEPTH) {
      throw new DocumentProblem(located(cstPath(parser.stack).slice(0, DEPTH), `nested deeper than ${DEPTH} levels ${limitNote('traffic_policy_depth')}`));
    }
  }
  for (const token of parser.end()) tokens.push(token);
  const documents = [...new Composer({ schema: 'core', uniqueKeys: false, merge: false }).compose(tokens, true, text.length)];
  if (documents.length > 1) throw new Error('the text holds more than one YAML document');
  const document = documents[0]!;
  const error = document.errors[0];
  if (error) {
    const { line, col } = lines.linePos(error.pos[0]);
    throw new Error(`${error.message} at line ${line}, column ${col}`);
  }
  const duplicate = duplicateKey(document.contents);
  if (duplicate) {
    const { line, col } = lines.linePos(duplicate.offset);
    throw new DocumentProblem(located(duplicate.path, `duplicate key ${JSON.stringify(duplicate.key)} at line ${line}, column ${col}`));
  }
  return document.toJS({ maxAliasCount: 50 });
}

const isCollection = (token: CST.Token) => token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection';

function collectionDepth(stack: readonly CST.Token[]): number {
  return stack.reduce((depth, token) => depth + (isCollection(token) ? 1 : 0), 0);
}

/** Where the parser is: each open collection's last item (its key, or its index in a list), up to a key not read yet. */
function cstPath(stack: readonly CST.Token[]): Path {
  const path: (string | number)[] = [];
  for (const token of stack) {
    if (token.type === 'block-seq' || (token.type === 'flow-collection' && token.start.source === '[')) path.push(Math.max(0, token.items.length - 1));
    else if (token.type === 'block-map' || token.type === 'flow-collection') {
      const key = token.items.at(-1)?.key;
      const scalar = key ? yaml().CST.resolveAsScalar(key) : null;
      if (!scalar) break;
      path.push(scalar.value);
    }
  }
  return path;
}

/** A value met in a walk: its parent's visit and its key there, so that a path is built only for a problem. */
interface Visit {
  readonly value: unknown;
  readonly parent?: Visit;
  readonly key?: string | number;
  readonly depth: number;
}

function pathOf(visit: Visit): Path {
  const path: (string | number)[] = [];
  for (let at: Visit | undefined = visit; at?.parent; at = at.parent) path.push(at.key!);
  return path.reverse();
}

/**
 * The first key (in document order) that repeats in its mapping, found in one pass over the
 * composed document. Keys are equal as the yaml package compares them: scalars of equal value.
 */
function duplicateKey(root: unknown): { path: Path; key: string; offset: number } | undefined {
  const { isMap, isScalar, isSeq } = yaml();
  const pending: Visit[] = [{ value: root, depth: 1 }];
  while (pending.length > 0) {
    const visit = pending.pop()!;
    const node = visit.value;
    const children: Visit[] = [];
    if (isSeq(node)) node.items.forEach((item, i) => children.push({ value: item, parent: visit, key: i, depth: visit.depth + 1 }));
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : '?';
        if (isScalar(pair.key)) {
          const identity = `${typeof pair.key.value}:${key}`;
          if (seen.has(identity)) return { path: pathOf(visit), key, offset: pair.key.range?.[0] ?? 0 };
          seen.add(identity);
        }
        children.push({ value: pair.value, parent: visit, key, depth: visit.depth + 1 });
      }
    }
    for (let i = children.length - 1; i >= 0; i--) pending.push(children[i]!);
  }
  return undefined;
}

/**
 * Why a parsed document is too large (`traffic_policy_nodes`: every mapping, list and scalar
 * counts) or too deep (`traffic_policy_depth`), with the path where it crossed the bound; one
 * walk, in document order, that stops there.
 */
function structureProblem(document: unknown): string | undefined {
  const pending: Visit[] = [{ value: document, depth: 1 }];
  let nodes = 0;
  while (pending.length > 0) {
    const visit = pending.pop()!;
    const { value } = visit;
    if (++nodes > NODES) return located(pathOf(visit), `the document has more than ${NODES} values (mappings, lists and scalars) ${limitNote('traffic_policy_nodes')}`);
    if (value === null || typeof value !== 'object') continue;
    if (visit.depth > DEPTH) return located(pathOf(visit), `nested deeper than ${DEPTH} levels ${limitNote('traffic_policy_depth')}`);
    const keys: (string | number)[] = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
    for (let i = keys.length - 1; i >= 0; i--) {
      pending.push({ value: (value as Record<string | number, unknown>)[keys[i]!], parent: visit, key: keys[i]!, depth: visit.depth + 1 });
    }
  }
  return undefined;
}

/**
 * Whether the CEL expressions of a document hold more than `traffic_policy_expression_chars`
 * together, checked before any is parsed (parsing costs about a microsecond for every few
 * characters); the path of the expression where the total crosses it.
 */
function expressionsProblem(document: Record<string, unknown>): string | undefined {
  const limit = LIMITS.traffic_policy_expression_chars.value;
  let total = 0;
  for (const [phase, rules] of Object.entries(document)) {
    if (!Array.isArray(rules)) continue;
    for (const [r, rule] of rules.entries()) {
      const expressions = (rule as { expressions?: unknown } | null)?.expressions;
      if (!Array.isArray(expressions)) continue;
      for (const [e, expression] of expressions.entries()) {
        total += typeof expression === 'string' ? expression.length : 0;
        if (total > limit) {
          return `${phase}[${r}].expressions[${e}]: the expressions up to this one hold ${total} characters, more than ${limit} together ${limitNote('traffic_policy_expression_chars')}`;
        }
      }
    }
  }
  return undefined;
}

/** Options of a traffic policy check: the phases the holder has (all three when absent). */
export interface TrafficPolicyOptions {
  readonly phases?: readonly TrafficPolicyPhase[];
}

/** An action of a checked traffic policy document: its type and its configuration as written. */
export interface TrafficPolicyAction {
  readonly type: string;
  readonly config?: unknown;
}

/** A rule of a checked traffic policy document. */
export interface TrafficPolicyRule {
  readonly name?: string | null;
  readonly expressions?: readonly string[] | null;
  readonly actions: readonly TrafficPolicyAction[];
}

/** A checked traffic policy document: phases to rules (a phase may be absent or null). */
export type TrafficPolicyDocument = { readonly [phase in TrafficPolicyPhase]?: readonly TrafficPolicyRule[] | null };

/**
 * A problem of a traffic policy: the reason, path first, and the vendor's number for it where its
 * catalogue has one (ERR_NGROK_2200 an expression, 2201 an action type, 2202 an action in a phase
 * it does not run in, 2204 an action's configuration, 2216 an IP policy that does not exist, 2230
 * a phase the protocol does not have, 2235 a cloud endpoint's policy that does not always answer).
 */
export interface TrafficPolicyIssue {
  readonly message: string;
  readonly code?: PolicyErrorName;
}

/** The rows of the error table (lib/conventions/errors.ts) that name traffic policy problems. */
export type PolicyErrorName = Extract<ErrorName, `POLICY_${string}`>;

/** A document's problem, as `trafficPolicyProblem` words it. */
export class TrafficPolicyProblem extends Error {
  constructor(message: string, readonly code?: PolicyErrorName) {
    super(message);
  }
}

type Checked = { document: TrafficPolicyDocument } | { problem: string; code?: PolicyErrorName };

function checkTrafficPolicy(text: string, options: TrafficPolicyOptions): Checked {
  if (text.trim() === '') return { problem: 'must be a traffic policy document (JSON or YAML), not empty' };
  let document: unknown;
  try {
    document = parseDocument(text);
  } catch (error) {
    if (error instanceof DocumentProblem) return { problem: error.message };
    return { problem: `is neither JSON nor YAML: ${String((error as Error).message).split('\n')[0]!.replace(/:$/, '')}` };
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    return { problem: `must be a traffic policy document: a mapping of phases (${TRAFFIC_POLICY_PHASES.join(', ')}) to rules` };
  }
  const bounded = structureProblem(document) ?? expressionsProblem(document as Record<string, unknown>);
  if (bounded) return { problem: bounded };
  const phases = options.phases ?? TRAFFIC_POLICY_PHASES;
  const issue = withRe2Budget((): TrafficPolicyIssue | undefined => {
    for (const [phase, rules] of Object.entries(document)) {
      if (!(TRAFFIC_POLICY_PHASES as readonly string[]).includes(phase)) return { message: `${phase}: unknown phase; phases: ${phases.join(', ')}` };
      if (!phases.includes(phase as TrafficPolicyPhase)) return { message: `${phase}: not a phase of this traffic (it has ${phases.join(', ')})`, code: 'POLICY_PHASE_PROTOCOL' };
      if (rules === null) continue;
      const shape = schemaProblem(v.array(Rule), rules, [phase]);
      const found = shape ? { message: shape } : rulesProblem(phase as TrafficPolicyPhase, rules as v.InferOutput<typeof Rule>[]);
      if (found) return found;
    }
    return undefined;
  });
  return issue ? { problem: issue.message, ...(issue.code ? { code: issue.code } : {}) } : { document: document as TrafficPolicyDocument };
}

/**
 * Why `text` is not a traffic policy for a holder with these phases, or undefined when it is. The
 * reason starts with the path inside the document: `on_http_request[0].actions[1].type: unknown
 * action "x"`.
 */
export function trafficPolicyProblem(text: string, options: TrafficPolicyOptions = {}): string | undefined {
  const checked = checkTrafficPolicy(text, options);
  return 'problem' in checked ? checked.problem : undefined;
}

/**
 * The document in `text`, checked exactly as `trafficPolicyProblem` checks it (what the policy
 * engine evaluates); throws TrafficPolicyProblem with the same reason when it is not one.
 */
export function parseTrafficPolicy(text: string, options: TrafficPolicyOptions = {}): TrafficPolicyDocument {
  const checked = checkTrafficPolicy(text, options);
  if ('problem' in checked) throw new TrafficPolicyProblem(checked.problem, checked.code);
  return checked.document;
}

/**
 * The issue of `message` with the vendor's number `code`, unless the message is a bound of
 * Burrow's (`… (limit re2_total_cost)`): those keep the holder's own number, as lib/limits.ts lists.
 */
export const numbered = (message: string, code: PolicyErrorName): TrafficPolicyIssue => (/\(limit \w+\)/.test(message) ? { message } : { message, code });

function rulesProblem(phase: TrafficPolicyPhase, rules: readonly v.InferOutput<typeof Rule>[]): TrafficPolicyIssue | undefined {
  for (const [r, rule] of rules.entries()) {
    for (const [e, expression] of (rule.expressions ?? []).entries()) {
      const problem = celSyntaxProblem(expression);
      if (problem) return numbered(`${phase}[${r}].expressions[${e}]: not a CEL expression: ${problem}`, 'POLICY_EXPRESSION_INVALID');
    }
    for (const [a, action] of rule.actions.entries()) {
      const where = `${phase}[${r}].actions[${a}]`;
      const runsIn = ACTION_PHASES[action.type];
      if (!runsIn) return { message: `${where}.type: unknown action ${JSON.stringify(action.type)}`, code: 'POLICY_ACTION_UNKNOWN' };
      if (!runsIn.includes(phase)) return { message: `${where}.type: ${action.type} does not run in ${phase} (it runs in ${runsIn.join(', ')})`, code: 'POLICY_ACTION_PHASE' };
      const problem = schemaProblem(ACTION_CONFIGS[action.type] ?? anyConfig, action.config, [phase, r, 'actions', a, 'config']);
      if (problem) return numbered(problem, 'POLICY_ACTION_CONFIG_INVALID');
    }
  }
  return undefined;
}

/**
 * What holds a traffic policy, as the write-time check needs to know it: the phases its traffic
 * has; whether it is a cloud endpoint (whose policy must answer every request or connection
 * itself, ERR_NGROK_2235: nothing behind it would); and which IP policy ids exist in its account
 * (restrict-ips `ip_policies`, ERR_NGROK_2216).
 */
export interface TrafficPolicyHolder {
  readonly phases: readonly TrafficPolicyPhase[];
  readonly cloudEndpoint?: boolean;
  ipPolicyExists(id: string): Promise<boolean>;
}

/** Rules by phase as a holder stores them outside a document (the 0.11.0 API's `policy` module); `labels` name each phase's list in messages (`inbound`). */
export interface LabeledRules {
  readonly rules: TrafficPolicyDocument;
  readonly labels: { readonly [phase in TrafficPolicyPhase]?: string };
}

/**
 * The write-time check of traffic policies (lib/policy/checker.ts): everything that can be known
 * before traffic comes — the document's shape, every expression type-checked against the
 * variables and functions of its phase, every action's configuration, and the vendor's save-time
 * rules. Every write path checks with it, so a request answers 5xx only for what cannot be known
 * on write. Operations reach it as a service (lib/engine/context.ts).
 */
export interface TrafficPolicyChecker {
  /** The first problem of a document (JSON or YAML), or undefined when there is none. */
  document(text: string, holder: TrafficPolicyHolder): Promise<TrafficPolicyIssue | undefined>;
  /** The first problem of rules kept outside a document. */
  rules(rules: LabeledRules, holder: TrafficPolicyHolder): Promise<TrafficPolicyIssue | undefined>;
  /** The first problem of the policy an agent sends on its bind: a document, or the legacy JSON `{Inbound, Outbound}`. */
  agent(text: string, holder: TrafficPolicyHolder): Promise<TrafficPolicyIssue | undefined>;
}

/**
 * The 400 for a policy problem in request field `field`: the vendor's number for the problem
 * where it has one, else the holder's own (`fallback`: 18002 for cloud endpoints, 215 for modules).
 */
export function policyRefusal(issue: TrafficPolicyIssue, field: string, fallback: ErrorSpec): ApiError {
  return new ApiError(issue.code ? ERRORS[issue.code] : fallback, field ? `${field}: ${issue.message}` : issue.message);
}

/** The first problem of a document's shape, syntax and action configurations (what `trafficPolicyProblem` words), with its vendor number. */
export function trafficPolicyIssue(text: string, options: TrafficPolicyOptions = {}): TrafficPolicyIssue | undefined {
  const checked = checkTrafficPolicy(text, options);
  return 'problem' in checked ? { message: checked.problem, ...(checked.code ? { code: checked.code } : {}) } : undefined;
}

/**
 * A request field holding a traffic policy document (JSON or YAML string) for a holder with these
 * phases: a 400 names the field and the path inside the document.
 */
export function trafficPolicyValue(options: TrafficPolicyOptions = {}) {
  return v.pipe(
    v.string(),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const problem = trafficPolicyProblem(dataset.value, options);
      if (problem) addIssue({ message: problem });
    }),
  );
}

/** A place in a document's text: line and column from 1 (the column counts UTF-16 units, as editors do). */
export interface TextPosition {
  readonly line: number;
  readonly col: number;
}

/**
 * Where things are in a document's text, for tools that point at a problem (`burrow policy
 * check`): `position(path)` is where the value at `path` starts (`['on_http_request', 2,
 * 'expressions', 0]`), or where the deepest part of the path that exists starts; `offsetOf(path)`
 * the same as a character offset. JSON is read as the YAML it also is. Undefined for a text that
 * does not parse, or one above `traffic_policy_yaml_bytes` (no positions are then given).
 */
export interface DocumentSourceMap {
  /** The document as data. */
  readonly value: unknown;
  position(path: Path): TextPosition & { readonly found: number; readonly offset: number };
  at(offset: number): TextPosition;
}

export function documentSourceMap(text: string): DocumentSourceMap | undefined {
  if (Buffer.byteLength(text, 'utf8') > YAML_BYTES) return undefined;
  const { LineCounter, parseDocument, isCollection: collection } = yaml();
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, schema: 'core', uniqueKeys: false, merge: false });
  if (document.errors.length > 0) return undefined;
  const at = (offset: number) => lines.linePos(offset);
  return {
    value: document.toJS({ maxAliasCount: 50 }),
    at,
    position(path) {
      let node: unknown = document.contents;
      let found = 0;
      for (const key of path) {
        if (!collection(node)) break;
        const next = node.get(key, true);
        if (next === undefined) break;
        node = next;
        found++;
      }
      const offset = (node as { range?: [number, number, number] } | null)?.range?.[0] ?? 0;
      return { ...at(offset), found, offset };
    },
  };
}
