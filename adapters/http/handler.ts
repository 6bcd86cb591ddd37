import { ApiError, ERRORS, errorBody, fail, redactQuery, StoreUnavailableError, StoreWriteError, type Burrow, type Operation } from '../../lib/index.ts';
import { JSON_TYPE, readJsonBody, type HttpRequest, type HttpResponse } from './body.ts';
import { createControlPlane } from './control-plane.ts';
import { createRouter, routeMiss, type Router } from './router.ts';

/**
 * The HTTP translation layer shared by the fetch handler and the node:http listener: parse the
 * request, call the core, serialise the result, and map every error to the one envelope. No
 * business rule lives here.
 */

export const SUPPORTED_VERSIONS = ['2'];

/** One line per answered request (never secrets). */
export interface RequestLog {
  /** When the request was answered (ISO 8601, UTC, system time even under a manual clock). */
  time: string;
  method: string;
  /** The path as the client sent it (mount path and basePath included). */
  path: string;
  /** The query string with its `?`, or `""`; values of parameters named like a secret are `***`. */
  query: string;
  status: number;
  /** The `error_code` of an error answer. */
  errorCode?: string;
  ms: number;
  operationId: string;
  operation?: string;
  /** A warning the response carried (an IP restriction that would deny but is not enforced). */
  warning?: string;
}

export interface HttpHandlerOptions {
  /** Called once per answered request. */
  log?: (entry: RequestLog) => void;
  /** Answer CORS preflights and add CORS headers for requests that carry an Origin (off by default). */
  cors?: boolean;
  /** Token of the control plane (`/_burrow/…`); without it only health and the OpenAPI document answer. */
  operatorToken?: string;
  /** Logs unexpected (500) errors. */
  onError?: (error: unknown) => void;
  /**
   * The path Burrow is served under, e.g. `/burrow`: removed from request paths before routing
   * (a path outside it is a 404) and put in every `uri` and `next_page_uri`. A host framework's own
   * mount path (Express's, read from `req.originalUrl`) is honoured without it.
   */
  basePath?: string;
}

export type HttpHandler = (request: HttpRequest) => Promise<HttpResponse>;

/** Builds the request handler of a Burrow instance. */
export function createHttpHandler(burrow: Burrow, options: HttpHandlerOptions = {}): HttpHandler {
  const router = createRouter(burrow.operations);
  const controlPlane = createControlPlane(burrow, options.operatorToken);
  const basePath = normaliseBasePath(options.basePath);
  // The base of every uri: where the client reached Burrow (origin, host mount path, basePath).
  const baseUrlOf = (request: HttpRequest) => burrow.options.baseUrl ?? `${request.origin}${request.mountPath ?? ''}${basePath}`;
  return async (sent) => {
    const started = performance.now();
    const operationId = burrow.newOperationId();
    const trace: Trace = { operation: undefined, account: undefined, api: false };
    const request = basePath === '' ? sent : withinBasePath(sent, basePath);
    let response: HttpResponse;
    try {
      if (sent.refusal !== undefined) throw sent.refusal;
      if (!request) routeMiss(sent.method, sent.path, [], 'API');
      const answered = (options.cors ? await preflight(router, request) : undefined) ?? controlPlane(request, baseUrlOf);
      response = answered ? await answered : await serveApi(burrow, router, request, baseUrlOf, trace);
    } catch (error) {
      response = errorResponse(burrow, error, operationId, options.onError);
    }
    response.headers['Burrow-Operation-Id'] = operationId;
    const origin = options.cors ? sent.header('origin') : null;
    if (origin) {
      response.headers['Access-Control-Allow-Origin'] = origin;
      response.headers['Access-Control-Allow-Credentials'] = 'true';
      response.headers['Access-Control-Expose-Headers'] = 'Burrow-Operation-Id, Warning';
      response.headers.Vary = 'Origin';
    }
    const ms = Math.round((performance.now() - started) * 10) / 10;
    if (trace.api) {
      burrow.requests.record({
        operationId,
        account: trace.account,
        method: sent.method,
        path: request!.path,
        search: sent.search,
        status: response.status,
        errorCode: response.errorCode,
        durationMs: ms,
        operation: trace.operation?.id,
      });
    }
    options.log?.({
      time: new Date().toISOString(),
      method: sent.method,
      path: `${sent.mountPath ?? ''}${sent.path}`,
      query: sent.search === '' ? '' : redactQuery(sent.search, '***'),
      status: response.status,
      ...(response.errorCode ? { errorCode: response.errorCode } : {}),
      ms,
      operationId,
      ...(trace.operation ? { operation: trace.operation.id } : {}),
      ...(response.headers.Warning ? { warning: response.headers.Warning } : {}),
    });
    return response;
  };
}

/** What serving one request found out, for the log and the request journal. */
interface Trace {
  operation: Operation | undefined;
  /** The account of the API key used. */
  account: string | undefined;
  /** Whether the request reached the API (not the control plane or a CORS preflight). */
  api: boolean;
}

/** A base path as `/a/b` (no trailing slash), or `""`. */
function normaliseBasePath(basePath: string | undefined): string {
  const trimmed = (basePath ?? '').replace(/\/+$/, '');
  return trimmed === '' || trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** The request with basePath removed from its path, or undefined when the path lies outside it. */
function withinBasePath(request: HttpRequest, basePath: string): HttpRequest | undefined {
  const path = request.path;
  if (path !== basePath && !path.startsWith(`${basePath}/`)) return undefined;
  return {
    method: request.method,
    path: path.slice(basePath.length) || '/',
    search: request.search,
    get origin() {
      return request.origin;
    },
    header: (name) => request.header(name),
    text: (limit) => request.text(limit),
    ...(request.sourceIp ? { sourceIp: request.sourceIp } : {}),
    ...(request.mountPath ? { mountPath: request.mountPath } : {}),
  };
}

async function serveApi(burrow: Burrow, router: Router<Operation>, request: HttpRequest, baseUrlOf: (request: HttpRequest) => string, trace: Trace): Promise<HttpResponse> {
  trace.api = true;
  const match = await router.match(request.method === 'HEAD' ? 'GET' : request.method, request.path);
  if (!match.operation) routeMiss(request.method, request.path, match.allowed, 'API');
  const operation = match.operation;
  trace.operation = operation;
  checkVersion(burrow, request);
  const principal = await burrow.authenticate(request.header('authorization'));
  trace.account = principal.account;
  const body = operation.body ? await readJsonBody(request) : undefined;
  const result = await burrow.execute(
    principal,
    operation,
    { params: match.params, query: queryParams(request.search), body },
    { baseUrl: baseUrlOf(request), ...(request.sourceIp ? { sourceIp: request.sourceIp } : {}) },
  );
  const headers = result.headers;
  if (result.status === 204 || request.method === 'HEAD') return { status: result.status, headers, body: undefined };
  headers['Content-Type'] = JSON_TYPE;
  return { status: result.status, headers, body: JSON.stringify(result.body) };
}

/** A CORS preflight (OPTIONS with Origin and Access-Control-Request-Method) for an API path. */
async function preflight(router: Router<Operation>, request: HttpRequest): Promise<HttpResponse | undefined> {
  const method = request.header('access-control-request-method');
  if (request.method !== 'OPTIONS' || !request.header('origin') || !method) return undefined;
  // No route answers OPTIONS, so the methods it reports as allowed are exactly the path's methods.
  const allowed = (await router.match('OPTIONS', request.path)).allowed;
  if (allowed.length === 0) return undefined;
  const headers: Record<string, string> = {
    'Access-Control-Allow-Methods': allowed.join(', '),
    'Access-Control-Max-Age': '600',
  };
  const requested = request.header('access-control-request-headers');
  if (requested) headers['Access-Control-Allow-Headers'] = requested;
  return { status: 204, headers, body: undefined };
}

function checkVersion(burrow: Burrow, request: HttpRequest): void {
  // The vendor's official clients send their own header name; both are read.
  const version = request.header('service-version') ?? request.header('ngrok-version');
  if (version === null) {
    if (burrow.options.requireVersionHeader) fail('VERSION_MISSING', `the Service-Version header is missing; supported versions: ${SUPPORTED_VERSIONS.join(', ')}`);
    return;
  }
  if (!SUPPORTED_VERSIONS.includes(version.trim())) {
    fail('VERSION_UNSUPPORTED', `Service-Version ${JSON.stringify(version)} is not supported; supported versions: ${SUPPORTED_VERSIONS.join(', ')}`);
  }
}

function queryParams(search: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (search === '') return out;
  for (const [key, value] of new URLSearchParams(search)) {
    const prev = out[key];
    out[key] = prev === undefined ? value : ([] as string[]).concat(prev, value);
  }
  return out;
}

/** The envelope response of any thrown error; unexpected errors become a logged 500. */
export function errorResponse(burrow: Burrow, error: unknown, operationId: string, onError?: (error: unknown) => void): HttpResponse {
  let apiError: ApiError;
  if (error instanceof ApiError) apiError = error;
  else if (error instanceof StoreWriteError) {
    apiError = new ApiError(ERRORS.STORE_UNAVAILABLE, `the change was not saved: ${error.message}`);
  } else if (error instanceof StoreUnavailableError) {
    // Where the store is (a database's user, host and database) is the operator's business: the
    // health report names it to the operator token (lib/control.ts), no answer does to anyone else.
    apiError = new ApiError(ERRORS.STORE_UNAVAILABLE, 'the store is unavailable, try again', {}, { 'Retry-After': '1' });
  } else {
    onError?.(error);
    apiError = new ApiError(ERRORS.INTERNAL, 'internal error; the server log has details');
  }
  const headers: Record<string, string> = { 'Content-Type': JSON_TYPE, ...apiError.headers };
  if (apiError.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="burrow"';
  const body = errorBody(apiError, burrow.errorPrefix, operationId);
  return { status: apiError.status, headers, body: JSON.stringify(body), errorCode: body.error_code };
}
