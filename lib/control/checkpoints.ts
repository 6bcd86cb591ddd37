import { formatTime } from '../conventions/clock.ts';
import { fail } from '../conventions/errors.ts';
import { limitNote, LIMITS } from '../limits.ts';
import { operatorIn, type CheckpointInfo, type Checkpoints, type Instance } from '../engine/context.ts';
import { CLUSTER_SCOPE, getMany, INSTANCE_SCOPE, isShared, readAll, stateScopes, type Scope, type StoredRecord, type StoreReader, type StoreTransaction } from '../store.ts';

/**
 * The states a test returns to: each account's starting state (what `POST /_burrow/reset` brings
 * back) and named checkpoints of the whole instance (`POST /_burrow/checkpoints`, `…/restore`).
 *
 * A state is a copy of records, grouped by the account they belong to. Records of an account's
 * scopes belong to it, and so do the instance-wide records that exist for it: its `account`
 * record, the token index entries of its keys and credentials (`token`, whose entry names the
 * account) and the instance-wide unique claims of its records (`_unique`, held by
 * `<account>/<id>`). Instance settings belong to no account; a reset leaves them alone.
 *
 * Restoring writes the copy back through the Store contract in one transaction, without the
 * checks of a snapshot import: these records were read from this instance's own store, indexes
 * included, so they are what the API wrote. On the memory and JSON-file stores (one server) the
 * copies live in this process's memory (the stored records are frozen and shared, so a copy costs
 * one reference per record); servers sharing a store keep them in it (StoreShelves below), so a
 * reset, checkpoint or restore answers the same through any of them.
 *
 * An account's starting state is captured when the account is created, and for every account
 * when the instance says it has started (`captureStart`: the CLI once its default account and
 * `--api-key` key exist) or a snapshot import replaced the state.
 */

/** One record and where it lives. */
interface Placed {
  readonly scope: Scope;
  readonly record: StoredRecord;
}

/** Records by the account they belong to (`INSTANCE_SCOPE`: instance settings, belonging to none). */
type Owned = Map<string, Placed[]>;

/** A kept state: a starting state (one owner) or a checkpoint (every owner). */
interface Kept {
  readonly owned: Owned;
  readonly createdAt: string;
  readonly records: number;
}

const ACCOUNTS: Scope = { account: INSTANCE_SCOPE, kind: 'account' };
const TOKENS: Scope = { account: INSTANCE_SCOPE, kind: 'token' };
const UNIQUE: Scope = { account: INSTANCE_SCOPE, kind: '_unique' };
/** The instance-wide kinds whose records belong to one account (see above). */
const ACCOUNT_OWNED_INSTANCE_KINDS = [ACCOUNTS, TOKENS, UNIQUE];
const PAGE = 500;

/** The account an instance-wide record belongs to, or `INSTANCE_SCOPE` for none. */
function ownerOf(scope: Scope, record: StoredRecord): string {
  if (scope.account !== INSTANCE_SCOPE) return scope.account;
  if (scope.kind === ACCOUNTS.kind) return record.id;
  if (scope.kind === TOKENS.kind) return String(record.account);
  if (scope.kind === UNIQUE.kind) return String(record.record_id).split('/')[0]!;
  return INSTANCE_SCOPE;
}

async function* recordsOf(reader: StoreReader, scope: Scope): AsyncGenerator<StoredRecord> {
  for (let page = await reader.page(scope, { limit: PAGE }); ; ) {
    yield* page;
    if (page.length < PAGE) return;
    page = await reader.page(scope, { beforeId: page[page.length - 1]!.id, limit: PAGE });
  }
}

const CHECKPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The two shelves of kept states: accounts' starting states (by account id) and checkpoints (by name). */
type Shelf = 'start' | 'checkpoint';

/**
 * Where kept states live. One server alone over its store (memory, JSON file) keeps them in its
 * memory; servers sharing a store (PostgreSQL) keep them in it, under CLUSTER_SCOPE, so a reset,
 * checkpoint or restore through any server uses the same states.
 */
interface StateShelves {
  get(shelf: Shelf, key: string, reader: StoreReader): Promise<Kept | undefined>;
  /** Keeps `kept` (inside `tx` where the shelves are in the store). */
  put(shelf: Shelf, key: string, kept: Kept, tx: StoreTransaction): Promise<void>;
  delete(shelf: Shelf, key: string, tx: StoreTransaction): Promise<boolean>;
  /** The checkpoints' names, oldest first, with their facts. */
  list(shelf: Shelf, reader: StoreReader): Promise<[string, Omit<Kept, 'owned'>][]>;
}

/** This process's memory: the stored records are frozen and shared, so a copy costs a reference per record. */
class MemoryShelves implements StateShelves {
  readonly #shelves = { start: new Map<string, Kept>(), checkpoint: new Map<string, Kept>() };
  async get(shelf: Shelf, key: string) {
    return this.#shelves[shelf].get(key);
  }
  async put(shelf: Shelf, key: string, kept: Kept) {
    this.#shelves[shelf].set(key, kept);
  }
  async delete(shelf: Shelf, key: string) {
    return this.#shelves[shelf].delete(key);
  }
  async list(shelf: Shelf) {
    return [...this.#shelves[shelf]];
  }
}

/**
 * The store, under CLUSTER_SCOPE: a head record per state (`start` or `checkpoint`, id the account
 * or the name: created_at, records, chunks) and its records in chunks of CHUNK (kind `start/<key>`
 * or `checkpoint/<key>`, ids `000000`, `000001` …), so no stored row grows with the instance.
 */
class StoreShelves implements StateShelves {
  static readonly CHUNK = 500;
  #head = (shelf: Shelf): Scope => ({ account: CLUSTER_SCOPE, kind: shelf });
  #chunks = (shelf: Shelf, key: string): Scope => ({ account: CLUSTER_SCOPE, kind: `${shelf}/${key}` });
  #chunkId = (n: number) => String(n).padStart(6, '0');

  async get(shelf: Shelf, key: string, reader: StoreReader) {
    const head = await reader.get(this.#head(shelf), key);
    if (!head) return undefined;
    const owned: Owned = new Map();
    const ids = Array.from({ length: Number(head.chunks) }, (_, n) => this.#chunkId(n));
    for (const chunk of await getMany(reader, ids.map((id) => ({ scope: this.#chunks(shelf, key), id })))) {
      for (const [owner, account, kind, record] of (chunk?.placed ?? []) as [string, string, string, StoredRecord][]) {
        let list = owned.get(owner);
        if (!list) owned.set(owner, (list = []));
        list.push({ scope: { account, kind }, record });
      }
    }
    return { owned, createdAt: String(head.created_at), records: Number(head.records) };
  }

  async put(shelf: Shelf, key: string, kept: Kept, tx: StoreTransaction) {
    const rows = [...kept.owned].flatMap(([owner, placed]) => placed.map(({ scope, record }) => [owner, scope.account, scope.kind, record]));
    const chunks = Math.ceil(rows.length / StoreShelves.CHUNK);
    const before = await tx.get(this.#head(shelf), key);
    for (let n = chunks; n < Number(before?.chunks ?? 0); n++) await tx.delete(this.#chunks(shelf, key), this.#chunkId(n));
    for (let n = 0; n < chunks; n++) await tx.put(this.#chunks(shelf, key), { id: this.#chunkId(n), placed: rows.slice(n * StoreShelves.CHUNK, (n + 1) * StoreShelves.CHUNK) });
    await tx.put(this.#head(shelf), { id: key, created_at: kept.createdAt, records: kept.records, chunks });
  }

  async delete(shelf: Shelf, key: string, tx: StoreTransaction) {
    const head = await tx.get(this.#head(shelf), key);
    if (!head) return false;
    for (let n = 0; n < Number(head.chunks); n++) await tx.delete(this.#chunks(shelf, key), this.#chunkId(n));
    return tx.delete(this.#head(shelf), key);
  }

  async list(shelf: Shelf, reader: StoreReader) {
    const heads = (await readAll(reader, this.#head(shelf))).reverse().sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    return heads.map((head): [string, Omit<Kept, 'owned'>] => [head.id, { createdAt: String(head.created_at), records: Number(head.records) }]);
  }
}

export class StateCheckpoints implements Checkpoints {
  readonly #instance: Instance;
  readonly #shelves: StateShelves;

  constructor(instance: Instance) {
    this.#instance = instance;
    this.#shelves = isShared(instance.reader) ? new StoreShelves() : new MemoryShelves();
  }

  /**
   * Makes the state of every account, as it is now, its starting state. With `missingOnly`, only
   * of accounts that have none yet: what a server starting beside others over one store does, so
   * that it does not move the starting states the first server captured.
   */
  async captureStart(options: { missingOnly?: boolean } = {}): Promise<void> {
    await this.#perform(async (tx) => {
      const owned = await readOwned(tx, this.#instance, undefined);
      if (!options.missingOnly) for (const [account] of await this.#shelves.list('start', tx)) if (!owned.has(account)) await this.#shelves.delete('start', account, tx);
      for (const [account, placed] of owned) {
        if (account === INSTANCE_SCOPE) continue;
        if (options.missingOnly && (await this.#shelves.get('start', account, tx))) continue;
        await this.#shelves.put('start', account, this.#kept(new Map([[account, placed]])), tx);
      }
    });
  }

  /** Makes the state of one account, as it is now, its starting state (on its creation). */
  async captureAccountStart(accountId: string): Promise<void> {
    await this.#perform(async (tx) => {
      const placed = (await readOwned(tx, this.#instance, new Set([accountId]))).get(accountId) ?? [];
      await this.#shelves.put('start', accountId, this.#kept(new Map([[accountId, placed]])), tx);
    });
  }

  /**
   * Returns one account (or every account) to its starting state, in one transaction: its records
   * created since go, and the ones it started with come back as they were. Answers the accounts
   * reset and how many records that were there are gone.
   */
  async reset(accountId?: string): Promise<{ accounts: string[]; removed: number }> {
    const accounts = accountId === undefined ? await this.#accountIds() : [accountId];
    const owners = new Set(accounts);
    const removed = await this.#perform(async (tx) => {
      const start = new Map<string, Placed[]>();
      for (const account of accounts) {
        const kept = await this.#shelves.get('start', account, tx);
        if (!kept) fail('CONFLICT', `account '${account}' has no starting state on this server: it was created by another server over the same store; reset it there, or capture the state now (PUT /_burrow/snapshot, or restart)`, { id: account });
        start.set(account, kept.owned.get(account) ?? []);
      }
      return replaceOwned(tx, this.#instance, owners, start);
    });
    return { accounts, removed };
  }

  /** Keeps the whole state under `name` (replacing a checkpoint of that name). */
  async create(name: string): Promise<CheckpointInfo> {
    if (!CHECKPOINT_NAME.test(name)) fail('INVALID_FIELD', `name: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`);
    return this.#perform(async (tx) => {
      const names = (await this.#shelves.list('checkpoint', tx)).map(([known]) => known);
      if (!names.includes(name) && names.length >= LIMITS.checkpoints.value) fail('INVALID_FIELD', `name: at most ${LIMITS.checkpoints.value} checkpoints are kept; delete one first ${limitNote('checkpoints')}`);
      const kept = this.#kept(await readOwned(tx, this.#instance, undefined));
      await this.#shelves.put('checkpoint', name, kept, tx);
      return { name, created_at: kept.createdAt, records: kept.records };
    });
  }

  async list(): Promise<CheckpointInfo[]> {
    return (await this.#shelves.list('checkpoint', this.#instance.reader)).map(([name, kept]) => ({ name, created_at: kept.createdAt, records: kept.records }));
  }

  /** Replaces the whole state with the checkpoint `name`, in one transaction. */
  async restore(name: string): Promise<CheckpointInfo> {
    return this.#perform(async (tx) => {
      const entry = (await this.#shelves.get('checkpoint', name, tx)) ?? fail('NOT_FOUND', `checkpoint '${name}' was not found; checkpoints: ${(await this.#shelves.list('checkpoint', tx)).map(([known]) => known).join(', ') || 'none'}`, { name });
      const owners = new Set([INSTANCE_SCOPE, ...(await this.#accountIds(tx)), ...entry.owned.keys()]);
      await replaceOwned(tx, this.#instance, owners, entry.owned);
      return { name, created_at: entry.createdAt, records: entry.records };
    });
  }

  /** Forgets the checkpoint `name`; false when there was none. */
  delete(name: string): Promise<boolean> {
    return this.#perform((tx) => this.#shelves.delete('checkpoint', name, tx));
  }

  #perform<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.#instance.perform(operatorIn(INSTANCE_SCOPE), ({ tx }) => work(tx));
  }

  #kept(owned: Owned): Kept {
    let records = 0;
    for (const placed of owned.values()) records += placed.length;
    return { owned, createdAt: formatTime(this.#instance.clock.now()), records };
  }

  async #accountIds(reader: StoreReader = this.#instance.reader): Promise<string[]> {
    const ids: string[] = [];
    for await (const account of recordsOf(reader, ACCOUNTS)) ids.push(account.id);
    return ids.reverse();
  }
}

/**
 * The records of `owners` (every record when undefined), grouped by owner, read in the
 * transaction `tx`: on the memory and JSON-file stores no write lands between two reads of it.
 */
async function readOwned(tx: StoreTransaction, instance: Instance, owners: ReadonlySet<string> | undefined): Promise<Owned> {
  const owned: Owned = new Map();
  const keep = (scope: Scope, record: StoredRecord) => {
    const owner = ownerOf(scope, record);
    if (owners && !owners.has(owner)) return;
    let list = owned.get(owner);
    if (!list) owned.set(owner, (list = []));
    list.push({ scope, record });
  };
  for (const scope of await stateScopes(instance.reader)) {
    if (owners && scope.account !== INSTANCE_SCOPE && !owners.has(scope.account)) continue;
    if (owners && scope.account === INSTANCE_SCOPE && !ACCOUNT_OWNED_INSTANCE_KINDS.some((kind) => kind.kind === scope.kind)) continue;
    for await (const record of recordsOf(tx, scope)) keep(scope, record);
  }
  return owned;
}

/**
 * Deletes every record belonging to `owners` and writes `target`'s records of those owners in
 * their place; answers how many records that were there are not in `target`.
 */
async function replaceOwned(tx: StoreTransaction, instance: Instance, owners: ReadonlySet<string>, target: ReadonlyMap<string, readonly Placed[]>): Promise<number> {
  const kept = new Set<string>();
  const key = (scope: Scope, id: string) => `${scope.account}\u0000${scope.kind}\u0000${id}`;
  for (const owner of owners) for (const { scope, record } of target.get(owner) ?? []) kept.add(key(scope, record.id));
  let removed = 0;
  for (const scope of await stateScopes(instance.reader)) {
    if (scope.account === INSTANCE_SCOPE ? !(owners.has(INSTANCE_SCOPE) || ACCOUNT_OWNED_INSTANCE_KINDS.some((kind) => kind.kind === scope.kind)) : !owners.has(scope.account)) continue;
    const doomed: string[] = [];
    for await (const record of recordsOf(tx, scope)) {
      if (!owners.has(ownerOf(scope, record))) continue;
      doomed.push(record.id);
      if (!kept.has(key(scope, record.id))) removed++;
    }
    // Accounts go whole below; instance-wide records one by one (they are shared with other accounts).
    if (scope.account === INSTANCE_SCOPE) for (const id of doomed) await tx.delete(scope, id);
  }
  for (const owner of owners) if (owner !== INSTANCE_SCOPE) await tx.deleteAccount(owner);
  for (const owner of owners) for (const { scope, record } of target.get(owner) ?? []) await tx.put(scope, record);
  return removed;
}
