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
 * pays one scan per body, not a parse; the API's own answers (JSON.stringify's text) are never
 * parsed, their secret values are replaced in one pass over their strings.
 */

/** Replaces a secret value. */
export const REDACTED = 'REDACTED';

/** The name/value pairs of headers, names as sent. */
export type HeaderPairs = readonly (readonly [string, string])[];

/** Header names seen lately (as sent) and whether they look secret: clients send the same few, and the rule is a regular expression. Bounded; past it the table starts over. */
const secretHeaders = new Map<string, boolean>();

function isSecretHeader(name: string): boolean {
  let secret = secretHeaders.get(name);
  if (secret === undefined) {
    // A challenge names a scheme and realm, no secret, and says why a request failed.
    secret = isSecretName(name) && name.toLowerCase() !== 'www-authenticate';
    if (secretHeaders.size >= 512) secretHeaders.clear();
    secretHeaders.set(name, secret);
  }
  return secret;
}

/** A secret header's value as a journal keeps it: masked, the scheme of a credential kept (`Bearer REDACTED`). */
function maskedValue(name: string, value: string): string {
  const scheme = /^([A-Za-z][\w-]*) +\S/.exec(value);
  return scheme && /authorization$/i.test(name) ? `${scheme[1]} ${REDACTED}` : REDACTED;
}

/** A masked copy of flat headers (node's `rawHeaders`: name, value, name, value…), one array. */
export function redactRawHeaders(raw: readonly string[]): string[] {
  const kept = raw.slice();
  for (let i = 0; i + 1 < kept.length; i += 2) if (isSecretHeader(kept[i]!)) kept[i + 1] = maskedValue(kept[i]!, kept[i + 1]!);
  return kept;
}

/** Masked copies of header pairs. */
export function redactHeaders(headers: HeaderPairs): [string, string][] {
  return headers.map(([name, value]) => [name, isSecretHeader(name) ? maskedValue(name, value) : value]);
}

/** A JSON field name whose value is a secret. */
const SECRET_FIELD = /^(?:token|value|authtoken|[a-z_]*(?:secret|password|passphrase|private_key|_token)[a-z_]*)$/i;
/**
 * A quick look for such a field in JSON text, literal words only (a scan, no backtracking): most
 * bodies have none and are kept as they are; one that has one is parsed and checked field by field.
 */
const SECRET_FIELD_IN_TEXT = /token|value|secret|ecret"|assword|assphrase|rivate_key|SECRET|TOKEN|PASSWORD/;

function redactJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactJson);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) out[key] = SECRET_FIELD.test(key) && (typeof field === 'string' || typeof field === 'number') ? REDACTED : redactJson(field);
  return out;
}

const isForm = (contentType: string | null | undefined) => contentType !== undefined && contentType !== null && /^application\/x-www-form-urlencoded/i.test(contentType);
const redactForm = (text: string) => redactQuery(text, REDACTED).replace(/^\?/, '');

/** `text` with the values of secret fields replaced: JSON by field, a form (`a=1&b=2`) by name; anything else as it is. */
export function redactBodyText(text: string, contentType?: string | null): string {
  if (isForm(contentType)) return redactForm(text);
  if (!SECRET_FIELD_IN_TEXT.test(text)) return text;
  try {
    return JSON.stringify(redactJson(JSON.parse(text)));
  } catch {
    return text;
  }
}

/** Where the JSON string that opens at `at` (a `"`) ends: the index past its closing quote; -1 if it does not. */
function stringEnd(text: string, at: number): number {
  for (let quote = text.indexOf('"', at + 1); quote >= 0; quote = text.indexOf('"', quote + 1)) {
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === 92) slashes++;
    if (slashes % 2 === 0) return quote + 1;
  }
  return -1;
}

/** Where the JSON number at `at` ends (its characters are these), or `at` when none starts there. */
function numberEnd(text: string, at: number): number {
  let end = at;
  for (let c = text.charCodeAt(end); (c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46 || c === 69 || c === 101; c = text.charCodeAt(++end));
  return end;
}

/**
 * JSON text as `JSON.stringify` writes it (no white space, no name twice in an object) with the
 * values of secret fields replaced: the text `redactBodyText` makes of it by parsing and writing
 * it again, found by one pass over its strings instead (a created key's answer carries its token,
 * and parsing it was a fifth of what the journal cost that request).
 */
export function redactSerialisedJson(text: string): string {
  return redactByScan(text, true);
}

/**
 * The first part of a JSON body cut at `journal_body_bytes`, which no parse can read, with the
 * values of secret fields replaced as they are found: a secret string the cut ends in is replaced
 * to the end. White space is kept as sent.
 */
export function redactCutJson(text: string): string {
  return redactByScan(text, false);
}

/**
 * One pass over the strings of JSON text (`whole`: all of a text `JSON.stringify` wrote; else the
 * start of any JSON text). Outside strings JSON holds no `"`, so the pass meets every string
 * whole; a string followed by `:` (white space around it allowed) is a name.
 */
function redactByScan(text: string, whole: boolean): string {
  if (!SECRET_FIELD_IN_TEXT.test(text)) return text;
  let out = '';
  let copied = 0;
  for (let at = text.indexOf('"'); at >= 0; ) {
    const end = stringEnd(text, at);
    if (end < 0) break;
    let next = end;
    const colon = spacesEnd(text, end);
    if (text.charCodeAt(colon) === 58) {
      const raw = text.slice(at + 1, end - 1);
      const name = raw.includes('\\') ? nameOf(raw) : raw;
      // A parse makes `__proto__` a field that the copy's assignment drops: left to the parse, as before.
      if (whole && name === '__proto__') return redactBodyText(text);
      if (name !== undefined && SECRET_FIELD.test(name)) {
        // A string or a number is replaced; anything else is gone into as it comes.
        const valueAt = spacesEnd(text, colon + 1);
        const valueEnd = text.charCodeAt(valueAt) === 34 ? stringEnd(text, valueAt) : numberEnd(text, valueAt);
        if (valueEnd < 0) return `${out}${text.slice(copied, valueAt)}"${REDACTED}`;
        if (valueEnd > valueAt) {
          out += `${text.slice(copied, valueAt)}"${REDACTED}"`;
          copied = next = valueEnd;
        }
      }
    }
    at = text.indexOf('"', next);
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Past the JSON white space at `at`. */
function spacesEnd(text: string, at: number): number {
  let end = at;
  for (let c = text.charCodeAt(end); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++end));
  return end;
}

/** A JSON string's text with its escapes read; undefined when they are not JSON's. */
function nameOf(raw: string): string | undefined {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}

/** A cut body's text with secrets replaced: a form by name, JSON (by its type, or its first character) by field. */
function redactCutText(text: string, contentType?: string | null): string {
  if (isForm(contentType)) return redactForm(text);
  return (contentType && /json/i.test(contentType)) || /^\s*[[{]/.test(text) ? redactCutJson(text) : text;
}

/** One kept body: its bytes (or text), cut at `journal_body_bytes`, and its whole size. */
export interface KeptBody {
  /** What is kept: the text as sent (API), or the bytes (traffic); undefined once the journal's total let it go. */
  data: string | Uint8Array | undefined;
  /** The size of the whole body as sent, in bytes; undefined: that of `data` (kept whole and unchanged, counted when read). */
  readonly bytes?: number;
  /** Whether `data` is only the first `journal_body_bytes` of it. */
  readonly truncated: boolean;
}

/** The bodies of one entry, counted as one against the journal's total. */
export interface KeptBodies {
  request?: KeptBody | undefined;
  response?: KeptBody | undefined;
  /** What they hold, in bytes (0 once let go, or once their entry is gone). */
  held: number;
  /** The journal let them go to keep newer ones (past `journal_bodies_bytes`). */
  evicted: boolean;
}

const PER_BODY = LIMITS.journal_body_bytes.value;

/**
 * A text body as kept: as it is within the cap (no copy), else its first bytes. `serialised`: JSON
 * Burrow wrote itself with `JSON.stringify` (redacted by redactSerialisedJson).
 */
export function keepText(text: string, contentType?: string | null, serialised = false): KeptBody {
  // At most three UTF-8 bytes a UTF-16 unit: a short text is within the cap uncounted, and is counted only if it is read.
  if (text.length * 3 <= PER_BODY) {
    const kept = serialised ? redactSerialisedJson(text) : redactBodyText(text, contentType);
    return kept === text ? { data: text, truncated: false } : { data: kept, bytes: Buffer.byteLength(text), truncated: false };
  }
  const bytes = Buffer.byteLength(text);
  if (bytes <= PER_BODY) {
    const kept = serialised ? redactSerialisedJson(text) : redactBodyText(text, contentType);
    return { data: kept, bytes, truncated: false };
  }
  // A new flat string: a slice would keep the whole body alive. Its first PER_BODY units encode to at
  // least PER_BODY bytes, so only they are encoded, not the whole body.
  return { data: redactCutText(textOf(Buffer.from(text.slice(0, PER_BODY)).subarray(0, PER_BODY), true) ?? '', contentType), bytes, truncated: true };
}

/** Bytes as kept: a copy of at most `journal_body_bytes` of them (the adapter captures no more). */
export function keepBytes(data: Uint8Array, bytes: number, contentType?: string | null): KeptBody {
  const cut = data.byteLength > PER_BODY ? data.subarray(0, PER_BODY) : data;
  const truncated = bytes > cut.byteLength;
  const text = textOf(cut, truncated);
  if (text !== undefined) {
    const redacted = truncated ? redactCutText(text, contentType) : redactBodyText(text, contentType);
    if (redacted !== text) return { data: redacted, bytes, truncated };
  }
  return { data: cut, bytes, truncated };
}

const held = (body: KeptBody | undefined) => (body?.data === undefined ? 0 : typeof body.data === 'string' ? body.data.length : body.data.byteLength);

/** A body without its data, its size kept. */
const letGo = (body: KeptBody): KeptBody => ({ bytes: sizeOf(body), data: undefined, truncated: body.truncated });

/** The size of the whole body as sent. */
const sizeOf = (body: KeptBody): number => body.bytes ?? (typeof body.data === 'string' ? Buffer.byteLength(body.data) : (body.data?.byteLength ?? 0));

/** What an entry's bodies cost besides their bytes (the objects that hold them), counted so that many tiny bodies are bounded too. */
const HOLDER_BYTES = 64;

/**
 * A journal's total: the bodies of its entries, oldest first, let go (the oldest first) once they
 * hold more than `journal_bodies_bytes` together. An entry its ring drops releases its bodies
 * (`release`), so the total counts what the journal's entries hold.
 */
export class BodyBudget {
  readonly #limit: number;
  #queue: KeptBodies[] = [];
  #head = 0;
  #total = 0;
  /** Holders in the queue that still hold something. */
  #live = 0;

  constructor(limit = LIMITS.journal_bodies_bytes.value) {
    this.#limit = limit;
  }

  /** Bytes held now. */
  get total(): number {
    return this.#total;
  }

  /** Counts `bodies` (after their entry was kept), letting older ones go past the limit. */
  add(bodies: KeptBodies): void {
    const bytes = held(bodies.request) + held(bodies.response);
    if (bytes === 0) return;
    bodies.held = bytes + HOLDER_BYTES;
    this.#queue.push(bodies);
    this.#total += bodies.held;
    this.#live++;
    while (this.#total > this.#limit && this.#head < this.#queue.length) {
      const oldest = this.#queue[this.#head++]!;
      if (oldest.held === 0) continue;
      this.release(oldest);
      oldest.request &&= letGo(oldest.request);
      oldest.response &&= letGo(oldest.response);
      oldest.evicted = true;
    }
    // Holders released by their rings stay queued until here: the queue is rebuilt once most are.
    if (this.#queue.length - this.#head > 2 * this.#live + 1024) {
      this.#queue = this.#queue.slice(this.#head).filter((kept) => kept.held > 0);
      this.#head = 0;
    }
  }

  /** Stops counting `bodies` (their entry is gone, or they were let go). */
  release(bodies: KeptBodies | undefined): void {
    if (!bodies || bodies.held === 0) return;
    this.#total -= bodies.held;
    bodies.held = 0;
    this.#live--;
  }

  /** Forgets every body (a journal cleared whole). */
  clear(): void {
    this.#queue = [];
    this.#head = 0;
    this.#total = 0;
    this.#live = 0;
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

/** A kept body as an entry shows it; null when there was none (data undefined: the journal let it go). */
export function bodyEntry(body: KeptBody | undefined): BodyEntry | null {
  if (!body) return null;
  const data = body.data;
  const bytes = sizeOf(body);
  if (data === undefined) return { bytes, data: null, encoding: 'utf8', truncated: body.truncated, evicted: true };
  if (typeof data === 'string') return { bytes, data, encoding: 'utf8', truncated: body.truncated, evicted: false };
  const text = textOf(data, body.truncated);
  return text === undefined
    ? { bytes, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64'), encoding: 'base64', truncated: body.truncated, evicted: false }
    : { bytes, data: text, encoding: 'utf8', truncated: body.truncated, evicted: false };
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
