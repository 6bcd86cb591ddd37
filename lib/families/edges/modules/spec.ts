import * as v from 'valibot';
import type { OperationContext } from '../../../engine/context.ts';
import { HTTP_HEADER_NAME, type Schema } from '../../../conventions/fields.ts';
import { re2Pattern } from '../../../conventions/patterns.ts';

/**
 * The edge modules: one spec per module (its request "mutate" schema, how it is checked and
 * stored, the ids it points at, its response shape). Edges and routes hold a set of specs; their
 * bodies, PATCH rules, responses and the module endpoints (module-endpoints.ts) are all derived
 * from these specs, so a module is described once.
 *
 * Shared rules: `enabled` defaults to true; every id a module names (backend, IP policy, CA) must
 * exist in the caller's account (404); stored modules keep ids, responses show Refs. Secrets are
 * stored but answered as `null`, except the OIDC `client_secret`, which the spec says is returned.
 */

/** A module as stored on its edge or route: always with `enabled`. */
export interface StoredModule {
  readonly enabled: boolean;
  readonly [field: string]: unknown;
}

export type Awaitable<T> = T | Promise<T>;

/** One edge module. */
export interface ModuleSpec {
  /** Field name on the edge or route, and the last segment of its endpoint path. */
  readonly name: string;
  /** Human name for summaries: "backend", "IP restriction". */
  readonly label: string;
  /** The request ("mutate") shape: strict, so unknown fields are refused. */
  readonly schema: Schema;
  /** Checks the validated input (references, cross-field rules) and fills defaults. `field` prefixes messages. */
  store(ctx: OperationContext, input: any, field: string): Awaitable<StoredModule>;
  /** Ids the stored module points at, for the reverse-reference index. */
  references?(stored: StoredModule): readonly string[];
  /**
   * The older module this one replaced (`traffic_policy` replaced the 0.11.0 clients' `policy`): an
   * edge or route holds one of the two, so setting either unsets the other, and one body may not
   * send both.
   */
  readonly replaces?: string;
  /** The response shape; `holderId` is the id of the edge or route that holds the module. */
  respond(ctx: OperationContext, stored: StoredModule, holderId: string): Record<string, unknown>;
}

/** `prefix.name`, or `name` alone when the module is the whole body (module PUT). */
export const at = (field: string, name: string) => (field ? `${field}.${name}` : name);

export const enabled = v.optional(v.boolean());
export const MAX_UINT32 = 4_294_967_295;
export const seconds = v.pipe(
  v.number(),
  v.check((n) => Number.isInteger(n) && n >= 0 && n <= MAX_UINT32, (issue) => `must be a whole number of seconds from 0 to ${MAX_UINT32} (got ${issue.input})`),
);
export const statusCode = v.pipe(
  v.number(),
  v.check((n) => Number.isInteger(n) && n >= 100 && n <= 599, (issue) => `must be an HTTP status code, an integer from 100 to 599 (got ${issue.input})`),
);
/** A string with at least one character. */
export const nonEmpty = v.pipe(v.string(), v.minLength(1, 'must not be empty'));
export const regexList = v.array(re2Pattern);
export const headerNames = v.array(v.pipe(v.string(), v.regex(HTTP_HEADER_NAME, 'must be an HTTP header name')));
export const absoluteUrl = v.pipe(
  v.string(),
  v.check((text) => URL.canParse(text) && ['http:', 'https:'].includes(new URL(text).protocol), (issue) => `must be an absolute http(s) URL (got ${JSON.stringify(issue.input)})`),
);

/** The service's name in session cookie names: the vendor's `ngrok.` default becomes `burrow.`. */
export const DEFAULT_COOKIE_PREFIX = 'burrow.';
