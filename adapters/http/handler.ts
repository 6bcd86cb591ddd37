import { ApiError, ERRORS, errorBody, fail, StoreWriteError, type Burrow, type Operation } from '../../lib/index.ts';
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
  method: string;
  path: string;
  status: number;
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
}

export type HttpHandler = (request: HttpRequest) => Promise<HttpResponse>;

/** Builds the request handler of a Burrow instance. */
export function createHttpHandler(burrow: Burrow, options: HttpHandlerOptions = {}): HttpHandler {
  const router = createRouter(burrow.operations);
  const controlPlane = createControlPlane(burrow, options.operatorToken);
  return async (request) => {
    const started = performance.now();
    const operationId = burrow.newOperationId();
    const trace: Trace = { operation: undefined, account: undefined, api: false };
    let response: HttpResponse;
    try {
      const answered = (options.cors ? await preflight(router, request) : undefined) ?? controlPlane(request);
      response = answered ? await answered : await serveApi(burrow, router, request, operationId, trace);
    } catch (error) {
      response = errorResponse(burrow, error, operationId, options.onError);
    }
    response.headers['Burrow-Operation-Id'] = operationId;
    const origin = options.cors ? request.header('origin') : null;
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
        method: request.method,
        path: request.path,
        search: request.search,
        status: response.status,
        errorCode: response.errorCode,
        durationMs: ms,
        operation: trace.operation?.id,
      });
    }
    options.log?.({
      method: request.method,
      path: request.path,
      status: response.status,
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

async function serveApi(burrow: Burrow, router: Router<Operation>, request: HttpRequest, operationId: string, trace: Trace): Promise<HttpResponse> {
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
    { baseUrl: burrow.options.baseUrl ?? request.origin, ...(request.sourceIp ? { sourceIp: request.sourceIp } : {}) },
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
  } else {
    onError?.(error);
    apiError = new ApiError(ERRORS.INTERNAL, 'internal error; the server log has details');
  }
  const headers: Record<string, string> = { 'Content-Type': JSON_TYPE, ...apiError.headers };
  if (apiError.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="burrow"';
  const body = errorBody(apiError, burrow.errorPrefix, operationId);
  return { status: apiError.status, headers, body: JSON.stringify(body), errorCode: body.error_code };
}
