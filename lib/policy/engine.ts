import { PolicyExpressionProblem, type PolicyExpression } from '../conventions/cel.ts';
import { negotiateEncoding } from './actions/compress-response.ts';
import { ActionFailure, type ActionContext } from './actions/types.ts';
import type { ActionRecord, ConnectOutcome, TlsHandshake, EventMessageOutcome, EventStreamMessage, HttpRequestOutcome, HttpResponseOutcome, PolicyTerminal, RuleRecord } from '../traffic/decisions.ts';
import { createDocumentCache, type DocumentCache } from './documents.ts';
import type { ConnectionFacts, EndpointFacts, HeaderList, HttpRequestFacts, HttpResponseFacts } from '../traffic/facts.ts';
import { LIMITS } from '../limits.ts';
import type { Template } from './interpolation.ts';
import { compilePolicy, type CompiledPolicy, type CompiledRule, type RuleSource } from './program.ts';
import { Scope, secretVariable, Unavailable, type RequestState, type ResponseState } from './scope.ts';
import { createMemoryCircuitBreakers, createMemoryRateLimits } from './state.ts';
import type { PolicyServices } from './services.ts';
import { readVariable } from './variables.ts';
import { lazyPhaseLanguages } from './languages.ts';

/**
 * The policy engine: compiles policies (traffic policy documents, edge modules and agent options,
 * all as rules) and evaluates them phase by phase over traffic descriptions, returning decisions
 * for the ingress to apply. No sockets: the ingress describes what it received and applies what it
 * is told; everything stateful (time, rate limits, circuit breakers, lookups) is injected.
 *
 * Phase semantics, as the vendor documents them: rules run in order; a rule applies when all its
 * expressions are true (none: always); its actions run in order; an action that answers, closes or
 * forwards (deny, custom-response, redirect, close-connection, forward-internal, and restrict-ips,
 * basic-auth, rate-limit, verify-webhook, jwt-validation, oauth/oidc/saml when they refuse or
 * redirect) ends the phase: no later action or rule of that phase runs. A failure is never a
 * silent pass: an expression that fails to evaluate answers 500, a variable or action Burrow cannot
 * provide offline 501, each naming the rule and the reason. When on_http_request ends with an
 * answer, the upstream is not reached and on_http_response does not run.
 */
export interface PolicyEngine {
  /** Compiles rule sources (see sources.ts for documents, edge modules and agent options). */
  compile(sources: readonly RuleSource[]): CompiledPolicy;
  /**
   * Runs on_tcp_connect for a new connection. With `handshake`, terminate-tls terminates TLS when it
   * runs (later rules read the session); without, the ingress terminates after the phase as `tls` says.
   */
  connect(policy: CompiledPolicy, endpoint: EndpointFacts, conn: ConnectionFacts, handshake?: TlsHandshake): Promise<ConnectOutcome>;
  /** Starts an HTTP exchange: its request phase, then (when the upstream answers) its response phase. */
  http(policy: CompiledPolicy, endpoint: EndpointFacts, conn: ConnectionFacts, request: HttpRequestFacts): HttpExchange;
}

/** One HTTP request's way through a policy. */
export interface HttpExchange {
  /** Runs on_http_request. */
  request(): Promise<HttpRequestOutcome>;
  /** Runs on_http_response over the upstream's answer (and counts it for circuit breakers). */
  response(response: HttpResponseFacts): Promise<HttpResponseOutcome>;
  /** Tells the exchange the upstream gave no answer (counted as a failure by circuit breakers). */
  upstreamFailed(): Promise<void>;
  /** Whether the policy has on_event_stream_message rules (else an event stream is relayed untouched). */
  readonly handlesEventStream: boolean;
  /**
   * Whether the policy reads `req.trailers` (request() reads the request body to its end first) and
   * `res.trailers` (the host must read the response body to its end and give its `trailers` to response()).
   */
  readonly readsTrailers: CompiledPolicy['readsTrailers'];
  /** Runs on_event_stream_message over one message of the (event stream) response, after `response()`. */
  eventMessage(message: EventStreamMessage): Promise<EventMessageOutcome>;
}

type ResolvedServices = ActionContext['services'];

export function createPolicyEngine(services: PolicyServices): PolicyEngine {
  const resolved: ResolvedServices = {
    ...services,
    rateLimits: services.rateLimits ?? createMemoryRateLimits(),
    circuitBreakers: services.circuitBreakers ?? createMemoryCircuitBreakers(),
  };
  const languages = lazyPhaseLanguages(services.random ?? Math.random);
  const documents = createDocumentCache(services);
  /** `book`: the account's secrets of this request or connection, read when a phase first needs them. */
  const run = async (policy: CompiledPolicy, scope: Scope, book: AccountSecrets) => {
    await readSecrets(policy, scope, services, book);
    return runPhase(policy.phases[scope.phase], scope, resolved, documents);
  };
  const accountSecrets = (endpoint: EndpointFacts): AccountSecrets => {
    let read: ReturnType<AccountSecrets> | undefined;
    return () => (read ??= services.accountSecrets ? services.accountSecrets(endpoint) : Promise.reject(new Error('no vaults are given to this policy engine')));
  };

  return {
    compile: (sources) => compilePolicy(languages, sources),

    async connect(policy, endpoint, conn, handshake) {
      const scope = new Scope('on_tcp_connect', endpoint, conn, services.clock.now());
      if (handshake) scope.handshake = handshake;
      const { terminal, rules } = await run(policy, scope, accountSecrets(endpoint));
      return { ...(terminal ? { terminal } : {}), ...(scope.tls ? { tls: scope.tls } : {}), logs: scope.logs, rules };
    },

    http(policy, endpoint, conn, facts) {
      const state: RequestState = {
        method: facts.method,
        url: facts.url,
        version: facts.version,
        headers: facts.headers.map(([name, value]) => [name, value]),
        receivedAt: facts.receivedAt,
        ...(facts.body ? { body: facts.body } : {}),
      };
      let requestScope: Scope | undefined;
      let responseState: ResponseState | undefined;
      const book = accountSecrets(endpoint);
      const report = async (failed: boolean) => {
        const now = services.clock.now();
        for (const listener of requestScope?.onUpstreamOutcome.splice(0) ?? []) await listener(failed, now);
      };
      return {
        async request() {
          requestScope = new Scope('on_http_request', endpoint, conn, services.clock.now(), state);
          if (policy.readsTrailers.request) await readTrailers(requestScope, facts);
          const { terminal, rules } = await run(policy, requestScope, book);
          const body = state.bodyReplaced && state.bodyRead?.bytes ? { body: state.bodyRead.bytes } : {};
          return { ...(terminal ? { terminal } : {}), request: { method: state.method, url: state.url, headers: state.headers, ...body }, logs: requestScope.logs, rules };
        },
        async response(facts) {
          await report(facts.status >= 500);
          const copy = (fields: HeaderList) => fields.map(([name, value]): [string, string] => [name, value]);
          const response = { status: facts.status, headers: copy(facts.headers), ...(facts.trailers ? { trailers: copy(facts.trailers) } : {}) };
          responseState = response;
          const scope = new Scope('on_http_response', endpoint, conn, services.clock.now(), state, response);
          scope.compressionAllowed = requestScope?.compressionAllowed;
          const { terminal, rules } = await run(policy, scope, book);
          const encoding = !terminal && scope.compressionAllowed ? negotiateEncoding(state, response, scope.compressionAllowed).encoding : undefined;
          const replacements = !terminal && scope.bodyReplacements.length > 0 ? { bodyReplacements: scope.bodyReplacements } : {};
          return { ...(terminal ? { terminal } : {}), response, ...(encoding ? { compression: encoding } : {}), ...replacements, logs: scope.logs, rules };
        },
        upstreamFailed: () => report(true),
        handlesEventStream: policy.phases.on_event_stream_message.length > 0,
        readsTrailers: policy.readsTrailers,
        async eventMessage(message) {
          const scope = new Scope('on_event_stream_message', endpoint, conn, services.clock.now(), state, responseState);
          scope.eventMessage = { ...message };
          const { terminal, rules } = await run(policy, scope, book);
          return { ...(terminal ? { terminal } : {}), message: scope.eventMessage, logs: scope.logs, rules };
        },
      };
    },
  };
}

/**
 * `req.trailers`: the request body read to its end (at most `policy_inspected_body_bytes`, as the
 * body-reading actions do) so its trailers are known; none without a body; unknown (reading them
 * answers 501) past the bound.
 */
async function readTrailers(scope: Scope, facts: HttpRequestFacts): Promise<void> {
  const bytes = await scope.body(LIMITS.policy_inspected_body_bytes.value);
  if (bytes === null) return;
  const trailers = bytes === undefined ? [] : facts.body?.trailers?.();
  if (trailers) scope.request!.trailers = trailers.map(([name, value]) => [name, value]);
}

/** The account's secrets, read once for a request (or connection) when a phase first needs them. */
type AccountSecrets = () => Promise<(vault: string, name: string) => string | undefined>;

/**
 * Reads the vault secrets the policy names into the scope (secrets.get), and the account's secrets
 * when a call's arguments are computed; one that cannot be read stays absent, and a call of it
 * answers 501 naming it.
 */
async function readSecrets(policy: CompiledPolicy, scope: Scope, services: PolicyServices, book: AccountSecrets): Promise<void> {
  if (policy.computedSecrets) {
    try {
      scope.accountSecrets = await book();
    } catch (error) {
      scope.secretsMissing = `the vaults could not be read: ${(error as Error).message}`;
    }
  }
  if (policy.secrets.length === 0) return;
  if (!services.secret) {
    scope.secretsMissing = 'no vaults are given to this policy engine';
    return;
  }
  for (const [vault, name] of policy.secrets) {
    try {
      const value = await services.secret(vault, name, scope.endpoint);
      if (value !== undefined) scope.secrets.set(secretVariable(vault, name), value);
    } catch (error) {
      scope.secretsMissing = `the vaults could not be read: ${(error as Error).message}`;
    }
  }
}

/** What stopped a rule: the terminal to answer and the error text for the record. */
function failure(error: unknown, where: string): { terminal: PolicyTerminal; error: string } {
  if (error instanceof ActionFailure) return { terminal: { kind: 'error', error: error.error }, error: error.message };
  const status = error instanceof Unavailable ? 501 : 500;
  const message = `${where}: ${error instanceof Error ? error.message : String(error)}`;
  return { terminal: { kind: 'error', error: { status, message, headers: [] } }, error: message };
}

async function runPhase(rules: readonly CompiledRule[], scope: Scope, services: ResolvedServices, documents: DocumentCache): Promise<{ terminal?: PolicyTerminal; rules: RuleRecord[] }> {
  const records: RuleRecord[] = [];
  const evaluate = (expression: PolicyExpression) => expression.evaluate((name) => readVariable(scope, name));
  for (const [index, rule] of rules.entries()) {
    const base = { phase: scope.phase, index, source: rule.source, ...(rule.name ? { name: rule.name } : {}) };
    const where = `${rule.source} ${scope.phase} rule ${rule.name ? JSON.stringify(rule.name) : index}`;
    let matched = true;
    for (const [e, compiled] of rule.expressions.entries()) {
      try {
        if ('problem' in compiled) throw new PolicyExpressionProblem(compiled.problem);
        const value = evaluate(compiled.expression);
        if (typeof value !== 'boolean') throw new PolicyExpressionProblem(`expressions[${e}] must be a condition (a bool); it gave ${typeof value === 'bigint' ? 'an int' : typeof value}`);
        if (!value) {
          matched = false;
          break;
        }
      } catch (error) {
        const { terminal, error: message } = failure(error, `${where}, expression ${JSON.stringify(compiled.source)}`);
        records.push({ ...base, matched: false, actions: [], error: message });
        return { terminal, rules: records };
      }
    }
    if (!matched) {
      records.push({ ...base, matched: false, actions: [] });
      continue;
    }
    const actions: ActionRecord[] = [];
    for (const action of rule.actions) {
      try {
        if ('problem' in action) throw new PolicyExpressionProblem(`action ${action.type}: ${action.problem}`);
        const context = actionContext(scope, services, documents, action.key, action.type, evaluate);
        const result = await action.definition.run(action.config, context);
        actions.push({ type: action.type, ended: result.end !== undefined, ...(result.note ? { note: result.note } : {}) });
        if (result.end) {
          records.push({ ...base, matched: true, actions });
          return { terminal: result.end, rules: records };
        }
      } catch (error) {
        const { terminal, error: message } = failure(error, where);
        actions.push({ type: action.type, ended: true, note: message });
        records.push({ ...base, matched: true, actions, error: message });
        return { terminal, rules: records };
      }
    }
    records.push({ ...base, matched: true, actions });
  }
  return { rules: records };
}

function actionContext(scope: Scope, services: ResolvedServices, documents: DocumentCache, key: string, type: string, evaluate: (expression: PolicyExpression) => unknown): ActionContext {
  const interpolated = <T>(render: () => T, field: string): T => {
    try {
      return render();
    } catch (error) {
      if (error instanceof PolicyExpressionProblem) {
        throw new ActionFailure({ status: 500, code: 'ERR_NGROK_3900', message: `CEL interpolation was unsuccessful in action ${type} field ${field}: ${error.message}`, headers: [] });
      }
      throw error;
    }
  };
  return {
    scope,
    services,
    documents,
    key,
    evaluate,
    evaluateWith: (expression, variables) => expression.evaluate((name) => (Object.hasOwn(variables, name) ? variables[name] : readVariable(scope, name))),
    text: (template: Template, field: string) => interpolated(() => template.text(evaluate), field),
    value: (template: Template, field: string) => interpolated(() => template.value(evaluate), field),
  };
}

