import { IttyRouter, type IRequest } from 'itty-router';

/**
 * The route table, built from the registry's operations on itty-router: the only module that
 * imports itty-router, used through its public API. One router answers the operation of a method
 * and path with its path parameters; a second, with every route registered for all methods,
 * collects the methods a path does allow (for 405 and CORS preflights).
 *
 * itty is asked once per method and path shape, not once per request: a path's shape keeps the
 * segments that some route spells out (`api_keys`, `routes`) and puts a positional placeholder in
 * every other one. Since a route parameter matches any non-empty segment, the path and its shape
 * take the same route, and the placeholders say which segment each parameter came from. Shapes
 * are remembered in a bounded table.
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
  /** Synchronous once the path's shape has been seen. */
  match(method: string, pathname: string): RouteMatch<T> | Promise<RouteMatch<T>>;
}

/** What itty said about one method and path shape. */
interface Shape<T> {
  operation?: T;
  /** Parameter names and the index of the path segment each comes from (or its value, when a route's literal filled it). */
  params: readonly (readonly [string, number | string])[];
  allowed: string[];
}

/** Shapes remembered per router; past this, new shapes are asked of itty every time (still right, slower). */
const MAX_SHAPES = 2048;
const PLACEHOLDER = '~';

export function createRouter<T extends Routable>(operations: readonly T[]): Router<T> {
  // itty compiles a pattern per route: the tables are built when the first path shape is asked
  // about, not when a server starts (some 500 routes were a tenth of the start-up's CPU time).
  let tables: { routes: ReturnType<typeof IttyRouter<IRequest, []>>; methods: ReturnType<typeof IttyRouter<IRequest, [Set<string>]>> } | undefined;
  const ittyTables = () => {
    if (tables) return tables;
    const routes = IttyRouter<IRequest, []>();
    const methods = IttyRouter<IRequest, [Set<string>]>();
    for (const operation of operations) {
      routes[operation.method.toLowerCase() as 'get'](operation.path, (request) => ({ operation, params: request.params }));
      methods.all(operation.path, (_request, allowed) => void allowed.add(operation.method));
    }
    return (tables = { routes, methods });
  };
  const literals = new Set(operations.flatMap((op) => op.path.split('/').filter((segment) => segment !== '' && !segment.startsWith(':'))));
  const shapes = new Map<string, Shape<T>>();

  async function learn(key: string, method: string, shapedPath: string): Promise<Shape<T>> {
    const { routes, methods } = ittyTables();
    const url = `http://route${shapedPath}`;
    const found = (await routes.fetch({ method, url })) as { operation: T; params: Record<string, string> } | undefined;
    let shape: Shape<T>;
    if (found) {
      shape = { operation: found.operation, params: Object.entries(found.params).map(([name, value]) => [name, value.startsWith(PLACEHOLDER) ? Number(value.slice(PLACEHOLDER.length)) : value] as const), allowed: [] };
    } else {
      const allowed = new Set<string>();
      await methods.fetch({ method, url }, allowed);
      shape = { params: [], allowed: [...allowed] };
    }
    if (shapes.size < MAX_SHAPES) shapes.set(key, shape);
    return shape;
  }

  function answer(shape: Shape<T>, segments: readonly string[]): RouteMatch<T> {
    if (!shape.operation) return { params: {}, allowed: shape.allowed };
    const params: Record<string, string> = {};
    for (const [name, from] of shape.params) params[name] = typeof from === 'number' ? decodeParam(segments[from]!) : from;
    return { operation: shape.operation, params, allowed: [] };
  }

  return {
    match(method, pathname) {
      const path = pathname.length > 1 && pathname.endsWith('/') ? pathname.replace(/\/+$/, '') : pathname;
      const segments = path.split('/');
      let shapedPath = '';
      for (let i = 1; i < segments.length; i++) {
        const segment = segments[i]!;
        shapedPath += segment === '' || literals.has(segment) ? `/${segment}` : `/${PLACEHOLDER}${i}`;
      }
      const key = `${method} ${shapedPath}`;
      const known = shapes.get(key);
      if (known) return answer(known, segments);
      return learn(key, method, shapedPath || '/').then((shape) => answer(shape, segments));
    },
  };
}

function decodeParam(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
