import type { StoreReader } from '../../store.ts';
import { pickUpstream, type Upstream, type UpstreamChoice } from '../backends/index.ts';
import type { HttpsEdgeRecord, RouteRecord } from './https.ts';
import type { StoredModule } from './modules.ts';
import { findEdgeByHostport, type EdgeRecord } from './shared.ts';

/**
 * Where traffic to an edge goes, read from the store and nothing else: the edge that holds the
 * hostport (the instance-wide hostport index, one read), for an HTTPS edge the route that selects
 * the request's path, the modules that apply (the edge's, then the route's), and the upstream its
 * backend module picks (lib/families/backends/upstream.ts). The ingress applies the modules through
 * the policy engine and connects to the upstream. Cost per request: one read for the hostport, one
 * for the edge (routes live inside it), O(routes) to match, and the backend reads.
 *
 * Route selection (the vendor documents no order; this is the usual one, and what its route
 * selectors allow): an `exact_path` route whose match equals the path wins; else the `path_prefix`
 * route with the longest match the path starts with (plain string prefixes, so `/api` also selects
 * `/api2`). Match pairs are unique per edge (7126), so the choice is never a tie.
 */

/** Which edge kind holds a set of modules, and which kind of thing: an edge or an HTTPS edge route. */
export type EdgeModuleHolder = 'https_edge' | 'https_route' | 'tcp_edge' | 'tls_edge';

/** One set of modules that applies to the traffic, in the order they apply. */
export interface AppliedModules {
  readonly holder: EdgeModuleHolder;
  /** The edge's or route's id. */
  readonly id: string;
  readonly modules: Readonly<Record<string, unknown>>;
}

/** Where one request (HTTPS edges) or connection (TCP and TLS edges) to an edge goes. */
export interface EdgeTraffic {
  readonly account: string;
  readonly edgeId: string;
  readonly holder: Exclude<EdgeModuleHolder, 'https_route'>;
  /** The HTTPS edge route that selected the request; absent for TCP and TLS edges, and when no route did. */
  readonly routeId?: string;
  readonly modules: readonly AppliedModules[];
  readonly upstream: Upstream;
}

const HOLDERS: Readonly<Record<string, { readonly holder: EdgeTraffic['holder']; readonly kind: string; readonly label: string }>> = {
  edghts: { holder: 'https_edge', kind: 'https_edge', label: 'HTTPS edge' },
  edgtcp: { holder: 'tcp_edge', kind: 'tcp_edge', label: 'TCP edge' },
  edgtls: { holder: 'tls_edge', kind: 'tls_edge', label: 'TLS edge' },
};

/** The route of `edge` that selects `path` (see the file comment), if any. */
export function selectRoute(routes: readonly RouteRecord[], path: string): RouteRecord | undefined {
  let best: RouteRecord | undefined;
  for (const route of routes) {
    if (route.match_type === 'exact_path' && route.match === path) return route;
    if (route.match_type === 'path_prefix' && path.startsWith(route.match) && route.match.length > (best?.match.length ?? -1)) best = route;
  }
  return best;
}

const enabled = (stored: unknown): StoredModule | undefined => (stored && (stored as StoredModule).enabled ? (stored as StoredModule) : undefined);

/**
 * Where traffic to `hostport` (canonical `host:port`) goes, or undefined when no edge holds it.
 * `path` selects the route of an HTTPS edge (the request's path, before any rewrite).
 */
export async function routeEdgeTraffic(reader: StoreReader, hostport: string, path: string, choice: UpstreamChoice): Promise<EdgeTraffic | undefined> {
  const held = await findEdgeByHostport(reader, hostport);
  const kind = held ? HOLDERS[held.edgeId.slice(0, held.edgeId.indexOf('_'))] : undefined;
  const edge = held && kind ? ((await reader.get({ account: held.account, kind: kind.kind }, held.edgeId)) as EdgeRecord | undefined) : undefined;
  if (!held || !kind || !edge) return undefined;
  const base = { account: held.account, edgeId: edge.id, holder: kind.holder };
  const edgeModules: AppliedModules = { holder: kind.holder, id: edge.id, modules: edge as unknown as Record<string, unknown> };
  const upstreamOf = (backend: StoredModule | undefined, owner: string) =>
    backend ? pickUpstream(reader, held.account, backend.backend_id as string, choice) : Promise.resolve<Upstream>({ kind: 'offline', reason: `${owner} has no backend` });
  if (kind.holder !== 'https_edge') {
    return { ...base, modules: [edgeModules], upstream: await upstreamOf(enabled(edge.backend), `${kind.label} '${edge.id}'`) };
  }
  const route = selectRoute((edge as HttpsEdgeRecord).routes, path);
  if (!route) return { ...base, modules: [edgeModules], upstream: { kind: 'offline', reason: `no route of HTTPS edge '${edge.id}' selects the path ${path}` } };
  return {
    ...base,
    routeId: route.id,
    modules: [edgeModules, { holder: 'https_route', id: route.id, modules: route as unknown as Record<string, unknown> }],
    upstream: await upstreamOf(enabled((route as unknown as Record<string, unknown>).backend), `route '${route.id}' of HTTPS edge '${edge.id}'`),
  };
}
