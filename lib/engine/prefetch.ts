import { isPageRead, readMany, type Read, type ReadResult, type StoreTransaction } from '../store.ts';

/**
 * Reads made before an operation runs, in the statement that checked its API key (lib/engine/auth.ts,
 * Operation.reads): the operation's first read of each is answered from here, every other read
 * goes to the store. Read operations only: they read committed state outside any transaction, so
 * an answer from the statement that authenticated the request is as current as a read of its own,
 * and one statement sees one snapshot.
 */
export class Prefetched {
  readonly #answers = new Map<string, ReadResult>();

  constructor(reads: readonly Read[], answers: readonly ReadResult[]) {
    for (const [i, read] of reads.entries()) this.#answers.set(readKey(read), answers[i]);
  }

  /** Whether `read` was made (and not yet taken); then `take` answers it, once. */
  has(read: Read): boolean {
    return this.#answers.has(readKey(read));
  }

  /** The answer to `read`, taken out: a later read of it goes to the store. */
  take(read: Read): ReadResult {
    const key = readKey(read);
    const answer = this.#answers.get(key);
    this.#answers.delete(key);
    return answer;
  }

  /** `tx` with the prefetched answers in front. */
  over(tx: StoreTransaction): StoreTransaction {
    return new PrefetchedTransaction(tx, this.#answers);
  }
}

type Get = Awaited<ReturnType<StoreTransaction['get']>>;
type Page = Awaited<ReturnType<StoreTransaction['page']>>;

/** A transaction whose first read of each prefetched key is answered from `answers` (a class: no closures per request). */
class PrefetchedTransaction implements StoreTransaction {
  readonly #tx: StoreTransaction;
  readonly #answers: Map<string, ReadResult>;

  constructor(tx: StoreTransaction, answers: Map<string, ReadResult>) {
    this.#tx = tx;
    this.#answers = answers;
  }

  /** The store's readMany where it has one (else each read in turn), past the prefetched answers. */
  readMany(reads: readonly Read[]): Promise<ReadResult[]> {
    return readMany(this.#tx, reads) as Promise<ReadResult[]>;
  }

  put(...args: Parameters<StoreTransaction['put']>) {
    return this.#tx.put(...args);
  }

  insert(...args: Parameters<StoreTransaction['insert']>) {
    return this.#tx.insert(...args);
  }

  delete(...args: Parameters<StoreTransaction['delete']>) {
    return this.#tx.delete(...args);
  }

  deleteAccount(account: string) {
    return this.#tx.deleteAccount(account);
  }

  async get(...[scope, id]: Parameters<StoreTransaction['get']>): Promise<Get> {
    const key = readKey({ scope, id });
    return this.#answers.has(key) ? (this.#take(key) as Get) : this.#tx.get(scope, id);
  }

  async page(...[scope, page]: Parameters<StoreTransaction['page']>): Promise<Page> {
    const key = readKey({ scope, page });
    return this.#answers.has(key) ? (this.#take(key) as Page) : this.#tx.page(scope, page);
  }

  #take(key: string): ReadResult {
    const answer = this.#answers.get(key)!;
    this.#answers.delete(key);
    return answer;
  }
}

/** One string per read; NUL cannot occur in a stored key (lib/engine/key-guard.ts). */
const readKey = (read: Read) =>
  isPageRead(read)
    ? `page\0${read.scope.account}\0${read.scope.kind}\0${read.page.beforeId ?? ''}\0${read.page.limit}`
    : `get\0${read.scope.account}\0${read.scope.kind}\0${read.id}`;
