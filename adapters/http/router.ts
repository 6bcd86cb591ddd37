import { IttyRouter, type IRequest } from 'itty-router';
import { ApiError, ERRORS, fail } from '../../lib/index.ts';

/**
 * The route table, built from the registry's operations on itty-router: the only module that
 * imports itty-router, used through its public API. One router answers the operation of a method
 * and path with its path parameters; a second, with every route registered for all methods,
 * collects the methods a path does allow (for 405 and CORS preflights).
 */

/** Anything routable: the API's operations and the control plane's. */
export interface Routable {
  readonly method: string;
  readonly path: string;
}

export interface RouteMatch<T extends Routable> {
  operation?: T;
  params: Record<string, string>;
  allowed: string[];
}

export interface Router<T extends Routable> {
  match(method: string, pathname: string): Promise<RouteMatch<T>>;
}

type Found<T> = { operation: T; params: Record<string, string> };

export function createRouter<T extends Routable>(operations: readonly T[]): Router<T> {
  const routes = IttyRouter<IRequest, []>();
  const methods = IttyRouter<IRequest, [Set<string>]>();
  for (const operation of operations) {
    routes[operation.method.toLowerCase() as 'get'](operation.path, (request): Found<T> => ({ operation, params: decodeParams(request.params) }));
    methods.all(operation.path, (_request, allowed) => void allowed.add(operation.method));
  }
  return {
    async match(method, pathname) {
      const url = `http://route${pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname}`;
      const found = (await routes.fetch({ method, url })) as Found<T> | undefined;
      if (found) return { ...found, allowed: [] };
      const allowed = new Set<string>();
      await methods.fetch({ method, url }, allowed);
      return { params: {}, allowed: [...allowed] };
    },
  };
}

/** Throws the answer to a request no route took: 405 with `Allow` when the path has other methods, else 404. */
export function routeMiss(method: string, path: string, allowed: readonly string[], space: 'API' | 'control-plane'): never {
  if (allowed.length > 0) {
    throw new ApiError(ERRORS.METHOD_NOT_ALLOWED, `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, { path }, { Allow: allowed.join(', ') });
  }
  fail('ROUTE_NOT_FOUND', `no ${space} route ${method} ${path}`, { path });
}

function decodeParams(groups: Record<string, string | undefined>): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(groups)) {
    if (value === undefined) continue;
    try {
      params[name] = decodeURIComponent(value);
    } catch {
      params[name] = value;
    }
  }
  return params;
}
