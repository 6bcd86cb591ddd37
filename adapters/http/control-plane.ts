import type { BurrowCore, ControlOperation } from '../../lib/index.ts';
import type { ReplayRequest } from '../../lib/journal/replay.ts';
import { LIMITS } from '../../lib/index.ts';
import { JSON_TYPE, readJsonBody, tooLarge, type HttpRequest, type HttpResponse } from './body.ts';
import { queryParams } from './query.ts';
import { createSignIn, serveInspector } from './inspector.ts';
import { createRouter } from './router.ts';

/**
 * Serves the control plane (`/_burrow/…`): the inspector page's files, and every other path routed
 * to lib's control operations through the core's control pipeline (lib/engine/pipeline.ts), which checks
 * the operator token. Without a configured operator token only the open operations (health,
 * OpenAPI) answer.
 */

export const CONTROL_PREFIX = '/_burrow';

/**
 * `handle` serves a replay of a journaled API request (`POST /_burrow/requests/{id}/replay`): the
 * HTTP handler this control plane belongs to, so the replay takes every stage a client's request does.
 */
export function createControlPlane(burrow: BurrowCore<any>, operatorToken: string | undefined, onError: ((error: unknown) => void) | undefined, handle: (request: HttpRequest) => Promise<HttpResponse>, signInCode?: string) {
  const signIn = createSignIn(operatorToken, signInCode);
  const router = createRouter<ControlOperation>(burrow.controlOperations);
  const answer = burrow.pipeline.controlPlane(operatorToken);

  /**
   * Answers a control-plane request, or gives undefined at once (no promise: this is asked on every
   * API request) when the path is not under `/_burrow`.
   */
  return (request: HttpRequest, baseUrlOf: (request: HttpRequest) => string, requestId: string): Promise<HttpResponse> | undefined => {
    const path = rootAlias(request) ?? request.path;
    if (path !== CONTROL_PREFIX && !path.startsWith(`${CONTROL_PREFIX}/`)) return undefined;
    return serve(request, path, baseUrlOf, requestId);
  };

  async function serve(request: HttpRequest, path: string, baseUrlOf: (request: HttpRequest) => string, requestId: string): Promise<HttpResponse> {
    const page = (await serveInspector(request.method, path.slice(CONTROL_PREFIX.length))) ?? (await signIn(request, path.slice(CONTROL_PREFIX.length)));
    if (page) return page;
    const matched = await router.match(request.method === 'HEAD' ? 'GET' : request.method, path.slice(CONTROL_PREFIX.length) || '/');
    // The control router's paths lie below the prefix; a suggestion names the whole path, as the message does.
    const target = matched.nearest === undefined ? matched : { ...matched, nearest: `${CONTROL_PREFIX}${matched.nearest}` };
    const answered = await answer({
      target,
      method: request.method,
      path,
      search: request.search,
      query: queryParams(request.search, { repeated: 'last' }),
      header: (name) => request.header(name),
      body: (limit) => readJsonBody(request, limit),
      baseUrl: baseUrlOf(request),
      requestId,
      send: async (replayed) => (await handle(replayOf(replayed, request))).headers['Burrow-Operation-Id']!,
    }, onError);
    // An operation that answers text of its own type (a PEM file) sends it as it is; errors stay JSON.
    const text = target.operation?.contentType !== undefined && typeof answered.body === 'string';
    const headers = { ...answered.headers, ...(answered.body === undefined ? {} : { 'Content-Type': text ? target.operation!.contentType! : JSON_TYPE }) };
    const body = answered.body === undefined ? undefined : text ? (answered.body as string) : JSON.stringify(answered.body);
    return { status: answered.status, headers, body, ...(answered.errorCode ? { errorCode: answered.errorCode } : {}) };
  }
}

/**
 * The control-plane path a root path stands for: the OpenAPI document at its conventional place,
 * and the API root, which no API route takes, answering where the inspector and the docs are (a
 * browser or `curl` pointed at the server's address meets it first; HEAD too, for probes that wait for a 2xx).
 */
function rootAlias(request: HttpRequest): string | undefined {
  if (request.path === '/openapi.json') return `${CONTROL_PREFIX}/openapi.json`;
  if (request.path === '/' && (request.method === 'GET' || request.method === 'HEAD')) return `${CONTROL_PREFIX}/about`;
  return undefined;
}

/** A replayed API request as the handler reads one: from where the operator's request came, with the replay's own head and body. */
function replayOf(replayed: ReplayRequest, from: HttpRequest): HttpRequest {
  const q = replayed.target.indexOf('?');
  const headers = new Map(replayed.headers.map(([name, value]) => [name.toLowerCase(), value]));
  const body = replayed.body === undefined ? '' : typeof replayed.body === 'string' ? replayed.body : Buffer.from(replayed.body).toString();
  return {
    method: replayed.method,
    path: q < 0 ? replayed.target : replayed.target.slice(0, q),
    search: q < 0 || q === replayed.target.length - 1 ? '' : replayed.target.slice(q),
    origin: from.origin,
    header: (name) => headers.get(name) ?? (name === 'content-length' ? String(Buffer.byteLength(body)) : null),
    rawHeaders: () => replayed.headers.flat(),
    text: async (limit) => {
      if (Buffer.byteLength(body) > LIMITS[limit ?? 'request_body_bytes'].value) tooLarge(limit);
      return body;
    },
    ...(from.sourceIp ? { sourceIp: from.sourceIp } : {}),
    ...(from.mountPath ? { mountPath: from.mountPath } : {}),
  };
}
