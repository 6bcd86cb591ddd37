import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Edges, routes and their modules (vendor 219, 224, 7000–7195).
 */
export const EDGES_ERRORS = {
  TLS_VERSION_UNSUPPORTED: errorSpec(219, 400),
  TERMINATE_AT_INVALID: errorSpec(224, 400),
  EDGE_NOT_FOUND: errorSpec(7000, 404),
  EDGE_REQUEST_INVALID: errorSpec(7002, 400),
  EDGE_IP_POLICY_NOT_FOUND: errorSpec(7007, 404),
  CIRCUIT_BREAKER_THRESHOLD_INVALID: errorSpec(7011, 400),
  OAUTH_SCOPES_NEED_OWN_APP: errorSpec(7034, 400),
  EDGE_CA_NOT_FOUND: errorSpec(7072, 404),
  ROUTE_AUTH_MODULES_CONFLICT: errorSpec(7079, 400),
  TERMINATE_AT_ON_HTTPS_EDGE: errorSpec(7109, 400),
  ROUTE_EDGE_MISMATCH: errorSpec(7110, 400),
  HOSTPORT_PORT_INVALID: errorSpec(7112, 400),
  HOSTPORT_NOT_443: errorSpec(7116, 400),
  HOSTPORT_IN_USE: errorSpec(7122, 409),
  ROUTE_MATCH_MISSING: errorSpec(7123, 400),
  EDGE_ROUTE_NOT_FOUND: errorSpec(7124, 404),
  ROUTE_MATCH_DUPLICATE: errorSpec(7126, 409),
  ROUTE_OAUTH_ONLY_ROOT: errorSpec(7127, 400),
  ROUTE_MATCH_TYPE_INVALID: errorSpec(7130, 400),
  ROUTE_MATCH_INVALID: errorSpec(7131, 400),
  ROUTE_AUTH_ON_MANY_ROUTES: errorSpec(7155, 400),
} as const satisfies Record<string, ErrorSpec>;
