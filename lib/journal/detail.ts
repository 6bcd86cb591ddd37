import { LIMITS } from '../limits.ts';
import { isSecretName, redactQuery } from './secrets.ts';

/**
 * What both journals keep of an exchange beyond its summary line: headers with their secrets
 * masked, and bodies, each cut at `journal_body_bytes` and all of a journal's together held under
 * `journal_bodies_bytes` (lib/limits.ts; docs/limits.md gives what that costs at full journals).
 *
 * Redaction happens when an exchange is kept, so a journal never holds a secret: header values
 * whose names look secret (Authorization, Cookie, Set-Cookie, X-Api-Key, a webhook signature…, by
 * the rule query values follow, journal.ts), and in JSON bodies the values of secret fields
 * (`token`, `value` of a vault secret, `*secret*`, `*password*`, `private_key_pem`…); a form body's
 * secret-looking fields as a query's. An Authorization value keeps its scheme (`Bearer REDACTED`).
 * A JSON body is parsed only when a quick scan finds such a field name in it: the API's hot path
 * pays one scan per body, not a parse.
 */

/** Replaces a secret value. */
export const REDACTED = 'REDACTED';

/** The name/value pairs of headers, names as sent. */
export type HeaderPairs = readonly (readonly [string, string])[];

/** A header value as a journal keeps it: masked when its name looks secret (the scheme of a credential kept). */
function keptHeaderValue(name: string, value: string): string {
  // A challenge names a scheme and realm, no secret, and says why a request failed.
  if (!isSecretName(name) || (name.length === 16 && name.toLowerCase() === 'www-authenticate')) return value;
  const scheme = /^([A-Za-z][\w-]*) +\S/.exec(value);
  return scheme && /authorization$/i.test(name) ? `${scheme[1]} ${REDACTED}` : REDACTED;
}

/** Redacted pairs from node's flat `rawHeaders` (name, value, name, value…). */
export function redactRawHeaders(raw: readonly string[]): [string, string][] {
  const kept: [string, string][] = new Array(raw.length >> 1);
  for (let i = 0; i + 1 < raw.length; i += 2) kept[i >> 1] = [raw[i]!, keptHeaderValue(raw[i]!, raw[i + 1]!)];
  return kept;
}

/** Redacted copies of header pairs. */
export function redactHeaders(headers: HeaderPairs): [string, string][] {
  return headers.map(([name, value]) => [name, keptHeaderValue(name, value)]);
}

/** A JSON field name whose value is a secret. */
const SECRET_FIELD = /^(?:token|value|authtoken|[a-z_]*(?:secret|password|passphrase|private_key|_token)[a-z_]*)$/i;
/** A quick look for such a field in JSON text: most bodies have none and are kept as they are. */
const SECRET_FIELD_IN_TEXT = /"(?:token|value|authtoken|[a-z_]*(?:secret|password|passphrase|private_key|_token)[a-z_]*)"\s*:/i;

function redactJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactJson);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) out[key] = SECRET_FIELD.test(key) && (typeof field === 'string' || typeof field === 'number') ? REDACTED : redactJson(field);
  return out;
}

/** `text` with the values of secret fields replaced: JSON by field, a form (`a=1&b=2`) by name; anything else as it is. */
export function redactBodyText(text: string, contentType?: string | null): string {
  if (contentType && /^application\/x-www-form-urlencoded/i.test(contentType)) return redactQuery(text, REDACTED).replace(/^\?/, '');
  if (!SECRET_FIELD_IN_TEXT.test(text)) return text;
  try {
    return JSON.stringify(redactJson(JSON.parse(text)));
  } catch {
    return text;
  }
}

/** One kept body: its bytes (or text), cut at `journal_body_bytes`, and its whole size. */
export interface KeptBody {
  /** What is kept: the text as sent (API), or the bytes (traffic); undefined once the journal's total let it go. */
  data: string | Uint8Array | undefined;
  /** The size of the whole body as sent, in bytes. */
  readonly bytes: number;
  /** Whether `data` is only the first `journal_body_bytes` of it. */
  readonly truncated: boolean;
}

/** The bodies of one entry, counted as one against the journal's total. */
export interface KeptBodies {
  request?: KeptBody;
  response?: KeptBody;
  /** What they hold, in bytes. */
  held: number;
  /** The journal let them go to keep newer ones (past `journal_bodies_bytes`). */
  evicted: boolean;
}

const PER_BODY = LIMITS.journal_body_bytes.value;

/** A text body as kept: as it is within the cap (no copy), else its first bytes. */
export function keepText(text: string, contentType?: string | null): KeptBody {
  const bytes = Buffer.byteLength(text);
  if (bytes <= PER_BODY) return { data: redactBodyText(text, contentType), bytes, truncated: false };
  // A new flat string: a slice would keep the whole body alive.
  return { data: Buffer.from(text).subarray(0, PER_BODY).toString(), bytes, truncated: true };
}

/** Bytes as kept: a copy of at most `journal_body_bytes` of them (the adapter captures no more). */
export function keepBytes(data: Uint8Array, bytes: number, contentType?: string | null): KeptBody {
  const cut = data.byteLength > PER_BODY ? data.subarray(0, PER_BODY) : data;
  const truncated = bytes > cut.byteLength;
  const text = truncated ? undefined : textOf(cut);
  if (text !== undefined) {
    const redacted = redactBodyText(text, contentType);
    if (redacted !== text) return { data: redacted, bytes, truncated };
  }
  return { data: cut, bytes, truncated };
}

const held = (body: KeptBody | undefined) => (body?.data === undefined ? 0 : typeof body.data === 'string' ? body.data.length : body.data.byteLength);

/**
 * A journal's total: the bodies of its entries, oldest first, let go (the oldest first) once they
 * hold more than `journal_bodies_bytes` together. An entry's bodies stay counted until they are
 * let go, even when its ring has dropped the entry: the total bounds memory either way.
 */
export class BodyBudget {
  readonly #limit: number;
  readonly #queue: KeptBodies[] = [];
  #head = 0;
  #total = 0;

  constructor(limit = LIMITS.journal_bodies_bytes.value) {
    this.#limit = limit;
  }

  /** Bytes held now. */
  get total(): number {
    return this.#total;
  }

  /** Counts `bodies` (after their entry was kept), letting older ones go past the limit. */
  add(bodies: KeptBodies): void {
    bodies.held = held(bodies.request) + held(bodies.response);
    if (bodies.held === 0) return;
    this.#queue.push(bodies);
    this.#total += bodies.held;
    while (this.#total > this.#limit && this.#head < this.#queue.length) {
      const oldest = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as unknown as KeptBodies;
      this.#total -= oldest.held;
      if (oldest.request) oldest.request.data = undefined;
      if (oldest.response) oldest.response.data = undefined;
      oldest.held = 0;
      oldest.evicted = true;
    }
    // Compacted now and then, so the queue's array does not grow with every entry ever kept.
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /** Forgets every body (a journal cleared whole). */
  clear(): void {
    this.#queue.length = 0;
    this.#head = 0;
    this.#total = 0;
  }
}

/** A kept body as the control plane shows it. */
export interface BodyEntry {
  /** Bytes of the whole body as sent. */
  readonly bytes: number;
  /** The kept part: UTF-8 text, or base64 of bytes that are not UTF-8; null when the journal let it go. */
  readonly data: string | null;
  readonly encoding: 'utf8' | 'base64';
  /** Only the first `journal_body_bytes` were kept. */
  readonly truncated: boolean;
  /** The journal let it go to keep newer bodies (past `journal_bodies_bytes`). */
  readonly evicted: boolean;
}

/** A kept body as an entry shows it; null when there was none. */
export function bodyEntry(body: KeptBody | undefined, evicted: boolean): BodyEntry | null {
  if (!body || (body.bytes === 0 && !evicted)) return null;
  const data = body.data;
  if (data === undefined) return { bytes: body.bytes, data: null, encoding: 'utf8', truncated: body.truncated, evicted: true };
  if (typeof data === 'string') return { bytes: body.bytes, data, encoding: 'utf8', truncated: body.truncated, evicted: false };
  const text = textOf(data, body.truncated);
  return text === undefined
    ? { bytes: body.bytes, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64'), encoding: 'base64', truncated: body.truncated, evicted: false }
    : { bytes: body.bytes, data: text, encoding: 'utf8', truncated: body.truncated, evicted: false };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes as text when they are UTF-8 (a cut body may end inside a character: that end is dropped). */
function textOf(data: Uint8Array, cut = false): string | undefined {
  for (let end = data.byteLength; end >= Math.max(0, data.byteLength - (cut ? 3 : 0)); end--) {
    try {
      return utf8.decode(data.subarray(0, end));
    } catch {
      // Not UTF-8 (to this end).
    }
  }
  return undefined;
}
