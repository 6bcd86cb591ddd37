import { IttyRouter, type IRequest } from 'itty-router';
import { editDistance, editReach } from '../../lib/conventions/nearest.ts';

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
 *
 * A path no route takes gets the nearest route's path as a suggestion, asked of the routes with as
 * many segments, where a parameter takes any segment and a spelled-out segment costs its edits.
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
  /** When no route has the path: the nearest route's path, with the request's own segments as its parameters (`/api_key` → `/api_keys`). */
  nearest?: string;
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
  const templates = routeTemplates(operations);

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

  function answer(method: string, shape: Shape<T>, segments: readonly string[]): RouteMatch<T> {
    if (!shape.operation) {
      const nearest = shape.allowed.length === 0 ? nearestPath(method, segments.slice(1), templates) : undefined;
      return nearest === undefined ? { params: {}, allowed: shape.allowed } : { params: {}, allowed: shape.allowed, nearest };
    }
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
      if (known) return answer(method, known, segments);
      return learn(key, method, shapedPath || '/').then((shape) => answer(method, shape, segments));
    },
  };
}

/** A route's path as the suggestion compares it: its segments, its methods, and how many edits it forgives. */
interface Template {
  readonly segments: readonly string[];
  readonly methods: ReadonlySet<string>;
  readonly reach: number;
}

/** The routes' distinct paths by segment count. */
function routeTemplates(operations: readonly Routable[]): Map<number, Template[]> {
  const methods = new Map<string, Set<string>>();
  for (const { method, path } of operations) methods.set(path, (methods.get(path) ?? new Set()).add(method));
  const bySize = new Map<number, Template[]>();
  for (const [path, allowed] of methods) {
    const segments = path.split('/').slice(1);
    const letters = segments.reduce((sum, segment) => sum + (segment.startsWith(':') ? 0 : segment.length), 0);
    bySize.set(segments.length, [...(bySize.get(segments.length) ?? []), { segments, methods: allowed, reach: editReach(letters) }]);
  }
  return bySize;
}

/** The path of the route nearest to `asked` (segments after the leading slash), a route with `method` first among equals. */
function nearestPath(method: string, asked: readonly string[], templates: ReadonlyMap<number, readonly Template[]>): string | undefined {
  let best: { template: Template; distance: number } | undefined;
  for (const template of templates.get(asked.length) ?? []) {
    let distance = 0;
    for (let i = 0; i < asked.length && distance <= template.reach; i++) {
      const segment = template.segments[i]!;
      distance += segment.startsWith(':') ? (asked[i] === '' ? 1 : 0) : editDistance(asked[i]!, segment, template.reach - distance);
    }
    if (distance > template.reach) continue;
    if (!best || distance < best.distance || (distance === best.distance && template.methods.has(method) && !best.template.methods.has(method))) best = { template, distance };
  }
  return best && `/${best.template.segments.map((segment, i) => (segment.startsWith(':') ? asked[i] : segment)).join('/')}`;
}

function decodeParam(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
