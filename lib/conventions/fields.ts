import * as v from 'valibot';
import { LIMITS, limitNote, type LimitName } from '../limits.ts';
import { ApiError, specOf, type ErrorRef, type ErrorSpec } from './errors.ts';
import { withRe2Budget } from './patterns.ts';

/**
 * Shared request-field schemas and the one place where valibot issues become ApiErrors.
 *
 * Every request shape is a strict valibot object (unknown keys are errors), so embedders calling
 * lib/ get exactly the checks HTTP callers get, and the OpenAPI document is generated from the same
 * schemas. Messages name the field path: `description: must be at most 255 bytes (got 256)`.
 */

const CODE_MARK = '\u0001';

/** The most problems one 400 lists (a body may hold a problem per item; the answer stays short). */
const MAX_REPORTED_ISSUES = LIMITS.reported_problems.value;

/**
 * An issue message that carries its own error code: `coded('INVALID_TIME', 'must be RFC 3339')`.
 * `parseInput` strips the mark and reports the code; other issues are INVALID_FIELD.
 */
export function coded(error: ErrorRef, message: string): string {
  const { code, status } = specOf(error);
  return `${CODE_MARK}${code}:${status}${CODE_MARK}${message}`;
}

/**
 * A string check on UTF-8 byte length (not string length), as the spec's limits are in bytes;
 * `note` ends the message (`limitNote` for the bounds of lib/limits.ts).
 */
export function maxBytes(max: number, note?: string) {
  return v.check<string, (issue: v.CheckIssue<string>) => string>(
    (value) => Buffer.byteLength(value, 'utf8') <= max,
    (issue) => `must be at most ${max} bytes (got ${Buffer.byteLength(issue.input, 'utf8')})${note ? ` ${note}` : ''}`,
  );
}

/** A byte bound of lib/limits.ts; the message names it. */
export const limitBytes = (name: LimitName) => maxBytes(LIMITS[name].value, limitNote(name));

/** description: at most 255 UTF-8 bytes. */
/** The body of an operation that takes none but `{}` (commands, kinds that cannot be changed). */
export const NO_FIELDS = v.strictObject({});

export const description = v.pipe(v.string(), maxBytes(255));
/** metadata: opaque user data, at most 4096 UTF-8 bytes. */
export const metadata = v.pipe(v.string(), maxBytes(4096));

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Whether `value` is an RFC 3339 date-time that names a real instant. */
export function isRfc3339(value: string): boolean {
  const match = RFC3339.exec(value);
  if (!match) return false;
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  const date = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, s));
  return date.getUTCMonth() === mo! - 1 && date.getUTCDate() === d && h! < 24 && mi! < 60 && s! < 61;
}

/** An RFC 3339 time with any offset (`2026-01-02T03:04:05+02:00`); parse with `new Date()`. */
export const rfc3339 = v.pipe(
  v.string(),
  v.check(isRfc3339, (issue) => coded('INVALID_TIME', `must be an RFC 3339 time such as 2026-01-02T03:04:05Z (got ${JSON.stringify(issue.input)})`)),
);

/**
 * A field that is known but may not be sent here (immutable after creation, moved elsewhere):
 * sending it is a 400 with `message` instead of the generic unknown-field error.
 */
export function refusedField(message: string, name: ErrorRef = 'INVALID_FIELD') {
  return v.optional(v.custom<never>(() => false, coded(name, message)));
}

const ZERO_BY_TYPE: Record<string, (value: unknown) => boolean> = {
  string: (value) => value === '',
  picklist: (value) => value === '',
  number: (value) => value === 0,
  array: (value) => Array.isArray(value) && value.length === 0,
  record: (value) => isEmptyPlainObject(value),
  object: (value) => isEmptyPlainObject(value),
  strict_object: (value) => isEmptyPlainObject(value),
};

function isEmptyPlainObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}

/**
 * `v.optional(schema)`, where the zero value of the field's type (`""`, `0`, `[]`, `{}`) counts as
 * not sent. The vendor's typed clients cannot leave such fields out: the Python client always sends
 * its defaults (`private_key_type: ""`, `key_size: 0`, `backends: []` …) and the vendor's own request
 * types (plain Go fields with `omitempty`) cannot tell a zero from an absent field, so the vendor
 * treats zero as "not given". docs/compatibility.md's "Zero values" table lists every field that behaves so.
 */
export function zeroIsUnset<S extends Schema>(schema: S) {
  const optional = v.optional(schema);
  const isZero = ZERO_BY_TYPE[(schema as { type: string }).type];
  if (!isZero) throw new TypeError(`zeroIsUnset: no zero value known for schema type ${(schema as { type: string }).type}`);
  // A schema whose run first turns a zero into undefined, then behaves as the optional schema (same
  // type, entries and metadata, so the OpenAPI document and field hints see through it).
  return Object.create(optional, {
    '~run': {
      value(this: typeof optional, dataset: { value: unknown }, config: unknown) {
        if (isZero(dataset.value)) dataset.value = undefined;
        return (optional['~run'] as (this: unknown, d: unknown, c: unknown) => unknown).call(this, dataset, config);
      },
    },
  }) as typeof optional;
}

/** One token of RFC 9110 (letters, digits and !#$%&'*+.^_`|~-): a method, a header name. */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** An HTTP header name: one token (HTTP_TOKEN). */
export const HTTP_HEADER_NAME = HTTP_TOKEN;

/** A list of strings. */
export const stringList = v.array(v.string());

/** Validation schema type used across resource definitions. */
export type Schema = v.GenericSchema<unknown, unknown>;

/**
 * Validates `input` against `schema`, or throws a 400 ApiError naming the bad fields (the first
 * `reported_problems`, then how many more). The RE2 patterns of one input share one budget
 * (lib/conventions/patterns.ts).
 */
export function parseInput<S extends Schema>(schema: S, input: unknown, where = 'body'): v.InferOutput<S> {
  const result = withRe2Budget(() => v.safeParse(schema, input));
  if (result.success) return result.output;
  let spec: ErrorSpec = specOf('INVALID_FIELD');
  const messages = result.issues.slice(0, MAX_REPORTED_ISSUES).map((issue, index) => {
    const path = formatPath(issue.path);
    let message: string;
    if (issue.type === 'strict_object' && issue.expected === 'never') {
      if (index === 0) spec = specOf('UNKNOWN_FIELD');
      const supported = fieldsAt(schema, issue.path?.slice(0, -1) ?? []);
      message = `${path}: unknown field${supported.length ? `; supported fields: ${supported.join(', ')}` : ''}`;
    } else if (issue.message.startsWith(CODE_MARK)) {
      const [, code, text] = issue.message.split(CODE_MARK);
      const [number, status] = code!.split(':').map(Number);
      if (index === 0) spec = { code: number!, status: status! };
      message = `${path || where}: ${text}`;
    } else if (issue.kind === 'schema' && issue.input === undefined && path) {
      message = `${path}: is required`;
    } else if (issue.kind === 'schema' && issue.message.startsWith('Invalid ')) {
      // valibot's own wording ("Invalid type: …"); schemas with a message of ours keep it.
      message = `${path || where}: must be ${describeExpected(issue.expected)} (got ${issue.received})`;
    } else {
      message = `${path || where}: ${issue.message}`;
    }
    return message;
  });
  const more = result.issues.length - MAX_REPORTED_ISSUES;
  throw new ApiError(spec, messages.join('; ') + (more > 0 ? `; and ${more} more` : ''));
}

function formatPath(path: readonly { key: unknown }[] | undefined): string {
  if (!path) return '';
  return path.reduce<string>((out, item) => {
    const key = item.key;
    if (typeof key === 'number') return `${out}[${key}]`;
    return out ? `${out}.${String(key)}` : String(key);
  }, '');
}

function describeExpected(expected: string | null): string {
  if (!expected) return 'valid';
  return expected
    .replace(/^Object$/, 'an object')
    .replace(/^string$/, 'a string')
    .replace(/^number$/, 'a number')
    .replace(/^boolean$/, 'a boolean')
    .replace(/^Array$/, 'a list')
    .replace(/^null$/, 'null');
}

type SchemaNode = { entries?: Record<string, SchemaNode>; wrapped?: SchemaNode; pipe?: SchemaNode[]; item?: SchemaNode };

/** The field names accepted at `path` inside `schema`, for "supported fields" hints. */
function fieldsAt(schema: Schema, path: readonly { key: unknown }[]): string[] {
  let node: SchemaNode | undefined = schema as unknown as SchemaNode;
  const unwrap = (n: SchemaNode | undefined): SchemaNode | undefined => {
    while (n && !n.entries && (n.wrapped || n.pipe)) n = n.wrapped ?? n.pipe?.[0];
    return n;
  };
  for (const { key } of path) {
    node = unwrap(node);
    node = typeof key === 'number' ? node?.item : node?.entries?.[String(key)];
  }
  return Object.keys(unwrap(node)?.entries ?? {});
}

// Pieces of stored-record schemas (what a snapshot import checks records with, lib/control/snapshot.ts).

/** An id as Burrow makes them, with one of these prefixes: `usr_` and 27 letters or digits. */
export function storedId(...prefixes: string[]) {
  return v.pipe(v.string(), v.regex(new RegExp(`^(${prefixes.join('|')})_[0-9A-Za-z]{27}$`), `must be an id (${prefixes.map((prefix) => `${prefix}_…`).join(' or ')})`));
}

const REFERENCES = new WeakSet<object>();

/**
 * A field holding the id of another record of the account, with one of these prefixes (or a list
 * of such ids, as `v.array(storedRef(…))`, optionally nullable): a snapshot import checks that the
 * record is there, as the API checked it when the field was set.
 */
export function storedRef(...prefixes: string[]) {
  const schema = storedId(...prefixes);
  REFERENCES.add(schema);
  return schema;
}

/** Whether `schema` is a `storedRef`, a list of them, or either made optional or nullable. */
export function isStoredRef(schema: unknown): boolean {
  let node = schema as { type?: string; wrapped?: unknown; item?: unknown } | undefined;
  while (node && (node.type === 'optional' || node.type === 'nullable' || node.type === 'nullish' || node.type === 'array')) node = (node.wrapped ?? node.item) as typeof node;
  return node !== undefined && REFERENCES.has(node);
}

/** Who made or owns a record: a user or a bot of the account (a bot may be gone since). */
export const ownerId = storedId('usr', 'bot');

/** The owner of a key or credential: a user or bot of the account, which stays while it owns one. */
export const storedOwnerId = storedRef('usr', 'bot');

/** A SHA-256 digest in lowercase hex (token hashes). */
export const sha256Hex = v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits'));

/** A check made by a function that throws on bad input (a family's parser): its message is the issue's. */
export function passes<T>(validate: (value: T) => unknown) {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    try {
      validate(dataset.value);
    } catch (error) {
      addIssue({ message: (error as Error).message });
    }
  });
}
