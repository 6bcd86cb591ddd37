/**
 * The one error class, the core's error conditions and the one envelope.
 *
 * Numbers follow the vendor's public catalogue where one fits so that clients matching on codes
 * keep working; conditions the catalogue has no number for use Burrow's own range 9000–9099. The
 * conditions of one resource family are that family's own table (`lib/families/<family>/errors.ts`,
 * declared as its `errors`); this one holds what the core and the adapters report, and conditions
 * several families share. The wire envelope is built from an ApiError in exactly one place
 * (`errorBody` below); the HTTP adapter only serialises it.
 */

export interface ErrorSpec {
  readonly code: number;
  readonly status: number;
}

/** An error condition: its catalogue number and HTTP status. */
export const errorSpec = (code: number, status: number): ErrorSpec => ({ code, status });
const e = errorSpec;

/** The error conditions of the core and the adapters, and those several families share. */
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
  RATE_LIMITED: e(226, 429),
  INVALID_QUERY: e(230, 400),
  UNKNOWN_QUERY_PARAM: e(231, 400),
  REPEATED_QUERY_PARAM: e(232, 400),
  INVALID_LIMIT: e(233, 400),
  INVALID_TIME: e(241, 400),
  FILTER_INVALID: e(250, 400),
  BODY_TOO_LARGE: e(812, 413),
  // Traffic policy documents refused on write, for every holder (vendor 2200–2235)
  POLICY_EXPRESSION_INVALID: e(2200, 400),
  POLICY_ACTION_UNKNOWN: e(2201, 400),
  POLICY_ACTION_PHASE: e(2202, 400),
  POLICY_ACTION_CONFIG_INVALID: e(2204, 400),
  POLICY_IP_POLICY_UNKNOWN: e(2216, 400),
  POLICY_PHASE_PROTOCOL: e(2230, 400),
  POLICY_NOT_TERMINATING: e(2235, 400),
  // Owners of API keys and credentials: users and bot users (vendor 628–636)
  OWNER_FORBIDDEN: e(628, 403),
  OWNER_UNKNOWN: e(630, 400),
  OWNER_INACTIVE: e(636, 400),
  OWNER_INACTIVE_CREDENTIAL: e(636, 403),
  // Burrow's own range
  NOT_FOUND: e(9001, 404),
  ROUTE_NOT_FOUND: e(9002, 404),
  METHOD_NOT_ALLOWED: e(9003, 405),
  INTERNAL: e(9004, 500),
  STORE_UNAVAILABLE: e(9005, 503),
  OPERATOR_FORBIDDEN: e(9006, 403),
  CONFLICT: e(9007, 409),
  SNAPSHOT_INVALID: e(9020, 400),
  // What HTTP itself refuses before a request is routed (a target, Host or X-Forwarded-For that
  // cannot be read; headers past node's limit; a request that came too slowly)
  REQUEST_MALFORMED: e(9050, 400),
  REQUEST_HEADERS_TOO_LARGE: e(9051, 431),
  REQUEST_TIMEOUT: e(9052, 408),
  // A fault rule's error answer when the rule names no error code of its own (lib/simulation/faults.ts)
  FAULT_INJECTED: e(9060, 500),
} as const satisfies Record<string, ErrorSpec>;

export type ErrorName = keyof typeof ERRORS;

/** An error condition named in the core's table, or a family's own spec. */
export type ErrorRef = ErrorName | ErrorSpec;

export function specOf(error: ErrorRef): ErrorSpec {
  return typeof error === 'string' ? ERRORS[error] : error;
}

/** Any failure an operation reports to its caller: status, stable code and a message. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: number;
  readonly details: Record<string, string>;
  readonly headers: Record<string, string>;
  /** The envelope's `error_code` as is, instead of the prefix and `code` (a fault rule's chosen code). */
  readonly wireCode: string | undefined;

  constructor(
    spec: ErrorSpec,
    message: string,
    details: Record<string, string> = {},
    headers: Record<string, string> = {},
    wireCode?: string,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = spec.status;
    this.code = spec.code;
    this.details = details;
    this.headers = headers;
    this.wireCode = wireCode;
  }
}

/** Shorthand: `fail('NOT_FOUND', 'api key ak_… not found')`, or `fail(VAULTS_ERRORS.VAULT_NOT_EMPTY, …)`. */
export function fail(error: ErrorRef, message: string, details?: Record<string, string>): never {
  throw new ApiError(specOf(error), message, details);
}

/** A 404 for a resource of `label` ("API key") with this id; the same for foreign ids. */
export function notFound(label: string, id: string, spec: ErrorSpec = ERRORS.NOT_FOUND): never {
  throw new ApiError(spec, `${label} '${id}' was not found`, { id });
}

/**
 * Why `prefix` cannot begin `error_code` values, or undefined when it can: 1–32 characters of A–Z,
 * 0–9 and `_`, starting with a letter (`ERR_NGROK_`, so that clients matching the vendor's codes
 * match Burrow's). Codes are matched as text; anything else is more likely a mistake than a wish.
 */
export function errorPrefixProblem(prefix: string): string | undefined {
  if (/^[A-Z][A-Z0-9_]{0,31}$/.test(prefix)) return undefined;
  return `must be 1 to 32 characters of A-Z, 0-9 and _, starting with a letter, such as ERR_NGROK_ (got ${JSON.stringify(prefix)})`;
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
    error_code: error.wireCode ?? `${prefix}${error.code}`,
    status_code: error.status,
    msg: error.message,
    details: { ...error.details, operation_id: operationId },
  };
}
