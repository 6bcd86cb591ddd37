import { fail } from './conventions/errors.ts';
import { isStorableKey } from './conventions/ids.ts';
import { isPageRead, type PageQuery, type Read, type ReadResult, type Scope, type Store, type StoreReader, type StoreTransaction, type StoredRecord } from './store.ts';

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
  return {
    get name() {
      return store.name;
    },
    get: (scope, id) => guardedGet(store, scope, id),
    page: (scope, query) => guardedPage(store, scope, query),
    ...(store.readMany ? { readMany: (reads: readonly Read[]) => guardedReadMany(store, reads) } : {}),
    scopes: () => store.scopes(),
    close: () => store.close(),
    transaction: (work) => store.transaction((tx) => work(guardTransaction(tx))),
    // The channel carries no keys: passed through as it is.
    ...(store.openChannel ? { openChannel: () => store.openChannel!() } : {}),
  };
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

function guardTransaction(tx: StoreTransaction): StoreTransaction {
  const write = (scope: Scope, id: string) => {
    if (!storable(scope, id)) refuse(storable(scope) ? id : `${scope.account} ${scope.kind}`);
  };
  return {
    get: (scope, id) => guardedGet(tx, scope, id),
    page: (scope, query) => guardedPage(tx, scope, query),
    ...(tx.readMany ? { readMany: (reads: readonly Read[]) => guardedReadMany(tx, reads) } : {}),
    put: async (scope, record) => {
      write(scope, record.id);
      return tx.put(scope, record);
    },
    insert: async (scope, record) => {
      write(scope, record.id);
      return tx.insert(scope, record);
    },
    delete: async (scope, id) => (storable(scope, id) ? tx.delete(scope, id) : false),
    deleteAccount: async (account) => (isStorableKey(account) ? tx.deleteAccount(account) : undefined),
  };
}

function refuse(text: string): never {
  fail('INVALID_FIELD', `${JSON.stringify(text)} holds NUL or an unpaired surrogate, which no id or name may hold`);
}
