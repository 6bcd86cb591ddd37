import * as v from 'valibot';
import { fail } from '../conventions/errors.ts';
import { HTTP_HEADER_NAME, parseInput } from '../conventions/fields.ts';
import { REDACTED, type BodyEntry, type HeaderPairs } from './detail.ts';

/**
 * Replaying a journaled request, and the curl command that reproduces one: both start from an
 * entry's detail (detail.ts), which holds no secret. So a replay sends no masked header: the API
 * key of an API request is never kept, and its replay takes the key from the operator
 * (`headers.authorization` among the edits; without it, a 400 that says so); a traffic replay sends
 * the request without its masked headers unless the edits give them. A body the journal cut or let
 * go is not guessed at: the edits must give one. The curl command writes the key as `$BURROW_KEY`
 * and any other masked header as `$BURROW_<NAME>`.
 */

/** What an operator may change of the request replayed; `null` for a header removes it. */
export const ReplayBody = v.strictObject({
  method: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z]{1,16}$/, 'must be an HTTP method such as POST'))),
  path: v.optional(v.pipe(v.string(), v.regex(/^\/[^\s#]*$/, 'must be a path starting with /, with its query if any'), v.maxLength(8192))),
  headers: v.optional(v.record(v.pipe(v.string(), v.regex(HTTP_HEADER_NAME, 'must be a header name')), v.nullable(v.pipe(v.string(), v.regex(/^[^\r\n]*$/, 'must be one line'))))),
  body: v.optional(v.union([v.string(), v.record(v.string(), v.unknown()), v.array(v.unknown())])),
});

export type ReplayEdits = v.InferOutput<typeof ReplayBody>;

/** A request to send again, rebuilt from a journal entry and the operator's edits. */
export interface ReplayRequest {
  readonly method: string;
  /** The path and query (`/credentials?limit=5`). */
  readonly target: string;
  /** Headers to send, names as first sent; no framing header (the sender frames the body). */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string | Uint8Array | undefined;
}

/** A journaled request as replay and curl read it. */
export interface JournaledRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: HeaderPairs;
  readonly body: BodyEntry | null;
}

/** Headers a sender sets itself: framing and the connection's own. */
const NOT_REPLAYED = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'expect']);

const masked = (value: string) => value === REDACTED || value.endsWith(` ${REDACTED}`);

/** Parses the edits of a replay's body (400s name the field). */
export function parseReplayEdits(body: unknown): ReplayEdits {
  return parseInput(ReplayBody, body ?? {});
}

/**
 * The request to replay: `original` with `edits` applied. `keyRequired`: the original carried a
 * masked Authorization (an API request's key), which the edits must give again.
 */
export function replayRequest(original: JournaledRequest, edits: ReplayEdits, keyRequired: boolean): ReplayRequest {
  const edited = new Map(Object.entries(edits.headers ?? {}).map(([name, value]) => [name.toLowerCase(), [name, value] as const]));
  const headers: [string, string][] = [];
  for (const [name, value] of original.headers) {
    const lower = name.toLowerCase();
    if (NOT_REPLAYED.has(lower) || edited.has(lower)) continue;
    if (masked(value)) {
      if (keyRequired && lower === 'authorization') {
        fail('INVALID_FIELD', 'headers.authorization: the journal never keeps API keys; give the key to replay with ("Bearer <key>")', { field: 'headers.authorization' });
      }
      continue;
    }
    headers.push([name, value]);
  }
  for (const [, [name, value]] of edited) if (value !== null && !NOT_REPLAYED.has(name.toLowerCase())) headers.push([name, value]);
  let body: string | Uint8Array | undefined;
  if (edits.body !== undefined) body = typeof edits.body === 'string' ? edits.body : JSON.stringify(edits.body);
  else if (original.body) {
    if (original.body.data === null || original.body.truncated) {
      const why = original.body.truncated ? 'kept only its first bytes (limit journal_body_bytes)' : 'let it go to keep newer ones (limit journal_bodies_bytes)';
      fail('INVALID_FIELD', `body: the journal ${why}; give the body to replay with`, { field: 'body' });
    }
    body = original.body.encoding === 'base64' ? Buffer.from(original.body.data, 'base64') : original.body.data;
  }
  return { method: (edits.method ?? original.method).toUpperCase(), target: edits.path ?? original.target, headers, body };
}

/** `text` quoted for a POSIX shell. */
const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** The environment variable a masked header's value is written as: `$BURROW_KEY` for Authorization. */
const variableOf = (name: string) => (name.toLowerCase() === 'authorization' ? 'BURROW_KEY' : `BURROW_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`);

/**
 * A curl command that sends `request` to `origin` (`http://127.0.0.1:4040`) again, its masked
 * headers as shell variables (`-H "Authorization: Bearer $BURROW_KEY"`).
 */
export function curlCommand(origin: string, request: JournaledRequest): string {
  const parts = ['curl', '-X', request.method, shellQuote(`${origin}${request.target}`)];
  for (const [name, value] of request.headers) {
    const lower = name.toLowerCase();
    if (NOT_REPLAYED.has(lower)) continue;
    if (masked(value)) {
      const scheme = value === REDACTED ? '' : `${value.slice(0, -REDACTED.length)}`;
      parts.push('-H', `"${name}: ${scheme}$${variableOf(name)}"`);
    } else parts.push('-H', shellQuote(`${name}: ${value}`));
  }
  const body = request.body;
  if (body?.data == null) return parts.join(' ');
  if (body.encoding === 'utf8') return [...parts, '--data-binary', shellQuote(body.data)].join(' ');
  // Bytes that are not text go through base64, which a shell argument can carry.
  return `printf %s ${shellQuote(body.data)} | base64 -d | ${[...parts, '--data-binary', '@-'].join(' ')}`;
}
