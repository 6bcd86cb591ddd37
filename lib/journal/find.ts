import * as v from 'valibot';
import { parseInput } from '../conventions/fields.ts';
import { LIMITS } from '../limits.ts';
import { compilePattern, pattern } from '../simulation/faults.ts';
import type { BodyEntry } from './detail.ts';
import { statusMatcher } from './journal.ts';

/**
 * What a test asks a journal, as WireMock's `verify`/`findAll` does: "which requests did my tool
 * send that look like this?" (`POST /_burrow/requests/find`, `POST /_burrow/traffic/find`,
 * `requests.find(…)` of burrow-tunnels/testing). Criteria are checked as any request body (400
 * naming the field); every criterion given must hold:
 * - `method`: the method, any case;
 * - `path`: a pattern over the path (no query) as fault rules take it: `*` any run but `/`, `**` any run;
 * - `operation` (API requests): an operation id pattern (`credentials.create`, `credentials.*`);
 * - `status`: `404`, a class `4xx`, or `failed` (400 and up, and no answer);
 * - `body`: the request body as the journal kept it (secrets masked, its first
 *   `journal_body_bytes`): a string it contains, or JSON it contains — every field of an object
 *   given, recursively, with an equal value; arrays element by element, of the same length;
 * - `account_id` (`null`: of no account), `limit` (default 100, at most `journal_page_size`).
 * The answer is each matching entry with its detail, newest first.
 */


const whole = (min: number, max: number) => v.pipe(v.number(), v.safeInteger('must be a whole number'), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));

const COMMON = {
  method: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z]{1,16}$/, 'must be a method such as GET or POST'))),
  path: v.optional(pattern('a path pattern such as /credentials/*')),
  status: v.optional(v.union([whole(100, 599), v.pipe(v.string(), v.regex(/^(?:[1-5]\d\d|[1-5]xx|failed)$/, 'must be a status such as 404, a class such as 4xx, or failed'))], 'must be a status such as 404, a class such as 4xx, or failed')),
  body: v.optional(v.union([v.string(), v.array(v.unknown()), v.record(v.string(), v.unknown())], 'must be text the body contains, or JSON (an object or array) it contains')),
  account_id: v.optional(v.nullable(v.string())),
  limit: v.optional(whole(1, LIMITS.journal_page_size.value)),
};

/** The criteria of `requests.find` and `POST /_burrow/requests/find`. */
export interface RequestFindInput {
  readonly method?: string;
  readonly path?: string;
  readonly operation?: string;
  readonly status?: number | string;
  readonly body?: string | object;
  readonly account_id?: string | null;
  readonly limit?: number;
}

/** The criteria of `traffic.find` and `POST /_burrow/traffic/find`. */
export interface TrafficFindInput extends Omit<RequestFindInput, 'operation'> {
  readonly host?: string;
  readonly endpoint_id?: string;
  readonly wait_ms?: number;
}

const RequestFindBody: v.GenericSchema<RequestFindInput> = v.strictObject({ ...COMMON, operation: v.optional(pattern('an operation id pattern such as credentials.create or credentials.*')) });

const TrafficFindBody: v.GenericSchema<TrafficFindInput> = v.strictObject({
  ...COMMON,
  /** The request's host (its Host header or SNI name), exactly. */
  host: v.optional(v.string()),
  endpoint_id: v.optional(v.string()),
  /**
   * An exchange is journaled when its answer has closed, a moment after the client read it: wait
   * up to this long (ms) for a first match when there is none yet.
   */
  wait_ms: v.optional(whole(0, LIMITS.journal_find_wait_ms.value)),
});

export const REQUEST_FIND_BODY = RequestFindBody;
export const TRAFFIC_FIND_BODY = TrafficFindBody;

/** The facts of a journaled request the criteria look at. */
export interface FindFacts {
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly status: number | undefined;
  /** The kept request body, read only when a `body` criterion is given. */
  readonly body: () => BodyEntry | null;
}

/** Checked criteria: the account and limit to list with, and a test of one record's facts. */
export interface CompiledFind {
  readonly account: string | null | undefined;
  readonly limit: number;
  readonly matches: (facts: FindFacts) => boolean;
}

/** Checks request-journal criteria (400 naming the field); `operation` tests the operation id. */
export function compileRequestFind(input: unknown): CompiledFind & { readonly operation?: RegExp } {
  const criteria = parseInput(RequestFindBody, input ?? {});
  return { ...compileCommon(criteria), ...(criteria.operation !== undefined ? { operation: compilePattern(criteria.operation) } : {}) };
}

/** Checks traffic-journal criteria (400 naming the field). */
export function compileTrafficFind(input: unknown): CompiledFind & { readonly host?: string; readonly endpoint?: string; readonly waitMs: number } {
  const criteria = parseInput(TrafficFindBody, input ?? {});
  return {
    ...compileCommon(criteria),
    ...(criteria.host !== undefined ? { host: criteria.host.toLowerCase() } : {}),
    ...(criteria.endpoint_id !== undefined ? { endpoint: criteria.endpoint_id } : {}),
    waitMs: criteria.wait_ms ?? 0,
  };
}

/** The criteria both journals take, checked. */
interface CommonCriteria {
  readonly method?: string | undefined;
  readonly path?: string | undefined;
  readonly status?: number | string | undefined;
  readonly body?: string | object | undefined;
  readonly account_id?: string | null | undefined;
  readonly limit?: number | undefined;
}

function compileCommon(criteria: CommonCriteria): CompiledFind {
  const method = criteria.method?.toUpperCase();
  const path = criteria.path === undefined ? undefined : compilePattern(criteria.path);
  const status = criteria.status === undefined ? undefined : statusMatcher(String(criteria.status));
  const body = criteria.body;
  return {
    account: criteria.account_id,
    limit: criteria.limit ?? 100,
    matches: (facts) =>
      (method === undefined || facts.method?.toUpperCase() === method) &&
      (path === undefined || (facts.path !== undefined && path.test(facts.path))) &&
      (status === undefined || (facts.status !== undefined && status(facts.status))) &&
      (body === undefined || bodyMatches(facts.body(), body)),
  };
}

/** Whether a kept body holds `wanted`: text it contains, or JSON it contains. */
function bodyMatches(kept: BodyEntry | null, wanted: string | object): boolean {
  if (!kept || kept.data === null || kept.encoding !== 'utf8') return false;
  if (typeof wanted === 'string') return kept.data.includes(wanted);
  let parsed: unknown;
  try {
    parsed = JSON.parse(kept.data);
  } catch {
    return false;
  }
  return contains(parsed, wanted);
}

/** Every field of `wanted` in `actual` with an equal value, recursively; arrays element by element. */
function contains(actual: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) return Array.isArray(actual) && actual.length === wanted.length && wanted.every((item, i) => contains(actual[i], item));
  if (wanted !== null && typeof wanted === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    return Object.entries(wanted).every(([key, value]) => Object.hasOwn(actual, key) && contains((actual as Record<string, unknown>)[key], value));
  }
  return Object.is(actual, wanted);
}
