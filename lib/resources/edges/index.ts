import type { Operation } from '../../context.ts';
import { EDGE_MODULE_OPERATIONS } from './module-endpoints.ts';
import { HTTPS_EDGE_ROUTE_OPERATIONS } from './routes.ts';

/** Edge operations beyond CRUD: HTTPS edge routes and every module endpoint. */
export const EDGE_OPERATIONS: readonly Operation[] = [...HTTPS_EDGE_ROUTE_OPERATIONS, ...EDGE_MODULE_OPERATIONS];
