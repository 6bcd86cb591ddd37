/**
 * The one error class and the one code table.
 *
 * Numbers follow the vendor's public catalogue where one fits so that
 * clients matching on codes keep working; conditions the catalogue has no number for use Burrow's
 * own range 9000–9099. The wire envelope is built from an ApiError in exactly one place
 * (`errorBody` below); the HTTP adapter only serialises it.
 */

export interface ErrorSpec {
  readonly code: number;
  readonly status: number;
}

const e = (code: number, status: number): ErrorSpec => ({ code, status });

/** Every error condition Burrow reports, with its catalogue number and HTTP status. */
export const ERRORS = {
  // Request plumbing, auth, versioning, paging (vendor 200–251)
  AUTH_MISSING: e(200, 401),
  AUTH_NOT_BEARER: e(201, 401),
  AUTH_MALFORMED: e(202, 401),
  AUTH_UNKNOWN: e(203, 401),
  AUTH_AGENT_TOKEN: e(206, 401),
  AUTH_KEY_ID: e(208, 401),
  UNSUPPORTED_CONTENT_TYPE: e(210, 415),
  BODY_UNREADABLE: e(212, 400),
  BODY_NOT_JSON: e(213, 400),
  UNKNOWN_FIELD: e(214, 400),
  INVALID_FIELD: e(215, 400),
  VERSION_UNSUPPORTED: e(217, 400),
  VERSION_MISSING: e(218, 400),
  IP_RESTRICTED: e(220, 403),
  RATE_LIMITED: e(226, 429),
  INVALID_QUERY: e(230, 400),
  UNKNOWN_QUERY_PARAM: e(231, 400),
  REPEATED_QUERY_PARAM: e(232, 400),
  INVALID_LIMIT: e(233, 400),
  INVALID_TIME: e(241, 400),
  FILTER_INVALID: e(250, 400),
  BODY_TOO_LARGE: e(812, 413),
  // Endpoints (vendor 248, 18001–18025; 9029 is the vendor's agent-side rule for internal bindings)
  ENDPOINT_TYPE_INVALID: e(248, 400),
  ENDPOINT_URL_INVALID: e(18001, 400),
  ENDPOINT_TRAFFIC_POLICY_INVALID: e(18002, 400),
  ENDPOINT_PORT_INVALID: e(18003, 400),
  ENDPOINT_URL_TAKEN: e(18009, 409),
  ENDPOINT_SCHEME_INVALID: e(18022, 400),
  ENDPOINT_INTERNAL_HOST: e(9029, 400),
  ENDPOINT_NOT_CLOUD: e(9040, 400),
  ENDPOINT_NOT_RESERVED: e(9041, 400),
  // Credentials, API keys, SSH keys (vendor 600–638)
  INVALID_ACL_RULE: e(600, 400),
  SSH_KEY_EXISTS: e(609, 409),
  SSH_KEY_MISSING: e(611, 400),
  SSH_KEY_INVALID: e(612, 400),
  OWNER_FORBIDDEN: e(628, 403),
  OWNER_UNKNOWN: e(630, 400),
  OWNER_INACTIVE: e(636, 400),
  OWNER_INACTIVE_CREDENTIAL: e(636, 403),
  // IP policies, rules and restrictions (vendor 1400–1423, 1800–1808)
  IP_POLICY_NOT_FOUND: e(1402, 404),
  IP_RULE_NOT_FOUND: e(1404, 404),
  CIDR_INVALID: e(1406, 400),
  CIDR_DUPLICATE: e(1408, 409),
  CIDR_HOST_BITS: e(1409, 400),
  CIDR_MISSING_MASK: e(1413, 400),
  IP_RULE_LAST_OF_DASHBOARD_POLICY: e(1419, 409),
  IP_POLICY_IN_USE: e(1420, 409),
  IP_RULE_ACTION_INVALID: e(1422, 400),
  IP_POLICY_ACTION_MOVED: e(1423, 400),
  IP_RESTRICTION_TOO_MANY_POLICIES: e(1800, 400),
  IP_RESTRICTION_POLICY_NOT_FOUND: e(1801, 404),
  IP_RESTRICTION_TYPE_EXISTS: e(1802, 409),
  IP_RESTRICTION_TYPE_INVALID: e(1803, 400),
  IP_RESTRICTION_NEEDS_POLICY: e(1804, 400),
  // SSH certificate authorities and certificates (vendor 1900–1966)
  SSH_PRIVATE_KEY_TYPE_INVALID: e(1909, 400),
  SSH_PUBLIC_KEY_INVALID: e(1934, 400),
  SSH_KEY_SIZE_INVALID: e(1939, 400),
  SSH_KEY_SIZE_NOT_RSA: e(1940, 400),
  SSH_CURVE_INVALID: e(1941, 400),
  SSH_CURVE_NOT_ECDSA: e(1942, 400),
  SSH_CA_NOT_FOUND: e(1949, 404),
  SSH_PUBLIC_KEY_MISSING: e(1952, 400),
  SSH_USER_CERT_DURATION: e(1962, 400),
  SSH_HOST_CERT_DURATION: e(1963, 400),
  SSH_CA_IN_USE: e(1964, 409),
  SSH_CERT_NOT_FOUND: e(1965, 404),
  // Event destinations, subscriptions and sources (vendor 235–240, 5100–5139)
  EVENT_FORMAT_INVALID: e(235, 400),
  EVENT_TYPE_INVALID: e(238, 400),
  EVENT_AUTH_INVALID: e(240, 400),
  EVENT_TARGET_INVALID: e(5100, 400),
  EVENT_DESTINATION_NOT_FOUND: e(5103, 404),
  EVENT_TARGET_IMMUTABLE: e(5108, 400),
  EVENT_DESTINATION_IN_USE: e(5112, 409),
  EVENT_SUBSCRIPTION_NOT_FOUND: e(5123, 404),
  EVENT_SOURCE_NOT_FOUND: e(5125, 404),
  EVENT_SOURCE_DUPLICATE: e(5127, 409),
  // Tunnel sessions, agent commands (vendor 800–810) and agent ingresses (6700–6711)
  AGENT_RESTART_UNSUPPORTED: e(804, 400),
  AGENT_UPDATE_UNSUPPORTED: e(806, 400),
  INGRESS_DOMAIN_INVALID: e(6704, 400),
  INGRESS_DOMAIN_NOT_THIRD_PARTY: e(6705, 400),
  INGRESS_DOMAIN_EXISTS: e(6706, 409),
  // Backends (vendor 6500–6531)
  BACKEND_REFERENCE_NOT_FOUND: e(6501, 404),
  BACKEND_IN_USE: e(6502, 409),
  BACKEND_ADDRESS_INVALID: e(6505, 400),
  BACKEND_LABELS_MISSING: e(6508, 400),
  BACKEND_LABEL_KEY_INVALID: e(6509, 400),
  BACKEND_LABEL_VALUE_INVALID: e(6510, 400),
  BACKEND_LABEL_EQUALS: e(6531, 400),
  BACKEND_WEIGHT_INVALID: e(6512, 400),
  BACKEND_NOT_FOUND: e(6514, 404),
  BACKEND_STATUS_CODE_INVALID: e(6517, 400),
  BACKEND_ID_INVALID: e(6526, 400),
  // X.509 certificate authorities (vendor 1900–1926)
  CA_PEM_UNPARSEABLE: e(1900, 400),
  CA_PEM_HEADERS: e(1910, 400),
  CA_PEM_WRONG_TYPE: e(1911, 400),
  CA_PEM_SEVERAL: e(1912, 400),
  CA_NOT_A_CA: e(1913, 400),
  CA_PEM_EMPTY: e(1919, 400),
  CA_PEM_NOT_PEM: e(1920, 400),
  CA_PEM_TOO_LARGE: e(1921, 400),
  // TLS certificates (vendor 1900–1926)
  TLS_CERTIFICATE_UNPARSEABLE: e(1900, 400),
  TLS_PRIVATE_KEY_MISSING: e(1901, 400),
  TLS_PRIVATE_KEY_ENCRYPTED: e(1902, 400),
  TLS_PRIVATE_KEY_UNSUPPORTED: e(1903, 400),
  TLS_PEM_HEADERS: e(1910, 400),
  TLS_PEM_WRONG_TYPE: e(1911, 400),
  TLS_CERTIFICATE_MISSING: e(1922, 400),
  TLS_KEY_MISMATCH: e(1923, 400),
  TLS_KEY_IS_CERTIFICATE: e(1924, 400),
  TLS_CERTIFICATE_IS_KEY: e(1925, 400),
  TLS_CHAIN_ORDER: e(1926, 400),
  TLS_CERTIFICATE_NOT_FOUND: e(1965, 404),
  // Reserved domains (vendor 400–461) and reserved addresses (500–517)
  RESERVED_DOMAIN_REGION_INVALID: e(400, 400),
  RESERVED_DOMAIN_WILDCARD_PLACEMENT: e(402, 400),
  RESERVED_DOMAIN_WILDCARD_LABEL: e(403, 400),
  RESERVED_DOMAIN_SERVICE_NAME: e(404, 400),
  RESERVED_DOMAIN_INVALID: e(406, 400),
  RESERVED_DOMAIN_TAKEN_BY_YOU: e(413, 409),
  RESERVED_DOMAIN_TAKEN: e(414, 409),
  RESERVED_DOMAIN_CERTIFICATE_AND_POLICY: e(434, 400),
  RESERVED_DOMAIN_CERTIFICATE_MANAGED: e(436, 409),
  RESERVED_DOMAIN_SERVICE_POLICY: e(439, 400),
  RESERVED_DOMAIN_SERVICE_UPLOAD: e(440, 400),
  RESERVED_DOMAIN_IN_USE: e(446, 409),
  RESERVED_DOMAIN_SUBDOMAIN: e(450, 400),
  RESERVED_DOMAIN_REGION_FIXED: e(451, 400),
  RESERVED_ADDR_REGION_INVALID: e(500, 400),
  RESERVED_ADDR_EXHAUSTED: e(503, 409),
  // Edges, routes and their modules (vendor 219, 224, 7000–7195)
  TLS_VERSION_UNSUPPORTED: e(219, 400),
  TERMINATE_AT_INVALID: e(224, 400),
  EDGE_NOT_FOUND: e(7000, 404),
  EDGE_REQUEST_INVALID: e(7002, 400),
  EDGE_IP_POLICY_NOT_FOUND: e(7007, 404),
  CIRCUIT_BREAKER_THRESHOLD_INVALID: e(7011, 400),
  OAUTH_SCOPES_NEED_OWN_APP: e(7034, 400),
  EDGE_CA_NOT_FOUND: e(7072, 404),
  ROUTE_AUTH_MODULES_CONFLICT: e(7079, 400),
  TERMINATE_AT_ON_HTTPS_EDGE: e(7109, 400),
  ROUTE_EDGE_MISMATCH: e(7110, 400),
  HOSTPORT_PORT_INVALID: e(7112, 400),
  HOSTPORT_NOT_443: e(7116, 400),
  HOSTPORT_IN_USE: e(7122, 409),
  ROUTE_MATCH_MISSING: e(7123, 400),
  EDGE_ROUTE_NOT_FOUND: e(7124, 404),
  ROUTE_MATCH_DUPLICATE: e(7126, 409),
  ROUTE_OAUTH_ONLY_ROOT: e(7127, 400),
  ROUTE_MATCH_TYPE_INVALID: e(7130, 400),
  ROUTE_MATCH_INVALID: e(7131, 400),
  ROUTE_AUTH_ON_MANY_ROUTES: e(7155, 400),
  // Vaults and secrets (vendor 23000–23005, 24000–24009)
  VAULT_NAME_INVALID: e(23000, 400),
  VAULT_NAME_EMPTY: e(23001, 400),
  VAULT_NOT_EMPTY: e(23003, 409),
  VAULT_NAME_EXISTS: e(23004, 409),
  SECRET_NAME_INVALID: e(24000, 400),
  SECRET_NAME_EMPTY: e(24001, 400),
  SECRET_NAME_TOO_LONG: e(24002, 400),
  SECRET_VALUE_EMPTY: e(24003, 400),
  SECRET_VALUE_TOO_LARGE: e(24004, 400),
  SECRET_NAME_EXISTS: e(24005, 409),
  SECRET_VAULT_NOT_FOUND: e(24006, 404),
  SECRET_VAULT_MISSING: e(24008, 400),
  SECRET_VAULT_NAME_NOT_FOUND: e(24009, 404),
  // Burrow's own range
  NOT_FOUND: e(9001, 404),
  ROUTE_NOT_FOUND: e(9002, 404),
  METHOD_NOT_ALLOWED: e(9003, 405),
  INTERNAL: e(9004, 500),
  STORE_UNAVAILABLE: e(9005, 503),
  OPERATOR_FORBIDDEN: e(9006, 403),
  CONFLICT: e(9007, 409),
  AGENT_NO_UPDATE: e(9010, 409),
  AGENT_UPDATING: e(9011, 409),
  AGENT_UPDATED_NOT_RESTARTED: e(9012, 409),
  AGENT_CREDENTIAL_UNKNOWN: e(9013, 401),
  AGENT_BIND_REFUSED: e(9014, 403),
  SNAPSHOT_INVALID: e(9020, 400),
  BACKEND_CYCLE: e(9030, 400),
  SECRETS_KEY_MISMATCH: e(9040, 500),
  // What HTTP itself refuses before a request is routed (a target, Host or X-Forwarded-For that
  // cannot be read; headers past node's limit; a request that came too slowly)
  REQUEST_MALFORMED: e(9050, 400),
  REQUEST_HEADERS_TOO_LARGE: e(9051, 431),
  REQUEST_TIMEOUT: e(9052, 408),
} as const satisfies Record<string, ErrorSpec>;

export type ErrorName = keyof typeof ERRORS;

/** Any failure an operation reports to its caller: status, stable code and a message. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: number;
  readonly details: Record<string, string>;
  readonly headers: Record<string, string>;

  constructor(
    spec: ErrorSpec,
    message: string,
    details: Record<string, string> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = spec.status;
    this.code = spec.code;
    this.details = details;
    this.headers = headers;
  }
}

/** Shorthand: `fail('NOT_FOUND', 'api key ak_… not found')`. */
export function fail(name: ErrorName, message: string, details?: Record<string, string>): never {
  throw new ApiError(ERRORS[name], message, details);
}

/** A 404 for a resource of `label` ("API key") with this id; the same for foreign ids. */
export function notFound(label: string, id: string, spec: ErrorSpec = ERRORS.NOT_FOUND): never {
  throw new ApiError(spec, `${label} '${id}' was not found`, { id });
}

/** The wire envelope of an error. `prefix` is `ERR_BURROW_` unless configured otherwise. */
export interface ErrorBody {
  error_code: string;
  status_code: number;
  msg: string;
  details: Record<string, string>;
}

export function errorBody(error: ApiError, prefix: string, operationId: string): ErrorBody {
  return {
    error_code: `${prefix}${error.code}`,
    status_code: error.status,
    msg: error.message,
    details: { ...error.details, operation_id: operationId },
  };
}
