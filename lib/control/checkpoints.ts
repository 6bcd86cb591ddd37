import { formatTime } from '../conventions/clock.ts';
import { fail } from '../conventions/errors.ts';
import { limitNote, LIMITS } from '../limits.ts';
import { operatorIn, type CheckpointInfo, type Checkpoints, type Instance } from '../engine/context.ts';
import { INSTANCE_SCOPE, type Scope, type StoredRecord, type StoreReader, type StoreTransaction } from '../store.ts';

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
 * included, so they are what the API wrote. The copies live in this process's memory (on the
 * memory and JSON-file stores the stored records are frozen and shared, so a copy costs one
 * reference per record): with several servers over one PostgreSQL database, a reset or a restore
 * uses what the server that answers it captured.
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

export class StateCheckpoints implements Checkpoints {
  readonly #instance: Instance;
  /** Each account's starting state. */
  readonly #start = new Map<string, Placed[]>();
  readonly #named = new Map<string, { readonly owned: Owned; readonly createdAt: string; readonly records: number }>();

  constructor(instance: Instance) {
    this.#instance = instance;
  }

  /** Makes the state of every account, as it is now, its starting state. */
  async captureStart(): Promise<void> {
    const owned = await this.#read(undefined);
    this.#start.clear();
    for (const [account, placed] of owned) if (account !== INSTANCE_SCOPE) this.#start.set(account, placed);
  }

  /** Makes the state of one account, as it is now, its starting state (on its creation). */
  async captureAccountStart(accountId: string): Promise<void> {
    this.#start.set(accountId, (await this.#read(new Set([accountId]))).get(accountId) ?? []);
  }

  /**
   * Returns one account (or every account) to its starting state, in one transaction: its records
   * created since go, and the ones it started with come back as they were. Answers the accounts
   * reset and how many records that were there are gone.
   */
  async reset(accountId?: string): Promise<{ accounts: string[]; removed: number }> {
    const accounts = accountId === undefined ? await this.#accountIds() : [accountId];
    for (const account of accounts) {
      if (!this.#start.has(account)) fail('CONFLICT', `account '${account}' has no starting state on this server: it was created by another server over the same store; reset it there, or capture the state now (PUT /_burrow/snapshot, or restart)`, { id: account });
    }
    const owners = new Set(accounts);
    const removed = await this.#instance.perform(operatorIn(INSTANCE_SCOPE), async ({ tx }) => {
      const start = new Map<string, Placed[]>([...owners].map((account) => [account, this.#start.get(account)!]));
      return replaceOwned(tx, this.#instance, owners, start);
    });
    return { accounts, removed };
  }

  /** Keeps the whole state under `name` (replacing a checkpoint of that name). */
  async create(name: string): Promise<CheckpointInfo> {
    if (!CHECKPOINT_NAME.test(name)) fail('INVALID_FIELD', `name: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`);
    if (!this.#named.has(name) && this.#named.size >= LIMITS.checkpoints.value) fail('INVALID_FIELD', `name: at most ${LIMITS.checkpoints.value} checkpoints are kept; delete one first ${limitNote('checkpoints')}`);
    const owned = await this.#read(undefined);
    let records = 0;
    for (const placed of owned.values()) records += placed.length;
    const entry = { owned, createdAt: formatTime(this.#instance.clock.now()), records };
    this.#named.set(name, entry);
    return { name, created_at: entry.createdAt, records };
  }

  list(): CheckpointInfo[] {
    return [...this.#named].map(([name, entry]) => ({ name, created_at: entry.createdAt, records: entry.records }));
  }

  /** Replaces the whole state with the checkpoint `name`, in one transaction. */
  async restore(name: string): Promise<CheckpointInfo> {
    const entry = this.#named.get(name) ?? fail('NOT_FOUND', `checkpoint '${name}' was not found; checkpoints: ${[...this.#named.keys()].join(', ') || 'none'}`, { name });
    await this.#instance.perform(operatorIn(INSTANCE_SCOPE), async ({ tx }) => {
      const owners = new Set([INSTANCE_SCOPE, ...(await this.#accountIds(tx)), ...entry.owned.keys()]);
      await replaceOwned(tx, this.#instance, owners, entry.owned);
    });
    return { name, created_at: entry.createdAt, records: entry.records };
  }

  /** Forgets the checkpoint `name`; false when there was none. */
  delete(name: string): boolean {
    return this.#named.delete(name);
  }

  async #accountIds(reader: StoreReader = this.#instance.reader): Promise<string[]> {
    const ids: string[] = [];
    for await (const account of recordsOf(reader, ACCOUNTS)) ids.push(account.id);
    return ids.reverse();
  }

  /**
   * The records of `owners` (every record when undefined), grouped by owner, read in one
   * transaction: on the memory and JSON-file stores no write lands between two reads of it.
   */
  #read(owners: ReadonlySet<string> | undefined): Promise<Owned> {
    return this.#instance.perform(operatorIn(INSTANCE_SCOPE), async ({ tx }) => {
      const owned: Owned = new Map();
      const keep = (scope: Scope, record: StoredRecord) => {
        const owner = ownerOf(scope, record);
        if (owners && !owners.has(owner)) return;
        let list = owned.get(owner);
        if (!list) owned.set(owner, (list = []));
        list.push({ scope, record });
      };
      for (const scope of await this.#instance.reader.scopes()) {
        if (owners && scope.account !== INSTANCE_SCOPE && !owners.has(scope.account)) continue;
        if (owners && scope.account === INSTANCE_SCOPE && !ACCOUNT_OWNED_INSTANCE_KINDS.some((kind) => kind.kind === scope.kind)) continue;
        for await (const record of recordsOf(tx, scope)) keep(scope, record);
      }
      return owned;
    });
  }
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
  for (const scope of await instance.reader.scopes()) {
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
