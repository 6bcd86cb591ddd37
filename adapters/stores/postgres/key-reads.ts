import type { RecordKey } from '../../../lib/store.ts';

/** Keys that wait for one statement at most; past it the waiting ones go at once. */
const MAX_KEYS = 1000;

/** A row of the statement: the position of its key among those sent (1…), and the record. */
export interface KeyRow<R> {
  n: unknown;
  data: R;
}

/** How the keys go to the database: one statement for the three arrays, answering a row per key found. */
export type SendKeys<R> = (accounts: string[], kinds: string[], ids: string[]) => Promise<readonly KeyRow<R>[]>;

interface Waiter<R> {
  /** Where the waiter's keys start among those sent, and how many. */
  from: number;
  count: number;
  resolve(records: (R | undefined)[]): void;
  reject(error: unknown): void;
}

/**
 * The records that reads outside any transaction ask for by key during one turn of the event
 * loop (every request's API key, index entry and owner, and a GET's record), read by one
 * statement at the turn's end rather than one statement each: PostgreSQL binds, starts and ends
 * one statement for all of them, and the store parses one answer. Each read still sees committed
 * state as of a moment after it was asked (the statement starts once the turn is over), as a
 * statement of its own would. When a statement of several reads fails, each read is sent again
 * in a statement of its own, so that one read's keys cannot fail the others' (and a read that
 * fails alone fails as it would have unmerged).
 */
export class MergedKeyReads<R> {
  readonly #send: SendKeys<R>;
  #accounts: string[] = [];
  #kinds: string[] = [];
  #ids: string[] = [];
  #waiters: Waiter<R>[] = [];
  #scheduled = false;
  readonly #flush = (): void => {
    this.#scheduled = false;
    this.#sendWaiting();
  };

  constructor(send: SendKeys<R>) {
    this.#send = send;
  }

  /** The records at `keys` (undefined where none), in their order. */
  read(keys: readonly RecordKey[]): Promise<(R | undefined)[]> {
    if (this.#ids.length > 0 && this.#ids.length + keys.length > MAX_KEYS) this.#sendWaiting();
    return new Promise((resolve, reject) => {
      this.#waiters.push({ from: this.#ids.length, count: keys.length, resolve, reject });
      for (const key of keys) {
        this.#accounts.push(key.scope.account);
        this.#kinds.push(key.scope.kind);
        this.#ids.push(key.id);
      }
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  #sendWaiting(): void {
    const waiters = this.#waiters;
    if (waiters.length === 0) return;
    const [accounts, kinds, ids] = [this.#accounts, this.#kinds, this.#ids];
    this.#accounts = [];
    this.#kinds = [];
    this.#ids = [];
    this.#waiters = [];
    this.#send(accounts, kinds, ids).then(
      (rows) => {
        const records = recordsOf(rows, ids.length);
        for (const waiter of waiters) waiter.resolve(records.slice(waiter.from, waiter.from + waiter.count));
      },
      (error: unknown) => {
        if (waiters.length === 1) return waiters[0]!.reject(error);
        // One read's keys must not fail the others': each is sent again in a statement of its own.
        for (const waiter of waiters) {
          const end = waiter.from + waiter.count;
          this.#send(accounts.slice(waiter.from, end), kinds.slice(waiter.from, end), ids.slice(waiter.from, end)).then((rows) => waiter.resolve(recordsOf(rows, waiter.count)), waiter.reject);
        }
      },
    );
  }
}

/** The records of `count` keys sent, from the rows found (undefined where none). */
function recordsOf<R>(rows: readonly KeyRow<R>[], count: number): (R | undefined)[] {
  const records = new Array<R | undefined>(count).fill(undefined);
  for (const row of rows) records[Number(row.n) - 1] = row.data;
  return records;
}
