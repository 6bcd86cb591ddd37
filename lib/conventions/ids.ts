import * as crypto from 'node:crypto';
import { createHash, randomBytes, randomFillSync } from 'node:crypto';

/**
 * Resource ids and secrets.
 *
 * Ids are `<prefix>_<27 base62 chars>` in KSUID layout (4-byte seconds since 1400000000, then 16
 * random bytes), as the vendor's ids are, so they sort by creation time. Within one second an
 * instance makes them strictly increasing (the payload of the previous id plus one), so paging by
 * id is exact even for bursts. Tokens are `<27 chars>_<secret>`.
 */

const KSUID_EPOCH = 1_400_000_000;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KSUID_BYTES = 20;
const KSUID_CHARS = 27;

/** A source of random bytes: crypto by default, a seeded generator in deterministic mode. */
export type RandomSource = (size: number) => Uint8Array;

// Bytes come from a pooled buffer: one random fill per 4 KiB instead of a call per id, which
// was a tenth of the CPU time of a GET (every request gets an operation id). A plain Uint8Array,
// not a Buffer: slicing a Buffer goes through its species constructor, twice the time.
const POOL_SIZE = 4096;
const pool = randomFillSync(new Uint8Array(POOL_SIZE));
let poolOffset = 0;

/** Cryptographically random bytes (a copy, never shared with later callers). */
export const cryptoRandom: RandomSource = (size) => {
  if (size > POOL_SIZE) return randomBytes(size);
  if (poolOffset + size > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.slice(poolOffset, poolOffset + size);
  poolOffset += size;
  return out;
};

/**
 * A deterministic random source (SHA-256 in counter mode over the seed). Not for production
 * secrets: it exists so that `--seed N` replays the same ids and tokens.
 */
export function seededRandom(seed: number | string): RandomSource {
  let counter = 0;
  let pool = Buffer.alloc(0);
  return (size) => {
    while (pool.length < size) {
      const block = createHash('sha256').update(`burrow:${seed}:${counter++}`).digest();
      pool = Buffer.concat([pool, block]);
    }
    const out = pool.subarray(0, size);
    pool = pool.subarray(size);
    return new Uint8Array(out);
  };
}

/** Scratch space of encodeBase62 (it runs for every id and every request's operation id, never re-entrantly). */
const BASE62_CODES = Uint8Array.from(BASE62, (c) => c.charCodeAt(0));
const words = new Float64Array(5);
const digits = new Uint8Array(KSUID_CHARS);

/**
 * Base62 of a 20-byte big-endian number (ids and secrets), 27 digits, by long division over 32-bit
 * words with the divisor 62³ (a remainder times 2³² stays an exact double), so each pass over the
 * words gives three digits: a tenth of the divisions of digit-by-digit BigInt arithmetic, which
 * once cost 5% of a GET (every request gets an operation id). The digits are written as character
 * codes into a reused array and made a string in one call (a third faster than joining strings).
 */
function encodeBase62(bytes: Uint8Array): string {
  for (let i = 0; i < 5; i++) words[i] = ((bytes[4 * i]! << 24) | (bytes[4 * i + 1]! << 16) | (bytes[4 * i + 2]! << 8) | bytes[4 * i + 3]!) >>> 0;
  for (let at = KSUID_CHARS - 1; at > 0; at -= 3) {
    let remainder = 0;
    for (let i = 0; i < 5; i++) {
      const value = remainder * 4294967296 + words[i]!;
      const quotient = Math.floor(value / 238328);
      words[i] = quotient;
      remainder = value - quotient * 238328;
    }
    digits[at] = BASE62_CODES[remainder % 62]!;
    digits[at - 1] = BASE62_CODES[Math.floor(remainder / 62) % 62]!;
    digits[at - 2] = BASE62_CODES[Math.floor(remainder / 3844)]!;
  }
  return String.fromCharCode.apply(null, digits as unknown as number[]);
}

/** Decodes the creation time of a Burrow or vendor id (`ak_2ft0…`), or undefined. */
export function idTime(id: string): Date | undefined {
  const ksuid = id.slice(id.lastIndexOf('_') + 1);
  if (ksuid.length !== KSUID_CHARS) return undefined;
  let value = 0n;
  for (const ch of ksuid) {
    const digit = BASE62.indexOf(ch);
    if (digit < 0) return undefined;
    value = value * 62n + BigInt(digit);
  }
  const seconds = Number(value >> 128n);
  return new Date((seconds + KSUID_EPOCH) * 1000);
}

/** Makes ids and tokens for one Burrow instance. */
export class IdFactory {
  #random: RandomSource;
  #now: () => Date;
  #last: Uint8Array = new Uint8Array(KSUID_BYTES);
  /** The base62 digits of `#last`, once this factory has made an id. */
  #lastDigits: string | undefined;
  /** Whether the randomness is seeded (key material is then derived from it too). */
  readonly deterministic: boolean;

  /** `last`: the newest KSUID made before, so that this factory's ids sort after it. */
  constructor(random: RandomSource, now: () => Date, options: { deterministic?: boolean; last?: Uint8Array } = {}) {
    this.#random = random;
    this.#now = now;
    this.deterministic = options.deterministic ?? false;
    if (options.last?.length === KSUID_BYTES) this.#last = options.last;
  }

  /** The newest KSUID this factory made (or was given). */
  get lastKsuid(): Uint8Array {
    return this.#last;
  }

  /** The 27-char KSUID part: time-ordered and strictly increasing within this instance. */
  ksuid(): string {
    const seconds = Math.max(0, Math.floor(this.#now().getTime() / 1000) - KSUID_EPOCH);
    const next = new Uint8Array(KSUID_BYTES);
    // Byte by byte: a DataView would make V8 give the small array its own ArrayBuffer (slow).
    next[0] = seconds >>> 24;
    next[1] = (seconds >>> 16) & 0xff;
    next[2] = (seconds >>> 8) & 0xff;
    next[3] = seconds & 0xff;
    next.set(this.#random(16), 4);
    if (compareBytes(next, this.#last) <= 0) {
      next.set(this.#last);
      const wrapped = increment(next);
      this.#last = next;
      // Busy seconds make most ids this way: the previous digits plus one, without the divisions.
      this.#lastDigits = this.#lastDigits === undefined || wrapped ? encodeBase62(next) : incrementBase62(this.#lastDigits);
      return this.#lastDigits;
    }
    this.#last = next;
    this.#lastDigits = encodeBase62(next);
    return this.#lastDigits;
  }

  /** A new id with the given prefix, e.g. `id('ak')` → `ak_2ft0OJTh21NetHp1AlCMJNAcsEo`. */
  id(prefix: string): string {
    return `${prefix}_${this.ksuid()}`;
  }

  /** A bearer token `<ksuid>_<secret>` for the record whose id is `id`. */
  token(id: string): string {
    const secret = encodeBase62(this.#random(20)).replace(/^0+/, '').padStart(26, 'A');
    return `${id.slice(id.lastIndexOf('_') + 1)}_${secret}`;
  }

  /** `size` random bytes from this instance's source (serials, nonces). */
  bytes(size: number): Uint8Array {
    return this.#random(size);
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** Adds one to a big-endian number in place; true when it wrapped round to zero. */
function increment(bytes: Uint8Array): boolean {
  for (let i = bytes.length - 1; i >= 0; i--) {
    const value = (bytes[i] ?? 0) + 1;
    bytes[i] = value & 0xff;
    if (value <= 0xff) return false;
  }
  return true;
}

/** The base62 digits of one more than the number `digits` spells (its trailing `z`s carry). */
function incrementBase62(digits: string): string {
  let at = digits.length - 1;
  while (digits.charCodeAt(at) === 122) at--;
  const code = digits.charCodeAt(at);
  // 0–9, then A–Z, then a–z.
  const next = code === 57 ? 'A' : code === 90 ? 'a' : String.fromCharCode(code + 1);
  return `${digits.slice(0, at)}${next}${'0'.repeat(digits.length - 1 - at)}`;
}

// Node ≥ 20.12 hashes in one call, a third of the time of a Hash object (auth hashes every request).
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** SHA-256 hex digest: the only form in which tokens are stored. */
export function hashToken(token: string): string {
  return oneShotHash ? oneShotHash('sha256', token, 'hex') : createHash('sha256').update(token).digest('hex');
}

/**
 * Whether `text` can be an account, kind or id in every store (lib/store.ts): no NUL, which SQL
 * text cannot hold, and no unpaired surrogate, which UTF-8 cannot encode (a database would keep
 * U+FFFD, so two such ids would become one). No id Burrow makes holds either, so text that fails
 * this names no record. Checked for every key a request reads or writes: the native checks take
 * half the time of one regular expression.
 */
export function isStorableKey(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed() && !text.includes('\0');
}

/** Whether `token` has the shape of the tokens `IdFactory.token` makes: `<27 base62 chars>_<base62 secret>`. */
export const isTokenShaped = (token: string): boolean => /^[0-9A-Za-z]{27}_[0-9A-Za-z]{26,}$/.test(token);
