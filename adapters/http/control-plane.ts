import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError, ERRORS, fail, routeMiss, type BurrowCore, type ControlOperation } from '../../lib/index.ts';
import { readJsonBody, type HttpRequest, type HttpResponse } from './body.ts';
import { serveInspector } from './inspector.ts';
import { createRouter } from './router.ts';

/**
 * Serves the control plane (`/_burrow/…`): routes to lib's control operations and checks the
 * operator token (`Authorization: Bearer <operator token>`). Without a configured operator token
 * only the open operations (health, OpenAPI) answer. `/_burrow/` itself is the inspector page.
 */

export const CONTROL_PREFIX = '/_burrow';

const digest = (text: string) => createHash('sha256').update(text).digest();

export function createControlPlane(burrow: BurrowCore<any>, operatorToken: string | undefined) {
  const router = createRouter<ControlOperation>(burrow.controlOperations);
  const expected = operatorToken ? digest(operatorToken) : undefined;

  /** Whether the request carries the operator token. */
  function isOperator(request: HttpRequest): boolean {
    const token = /^Bearer\s+(.+)$/i.exec(request.header('authorization') ?? '')?.[1]?.trim();
    return expected !== undefined && token !== undefined && timingSafeEqual(digest(token), expected);
  }

  function checkOperator(request: HttpRequest): void {
    if (!expected) fail('OPERATOR_FORBIDDEN', 'the control plane is disabled: start Burrow with an operator token (CLI --operator-token)');
    const header = request.header('authorization');
    if (!header) throw new ApiError(ERRORS.AUTH_MISSING, 'the control plane needs Authorization: Bearer <operator token>', {}, { 'WWW-Authenticate': 'Bearer' });
    const token = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim() ?? '';
    if (!timingSafeEqual(digest(token), expected)) fail('OPERATOR_FORBIDDEN', 'the token is not the operator token');
  }

  /**
   * Answers a control-plane request, or gives undefined at once (no promise: this is asked on every
   * API request) when the path is not under `/_burrow`.
   */
  return (request: HttpRequest, baseUrlOf: (request: HttpRequest) => string): Promise<HttpResponse> | undefined => {
    // The OpenAPI document is also served at the conventional root path.
    const path = request.path === '/openapi.json' ? `${CONTROL_PREFIX}/openapi.json` : request.path;
    if (path !== CONTROL_PREFIX && !path.startsWith(`${CONTROL_PREFIX}/`)) return undefined;
    return serve(request, path, baseUrlOf);
  };

  async function serve(request: HttpRequest, path: string, baseUrlOf: (request: HttpRequest) => string): Promise<HttpResponse> {
    const page = await serveInspector(request.method, path.slice(CONTROL_PREFIX.length));
    if (page) return page;
    const match = await router.match(request.method === 'HEAD' ? 'GET' : request.method, path.slice(CONTROL_PREFIX.length) || '/');
    if (!match.operation) routeMiss(request.method, path, match.allowed, 'control-plane');
    const operation = match.operation;
    if (!operation.open) checkOperator(request);
    const body = operation.body ? await readJsonBody(request, operation.bodyLimit) : undefined;
    // An account's admin key must never open the control plane: refuse the operator token as one.
    const chosenKey = (body as { token?: unknown } | undefined)?.token;
    if (operation.id === 'control.accounts.create' && typeof chosenKey === 'string' && expected && timingSafeEqual(digest(chosenKey), expected)) {
      fail('INVALID_FIELD', 'token: must not be the operator token; the operator token is no account\'s key');
    }
    const query = Object.fromEntries(new URLSearchParams(request.search));
    const result = await operation.run(burrow, { params: match.params, query, body }, { baseUrl: baseUrlOf(request), operator: !operation.open || isOperator(request) });
    if (operation.status === 204 || result === undefined) return { status: operation.status === 204 ? 204 : 200, headers: {}, body: undefined };
    return { status: operation.status, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(result) };
  }
}
