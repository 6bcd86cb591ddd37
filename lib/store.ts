/**
 * The Store contract: the only thing a storage backend implements.
 *
 * Invariants every store keeps (test/adapters/stores/conformance.ts checks them):
 * - Records are JSON-safe objects with a string `id`. A store keeps its own copy: changing an object
 *   after `put`, or changing one that `get`/`page` returned, never changes what is stored (stores
 *   may hand out frozen objects instead of copies).
 * - Records live in a scope: an account id plus a kind. Scopes are isolated namespaces; the same id
 *   in two scopes names two records. Instance-wide records use the account id `INSTANCE_SCOPE`.
 *   A SQL store keeps one row per record: `(account, kind, id)` as the primary key, the record as
 *   JSON. Kinds starting with `_` hold lib/'s own index records (lib/engine/indexes.ts); a store treats
 *   them like any other kind.
 * - Accounts, kinds and ids are strings without U+0000 or unpaired surrogates (what SQL text can
 *   hold as a key); lib/ never hands a store any other (lib/engine/key-guard.ts). Stores that can hold any
 *   string (memory, JSON file) still keep every scope apart whatever its names hold.
 * - Ids order records by UTF-16 code unit (for Burrow's ASCII ids: byte order; in SQL
 *   `COLLATE "C"`, never a locale collation). `page` returns them highest first; Burrow's ids sort
 *   by creation time, so this is newest-first paging, and an id range such as "below `k!`, while
 *   ids start with `k `" is how lib/ reads an index key's entries.
 * - Writes happen only inside `transaction`, and transactions are serialisable: the outcome is that
 *   of running them one at a time. When the callback throws, nothing it wrote is kept. When the
 *   returned promise resolves, the writes are durable for that store (for a file store: on disk);
 *   when it rejects, none of them is visible afterwards.
 * - Retries: a store may run a transaction's callback more than once (a SQL store re-runs it after
 *   a serialisation failure or a unique-key conflict); only the writes and the result of the run
 *   that commits count. So a callback does nothing but read and write through its `tx` and compute:
 *   slow or non-repeatable work (key generation, network, delivering events) belongs before it
 *   (`Operation.prepare`) or after it resolves.
 * - Snapshots: all reads of one transaction see one consistent state (as of its start) plus its own
 *   writes. Reads on the store itself, outside a transaction, each see some committed state; two of
 *   them may see different ones, so a check that must hold when writing reads inside the transaction.
 * - Nothing here assumes the whole state is one object in memory: `page` is
 *   `WHERE account = $1 AND kind = $2 AND id < $before ORDER BY id DESC LIMIT $n`.
 */

/** A stored record: any JSON-safe object with a string id. */
export type StoredRecord = { readonly id: string } & Readonly<Record<string, unknown>>;

/** Where a record lives: an account and a kind of record. */
export interface Scope {
  readonly account: string;
  readonly kind: string;
}

/** The account id of instance-wide records (accounts themselves, token indexes). */
export const INSTANCE_SCOPE = '_instance';

/**
 * The account id of the records the servers sharing a store keep among themselves: test state
 * (starting states, checkpoints, fault rules), rate counts, the servers' peer addresses. They are
 * not part of the instance's state: snapshots, checkpoints, resets and restores leave them alone.
 */
export const CLUSTER_SCOPE = '_cluster';

/** The scopes of the instance's state: all but the servers' own (CLUSTER_SCOPE). */
export async function stateScopes(store: Pick<Store, 'scopes'>): Promise<Scope[]> {
  return (await store.scopes()).filter((scope) => scope.account !== CLUSTER_SCOPE);
}

/** Whether several servers share the store (it has a channel between them), so what they share must live in it. */
export const isShared = (store: Pick<Store, 'openChannel'>): boolean => store.openChannel !== undefined;

/** One page request: records with id lower than `beforeId` (all when absent), at most `limit`. */
export interface PageQuery {
  readonly beforeId?: string;
  readonly limit: number;
}

/** A record's address: its scope and id. */
export interface RecordKey {
  readonly scope: Scope;
  readonly id: string;
}

/** Reads, available both on the store and inside a transaction. */
export interface StoreReader {
  /** The record with this id in this scope, or undefined. */
  get(scope: Scope, id: string): Promise<StoredRecord | undefined>;
  /** Up to `limit` records of the scope with id < `beforeId`, highest id first. */
  page(scope: Scope, query: PageQuery): Promise<StoredRecord[]>;
  /**
   * Optional, for a store a round trip away: several reads answered together, in one snapshot (a
   * SQL store: one statement), in the order asked — a record (undefined where none) for a key, the
   * records of a page for a page read. lib/ reads through `readMany` below, which falls back to one
   * `get` or `page` each.
   */
  readMany?(reads: readonly Read[]): Promise<ReadResult[]>;
}

/** A read of a batch (StoreReader.readMany): the record at a key, or a page of a scope. */
export type Read = RecordKey | PageRead;

/** A page of a scope, as one read of a batch. */
export interface PageRead {
  readonly scope: Scope;
  readonly page: PageQuery;
}

/** What a read of a batch answers: a record or undefined for a key, the records for a page. */
export type ReadResult = StoredRecord | undefined | StoredRecord[];

/** What each read of `reads` answers, by its type. */
export type ReadResults<R extends readonly Read[]> = { -readonly [I in keyof R]: R[I] extends PageRead ? StoredRecord[] : StoredRecord | undefined };

export const isPageRead = (read: Read): read is PageRead => 'page' in read;

/** Several reads in one round trip where the store can (StoreReader.readMany), else one after another. */
export function readMany<const R extends readonly Read[]>(reader: StoreReader, reads: R): Promise<ReadResults<R>> {
  const answers = reader.readMany
    ? reader.readMany(reads)
    : Promise.all(reads.map((read) => (isPageRead(read) ? reader.page(read.scope, read.page) : reader.get(read.scope, read.id))));
  return answers as Promise<ReadResults<R>>;
}

/** The records at `keys` (undefined where none), in one round trip where the store can. */
export function getMany(reader: StoreReader, keys: readonly RecordKey[]): Promise<(StoredRecord | undefined)[]> {
  return readMany(reader, keys) as Promise<(StoredRecord | undefined)[]>;
}

/** Reads and writes inside one transaction; reads see the transaction's own writes. */
export interface StoreTransaction extends StoreReader {
  /** Inserts or replaces the record with the same id in this scope. */
  put(scope: Scope, record: StoredRecord): Promise<void>;
  /**
   * Inserts the record only when the scope holds none with its id (as this transaction sees it):
   * true when it was inserted, false (and nothing written) when one exists. For index records that
   * claim a value: a SQL store makes it one `INSERT … ON CONFLICT DO NOTHING`, with no read of the
   * key before, so concurrent claims of different values never conflict (a read of an absent key
   * locks the gap around it under serialisable isolation).
   */
  insert(scope: Scope, record: StoredRecord): Promise<boolean>;
  /** Removes the record; true when it existed. */
  delete(scope: Scope, id: string): Promise<boolean>;
  /** Removes every record of an account (all kinds); used by reset. */
  deleteAccount(account: string): Promise<void>;
}

/** A storage backend. */
export interface Store extends StoreReader {
  /** A short name for logs and health reports, e.g. `memory` or `json-file`. */
  readonly name: string;
  /** Where the state lives, for logs (a file path, `user@host:port/database`; never a password). */
  readonly location?: string;
  /** Runs `work` as one atomic, durable unit; `work` may be run again (see the invariants above). */
  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  /** Every scope holding at least one record, for export. */
  scopes(): Promise<Scope[]>;
  /** Flushes and releases the store (file locks, connections). Idempotent. */
  close(): Promise<void>;
  /**
   * A store that several processes share (PostgreSQL) opens a channel between them; a store only
   * one process can hold (memory, JSON file) has none, and that process is the only server.
   */
  openChannel?(): Promise<StoreChannel>;
  /**
   * A store that can go away (PostgreSQL) calls `listener` once when it stops answering (false,
   * with why) and once when it answers again (true); answers the function that stops it. A store in
   * this process (memory, JSON file) has none.
   */
  watchAvailability?(listener: (available: boolean, reason: string) => void): () => void;
}

/**
 * Messages between the servers that share one store, and which of them are alive: what lets a
 * server reach an agent connected to another (PostgreSQL: LISTEN/NOTIFY on one connection that
 * also holds an advisory lock naming the server, so a server is alive while that connection is).
 */
export interface StoreChannel {
  /** This server's id among those sharing the store (random, new at every open). */
  readonly serverId: string;
  /** Sends `message` (at most 7,000 bytes) to every server listening, this one included. */
  publish(message: string): Promise<void>;
  /** Calls `listener` with every message published from now on. */
  subscribe(listener: (message: string) => void): void;
  /** Of `serverIds`, those whose channel is still open. */
  alive(serverIds: readonly string[]): Promise<Set<string>>;
  /** Closes the channel: this server is no longer alive to the others. Idempotent. */
  close(): Promise<void>;
}

/**
 * Every record of a scope, highest id first, read page by page through the contract (O(n)). Only
 * where the whole scope is the answer (an export, an outbox, a rule that touches every record);
 * a lookup by a field uses an index (lib/engine/indexes.ts).
 */
export async function readAll(reader: StoreReader, scope: Scope): Promise<StoredRecord[]> {
  const out: StoredRecord[] = [];
  for (let page = await reader.page(scope, { limit: 500 }); ; ) {
    out.push(...page);
    if (page.length < 500) return out;
    page = await reader.page(scope, { beforeId: page[page.length - 1]!.id, limit: 500 });
  }
}

/**
 * The error a store rejects a transaction with when its writes could not be made durable (disk
 * full, read-only file system). Nothing of that transaction is kept; the API answers 503.
 */
export class StoreWriteError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreWriteError';
  }
}

/**
 * The error a store rejects a call with when its backend cannot be reached (a database that is
 * down or refuses connections). Nothing of a rejected transaction is kept; the API answers 503,
 * and the store serves again once the backend is back.
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
