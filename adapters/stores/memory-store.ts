import type { PageQuery, Scope, Store, StoreTransaction, StoredRecord } from '../../lib/store.ts';

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
  readonly scope: Scope;
  readonly records: Map<string, StoredRecord>;
  /** Ascending ids, possibly with tombstones (ids no longer in `records`). */
  sorted: string[];
  /** Ids not yet in `sorted` (added out of order), unsorted, possibly with tombstones. */
  pending: string[];
  dead: Set<string>;
}

/** One applied change and the record it replaced, so it can be undone. */
export interface Change {
  readonly scope: Scope;
  readonly id: string;
  readonly record: StoredRecord | undefined;
  readonly previous: StoredRecord | undefined;
}

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
  for (const key of Object.keys(value)) {
    const copy = frozenCopy((value as Record<string, unknown>)[key]);
    // An assignment to `__proto__` would set the prototype instead of keeping the field.
    if (key === '__proto__') Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
    else out[key] = copy;
  }
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

/** Scopes by account, then kind: nested maps, so no scope's name can collide with another's. */
type ByScope<T> = Map<string, Map<string, T>>;

function entryOf<T>(map: ByScope<T>, scope: Scope, create: () => T): T {
  let kinds = map.get(scope.account);
  if (!kinds) map.set(scope.account, (kinds = new Map()));
  let entry = kinds.get(scope.kind);
  if (!entry) kinds.set(scope.kind, (entry = create()));
  return entry;
}

function* valuesOf<T>(map: ByScope<T>): IterableIterator<T> {
  for (const kinds of map.values()) yield* kinds.values();
}

export class MemoryStore implements Store {
  readonly name: string = 'memory';
  /** In this process's memory only. */
  get location(): string | undefined {
    return undefined;
  }
  readonly #scopes: ByScope<ScopeData> = new Map();
  #locked = false;
  readonly #waiting: (() => void)[] = [];

  async get(scope: Scope, id: string): Promise<StoredRecord | undefined> {
    return this.committed(scope, id);
  }

  async page(scope: Scope, query: PageQuery): Promise<StoredRecord[]> {
    return this.committedPage(scope, query);
  }

  async scopes(): Promise<Scope[]> {
    return [...valuesOf(this.#scopes)].filter((data) => data.records.size > 0).map((data) => data.scope);
  }

  async transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const turn = this.#lock();
    if (turn) await turn;
    let result: T;
    let durable: Promise<void> | undefined;
    try {
      const tx = new OverlayTransaction(this);
      result = await work(tx);
      const changes = this.#apply(tx.writes());
      // Registered in the same step as the apply, so a failed persist can find every change.
      durable = changes.length > 0 ? this.afterCommit(changes) : undefined;
    } finally {
      this.#unlock();
    }
    if (durable) await durable;
    return result;
  }

  /** Runs `work` between transactions (no transaction is mid-flight while it runs). */
  protected async exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    const turn = this.#lock();
    if (turn) await turn;
    try {
      return await work();
    } finally {
      this.#unlock();
    }
  }

  /**
   * Takes the store's one lock: at once when it is free (no promise chained per transaction),
   * else after those waiting before, in order.
   */
  #lock(): Promise<void> | undefined {
    if (!this.#locked) {
      this.#locked = true;
      return undefined;
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Hands the lock to the next waiter, or frees it. */
  #unlock(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#locked = false;
  }

  /**
   * Called after a transaction's changes are applied in memory; the transaction resolves after
   * the promise it answers (none: nothing to wait for).
   */
  protected afterCommit(_changes: readonly Change[]): Promise<void> | undefined {
    return undefined;
  }

  /** Undoes applied changes, newest first. Call only from `exclusive`. */
  protected revert(changes: readonly Change[]): void {
    for (let i = changes.length - 1; i >= 0; i--) {
      const change = changes[i]!;
      this.#set(change.scope, change.id, change.previous);
    }
  }

  /** Every scope holding records, with its records by id (for serialisers). */
  protected *entries(): IterableIterator<[Scope, ReadonlyMap<string, StoredRecord>]> {
    for (const data of valuesOf(this.#scopes)) if (data.records.size > 0) yield [data.scope, data.records];
  }

  /** Loads records without a transaction (for stores that read a file on open). */
  protected load(scope: Scope, records: Iterable<StoredRecord>): void {
    for (const record of records) this.#set(scope, record.id, deepFreeze(record));
  }

  async close(): Promise<void> {
    await this.exclusive(() => undefined);
  }

  /** @internal reads of the committed state for transactions. */
  committed(scope: Scope, id: string): StoredRecord | undefined {
    return this.#scopes.get(scope.account)?.get(scope.kind)?.records.get(id);
  }

  /** @internal */
  committedPage(scope: Scope, query: PageQuery): StoredRecord[] {
    const data = this.#scopes.get(scope.account)?.get(scope.kind);
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

  /** @internal the kinds of an account that hold or held records. */
  accountKinds(account: string): string[] {
    return [...(this.#scopes.get(account)?.keys() ?? [])];
  }

  /** @internal ids of a scope. */
  ids(scope: Scope): string[] {
    return [...(this.#scopes.get(scope.account)?.get(scope.kind)?.records.keys() ?? [])];
  }

  #apply(writes: ByScope<ScopeWrites>): Change[] {
    const changes: Change[] = [];
    for (const { scope, records } of valuesOf(writes)) {
      for (const [id, record] of records) {
        const previous = this.committed(scope, id);
        if (record === null && previous === undefined) continue;
        this.#set(scope, id, record ?? undefined);
        changes.push({ scope, id, record: record ?? undefined, previous });
      }
    }
    return changes;
  }

  #set(scope: Scope, id: string, record: StoredRecord | undefined): void {
    let data = this.#scopes.get(scope.account)?.get(scope.kind);
    if (!data) {
      if (!record) return;
      data = entryOf(this.#scopes, scope, () => ({ scope: { account: scope.account, kind: scope.kind }, records: new Map(), sorted: [], pending: [], dead: new Set() }));
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

/** A transaction's writes to one scope: the record, or null for a delete, by id. */
interface ScopeWrites {
  readonly scope: Scope;
  readonly records: Map<string, StoredRecord | null>;
}

/** A transaction's view: committed state plus its own writes. */
class OverlayTransaction implements StoreTransaction {
  readonly #store: MemoryStore;
  readonly #writes: ByScope<ScopeWrites> = new Map();

  constructor(store: MemoryStore) {
    this.#store = store;
  }

  writes(): ByScope<ScopeWrites> {
    return this.#writes;
  }

  #scopeWrites(scope: Scope): Map<string, StoredRecord | null> {
    return entryOf(this.#writes, scope, () => ({ scope: { account: scope.account, kind: scope.kind }, records: new Map() })).records;
  }

  #own(scope: Scope): Map<string, StoredRecord | null> | undefined {
    return this.#writes.size === 0 ? undefined : this.#writes.get(scope.account)?.get(scope.kind)?.records;
  }

  async get(scope: Scope, id: string): Promise<StoredRecord | undefined> {
    return this.#read(scope, id);
  }

  #read(scope: Scope, id: string): StoredRecord | undefined {
    const own = this.#own(scope)?.get(id);
    return own === undefined ? this.#store.committed(scope, id) : (own ?? undefined);
  }

  async page(scope: Scope, query: PageQuery): Promise<StoredRecord[]> {
    const own = this.#own(scope);
    if (!own || own.size === 0) return this.#store.committedPage(scope, query);
    const base = this.#store.committedPage(scope, { ...query, limit: query.limit + own.size });
    const merged = new Map<string, StoredRecord>();
    for (const record of base) if (!own.has(record.id)) merged.set(record.id, record);
    for (const [id, record] of own) {
      if (record && (query.beforeId === undefined || id < query.beforeId)) merged.set(id, record);
    }
    return [...merged.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, query.limit);
  }

  async put(scope: Scope, record: StoredRecord): Promise<void> {
    this.#scopeWrites(scope).set(record.id, freezeRecord(record));
  }

  // Reads and writes without awaiting its own methods: a created key's token entry is an insert.
  async insert(scope: Scope, record: StoredRecord): Promise<boolean> {
    if (this.#read(scope, record.id) !== undefined) return false;
    this.#scopeWrites(scope).set(record.id, freezeRecord(record));
    return true;
  }

  async delete(scope: Scope, id: string): Promise<boolean> {
    const existed = this.#read(scope, id) !== undefined;
    this.#scopeWrites(scope).set(id, null);
    return existed;
  }

  async deleteAccount(account: string): Promise<void> {
    const kinds = new Set([...this.#store.accountKinds(account), ...(this.#writes.get(account)?.keys() ?? [])]);
    for (const kind of kinds) {
      const scope = { account, kind };
      const writes = this.#scopeWrites(scope);
      for (const id of this.#store.ids(scope)) writes.set(id, null);
      for (const id of writes.keys()) writes.set(id, null);
    }
  }
}
