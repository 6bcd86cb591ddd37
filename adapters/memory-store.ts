import type { PageQuery, Scope, Store, StoreTransaction, StoredRecord } from '../lib/store.ts';

/**
 * The in-memory store: per scope a Map (O(1) get/delete) and an id-sorted array for paging
 * (O(log n + limit)). Deleted ids stay in the array as tombstones until they outnumber the live
 * ones, so delete is amortised O(1). Ids arriving in order (Burrow's time-ordered ids) are
 * appended; others (token hashes, which are random) wait in an unsorted list that is sorted and
 * merged in only when the scope is paged, so inserting them is O(1) rather than an O(n) splice.
 * Records are frozen copies, so they can be handed out as is.
 *
 * Transactions run one at a time; writes go to an overlay that the transaction's own reads see and
 * that is applied at commit. Subclasses (the JSON-file store) persist in `afterCommit` and can
 * revert committed changes with `revert` when persistence fails.
 */

interface ScopeData {
  readonly records: Map<string, StoredRecord>;
  /** Ascending ids, possibly with tombstones (ids no longer in `records`). */
  sorted: string[];
  /** Ids not yet in `sorted` (added out of order), unsorted, possibly with tombstones. */
  pending: string[];
  dead: Set<string>;
}

/** One applied change and the record it replaced, so it can be undone. */
export interface Change {
  readonly key: string;
  readonly id: string;
  readonly record: StoredRecord | undefined;
  readonly previous: StoredRecord | undefined;
}

const SEP = '\u0000';
const scopeKey = (scope: Scope) => `${scope.account}${SEP}${scope.kind}`;

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** A deep-frozen copy of JSON-safe data in one pass (structuredClone then freezing walked it twice). */
function frozenCopy(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return Object.freeze(value.map(frozenCopy));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = frozenCopy((value as Record<string, unknown>)[key]);
  return Object.freeze(out);
}

/** The copy a store keeps: JSON-safe, deep-frozen. */
export function freezeRecord(record: StoredRecord): StoredRecord {
  return frozenCopy(record) as StoredRecord;
}

/** Merges an unsorted batch of ids into an ascending array. */
function mergeIds(sorted: readonly string[], batch: string[]): string[] {
  batch.sort();
  const out: string[] = new Array(sorted.length + batch.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < sorted.length && j < batch.length) out[k++] = sorted[i]! < batch[j]! ? sorted[i++]! : batch[j++]!;
  while (i < sorted.length) out[k++] = sorted[i++]!;
  while (j < batch.length) out[k++] = batch[j++]!;
  return out;
}

/** Index of the first id >= `id` in an ascending array. */
function lowerBound(sorted: readonly string[], id: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class MemoryStore implements Store {
  readonly name: string = 'memory';
  readonly #scopes = new Map<string, ScopeData>();
  /** The same scopes by account, then kind: reads find them without building a key string. */
  readonly #byAccount = new Map<string, Map<string, ScopeData>>();
  #queue: Promise<unknown> = Promise.resolve();

  async get(scope: Scope, id: string): Promise<StoredRecord | undefined> {
    return this.committedIn(scope, id);
  }

  async page(scope: Scope, query: PageQuery): Promise<StoredRecord[]> {
    return this.pageOf(scopeKey(scope), query);
  }

  protected pageOf(key: string, query: PageQuery): StoredRecord[] {
    const data = this.#scopes.get(key);
    if (!data) return [];
    if (data.pending.length > 0) {
      data.sorted = mergeIds(data.sorted, data.pending);
      data.pending = [];
    }
    const out: StoredRecord[] = [];
    let i = query.beforeId === undefined ? data.sorted.length - 1 : lowerBound(data.sorted, query.beforeId) - 1;
    for (; i >= 0 && out.length < query.limit; i--) {
      const record = data.records.get(data.sorted[i]!);
      if (record) out.push(record);
    }
    return out;
  }

  async scopes(): Promise<Scope[]> {
    return [...this.#scopes.entries()]
      .filter(([, data]) => data.records.size > 0)
      .map(([key]) => {
        const [account, kind] = key.split(SEP) as [string, string];
        return { account, kind };
      });
  }

  async transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const run = this.#queue.then(async () => {
      const tx = new OverlayTransaction(this);
      const result = await work(tx);
      const changes = this.#apply(tx.writes());
      // Registered in the same step as the apply, so a failed persist can find every change.
      const durable = changes.length > 0 ? this.afterCommit(changes) : undefined;
      durable?.catch(() => undefined);
      return { result, durable };
    });
    this.#queue = run.catch(() => undefined);
    const { result, durable } = await run;
    await durable;
    return result;
  }

  /** Runs `work` between transactions (no transaction is mid-flight while it runs). */
  protected exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    const run = this.#queue.then(work);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Called after a transaction's changes are applied in memory; the transaction resolves after it. */
  protected async afterCommit(_changes: readonly Change[]): Promise<void> {}

  /** Undoes applied changes, newest first. Call only from `exclusive`. */
  protected revert(changes: readonly Change[]): void {
    for (let i = changes.length - 1; i >= 0; i--) {
      const change = changes[i]!;
      this.#set(change.key, change.id, change.previous);
    }
  }

  /** Every record, by scope key (for serialisers). */
  protected entries(): IterableIterator<[string, ScopeData]> {
    return this.#scopes.entries();
  }

  /** Loads records without a transaction (for stores that read a file on open). */
  protected load(scope: Scope, records: Iterable<StoredRecord>): void {
    const key = scopeKey(scope);
    for (const record of records) this.#set(key, record.id, deepFreeze(record));
  }

  async close(): Promise<void> {
    await this.#queue;
  }

  /** @internal reads of the committed state for transactions. */
  committed(key: string, id: string): StoredRecord | undefined {
    return this.#scopes.get(key)?.records.get(id);
  }

  /** @internal */
  committedIn(scope: Scope, id: string): StoredRecord | undefined {
    return this.#byAccount.get(scope.account)?.get(scope.kind)?.records.get(id);
  }

  /** @internal */
  committedPage(key: string, query: PageQuery): StoredRecord[] {
    return this.pageOf(key, query);
  }

  /** @internal scope keys of an account. */
  accountKeys(account: string): string[] {
    return [...this.#scopes.keys()].filter((key) => key.startsWith(`${account}${SEP}`));
  }

  /** @internal ids of a scope. */
  ids(key: string): string[] {
    return [...(this.#scopes.get(key)?.records.keys() ?? [])];
  }

  #apply(writes: Map<string, Map<string, StoredRecord | null>>): Change[] {
    const changes: Change[] = [];
    for (const [key, scopeWrites] of writes) {
      for (const [id, record] of scopeWrites) {
        const previous = this.committed(key, id);
        if (record === null && previous === undefined) continue;
        this.#set(key, id, record ?? undefined);
        changes.push({ key, id, record: record ?? undefined, previous });
      }
    }
    return changes;
  }

  #set(key: string, id: string, record: StoredRecord | undefined): void {
    let data = this.#scopes.get(key);
    if (!data) {
      if (!record) return;
      data = { records: new Map(), sorted: [], pending: [], dead: new Set() };
      this.#scopes.set(key, data);
      const [account, kind] = key.split(SEP) as [string, string];
      let kinds = this.#byAccount.get(account);
      if (!kinds) this.#byAccount.set(account, (kinds = new Map()));
      kinds.set(kind, data);
    }
    if (!record) {
      if (data.records.delete(id)) data.dead.add(id);
      if (data.dead.size > 64 && data.dead.size * 2 > data.sorted.length + data.pending.length) {
        data.sorted = data.sorted.filter((live) => data!.records.has(live));
        data.pending = data.pending.filter((live) => data!.records.has(live));
        data.dead.clear();
      }
      return;
    }
    if (!data.records.has(id)) {
      if (data.dead.has(id)) data.dead.delete(id);
      else if (data.pending.length === 0 && (data.sorted.length === 0 || data.sorted[data.sorted.length - 1]! < id)) data.sorted.push(id);
      else data.pending.push(id);
    }
    data.records.set(id, record);
  }
}

/** A transaction's view: committed state plus its own writes (null = deleted). */
class OverlayTransaction implements StoreTransaction {
  readonly #store: MemoryStore;
  readonly #writes = new Map<string, Map<string, StoredRecord | null>>();

  constructor(store: MemoryStore) {
    this.#store = store;
  }

  writes(): Map<string, Map<string, StoredRecord | null>> {
    return this.#writes;
  }

  #scopeWrites(key: string): Map<string, StoredRecord | null> {
    let writes = this.#writes.get(key);
    if (!writes) this.#writes.set(key, (writes = new Map()));
    return writes;
  }

  async get(scope: Scope, id: string): Promise<StoredRecord | undefined> {
    const own = this.#writes.size === 0 ? undefined : this.#writes.get(scopeKey(scope))?.get(id);
    return own === undefined ? this.#store.committedIn(scope, id) : (own ?? undefined);
  }

  async page(scope: Scope, query: PageQuery): Promise<StoredRecord[]> {
    const key = scopeKey(scope);
    const own = this.#writes.get(key);
    if (!own || own.size === 0) return this.#store.committedPage(key, query);
    const base = this.#store.committedPage(key, { ...query, limit: query.limit + own.size });
    const merged = new Map<string, StoredRecord>();
    for (const record of base) if (!own.has(record.id)) merged.set(record.id, record);
    for (const [id, record] of own) {
      if (record && (query.beforeId === undefined || id < query.beforeId)) merged.set(id, record);
    }
    return [...merged.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, query.limit);
  }

  async put(scope: Scope, record: StoredRecord): Promise<void> {
    this.#scopeWrites(scopeKey(scope)).set(record.id, freezeRecord(record));
  }

  async insert(scope: Scope, record: StoredRecord): Promise<boolean> {
    if ((await this.get(scope, record.id)) !== undefined) return false;
    await this.put(scope, record);
    return true;
  }

  async delete(scope: Scope, id: string): Promise<boolean> {
    const existed = (await this.get(scope, id)) !== undefined;
    this.#scopeWrites(scopeKey(scope)).set(id, null);
    return existed;
  }

  async deleteAccount(account: string): Promise<void> {
    const keys = new Set([...this.#store.accountKeys(account), ...[...this.#writes.keys()].filter((k) => k.startsWith(`${account}${SEP}`))]);
    for (const key of keys) {
      const writes = this.#scopeWrites(key);
      for (const id of this.#store.ids(key)) writes.set(id, null);
      for (const id of writes.keys()) writes.set(id, null);
    }
  }
}
