import { systemClock } from '../conventions/clock.ts';
import { ERRORS } from '../conventions/errors.ts';
import { documentSourceMap, TRAFFIC_POLICY_PHASES, type DocumentSourceMap, type TrafficPolicyHolder, type TrafficPolicyIssue, type TrafficPolicyPhase } from '../conventions/traffic-policy.ts';
import type { PolicyTerminal, RuleRecord, OutgoingRequest, PolicyLogEntry, Phase } from '../traffic/decisions.ts';
import type { ConnectionFacts, EndpointFacts, HeaderList } from '../traffic/facts.ts';
import { createTrafficPolicyChecker } from './checker.ts';
import { createPolicyEngine } from './engine.ts';
import type { PolicyServices } from './services.ts';
import { trafficPolicySource } from './sources.ts';

/**
 * A traffic policy checked and tried without any server: what `burrow policy check|test` and
 * `burrow-tunnels/testing`'s checkPolicy/testPolicy do, over a document's text. The check is the
 * write-time check every Burrow write path runs (checker.ts), reporting every problem rather than
 * the first, each at its line and column; the test runs the engine the ingress runs over one
 * described request.
 */

/** What holds the policy, as the check needs to know it. */
export interface PolicyCheckOptions {
  /** The phases its traffic has (default: all three, an HTTP(S) endpoint's). */
  readonly phases?: readonly TrafficPolicyPhase[];
  /** A cloud endpoint's policy: it must always answer (ERR_NGROK_2235). */
  readonly cloudEndpoint?: boolean;
  /** Whether an IP policy id exists (restrict-ips `ip_policies`, ERR_NGROK_2216); default: every id does, as nothing here knows an account. */
  ipPolicyExists?(id: string): Promise<boolean>;
}

/** One problem of a document: where it is (from 1), the reason (path first) and the vendor's code where it has one (`ERR_NGROK_2200`). */
export interface PolicyProblem {
  readonly line: number;
  readonly col: number;
  readonly message: string;
  readonly code?: string;
}

const checker = createTrafficPolicyChecker();

/** The vendor's name of a problem's number (`ERR_NGROK_2200`), whatever prefix this Burrow writes. */
const vendorCode = (issue: TrafficPolicyIssue) => (issue.code ? `ERR_NGROK_${ERRORS[issue.code].code}` : undefined);

/** `on_http_request[2].actions[0].config.to: …` → the path `['on_http_request', 2, 'actions', 0, 'config', 'to']`. */
function leadingPath(message: string): (string | number)[] {
  const match = /^([a-z_]+)((?:\[\d+\]|\.[A-Za-z_][\w-]*)*)(?::|$)/.exec(message);
  if (!match) return [];
  const path: (string | number)[] = [match[1]!];
  for (const [, index, key] of match[2]!.matchAll(/\[(\d+)\]|\.([A-Za-z_][\w-]*)/g)) path.push(index !== undefined ? Number(index) : key!);
  return path;
}

/**
 * Where a problem is in the text: the value its path names; inside an expression, the line and
 * column the CEL parser named (`at line 2, column 3`, `at column 24`) where the expression's text
 * stands unescaped in the document; a text that does not parse, where its parser stopped.
 */
function locate(text: string, map: DocumentSourceMap | undefined, message: string): { line: number; col: number } {
  const inner = /at (?:line (\d+), )?column (\d+)/.exec(message);
  if (!map) return inner && inner[1] ? { line: Number(inner[1]), col: Number(inner[2]) } : { line: 1, col: 1 };
  const path = leadingPath(message);
  const start = map.position(path);
  if (inner && start.found === path.length && path.at(-2) === 'expressions') {
    const expression = expressionAt(text, path);
    const line = expression?.split('\n')[Number(inner[1] ?? 1) - 1];
    const found = line ? text.indexOf(line, start.offset) : -1;
    if (found >= 0) return map.at(found + Number(inner[2]) - 1);
  }
  return { line: start.line, col: start.col };
}

/** The expression text at `path` of the parsed document. */
function expressionAt(text: string, path: readonly (string | number)[]): string | undefined {
  let value: unknown = parsed(text);
  for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<string | number, unknown>)[key] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** The document as data, or undefined when it does not parse (JSON first, then YAML through the source map's parser). */
function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return documentSourceMap(text)?.value;
  }
}

/**
 * Every problem of the document `text`, in document order; none when Burrow (and the vendor)
 * would store it. The first problem is the one a write path answers with; the others are found by
 * checking each rule alone (a rule's problems do not depend on the other rules), and the
 * document-wide rules (a cloud endpoint's terminating action, the bounds) on the whole.
 */
export async function checkPolicyDocument(text: string, options: PolicyCheckOptions = {}): Promise<PolicyProblem[]> {
  const holder: TrafficPolicyHolder = {
    phases: options.phases ?? TRAFFIC_POLICY_PHASES,
    ...(options.cloudEndpoint ? { cloudEndpoint: true } : {}),
    ipPolicyExists: options.ipPolicyExists ?? (async () => true),
  };
  const first = await checker.document(text, holder);
  if (!first) return [];
  const issues: TrafficPolicyIssue[] = [first];
  const document = parsed(text);
  if (document !== null && typeof document === 'object' && !Array.isArray(document)) {
    const alone = { ...holder, cloudEndpoint: false };
    for (const [phase, rules] of Object.entries(document)) {
      if (!Array.isArray(rules)) continue;
      for (const [r, rule] of rules.entries()) {
        const issue = await checker.document(JSON.stringify({ [phase]: [rule] }), alone);
        if (issue) issues.push({ ...issue, message: issue.message.replace(/^(\w+)\[0\]/, `$1[${r}]`) });
      }
    }
  }
  const map = documentSourceMap(text);
  const seen = new Set<string>();
  const problems: (PolicyProblem & { order: number })[] = [];
  for (const issue of issues) {
    if (seen.has(issue.message)) continue;
    seen.add(issue.message);
    const { line, col } = locate(text, map, issue.message);
    const code = vendorCode(issue);
    problems.push({ line, col, message: issue.message, ...(code ? { code } : {}), order: line * 1e6 + col });
  }
  return problems.sort((a, b) => a.order - b.order).map(({ order: _, ...problem }) => problem);
}

/** A problem as a compiler writes it: `FILE:LINE:COL: message (ERR_NGROK_2200)`. */
export const formatPolicyProblem = (file: string, problem: PolicyProblem) => `${file}:${problem.line}:${problem.col}: ${problem.message}${problem.code ? ` (${problem.code})` : ''}`;

/** The request a policy test sends. */
export interface PolicyTestRequest {
  readonly method: string;
  /** Absolute: `https://app.example/x?y=1`; its origin is the endpoint's URL. */
  readonly url: string;
  /** Header fields as sent (Host is added from the URL unless given). */
  readonly headers?: HeaderList;
  /** The client's address (default 127.0.0.1). */
  readonly clientIp?: string;
  /** The request body, for actions that read it. */
  readonly body?: string;
}

/** One phase as it ran: the rules evaluated (whether each matched, the actions it ran) and its log entries. */
export interface PolicyTestPhase {
  readonly phase: Phase;
  readonly rules: readonly RuleRecord[];
  readonly logs: readonly PolicyLogEntry[];
}

/** What a policy test found: the phases that ran, and how the request ended. */
export interface PolicyTestReport {
  readonly phases: readonly PolicyTestPhase[];
  /** How a phase ended the traffic (an answer, an error page, a closed connection, a forward); absent: it goes upstream. */
  readonly terminal?: PolicyTerminal;
  /** The request the upstream would receive, when no phase ended the traffic. */
  readonly upstream?: OutgoingRequest;
}

/** Parses `GET https://app.example/x` (a bare URL means GET). */
export function parseTestRequest(text: string): { method: string; url: string } {
  const match = /^\s*(?:([A-Za-z]+)\s+)?(\S+)\s*$/.exec(text);
  const url = match?.[2];
  if (!url || !/^https?:\/\/[^/?#]+/i.test(url) || !URL.canParse(url)) throw new Error(`the request must be 'METHOD URL' with an absolute http(s) URL, such as 'GET https://app.example/x' (got ${JSON.stringify(text)})`);
  return { method: (match[1] ?? 'GET').toUpperCase(), url };
}

/**
 * Runs the policy in `text` over one request, as the ingress would for an endpoint at the
 * request's origin: on_tcp_connect, then on_http_request. The engine reads only what `services`
 * gives it (a system clock and nothing else by default: actions that need IP policies or remote
 * documents answer the 5xx they would without them). Throws when the document has a problem
 * (check it first).
 */
export async function testPolicyDocument(text: string, request: PolicyTestRequest, services: Partial<PolicyServices> = {}): Promise<PolicyTestReport> {
  const engine = createPolicyEngine({ clock: systemClock, ...services });
  const policy = engine.compile([trafficPolicySource(text)]);
  if (policy.problems.length > 0) throw new Error(`the policy has problems: ${policy.problems.join('; ')}`);
  const url = new URL(request.url);
  const https = url.protocol === 'https:';
  const endpoint: EndpointFacts = { id: 'ep_policy_test', url: url.origin };
  const now = systemClock.now();
  const conn: ConnectionFacts = {
    clientIp: request.clientIp ?? '127.0.0.1',
    clientPort: 50000,
    serverIp: '127.0.0.1',
    serverPort: Number(url.port || (https ? 443 : 80)),
    startedAt: now,
    ...(https ? { tls: { version: '1.3', cipherSuite: 'TLS_AES_128_GCM_SHA256', sni: url.hostname } } : {}),
  };
  const headers = request.headers ?? [];
  const connect = await engine.connect(policy, endpoint, conn);
  const phases: PolicyTestPhase[] = [{ phase: 'on_tcp_connect', rules: connect.rules, logs: connect.logs }];
  if (connect.terminal) return { phases, terminal: connect.terminal };
  const bytes = request.body === undefined ? undefined : Buffer.from(request.body);
  const exchange = engine.http(policy, endpoint, conn, {
    method: request.method,
    url: request.url,
    version: '1.1',
    headers: headers.some(([name]) => name.toLowerCase() === 'host') ? headers : [['Host', url.host], ...headers],
    receivedAt: now,
    ...(bytes ? { body: { read: async (max: number) => (bytes.length > max ? undefined : new Uint8Array(bytes)) } } : {}),
  });
  const outcome = await exchange.request();
  phases.push({ phase: 'on_http_request', rules: outcome.rules, logs: outcome.logs });
  return outcome.terminal ? { phases, terminal: outcome.terminal } : { phases, upstream: outcome.request };
}

const headerLines = (headers: HeaderList) => headers.map(([name, value]) => `  ${name}: ${value}`);

/** A report as `burrow policy test` prints it. */
export function formatPolicyTest(report: PolicyTestReport): string {
  const lines: string[] = [];
  for (const { phase, rules, logs } of report.phases) {
    lines.push(`${phase}:`);
    if (rules.length === 0) lines.push('  (no rules)');
    for (const rule of rules) {
      const name = rule.name ? ` ${JSON.stringify(rule.name)}` : '';
      lines.push(`  rule ${rule.index}${name}: ${rule.error && !rule.matched ? `failed — ${rule.error}` : rule.matched ? 'matched' : 'not matched'}${rule.error && rule.matched ? ` — ${rule.error}` : ''}`);
      for (const action of rule.actions) lines.push(`    ${action.type}${action.ended ? ' (ended the phase)' : ''}${action.note ? `: ${action.note}` : ''}`);
    }
    for (const log of logs) lines.push(`  log: ${JSON.stringify(log.metadata)}`);
  }
  const { terminal, upstream } = report;
  if (upstream) lines.push('upstream receives:', `  ${upstream.method} ${upstream.url}`, ...headerLines(upstream.headers));
  else if (terminal?.kind === 'respond') {
    lines.push(`answer: ${terminal.response.status}`, ...headerLines(terminal.response.headers));
    if (terminal.response.body) lines.push('', terminal.response.body);
  } else if (terminal?.kind === 'error') lines.push(`answer: ${terminal.error.status}${terminal.error.code ? ` ${terminal.error.code}` : ''} — ${terminal.error.message}`, ...headerLines(terminal.error.headers));
  else if (terminal?.kind === 'close') lines.push(`connection closed: ${terminal.reason}`);
  else if (terminal?.kind === 'forward') lines.push(`forwarded to ${terminal.url} (that endpoint's policy is not run here)`);
  return `${lines.join('\n')}\n`;
}
