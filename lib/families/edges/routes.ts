import * as v from 'valibot';
import { type ChildDefinition } from '../../engine/children.ts';
import type { OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { coded, description, metadata, zeroIsUnset } from '../../conventions/fields.ts';
import { updateReferences } from '../../engine/references.ts';
import { getRecord, scopeOf } from '../../engine/resource.ts';
import { httpsEdges, ROUTE_LABEL, ROUTE_MODULES, routePath, routeReferences, routeResponse, type HttpsEdgeRecord, type MatchType, type RouteRecord } from './https.ts';
import { moduleFields, patchModules, storeModules, type StoredModule } from './modules.ts';
import { stripEdgeIds } from './shared.ts';
import { EDGES_ERRORS } from './errors.ts';

/**
 * HTTPS edge routes (/edges/https/{edge_id}/routes/{id}): create, get, update and delete (there is
 * no list: the edge answers its routes). A route selects requests by `match_type` (exact_path or
 * path_prefix) and `match` (a path starting with `/`); the pair is unique per edge (409 7126), so
 * `exact_path /a` and `path_prefix /a` may coexist. Routes carry the HTTP modules (https.ts).
 */

const MATCH_TYPES = ['exact_path', 'path_prefix'] as const;

// Every scalar field of a route body treats "" as not sent: the vendor's newer Python client sends
// `match_type: ""`, `match: ""`, `description: ""`, `metadata: ""` in every route update.
const RouteFields = v.strictObject({
  description: zeroIsUnset(description),
  metadata: zeroIsUnset(metadata),
  match_type: zeroIsUnset(v.picklist(MATCH_TYPES, (issue) => coded(EDGES_ERRORS.ROUTE_MATCH_TYPE_INVALID, `must be exact_path or path_prefix (got ${JSON.stringify(issue.input)})`))),
  match: zeroIsUnset(v.string()),
  ...moduleFields(ROUTE_MODULES),
});

function checkMatch(match: string | undefined): string {
  if (!match) throw new ApiError(EDGES_ERRORS.ROUTE_MATCH_MISSING, 'match: is required; the path the route selects, such as "/" or "/api"');
  if (!match.startsWith('/')) throw new ApiError(EDGES_ERRORS.ROUTE_MATCH_INVALID, `match: must be a path starting with "/" (got ${JSON.stringify(match)})`);
  return match;
}

function refuseDuplicateMatch(edge: HttpsEdgeRecord, route: Pick<RouteRecord, 'id' | 'match_type' | 'match'>): void {
  const other = edge.routes.find((r) => r.id !== route.id && r.match_type === route.match_type && r.match === route.match);
  if (other) {
    throw new ApiError(EDGES_ERRORS.ROUTE_MATCH_DUPLICATE, `match: HTTPS edge '${edge.id}' already has a ${route.match_type} route for ${JSON.stringify(route.match)} ('${other.id}')`, { used_by: other.id });
  }
}

/** The route `id` of an edge, or the 404 7124. */
function findRoute(edge: HttpsEdgeRecord, id: string): RouteRecord {
  const route = edge.routes.find((r) => r.id === id);
  if (!route) throw new ApiError(EDGES_ERRORS.EDGE_ROUTE_NOT_FOUND, `HTTPS edge route '${id}' was not found on HTTPS edge '${edge.id}'`, { id });
  return route;
}

/** The edge and route named by the path, or 404 (7000 for the edge, 7124 for the route). */
export async function loadRoute(ctx: OperationContext, params: Readonly<Record<string, string>>): Promise<{ edge: HttpsEdgeRecord; route: RouteRecord }> {
  const edge = await getRecord(ctx, httpsEdges, params.edge_id!);
  return { edge, route: findRoute(edge, params.id!) };
}

const AUTH_MODULES = ['oauth', 'oidc', 'saml'] as const;

const enabledAuth = (route: RouteRecord) => AUTH_MODULES.filter((name) => (route[name] as StoredModule | null | undefined)?.enabled);

/**
 * The vendor's rules for the authentication modules of routes: at most one of OAuth, OIDC and
 * SAML enabled on a route (7079), on at most one route of an edge (7155), and OAuth set only on the
 * route whose match is `/` (7127; either match type, and also while disabled, as the vendor's
 * message speaks of configuring it). Disabled OIDC and SAML modules count for nothing.
 */
function checkAuthModules(edge: HttpsEdgeRecord, route: RouteRecord): void {
  const enabled = enabledAuth(route);
  if (enabled.length > 1) {
    throw new ApiError(EDGES_ERRORS.ROUTE_AUTH_MODULES_CONFLICT, `${enabled.join(', ')}: only one of OAuth, OIDC and SAML may be enabled on a route`);
  }
  if (route.oauth && route.match !== '/') {
    throw new ApiError(EDGES_ERRORS.ROUTE_OAUTH_ONLY_ROOT, `oauth: OAuth may only be set on the route for "/", not on the route for ${JSON.stringify(route.match)}`);
  }
  const other = enabled.length === 0 ? undefined : edge.routes.find((r) => r.id !== route.id && enabledAuth(r).length > 0);
  if (other) {
    throw new ApiError(EDGES_ERRORS.ROUTE_AUTH_ON_MANY_ROUTES, `${enabled[0]}: HTTPS edge '${edge.id}' already has ${enabledAuth(other)[0]} enabled on route '${other.id}'; OAuth, OIDC and SAML may be enabled on one route of an edge`, { used_by: other.id });
  }
}

/**
 * Writes a route change into its edge (`previous` undefined: added; `next` undefined: removed) and
 * moves the route's entries in the reverse-reference index. Answers the edge as saved.
 */
export async function saveRoute(ctx: OperationContext, edge: HttpsEdgeRecord, previous: RouteRecord | undefined, next: RouteRecord | undefined): Promise<HttpsEdgeRecord> {
  if (next) checkAuthModules(edge, next);
  const others = edge.routes.filter((r) => r.id !== (previous ?? next)!.id);
  const routes = next === undefined ? others : previous === undefined ? [...edge.routes, next] : edge.routes.map((r) => (r.id === next.id ? next : r));
  const saved = { ...edge, routes };
  await ctx.tx.put(scopeOf(ctx, httpsEdges.kind), saved);
  const id = (previous ?? next)!.id;
  await updateReferences(ctx, { id, label: ROUTE_LABEL }, previous ? routeReferences(previous) : [], next ? routeReferences(next) : []);
  return saved;
}

/** Routes: a child collection of HTTPS edges, stored inside the edge record (there is no list: the edge answers its routes). */
export const httpsEdgeRoutes: ChildDefinition<HttpsEdgeRecord, RouteRecord, typeof RouteFields, typeof RouteFields> = {
  name: 'https_edge_routes',
  parent: httpsEdges,
  parentParam: 'edge_id',
  segment: 'routes',
  childParam: 'id',
  summaries: {
    create: 'Create an HTTPS edge route',
    get: 'Get an HTTPS edge route',
    update: 'Update an HTTPS edge route (modules sent are replaced whole; absent ones stay)',
    delete: 'Delete an HTTPS edge route',
  },
  createSchema: RouteFields,
  updateSchema: RouteFields,
  stripIds: stripEdgeIds,
  find: (_ctx, edge, id) => findRoute(edge, id),
  async create(ctx, edge, body) {
    if (body.match_type === undefined) throw new ApiError(EDGES_ERRORS.ROUTE_MATCH_TYPE_INVALID, 'match_type: is required; exact_path or path_prefix');
    const selector = { id: '', match_type: body.match_type as MatchType, match: checkMatch(body.match) };
    refuseDuplicateMatch(edge, selector);
    return {
      ...(await storeModules(ctx, ROUTE_MODULES, body)),
      id: ctx.ids.id('edghtsrt'),
      created_at: formatTime(ctx.clock.now()),
      description: body.description ?? '',
      metadata: body.metadata ?? '',
      edge_id: edge.id,
      match_type: selector.match_type,
      match: selector.match,
    };
  },
  async update(ctx, edge, route, patch) {
    const next: RouteRecord = {
      ...route,
      ...(await patchModules(ctx, ROUTE_MODULES, patch, routePath(route))),
      ...(patch.description === undefined ? {} : { description: patch.description }),
      ...(patch.metadata === undefined ? {} : { metadata: patch.metadata }),
      ...(patch.match_type === undefined ? {} : { match_type: patch.match_type }),
      ...(patch.match === undefined ? {} : { match: checkMatch(patch.match) }),
    };
    refuseDuplicateMatch(edge, next);
    return next;
  },
  save: saveRoute,
  respond: (ctx, _edge, route) => routeResponse(ctx, route),
};
