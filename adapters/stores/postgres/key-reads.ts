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
 * statement of its own would. A statement that fails fails every read in it (each read is
 * retried as the store retries reads).
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
    const count = this.#ids.length;
    const sent = this.#send(this.#accounts, this.#kinds, this.#ids);
    this.#accounts = [];
    this.#kinds = [];
    this.#ids = [];
    this.#waiters = [];
    sent.then(
      (rows) => {
        const records = new Array<R | undefined>(count).fill(undefined);
        for (const row of rows) records[Number(row.n) - 1] = row.data;
        for (const waiter of waiters) waiter.resolve(records.slice(waiter.from, waiter.from + waiter.count));
      },
      (error: unknown) => {
        for (const waiter of waiters) waiter.reject(error);
      },
    );
  }
}
