import type { OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { absoluteUri } from '../../conventions/refs.ts';
import { HTTP_REQUEST_PHASES } from '../../conventions/traffic-policy.ts';
import { updateReferences } from '../../engine/references.ts';
import type { BaseRecord } from '../../engine/resource.ts';
import {
  BACKEND_MODULE,
  CIRCUIT_BREAKER_MODULE,
  COMPRESSION_MODULE,
  HTTPS_TLS_TERMINATION_MODULE,
  IP_RESTRICTION_MODULE,
  moduleReferences,
  moduleResponses,
  MUTUAL_TLS_MODULE,
  OAUTH_MODULE,
  OIDC_MODULE,
  policyModule,
  REQUEST_HEADERS_MODULE,
  trafficPolicyModule,
  RESPONSE_HEADERS_MODULE,
  SAML_MODULE,
  USER_AGENT_FILTER_MODULE,
  WEBHOOK_VERIFICATION_MODULE,
  WEBSOCKET_TCP_CONVERTER_MODULE,
} from './modules.ts';
import { defineEdge, type EdgeRecord } from './shared.ts';
import { EDGES_ERRORS } from './errors.ts';

/**
 * HTTPS edges (/edges/https): hostports on port 443 (7116), the mutual_tls and tls_termination
 * modules (termination is always at the edge: `terminate_at` may not be sent, 7109), and routes.
 *
 * Routes live inside their edge's record, in creation order, and the edge answers them in full in
 * its `routes`. Each route is its own referrer in the reverse index ("HTTPS edge route …"), so a
 * backend or IP policy a route uses names that route when its delete is refused; deleting the edge
 * deletes its routes and releases what they referenced. The route operations are in routes.ts.
 */

export type MatchType = 'exact_path' | 'path_prefix';

export interface RouteRecord extends BaseRecord {
  readonly edge_id: string;
  readonly match_type: MatchType;
  readonly match: string;
}

export interface HttpsEdgeRecord extends EdgeRecord {
  readonly routes: readonly RouteRecord[];
}

/** The modules of a route, in response order. */
export const ROUTE_MODULES = [
  BACKEND_MODULE,
  IP_RESTRICTION_MODULE,
  CIRCUIT_BREAKER_MODULE,
  COMPRESSION_MODULE,
  REQUEST_HEADERS_MODULE,
  RESPONSE_HEADERS_MODULE,
  WEBHOOK_VERIFICATION_MODULE,
  OAUTH_MODULE,
  SAML_MODULE,
  OIDC_MODULE,
  WEBSOCKET_TCP_CONVERTER_MODULE,
  USER_AGENT_FILTER_MODULE,
  policyModule(HTTP_REQUEST_PHASES),
  trafficPolicyModule(HTTP_REQUEST_PHASES),
] as const;

export const ROUTE_LABEL = 'HTTPS edge route';

/** The path of a route: `/edges/https/{edge_id}/routes/{id}`. */
export const routePath = (route: Pick<RouteRecord, 'id' | 'edge_id'>) => `/edges/https/${route.edge_id}/routes/${route.id}`;

/** The ids a route's modules point at. */
export const routeReferences = (route: RouteRecord) => moduleReferences(ROUTE_MODULES, route);

/** A route as the API answers it: every module key present, `null` when unset. */
export function routeResponse(ctx: OperationContext, route: RouteRecord): Record<string, unknown> {
  return {
    id: route.id,
    uri: absoluteUri(ctx.baseUrl, routePath(route)),
    created_at: route.created_at,
    description: route.description,
    metadata: route.metadata,
    edge_id: route.edge_id,
    match_type: route.match_type,
    match: route.match,
    ...moduleResponses(ctx, ROUTE_MODULES, route, route.id),
  };
}

function requirePort443(_host: string, port: number, field: string): void {
  if (port !== 443) throw new ApiError(EDGES_ERRORS.HOSTPORT_NOT_443, `${field}: HTTPS edges serve port 443 only (got port ${port})`);
}

export const httpsEdges = defineEdge<HttpsEdgeRecord>({
  prefix: 'edghts',
  name: 'https_edges',
  label: 'HTTPS edge',
  kind: 'https_edge',
  path: '/edges/https',
  listKey: 'https_edges',
  modules: [MUTUAL_TLS_MODULE, HTTPS_TLS_TERMINATION_MODULE],
  hostportRule: requirePort443,
  initial: () => ({ routes: [] }),
  respondExtra: (ctx, record) => ({ routes: record.routes.map((route) => routeResponse(ctx, route)) }),
  async onDelete(ctx, record) {
    for (const route of record.routes) await updateReferences(ctx, { id: route.id, label: ROUTE_LABEL }, routeReferences(route), []);
  },
});
