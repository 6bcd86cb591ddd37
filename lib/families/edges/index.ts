import { defineFamily } from '../../engine/family.ts';
import { EDGES_ERRORS } from './errors.ts';
import { httpsEdges } from './https.ts';
import { EDGE_MODULE_OPERATIONS } from './module-endpoints.ts';
import { httpsEdgeRoutes } from './routes.ts';
import { tcpEdges } from './tcp.ts';
import { tlsEdges } from './tls.ts';

/** Edges (TCP, TLS, HTTPS), HTTPS edge routes and the modules of both. */
export const edgesFamily = defineFamily({
  name: 'edges',
  errors: EDGES_ERRORS,
  kinds: { tcp_edges: tcpEdges, tls_edges: tlsEdges, https_edges: httpsEdges },
  children: [httpsEdgeRoutes],
  operations: EDGE_MODULE_OPERATIONS,
  examples: {
    tcp_edges: { body: () => ({}) },
    tls_edges: { body: () => ({}) },
    https_edges: { body: () => ({}) },
  },
});

export { httpsEdges, routePath, type HttpsEdgeRecord } from './https.ts';
export type { StoredModule } from './modules.ts';
export { findEdgeByHostport, tcpEdgeHostports } from './shared.ts';
export { routeEdgeTraffic, selectRoute, type AppliedModules, type EdgeModuleHolder, type EdgeTraffic } from './traffic.ts';

export { EDGES_ERRORS } from './errors.ts';
