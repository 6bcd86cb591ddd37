import type { Operation } from '../../context.ts';
import { httpsEdges } from './https.ts';
import { EDGE_MODULE_OPERATIONS } from './module-endpoints.ts';
import { HTTPS_EDGE_ROUTE_OPERATIONS } from './routes.ts';
import { tcpEdges } from './tcp.ts';
import { tlsEdges } from './tls.ts';

/** The three edge kinds, served through the resource engine. */
export const EDGES = [tcpEdges, tlsEdges, httpsEdges] as const;

/** Edge operations beyond CRUD: HTTPS edge routes and every module endpoint. */
export const EDGE_OPERATIONS: readonly Operation[] = [...HTTPS_EDGE_ROUTE_OPERATIONS, ...EDGE_MODULE_OPERATIONS];
