import { isPageRead, type Read, type ReadResult, type StoreTransaction } from './store.ts';

/**
 * Reads made before an operation runs, in the statement that checked its API key (lib/auth.ts,
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

  /** `tx` with the prefetched answers in front. */
  over(tx: StoreTransaction): StoreTransaction {
    const take = (key: string): ReadResult | null => {
      if (!this.#answers.has(key)) return null;
      const answer = this.#answers.get(key);
      this.#answers.delete(key);
      return answer;
    };
    return {
      put: (scope, record) => tx.put(scope, record),
      insert: (scope, record) => tx.insert(scope, record),
      delete: (scope, id) => tx.delete(scope, id),
      deleteAccount: (account) => tx.deleteAccount(account),
      ...(tx.readMany ? { readMany: (reads: readonly Read[]) => tx.readMany!(reads) } : {}),
      get: async (scope, id) => {
        const answer = take(readKey({ scope, id }));
        return answer === null ? tx.get(scope, id) : (answer as Awaited<ReturnType<StoreTransaction['get']>>);
      },
      page: async (scope, page) => {
        const answer = take(readKey({ scope, page }));
        return answer === null ? tx.page(scope, page) : (answer as Awaited<ReturnType<StoreTransaction['page']>>);
      },
    };
  }
}

/** One string per read; NUL cannot occur in a stored key (lib/key-guard.ts). */
const readKey = (read: Read) =>
  isPageRead(read)
    ? `page\0${read.scope.account}\0${read.scope.kind}\0${read.page.beforeId ?? ''}\0${read.page.limit}`
    : `get\0${read.scope.account}\0${read.scope.kind}\0${read.id}`;
