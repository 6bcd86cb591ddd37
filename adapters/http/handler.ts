import { ApiError, ERRORS, errorBody, fail, StoreWriteError, type Burrow, type Operation } from '../../lib/index.ts';
import { createControlPlane } from '../control-plane.ts';
import { createRouter, type Router } from './router.ts';

/**
 * The HTTP translation layer shared by the fetch handler and the node:http listener: parse the
 * request, call the core, serialise the result, and map every error to the one envelope. No
 * business rule lives here.
 */

/** Largest accepted request body (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Deepest accepted JSON nesting; deeper bodies are refused before parsing. */
export const MAX_JSON_DEPTH = 64;
export const SUPPORTED_VERSIONS = ['2'];

/** A request as both adapters hand it over. */
export interface HttpRequest {
  method: string;
  url: URL;
  header(name: string): string | null;
  /** Reads the body as text; rejects with a 413 ApiError past `MAX_BODY_BYTES`. */
  text(): Promise<string>;
  sourceIp?: string;
}

/** What the adapters write back. `body` is undefined for 204 and HEAD. */
export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string | undefined;
  /** The `error_code` of an error answer (for the request journal; not sent as a header). */
  errorCode?: string;
}

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

const JSON_TYPE = 'application/json';

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
      response =
        (options.cors ? preflight(router, request) : undefined) ??
        (await controlPlane(request)) ??
        (await serveApi(burrow, router, request, operationId, trace));
    } catch (error) {
      response = errorResponse(burrow, error, operationId, options.onError);
    }
    response.headers['Burrow-Operation-Id'] = operationId;
    const origin = request.header('origin');
    if (options.cors && origin) {
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
        path: request.url.pathname,
        search: request.url.search,
        status: response.status,
        errorCode: response.errorCode,
        durationMs: ms,
        operation: trace.operation?.id,
      });
    }
    options.log?.({
      method: request.method,
      path: request.url.pathname,
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
  const match = router.match(request.method === 'HEAD' ? 'GET' : request.method, request.url.pathname);
  if (!match.operation) {
    if (match.allowed.length > 0) {
      throw new ApiError(ERRORS.METHOD_NOT_ALLOWED, `${request.method} is not allowed on ${request.url.pathname}; allowed: ${match.allowed.join(', ')}`, { path: request.url.pathname }, { Allow: match.allowed.join(', ') });
    }
    fail('ROUTE_NOT_FOUND', `no API route ${request.method} ${request.url.pathname}`, { path: request.url.pathname });
  }
  const operation = match.operation;
  trace.operation = operation;
  checkVersion(burrow, request);
  const principal = await burrow.authenticate(request.header('authorization'));
  trace.account = principal.account;
  const body = operation.body ? await readJsonBody(request) : undefined;
  const result = await burrow.execute(
    principal,
    operation,
    { params: match.params, query: queryParams(request.url), body },
    { baseUrl: burrow.options.baseUrl ?? request.url.origin, ...(request.sourceIp ? { sourceIp: request.sourceIp } : {}) },
  );
  const headers: Record<string, string> = { ...result.headers };
  if (result.status === 204 || request.method === 'HEAD') return { status: result.status, headers, body: undefined };
  headers['Content-Type'] = JSON_TYPE;
  return { status: result.status, headers, body: JSON.stringify(result.body) };
}

/** A CORS preflight (OPTIONS with Origin and Access-Control-Request-Method) for an API path. */
function preflight(router: Router<Operation>, request: HttpRequest): HttpResponse | undefined {
  const method = request.header('access-control-request-method');
  if (request.method !== 'OPTIONS' || !request.header('origin') || !method) return undefined;
  // No route answers OPTIONS, so the methods it reports as allowed are exactly the path's methods.
  const allowed = router.match('OPTIONS', request.url.pathname).allowed;
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

/** Reads a JSON object body; an empty body is `{}`. */
export async function readJsonBody(request: HttpRequest): Promise<unknown> {
  const length = Number(request.header('content-length') ?? '0');
  if (length > MAX_BODY_BYTES) tooLarge();
  const text = await request.text();
  if (text.trim() === '') return {};
  const type = (request.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== '' && type !== JSON_TYPE && !type.endsWith('+json')) {
    fail('UNSUPPORTED_CONTENT_TYPE', `Content-Type ${JSON.stringify(type)} is not supported; send ${JSON_TYPE}`);
  }
  if (nestingDepth(text) > MAX_JSON_DEPTH) fail('BODY_NOT_JSON', `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels is not accepted`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    fail('BODY_NOT_JSON', `body: not valid JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail('INVALID_FIELD', `body: must be a JSON object (got ${Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value})`);
  }
  return value;
}

/** Throws the 413 for bodies over the limit. */
export function tooLarge(): never {
  fail('BODY_TOO_LARGE', `the request body exceeds the maximum size of ${MAX_BODY_BYTES} bytes`);
}

function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92) i++;
      else if (ch === 34) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 123 || ch === 91) max = Math.max(max, ++depth);
    else if (ch === 125 || ch === 93) depth--;
  }
  return max;
}

function queryParams(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of url.searchParams) {
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
