import { IttyRouter } from 'itty-router';

/**
 * The route table, built from the registry's operations on itty-router: the only module that
 * imports itty-router. itty compiles each `/path/:param` into a pattern; `match` answers the
 * operation and its path parameters, or the methods the path does allow (for 405).
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
  match(method: string, pathname: string): RouteMatch<T>;
}

export function createRouter<T extends Routable>(operations: readonly T[]): Router<T> {
  const itty = IttyRouter();
  for (const operation of operations) itty[operation.method.toLowerCase() as 'get'](operation.path);
  // itty keeps one [method, pattern, handlers, path] entry per registration, in order.
  const table = (itty.routes as unknown as [string, RegExp][]).map(([method, pattern], i) => ({ method, pattern, operation: operations[i]! }));
  return {
    match(method, pathname) {
      const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
      for (const route of table) {
        if (route.method !== method) continue;
        const found = route.pattern.exec(path);
        if (found) return { operation: route.operation, params: decodeParams(found.groups ?? {}), allowed: [] };
      }
      const allowed = [...new Set(table.filter((route) => route.pattern.test(path)).map((route) => route.method))];
      return { params: {}, allowed };
    },
  };
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
