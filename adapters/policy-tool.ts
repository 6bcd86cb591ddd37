import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { HTTP_HEADER_NAME } from '../lib/conventions/fields.ts';
import { TRAFFIC_POLICY_PHASES, type TrafficPolicyPhase } from '../lib/conventions/traffic-policy.ts';
import {
  checkPolicyDocument,
  formatPolicyProblem,
  formatPolicyTest,
  parseTestRequest,
  testPolicyDocument,
  type PolicyCheckOptions,
  type PolicyProblem,
  type PolicyTestReport,
} from '../lib/policy/tools.ts';
import { fetchLocalJson, policyHttpRequest } from './ingress/local-documents.ts';

/**
 * Traffic policy files checked and tried on this machine, without a server: `burrow policy
 * check|test` (runPolicyCommand) and `burrow-tunnels/testing`'s checkPolicy/testPolicy. The work is
 * lib/policy/tools.ts's; this reads the files and the command line, and gives actions the
 * documents and http-request calls as the ingress does (local-documents.ts).
 */

/** A problem of one file. */
export interface PolicyFileProblem extends PolicyProblem {
  readonly file: string;
}

/** What checking files found: `ok` when none has a problem; `text`, the problems as the command prints them. */
export interface PolicyCheckResult {
  readonly ok: boolean;
  readonly problems: readonly PolicyFileProblem[];
  readonly text: string;
}

/** Checks traffic policy files (JSON or YAML) as every Burrow write path does, reporting every problem with its line and column. */
export async function checkPolicyFiles(files: readonly string[], options: PolicyCheckOptions = {}): Promise<PolicyCheckResult> {
  const problems: PolicyFileProblem[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      problems.push({ file, line: 1, col: 1, message: `cannot read the file: ${(error as Error).message}` });
      continue;
    }
    for (const problem of await checkPolicyDocument(text, options)) problems.push({ file, ...problem });
  }
  return { ok: problems.length === 0, problems, text: problems.map((problem) => `${formatPolicyProblem(problem.file, problem)}\n`).join('') };
}

/** The request of a policy test: `'GET https://app.example/x'` and its parts. */
export interface PolicyTestOptions {
  /** `METHOD URL` (a bare URL means GET). */
  readonly request: string;
  /** Header fields, `Name: value` each. */
  readonly headers?: readonly string[];
  readonly clientIp?: string;
  readonly body?: string;
}

/** A policy test's report; `text`, as the command prints it. */
export interface PolicyTestResult extends PolicyTestReport {
  readonly text: string;
}

/** `Name: value` → `[name, value]`. */
function headerField(text: string): [string, string] {
  const colon = text.indexOf(':');
  const name = colon > 0 ? text.slice(0, colon).trim() : '';
  if (!HTTP_HEADER_NAME.test(name)) throw new Error(`a header must be 'Name: value' (got ${JSON.stringify(text)})`);
  return [name, text.slice(colon + 1).trim()];
}

/**
 * Runs the policy in `file` over one request (on_tcp_connect, then on_http_request): the rules
 * that matched, the actions taken, and the answer or the request the upstream would receive.
 * Throws naming the problems when the file is no valid policy.
 */
export async function testPolicyFile(file: string, options: PolicyTestOptions): Promise<PolicyTestResult> {
  const { method, url } = parseTestRequest(options.request);
  const headers = (options.headers ?? []).map(headerField);
  const checked = await checkPolicyFiles([file]);
  if (!checked.ok) throw new Error(`${file} is no valid traffic policy:\n${checked.text}`);
  const text = await readFile(file, 'utf8');
  const report = await testPolicyDocument(text, { method, url, headers, ...(options.clientIp ? { clientIp: options.clientIp } : {}), ...(options.body !== undefined ? { body: options.body } : {}) }, { fetchJson: fetchLocalJson, httpRequest: policyHttpRequest });
  return { ...report, text: formatPolicyTest(report) };
}

export const POLICY_HELP = `Usage: burrow policy check [--cloud-endpoint] [--phases P,P] FILE…
       burrow policy test FILE --request 'METHOD URL' [-H 'Name: value']… [--client-ip IP] [--body TEXT] [--json]

check   checks traffic policy files (JSON or YAML) as Burrow and the vendor check them on save;
        prints each problem as FILE:LINE:COL: message (ERR_NGROK_…); exit 0 when there is none, 1
        otherwise. --cloud-endpoint: the policy of a cloud endpoint, which must always answer
        (ERR_NGROK_2235); --phases: the phases the traffic has (default: ${TRAFFIC_POLICY_PHASES.join(',')};
        on_tcp_connect alone for TCP and TLS endpoints)
test    runs a policy over one request (on_tcp_connect, then on_http_request) for an endpoint at the
        request's origin and prints the rules that matched, the actions taken, and the answer or
        the request the upstream would receive; --json prints the report as JSON
`;

/** Writes output; the command's streams (or a test's). */
export interface PolicyCommandIo {
  out(text: string): void;
  err(text: string): void;
}

/** `burrow policy …`: the exit code (0 fine, 1 problems found, 2 a usage error). */
export async function runPolicyCommand(argv: readonly string[], io: PolicyCommandIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === 'check') {
      const { values, positionals } = parseArgs({ args: [...rest], allowPositionals: true, options: { 'cloud-endpoint': { type: 'boolean' }, phases: { type: 'string' } } });
      if (positionals.length === 0) throw new UsageError('policy check needs at least one FILE');
      const phases = values.phases?.split(',').map((phase) => phase.trim());
      const unknown = phases?.find((phase) => !(TRAFFIC_POLICY_PHASES as readonly string[]).includes(phase));
      if (unknown !== undefined) throw new UsageError(`--phases: unknown phase ${JSON.stringify(unknown)}; phases: ${TRAFFIC_POLICY_PHASES.join(', ')}`);
      const result = await checkPolicyFiles(positionals, { ...(phases ? { phases: phases as TrafficPolicyPhase[] } : {}), ...(values['cloud-endpoint'] ? { cloudEndpoint: true } : {}) });
      io.out(result.text);
      return result.ok ? 0 : 1;
    }
    if (command === 'test') {
      const { values, positionals } = parseArgs({
        args: [...rest],
        allowPositionals: true,
        options: { request: { type: 'string' }, header: { type: 'string', short: 'H', multiple: true }, 'client-ip': { type: 'string' }, body: { type: 'string' }, json: { type: 'boolean' } },
      });
      if (positionals.length !== 1) throw new UsageError('policy test takes one FILE');
      if (values.request === undefined) throw new UsageError("policy test needs --request 'METHOD URL'");
      let result: PolicyTestResult;
      try {
        parseTestRequest(values.request);
        (values.header ?? []).forEach(headerField);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
      try {
        result = await testPolicyFile(positionals[0]!, {
          request: values.request,
          ...(values.header ? { headers: values.header } : {}),
          ...(values['client-ip'] ? { clientIp: values['client-ip'] } : {}),
          ...(values.body !== undefined ? { body: values.body } : {}),
        });
      } catch (error) {
        io.err(`burrow: ${(error as Error).message}\n`);
        return 1;
      }
      const { text, ...report } = result;
      io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : text);
      return 0;
    }
    if (command === undefined || command === '--help' || command === '-h') {
      io.out(POLICY_HELP);
      return command === undefined ? 2 : 0;
    }
    throw new UsageError(`unknown policy command '${command}'; the commands are check and test`);
  } catch (error) {
    if (!(error instanceof UsageError) && !(error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw error;
    io.err(`burrow: ${(error as Error).message}\nRun burrow policy --help for the options.\n`);
    return 2;
  }
}

class UsageError extends Error {}
