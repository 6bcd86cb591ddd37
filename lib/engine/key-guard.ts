import { ApiError, ERRORS } from '../conventions/errors.ts';
import { isStorableKey } from '../conventions/ids.ts';
import { isPageRead, type PageQuery, type Read, type ReadResult, type Scope, type Store, type StoreReader, type StoreTransaction, type StoredRecord } from '../store.ts';

/**
 * The store as lib/ uses it: every account, kind and id that reaches a store is storable text
 * (lib/conventions/ids.ts), whichever way it came in (a path id, a body field naming a policy, a
 * control-plane account). PostgreSQL cannot hold NUL in a key and would answer every such read
 * with an error, so this is checked here, once for every store, rather than at each place user
 * text becomes a key:
 * - a read by an unstorable id finds nothing, as for any unknown id (each caller's own 404 or 400);
 * - a page below an unstorable id, and a write under one, are a 400 (lib/ checks `before_id` where
 *   paging is parsed, so this is a safety net for keys built from user text).
 */
export function guardKeys(store: Store): Store {
  return new GuardedStore(store);
}

const storable = (scope: Scope, id?: string) => isStorableKey(scope.account) && isStorableKey(scope.kind) && (id === undefined || isStorableKey(id));

function guardedGet(reader: StoreReader, scope: Scope, id: string): Promise<StoredRecord | undefined> {
  return storable(scope, id) ? reader.get(scope, id) : Promise.resolve(undefined);
}

function guardedPage(reader: StoreReader, scope: Scope, query: PageQuery): Promise<StoredRecord[]> {
  if (query.beforeId !== undefined && !isStorableKey(query.beforeId)) refuse(query.beforeId);
  return storable(scope) ? reader.page(scope, query) : Promise.resolve([]);
}

/** Sends the storable reads together; an unstorable key finds nothing, as in `get` and `page`. */
async function guardedReadMany(reader: StoreReader, reads: readonly Read[]): Promise<ReadResult[]> {
  const sent: Read[] = [];
  for (const read of reads) {
    if (isPageRead(read) && read.page.beforeId !== undefined && !isStorableKey(read.page.beforeId)) refuse(read.page.beforeId);
    if (isPageRead(read) ? storable(read.scope) : storable(read.scope, read.id)) sent.push(read);
  }
  const answers = sent.length === 0 ? [] : await reader.readMany!(sent);
  let next = 0;
  return reads.map((read) => (read === sent[next] ? answers[next++] : isPageRead(read) ? [] : undefined));
}

// Classes rather than objects of closures: a store is read several times and a transaction opened
// on every request, and methods cost nothing per instance.
class GuardedStore implements Store {
  readonly #store: Store;
  readonly openChannel?: Store['openChannel'];

  readonly readMany?: Store['readMany'];

  constructor(store: Store) {
    this.#store = store;
    if (store.readMany) this.readMany = (reads) => guardedReadMany(store, reads);
    // The channel carries no keys: passed through as it is.
    if (store.openChannel) this.openChannel = () => store.openChannel!();
  }

  get name() {
    return this.#store.name;
  }

  get(scope: Scope, id: string) {
    return guardedGet(this.#store, scope, id);
  }

  page(scope: Scope, query: PageQuery) {
    return guardedPage(this.#store, scope, query);
  }

  scopes() {
    return this.#store.scopes();
  }

  close() {
    return this.#store.close();
  }

  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.#store.transaction((tx) => work(new GuardedTransaction(tx)));
  }
}

class GuardedTransaction implements StoreTransaction {
  readonly #tx: StoreTransaction;
  readonly readMany?: StoreTransaction['readMany'];

  constructor(tx: StoreTransaction) {
    this.#tx = tx;
    if (tx.readMany) this.readMany = (reads) => guardedReadMany(tx, reads);
  }

  get(scope: Scope, id: string) {
    return guardedGet(this.#tx, scope, id);
  }

  page(scope: Scope, query: PageQuery) {
    return guardedPage(this.#tx, scope, query);
  }

  // Not async (a write of every POST): an unstorable key still rejects rather than throws.
  put(scope: Scope, record: StoredRecord) {
    return storable(scope, record.id) ? this.#tx.put(scope, record) : Promise.reject(unstorable(scope, record.id));
  }

  // Not async, as put: an unstorable key still rejects rather than throws.
  insert(scope: Scope, record: StoredRecord) {
    return storable(scope, record.id) ? this.#tx.insert(scope, record) : Promise.reject(unstorable(scope, record.id));
  }

  async delete(scope: Scope, id: string) {
    return storable(scope, id) ? this.#tx.delete(scope, id) : false;
  }

  async deleteAccount(account: string) {
    return isStorableKey(account) ? this.#tx.deleteAccount(account) : undefined;
  }
}

/** The refusal of a write under an unstorable key. */
function unstorable(scope: Scope, id: string): ApiError {
  return refusal(storable(scope) ? id : `${scope.account} ${scope.kind}`);
}

function refuse(text: string): never {
  throw refusal(text);
}

function refusal(text: string): ApiError {
  return new ApiError(ERRORS.INVALID_FIELD, `${JSON.stringify(text)} holds NUL or an unpaired surrogate, which no id or name may hold`);
}
