/**
 * A fixed-size ring over parallel arrays, the storage of the journals (request-journal.ts,
 * traffic-journal.ts): `push` stores the caller's own object and two numbers, allocating nothing,
 * and overwrites the oldest entry once full.
 */

/** One kept entry: its instance-wide sequence number, when it was kept (ms), and the object. */
export interface RingSlot<T> {
  readonly seq: number;
  readonly timeMs: number;
  readonly record: T;
}

export class Ring<T> {
  readonly #records: (T | undefined)[];
  readonly #times: Float64Array;
  readonly #seqs: Float64Array;
  #next = 0;
  #size = 0;

  constructor(capacity: number) {
    this.#records = new Array<T | undefined>(capacity).fill(undefined);
    this.#times = new Float64Array(capacity);
    this.#seqs = new Float64Array(capacity);
  }

  /** Keeps `record`; answers the one it overwrote, if the ring was full. */
  push(record: T, seq: number, timeMs: number): T | undefined {
    const i = this.#next;
    const dropped = this.#records[i];
    this.#records[i] = record;
    this.#times[i] = timeMs;
    this.#seqs[i] = seq;
    this.#next = i + 1 === this.#records.length ? 0 : i + 1;
    if (this.#size < this.#records.length) this.#size++;
    return dropped;
  }

  /** Newest first. */
  *newest(): Generator<RingSlot<T>> {
    const capacity = this.#records.length;
    for (let n = 1; n <= this.#size; n++) {
      const i = (this.#next - n + capacity) % capacity;
      yield { seq: this.#seqs[i]!, timeMs: this.#times[i]!, record: this.#records[i]! };
    }
  }

  get size(): number {
    return this.#size;
  }
}

const ANONYMOUS = '';

/**
 * A ring per account, allocated on the account's first entry, so one noisy account never pushes
 * another's entries out and memory stays at most `size` entries per account (plus one ring for
 * entries of no account). Entries carry an instance-wide sequence number, so listing several
 * accounts merges their rings newest first.
 */
export class AccountRings<T> {
  /** Entries kept per account; 0 keeps none. */
  readonly size: number;
  readonly #now: () => number;
  readonly #rings = new Map<string, Ring<T>>();
  #seq = 0;

  readonly #dropped: ((record: T) => void) | undefined;

  /** `option` names the size in the error a bad one gets (`requestJournalSize`); `dropped` hears of each entry a ring overwrites or a clear forgets. */
  constructor(size: number, now: () => number, option: string, dropped?: (record: T) => void) {
    if (!(Number.isInteger(size) && size >= 0)) throw new Error(`burrow: ${option} must be a whole number of at least 0 (got ${size})`);
    this.size = size;
    this.#now = now;
    this.#dropped = dropped;
  }

  /** Keeps `record` in the ring of `account` (undefined: of no account); answers its sequence number (0: kept nowhere). */
  push(account: string | undefined, record: T): number {
    if (this.size === 0) return 0;
    const key = account ?? ANONYMOUS;
    let ring = this.#rings.get(key);
    if (!ring) this.#rings.set(key, (ring = new Ring(this.size)));
    const dropped = ring.push(record, ++this.#seq, this.#now());
    if (dropped !== undefined) this.#dropped?.(dropped);
    return this.#seq;
  }

  /** The newest entry of any account that `matches` accepts (a scan: for the control plane, not the request path). */
  first(matches: (slot: RingSlot<T>) => boolean): RingSlot<T> | undefined {
    for (const ring of this.#rings.values()) for (const slot of ring.newest()) if (matches(slot)) return slot;
    return undefined;
  }

  /**
   * At most `limit` entries that `matches` accepts, newest first: of one account (`null`: of no
   * account), or of every account merged when `account` is undefined.
   */
  find(account: string | null | undefined, matches: (record: T) => boolean, limit: number): RingSlot<T>[] {
    const rings = account === undefined ? [...this.#rings.values()] : [this.#rings.get(account ?? ANONYMOUS)].filter((r): r is Ring<T> => r !== undefined);
    const found: RingSlot<T>[] = [];
    for (const ring of rings) {
      let taken = 0;
      for (const slot of ring.newest()) {
        if (taken === limit) break;
        if (!matches(slot.record)) continue;
        found.push(slot);
        taken++;
      }
    }
    // Each ring is newest first already; merging rings needs one sort by sequence.
    if (rings.length > 1) found.sort((a, b) => b.seq - a.seq);
    return found.slice(0, limit);
  }

  /** Forgets the entries of one account (`null`: of no account), or all; answers how many. */
  clear(account?: string | null): number {
    const keys = account === undefined ? [...this.#rings.keys()] : [account ?? ANONYMOUS];
    let removed = 0;
    for (const key of keys) {
      const ring = this.#rings.get(key);
      if (!ring) continue;
      removed += ring.size;
      if (this.#dropped) for (const slot of ring.newest()) this.#dropped(slot.record);
      this.#rings.delete(key);
    }
    return removed;
  }
}
