import { createHash, timingSafeEqual } from 'node:crypto';
import type { ControlOperation, Instance, Operation, OperationInput, Principal, RequestMeta } from './context.ts';
import { knownAccount } from './accounts.ts';
import { ApiError, ERRORS, errorBody, fail, type ErrorBody } from '../conventions/errors.ts';
import type { QueryParams } from '../conventions/paging.ts';
import { StoreUnavailableError, StoreWriteError, type Read } from '../store.ts';
import { DROPPED } from '../journal/journal.ts';
import type { RequestJournal, RequestRecord } from '../journal/request-journal.ts';
import type { ReplayRequest } from '../journal/replay.ts';
import { ConnectionDroppedError, type Faults, type Strike } from '../simulation/faults.ts';
import type { Prefetched } from './prefetch.ts';

/**
 * The one request pipeline: every API request takes it, whoever sends it — the HTTP adapters, the
 * in-process client and, next, the agent gateway and the ingress. Stages, in order:
 *
 *   route (found by the caller's router, or named by operation id) → version → auth → faults
 *   (lib/simulation/faults.ts: a wait, an error answer, or a dropped connection the adapter performs) → guards →
 *   one body parse → perform (prepare, then the operation, in one transaction for writes) →
 *   the error envelope (store errors included) → the request journal.
 *
 * Adapters only translate their request into a `PipelineRequest` and the `PipelineAnswer` back.
 */

/** The API versions the `Service-Version` header may name. */
export const SUPPORTED_VERSIONS = ['2'];

/** Where a request is going: a route its sender's router matched, or an operation named by id. */
export type Target =
  /** `operation` absent: no route took the path; `allowed` lists the methods the path does have, `nearest` the path of a route near it. */
  | { readonly operation?: Operation; readonly params: Readonly<Record<string, string>>; readonly allowed: readonly string[]; readonly nearest?: string }
  | { readonly operationId: string; readonly params: Readonly<Record<string, string>> };

/** One API request as an adapter hands it over. */
export interface PipelineRequest {
  readonly target: Target;
  /** Method and path as sent (for messages and the journal). */
  readonly method: string;
  readonly path: string;
  /** The raw query string with its `?`, or `''` (the journal keeps it, redacted). */
  readonly search: string;
  readonly query: QueryParams;
  /** A request header (case-insensitive), or null. */
  header(name: string): string | null;
  /**
   * The decoded JSON body (`{}` when none); read only when the operation takes a body, within the
   * limit it names (a control operation may have one of its own; else `request_body_bytes`).
   */
  body(limit?: ControlOperation['bodyLimit']): Promise<unknown>;
  /** Base URL of `uri` fields. */
  readonly baseUrl: string;
  /** The caller's address, when known (IP restrictions of type `api`). */
  readonly sourceIp?: string;
  /** The per-request id (`op_…`); the pipeline makes one when absent. */
  readonly requestId?: string;
}

/** What the pipeline answers: the status, headers and JSON value of the body (undefined: none). */
export interface PipelineAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: unknown;
  /** The per-request id, also in the envelope's details and the journal. */
  readonly requestId: string;
  /** The error behind an error answer (an ApiError; unexpected errors become the 500 one). */
  readonly error?: ApiError;
  /** The envelope's `error_code` of an error answer. */
  readonly errorCode?: string;
  /** The operation that ran, when a route matched. */
  readonly operation?: Operation;
  /** The fault rule that applied (lib/simulation/faults.ts). */
  readonly fault?: string;
  /** A fault says: close the connection without an answer (status is then 0). */
  readonly drop?: true;
  /** The request journal's record of it (undefined: the journal is off), for the adapter to attach what it sent (`RequestJournal.attach`). */
  readonly record?: RequestRecord;
}

/** Result of an operation: the body (undefined for 204) and headers added by guards. */
export interface OperationResult {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** A control-plane request (`/_burrow/…`): the route the sender's control router matched. */
export interface ControlRequest extends Omit<PipelineRequest, 'target'> {
  readonly target: { readonly operation?: ControlOperation; readonly params: Readonly<Record<string, string>>; readonly allowed: readonly string[]; readonly nearest?: string };
  /** Sends an API request through the adapter this one came by (a replay); answers its operation id. */
  readonly send?: (request: ReplayRequest) => Promise<string>;
}

/** What the pipeline uses of its instance (lib/burrow.ts). */
export interface PipelineHost extends Instance {
  readonly errorPrefix: string;
  readonly requests: RequestJournal;
  readonly faults: Faults;
  readonly options: { readonly requireVersionHeader?: boolean };
  newOperationId(): string;
  operation(id: string): Operation | undefined;
  /** The caller, and the operation's first reads where the store sent them with the key check (lib/engine/prefetch.ts). */
  authenticateFor(authorization: string | null | undefined, operation: Operation, input: Pick<OperationInput, 'params' | 'query'>, also?: Read): Promise<{ principal: Principal; prefetched?: Prefetched }>;
  /** Whether `authenticateFor` reads a request's first reads (and `also`) with its key check. */
  prefetches(operation: Operation): boolean;
  /** Guards, parse, prepare and the operation (the perform stage). */
  execute(principal: Principal, operation: Operation, input: OperationInput, meta: RequestMeta, prefetched?: Prefetched): Promise<OperationResult>;
}

/** The request pipeline of one Burrow instance. */
export class Pipeline {
  readonly #burrow: PipelineHost;

  constructor(burrow: PipelineHost) {
    this.#burrow = burrow;
  }

  /**
   * Runs one API request through every stage; never throws. `onError` hears of unexpected errors
   * (programming mistakes), which are answered as the 500 without details.
   */
  async answer(request: PipelineRequest, onError?: (error: unknown) => void): Promise<PipelineAnswer> {
    const started = performance.now();
    const requestId = request.requestId ?? this.#burrow.newOperationId();
    const trace: Trace = {};
    let answer: { -readonly [K in keyof PipelineAnswer]: PipelineAnswer[K] };
    try {
      const result = await this.#run(request, trace);
      answer = traced({ status: result.status, headers: result.headers, body: result.status === 204 ? undefined : result.body, requestId }, trace);
    } catch (error) {
      if (error instanceof ConnectionDroppedError) {
        answer = traced({ status: DROPPED, headers: {}, body: undefined, requestId, drop: true }, trace);
      } else {
        const apiError = toApiError(error, onError);
        const envelope = errorBody(apiError, this.#burrow.errorPrefix, requestId);
        answer = traced({ status: apiError.status, headers: errorHeaders(apiError), body: envelope, requestId, error: apiError, errorCode: envelope.error_code }, trace);
      }
    }
    const record = this.#burrow.requests.record({
      operationId: requestId,
      account: trace.account,
      method: request.method,
      path: request.path,
      search: request.search,
      status: answer.status,
      errorCode: answer.errorCode,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      operation: trace.operation?.id,
      fault: trace.fault && { id: trace.fault.fault, latency_ms: trace.fault.latencyMs ?? null },
      message: answer.error?.message,
    });
    if (record) answer.record = record;
    return answer;
  }

  /**
   * The control plane's pipeline for an operator token (undefined: only open operations answer):
   * route → operator check → body → the control operation → the envelope. Control requests are
   * not journaled (the inspector polls them).
   */
  controlPlane(operatorToken: string | undefined): (request: ControlRequest, onError?: (error: unknown) => void) => Promise<PipelineAnswer> {
    const expected = operatorToken === undefined ? undefined : digest(operatorToken);
    const isOperatorToken = (token: string) => expected !== undefined && timingSafeEqual(digest(token), expected);
    return async (request, onError) => {
      const requestId = request.requestId ?? this.#burrow.newOperationId();
      try {
        const operation = request.target.operation;
        if (!operation) routeMiss(request.method, request.path, request.target.allowed, 'control-plane', request.target.nearest);
        if (!operation.open) checkOperator(request.header('authorization'), expected !== undefined, isOperatorToken);
        // Every operation under /accounts/:account_id answers an unknown account's 404 before anything else.
        if (request.target.params.account_id !== undefined) await knownAccount(this.#burrow, request.target.params.account_id);
        const input = { params: request.target.params, query: request.query, body: operation.body ? await request.body(operation.bodyLimit) : undefined };
        const operator = !operation.open || isOperatorToken(/^Bearer\s+(.+)$/i.exec(request.header('authorization') ?? '')?.[1]?.trim() ?? '');
        const result = await operation.run(this.#burrow, input, { baseUrl: request.baseUrl, operator, isOperatorToken, ...(request.send ? { send: request.send } : {}) });
        return { status: operation.status === 204 || result === undefined ? (operation.status === 204 ? 204 : 200) : operation.status, headers: {}, body: operation.status === 204 ? undefined : result, requestId };
      } catch (error) {
        const apiError = toApiError(error, onError);
        const envelope = errorBody(apiError, this.#burrow.errorPrefix, requestId);
        return { status: apiError.status, headers: errorHeaders(apiError), body: envelope, requestId, error: apiError, errorCode: envelope.error_code };
      }
    };
  }

  async #run(request: PipelineRequest, trace: Trace): Promise<OperationResult> {
    const operation = this.#route(request);
    trace.operation = operation;
    checkVersion(request, this.#burrow.options.requireVersionHeader === true);
    // Asked with the key check, so a store a round trip away reads the rules in the same one: among
    // a read operation's prefetched reads, else at the same time (reads by key asked in one turn
    // go together); a key seen for the first time reads them after.
    const faults = this.#burrow.faults;
    const rulesRead = this.#burrow.prefetches(operation) ? faults.sharedRead : undefined;
    const rules = rulesRead ? undefined : faults.rules();
    const { principal, prefetched } = await this.#burrow.authenticateFor(request.header('authorization'), operation, { params: request.target.params, query: request.query }, rulesRead);
    trace.account = principal.account;
    const live = rules ? await rules : rulesRead && prefetched?.has(rulesRead) ? faults.rulesRead(prefetched.take(rulesRead)) : await faults.rules();
    const strike = live.length === 0 ? undefined : await this.#burrow.faults.strike(live, { method: request.method, path: request.path, operation: operation.id, account: principal.account });
    if (strike) {
      trace.fault = strike;
      if (strike.latencyMs) await this.#burrow.faults.wait(strike.latencyMs);
      if (strike.error) throw strike.error;
      if (strike.drop) throw new ConnectionDroppedError(strike.fault);
    }
    const input: OperationInput = { params: request.target.params, query: request.query, body: operation.body ? await request.body() : undefined };
    return this.#burrow.execute(principal, operation, input, { baseUrl: request.baseUrl, ...(request.sourceIp ? { sourceIp: request.sourceIp } : {}) }, prefetched);
  }

  #route(request: PipelineRequest): Operation {
    const target = request.target;
    if ('operationId' in target) {
      const operation = this.#burrow.operation(target.operationId);
      if (!operation) fail('ROUTE_NOT_FOUND', `no API operation ${target.operationId}`);
      return operation;
    }
    if (!target.operation) routeMiss(request.method, request.path, target.allowed, 'API', target.nearest);
    return target.operation;
  }
}

/** What the stages found out, for the answer and the journal. */
interface Trace {
  operation?: Operation;
  account?: string;
  fault?: Strike;
}

/** `answer` with what the trace found (set in place: spreads made three objects per request). */
function traced(answer: { -readonly [K in keyof PipelineAnswer]: PipelineAnswer[K] }, trace: Trace): { -readonly [K in keyof PipelineAnswer]: PipelineAnswer[K] } {
  if (trace.operation) answer.operation = trace.operation;
  if (trace.fault) answer.fault = trace.fault.fault;
  return answer;
}

/** The version headers read, Burrow's first, spelled as messages name them. */
const VERSION_HEADERS = ['Service-Version', 'Ngrok-Version'] as const;

function checkVersion(request: PipelineRequest, required: boolean): void {
  // The vendor's official clients send their own header name; both are read, and a refusal names
  // the one the client sent, which is the one its user can find in their code.
  // Asked in lower case, as every header of the pipeline is (node's header table has no other).
  const name = VERSION_HEADERS.find((header) => request.header(header.toLowerCase()) !== null);
  if (name === undefined) {
    if (required) fail('VERSION_MISSING', `the Service-Version header is missing; supported versions: ${SUPPORTED_VERSIONS.join(', ')}`);
    return;
  }
  const version = request.header(name.toLowerCase())!;
  if (!SUPPORTED_VERSIONS.includes(version.trim())) {
    fail('VERSION_UNSUPPORTED', `${name} ${JSON.stringify(version)} is not supported; supported versions: ${SUPPORTED_VERSIONS.join(', ')}`);
  }
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Refuses a control-plane request without the operator token (or when the control plane is off). */
function checkOperator(header: string | null, enabled: boolean, isOperatorToken: (token: string) => boolean): void {
  if (!enabled) fail('OPERATOR_FORBIDDEN', 'the control plane is disabled: start Burrow with an operator token (CLI --operator-token)');
  if (!header) throw new ApiError(ERRORS.AUTH_MISSING, 'the control plane needs Authorization: Bearer <operator token>', {}, { 'WWW-Authenticate': 'Bearer' });
  const token = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim() ?? '';
  if (!isOperatorToken(token)) fail('OPERATOR_FORBIDDEN', 'the token is not the operator token');
}

/** Throws the answer to a request no route took: 405 with `Allow` when the path has other methods, else 404 (suggesting `nearest`, a route's path, when given). */
export function routeMiss(method: string, path: string, allowed: readonly string[], space: 'API' | 'control-plane', nearest?: string): never {
  if (allowed.length > 0) {
    throw new ApiError(ERRORS.METHOD_NOT_ALLOWED, `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, { path }, { Allow: allowed.join(', ') });
  }
  fail('ROUTE_NOT_FOUND', `no ${space} route ${method} ${path}${nearest === undefined ? '' : `; did you mean ${nearest}?`}`, { path });
}

/** The ApiError a thrown value answers as: store failures are 503s, anything unexpected a reported 500. */
export function toApiError(error: unknown, onError?: (error: unknown) => void): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreWriteError) return new ApiError(ERRORS.STORE_UNAVAILABLE, `the change was not saved: ${error.message}`);
  // Where the store is (a database's user, host and database) is the operator's business: the
  // health report names it to the operator token (lib/control/operations.ts), no answer does to anyone else.
  if (error instanceof StoreUnavailableError) return new ApiError(ERRORS.STORE_UNAVAILABLE, 'the store is unavailable, try again', {}, { 'Retry-After': '1' });
  onError?.(error);
  return new ApiError(ERRORS.INTERNAL, 'internal error; the server log has details');
}

/** The headers of an error answer: the error's own, and the Bearer challenge of a 401. */
export function errorHeaders(error: ApiError): Record<string, string> {
  return error.status === 401 ? { ...error.headers, 'WWW-Authenticate': 'Bearer realm="burrow"' } : { ...error.headers };
}

export type { ErrorBody };
