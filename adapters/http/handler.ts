import { errorBody, errorHeaders, redactQuery, routeMiss, toApiError, type BurrowCore, type Operation, type PipelineAnswer, type PipelineRequest, type QueryParams } from '../../lib/index.ts';
import { JSON_TYPE, readJsonBody, type HttpRequest, type HttpResponse } from './body.ts';
import { createControlPlane } from './control-plane.ts';
import { queryParams } from './query.ts';
import { createRouter, type RouteMatch, type Router } from './router.ts';

/**
 * The HTTP translation layer shared by the fetch handler and the node:http listener: route the
 * request, hand it to the core's request pipeline (lib/engine/pipeline.ts), serialise its answer. No
 * business rule lives here.
 */

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
  /** The fault rule that applied (status 0: it dropped the connection). */
  fault?: string;
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
   * The code of a one-time sign-in link to the inspector (`/_burrow/?token=CODE`), which the page
   * exchanges for the operator token once (adapters/http/inspector.ts); without it, no link works.
   */
  signInCode?: string;
  /**
   * The path Burrow is served under, e.g. `/burrow`: removed from request paths before routing
   * (a path outside it is a 404) and put in every `uri` and `next_page_uri`. A host framework's own
   * mount path (Express's, read from `req.originalUrl`) is honoured without it.
   */
  basePath?: string;
}

export type HttpHandler = (request: HttpRequest) => Promise<HttpResponse>;

/** Builds the request handler of a Burrow instance. */
export function createHttpHandler(burrow: BurrowCore<any>, options: HttpHandlerOptions = {}): HttpHandler {
  const router = createRouter(burrow.operations);
  // A replay from the control plane is sent through this same handler, as a client's request would be (under basePath, as the journal's path is not).
  const controlPlane = createControlPlane(burrow, options.operatorToken, options.onError, (request) => handle({ ...request, path: `${basePath}${request.path}` }), options.signInCode);
  const basePath = normaliseBasePath(options.basePath);
  // The base of every uri: where the client reached Burrow (origin, host mount path, basePath).
  const baseUrlOf = (request: HttpRequest) => burrow.options.baseUrl ?? `${request.origin}${request.mountPath ?? ''}${basePath}`;
  const handle: HttpHandler = async (sent) => {
    const started = options.log ? performance.now() : 0;
    const requestId = burrow.newOperationId();
    const request = basePath === '' ? sent : withinBasePath(sent, basePath);
    let response: HttpResponse;
    let operation: Operation | undefined;
    try {
      if (sent.refusal !== undefined) throw sent.refusal;
      if (!request) routeMiss(sent.method, sent.path, [], 'API');
      const answered = (options.cors ? await preflight(router, request) : undefined) ?? controlPlane(request, baseUrlOf, requestId);
      if (answered) response = await answered;
      else {
        const served = await serveApi(burrow, router, request, baseUrlOf, requestId, options.onError);
        operation = served.answer.operation;
        response = served.response;
      }
    } catch (error) {
      response = errorResponse(burrow, error, requestId, options.onError);
    }
    response.headers['Burrow-Operation-Id'] = requestId;
    const origin = options.cors ? sent.header('origin') : null;
    if (origin) {
      response.headers['Access-Control-Allow-Origin'] = origin;
      response.headers['Access-Control-Allow-Credentials'] = 'true';
      response.headers['Access-Control-Expose-Headers'] = 'Burrow-Operation-Id, Warning';
      response.headers.Vary = 'Origin';
    }
    options.log?.({
      time: new Date().toISOString(),
      method: sent.method,
      path: `${sent.mountPath ?? ''}${sent.path}`,
      query: sent.search === '' ? '' : redactQuery(sent.search, '***'),
      status: response.status,
      ...(response.errorCode ? { errorCode: response.errorCode } : {}),
      ms: Math.round((performance.now() - started) * 10) / 10,
      operationId: requestId,
      ...(operation ? { operation: operation.id } : {}),
      ...(response.headers.Warning ? { warning: response.headers.Warning } : {}),
      ...(response.fault ? { fault: response.fault } : {}),
    });
    return response;
  };
  return handle;
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
    rawHeaders: () => request.rawHeaders?.() ?? [],
    text: (limit) => request.text(limit),
    ...(request.sourceIp ? { sourceIp: request.sourceIp } : {}),
    ...(request.mountPath ? { mountPath: request.mountPath } : {}),
  };
}

/**
 * Routes an API request, runs it through the request pipeline (which journals it) and serialises
 * the answer; the journal's record gets the headers and the bodies as read and written, by reference.
 */
async function serveApi(burrow: BurrowCore<any>, router: Router<Operation>, request: HttpRequest, baseUrlOf: (request: HttpRequest) => string, requestId: string, onError?: (error: unknown) => void): Promise<{ answer: PipelineAnswer; response: HttpResponse }> {
  // A path shape seen before routes synchronously: no extra turn of the microtask queue for it.
  const matched = router.match(request.method === 'HEAD' ? 'GET' : request.method, request.path);
  const target = matched instanceof Promise ? await matched : matched;
  const api = new ApiRequest(request, target, baseUrlOf(request), requestId);
  const answer = await burrow.pipeline.answer(api, onError);
  const response = toHttp(answer, request.method);
  if (answer.record) burrow.requests.attach(answer.record, request.rawHeaders?.() ?? [], api.bodyText, response.headers, response.body);
  return { answer, response };
}

/** An HTTP request as the pipeline takes it; methods, not closures made per request. */
class ApiRequest implements PipelineRequest {
  readonly method: string;
  readonly path: string;
  readonly search: string;
  readonly query: QueryParams;
  readonly sourceIp?: string;
  /** The body as read, once the operation read it (for the request journal). */
  bodyText?: string;
  readonly #request: HttpRequest;

  constructor(request: HttpRequest, readonly target: RouteMatch<Operation>, readonly baseUrl: string, readonly requestId: string) {
    this.#request = request;
    this.method = request.method;
    this.path = request.path;
    this.search = request.search;
    this.query = queryParams(request.search);
    if (request.sourceIp) this.sourceIp = request.sourceIp;
  }

  header(name: string): string | null {
    return this.#request.header(name);
  }

  body(): Promise<unknown> {
    return readJsonBody(this.#request, 'request_body_bytes', this);
  }
}

/** The HTTP response of a pipeline answer: JSON, none for 204 and HEAD, no answer at all for a dropped connection. */
function toHttp(answer: PipelineAnswer, method: string): HttpResponse {
  const response: HttpResponse = { status: answer.status, headers: answer.headers, body: undefined };
  // Set one by one: spreading optional marks made three objects per request.
  if (answer.errorCode) response.errorCode = answer.errorCode;
  if (answer.fault) response.fault = answer.fault;
  if (answer.drop) response.drop = answer.drop;
  if (answer.body === undefined || method === 'HEAD') return response;
  response.headers['Content-Type'] = JSON_TYPE;
  response.body = JSON.stringify(answer.body);
  return response;
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


/** The envelope response of an error thrown outside the pipeline (control plane, base path, preflight). */
export function errorResponse(burrow: BurrowCore<any>, error: unknown, operationId: string, onError?: (error: unknown) => void): HttpResponse {
  const apiError = toApiError(error, onError);
  const body = errorBody(apiError, burrow.errorPrefix, operationId);
  return { status: apiError.status, headers: { 'Content-Type': JSON_TYPE, ...errorHeaders(apiError) }, body: JSON.stringify(body), errorCode: body.error_code };
}
