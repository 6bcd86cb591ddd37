import { fail, LIMITS, limitNote, type ControlOperation } from '../../lib/index.ts';

/**
 * The request and response shapes both HTTP adapters hand over, and reading a JSON body within
 * Burrow's limits (size, nesting, content type).
 */

/** Largest accepted request body (lib/limits.ts). */
export const MAX_BODY_BYTES = LIMITS.request_body_bytes.value;

/** The limit a body is read within: the API's, or one an operation has of its own (lib/limits.ts). */
export type BodyLimit = 'request_body_bytes' | NonNullable<ControlOperation['bodyLimit']>;
/** Deepest accepted JSON nesting; deeper bodies are refused before parsing (lib/limits.ts). */
export const MAX_JSON_DEPTH = LIMITS.request_json_depth.value;

/** A request as both adapters hand it over. */
export interface HttpRequest {
  method: string;
  /** The path as WHATWG URL parsing gives it (`/api_keys/ak_…`): percent-encoded, dot segments resolved. */
  path: string;
  /** The query string with its leading `?`, or `''`. */
  search: string;
  /** `http://host:port` of the request: the base of `uri` fields when no base URL is configured. */
  readonly origin: string;
  header(name: string): string | null;
  /** Every header as received, name, value, name, value… (node's `rawHeaders`), for the request journal. */
  rawHeaders?(): readonly string[];
  /** Reads the body as text; rejects with a 413 ApiError past `limit` (default `request_body_bytes`). */
  text(limit?: BodyLimit): Promise<string>;
  sourceIp?: string;
  /** The path prefix a host framework already removed from `path` (Express's mount path). */
  mountPath?: string;
  /**
   * Why the adapter could not read the request (a request target, Host or X-Forwarded-For it
   * refuses): answered as a thrown error would be, before routing. `path` and `search` are then
   * the target as sent, for the log.
   */
  refusal?: unknown;
}

/** What the adapters write back. `body` is undefined for 204 and HEAD. */
export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string | undefined;
  /** The `error_code` of an error answer (for the request journal; not sent as a header). */
  errorCode?: string;
  /** The fault rule that applied (lib/simulation/faults.ts), for the log line. */
  fault?: string;
  /** A fault says: close the connection without answering (the pipeline decided; the adapter does it). */
  drop?: true;
}

export const JSON_TYPE = 'application/json';

/** Reads a JSON object body within `limit`; an empty body is `{}`. The text read is left in `seen.bodyText` (for the request journal) before it is parsed. */
export async function readJsonBody(request: HttpRequest, limit: BodyLimit = 'request_body_bytes', seen?: { bodyText?: string }): Promise<unknown> {
  const length = Number(request.header('content-length') ?? '0');
  if (length > LIMITS[limit].value) tooLarge(limit);
  const text = await request.text(limit);
  if (seen) seen.bodyText = text;
  if (text.trim() === '') return {};
  const sent = request.header('content-type') ?? '';
  // What clients send almost always; anything else is read the long way.
  const type = sent === JSON_TYPE ? sent : sent.split(';')[0]!.trim().toLowerCase();
  if (type !== '' && type !== JSON_TYPE && !type.endsWith('+json')) {
    fail('UNSUPPORTED_CONTENT_TYPE', `Content-Type ${JSON.stringify(type)} is not supported; send ${JSON_TYPE}`);
  }
  if (nestingDepth(text) > MAX_JSON_DEPTH) fail('BODY_NOT_JSON', `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels is not accepted ${limitNote('request_json_depth')}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    fail('BODY_NOT_JSON', `body: not valid JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail('INVALID_FIELD', `body: must be a JSON object (got ${Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value})`);
  }
  return value;
}

// A request target made only of these characters means the same thing before and after WHATWG URL
// parsing (no dot segments, no empty segments, nothing to percent-encode), so it needs no URL object.
const PLAIN_TARGET = /^(?:\/[\w~-]+)*\/?(?:\?[\x21\x24-\x26\x28-\x3b\x3d\x3f-\x7e]*)?$/;
/** Stands in for the authority of an origin-form target, which has none of its own. */
const TARGET_BASE = 'http://burrow.invalid';

/**
 * Splits a request target into the path and query that URL parsing gives (RFC 9112 §3.2). An
 * origin-form target (`/path?query`) is a path, even when it starts with `//`: read as a relative
 * reference, `//x:99999/` would be a host and port. An absolute-form target (`http://host/path`,
 * as proxies send) also gives its origin, which then stands for the Host header. Anything else
 * (`*`, `host:443`) throws a 400 ApiError.
 */
export function parseTarget(target: string): { path: string; search: string; origin?: string } {
  if (PLAIN_TARGET.test(target)) {
    const q = target.indexOf('?');
    return q < 0 ? { path: target, search: '' } : { path: target.slice(0, q), search: q === target.length - 1 ? '' : target.slice(q) };
  }
  const absolute = /^https?:\/\//i.test(target);
  const url = absolute || target.startsWith('/') ? URL.parse(absolute ? target : `${TARGET_BASE}${target}`) : null;
  if (!url) fail('REQUEST_MALFORMED', `the request target ${quote(target)} is neither a path nor an http(s) URL`);
  return { path: url.pathname, search: url.search, ...(absolute ? { origin: url.origin } : {}) };
}

/** Text a client sent, quoted for an error message: JSON-escaped and cut at 100 characters. */
export function quote(text: string): string {
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

/** Throws the 413 for bodies over the limit. */
export function tooLarge(limit: BodyLimit = 'request_body_bytes'): never {
  fail('BODY_TOO_LARGE', `the request body exceeds the maximum size of ${LIMITS[limit].value} bytes ${limitNote(limit)}`);
}

function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92) i++;
      else if (ch === 34) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 123 || ch === 91) max = Math.max(max, ++depth);
    else if (ch === 125 || ch === 93) depth--;
  }
  return max;
}
