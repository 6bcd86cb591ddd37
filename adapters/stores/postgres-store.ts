import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { isPageRead, StoreUnavailableError, type PageQuery, type Read, type ReadResult, type RecordKey, type Scope, type Store, type StoreChannel, type StoreReader, type StoreTransaction, type StoredRecord } from '../../lib/store.ts';
import { openPostgresChannel, type ChannelClient } from './postgres/channel.ts';
import { MIGRATIONS } from './postgres/migrations.ts';
import { MergedKeyReads, type KeyRow } from './postgres/key-reads.ts';
import { ReadLanes, type LaneClient } from './postgres/read-lanes.ts';

/**
 * The PostgreSQL store, for several Burrow servers over one shared state. Each record is a row of
 * `records (account, kind, id, data jsonb)`; `page` is a backward range scan of the primary key.
 *
 * Transactions run at SERIALIZABLE isolation, so concurrent transactions from any number of
 * servers behave as if run one at a time. One that PostgreSQL aborts as a serialization failure
 * (40001) or deadlock (40P01) is rolled back and its callback run again, up to `maxAttempts`
 * times; nothing else is retried. A transaction resolves only after COMMIT succeeded. When the
 * database cannot be reached, calls reject with StoreUnavailableError (the API answers 503) and
 * the pool reconnects by itself once it is back; a COMMIT cut off by a lost connection may or may
 * not have been applied (the caller sees a 503 either way).
 *
 * The schema (default `burrow`; `?schema=` in the URL) is created and migrated on first use
 * under an advisory lock, so servers starting at once on an empty database migrate it once.
 */

export interface PostgresStoreOptions {
  /** `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]` */
  readonly url: string;
  /** Schema holding Burrow's tables (default: the URL's `schema` parameter, else `burrow`). */
  readonly schema?: string;
  /**
   * Connections this store keeps open at most for requests (default: twice the machine's cores, at
   * least 10), of which reads share up to half the cores' worth (at most 4; none with one
   * connection), pipelined (./postgres/read-lanes.ts). The channel between servers (openChannel)
   * holds one more, with its advisory lock.
   */
  readonly poolSize?: number;
  /** Runs of a transaction that keeps hitting serialization failures before giving up (default 12). */
  readonly maxAttempts?: number;
  /** How long to wait for a connection before answering "unavailable" (default 5000 ms). */
  readonly connectTimeoutMs?: number;
}

/**
 * A request holds a connection only for its statements, so two per core keep the machine busy
 * while some wait on the network or on a lock, and at least 10 keep a small machine's writes from
 * queueing behind one held write; every server's pool (plus its channel connection) counts against
 * the database's max_connections (100 by default).
 */
const defaultPoolSize = () => Math.max(10, 2 * availableParallelism());
/** Connections reads share: one per two cores, at most 4, leaving at least one for transactions. */
const readLanesFor = (poolSize: number) => Math.min(Math.max(1, Math.floor(availableParallelism() / 2)), 4, poolSize - 1);

/**
 * Settings of every connection of the store. Every statement Burrow sends is a lookup by the
 * primary key or a range of it, so one plan serves any values, and that plan is an index scan at
 * any table size: PostgreSQL would otherwise plan a statement with an array or LIMIT parameter
 * anew at each run (a GET's one statement: 106 µs of the backend's time, 26 µs with the plan
 * kept), and a plan kept from when the table was small joins by scanning the whole table (a GET
 * ten times slower once the table grew, until autovacuum's next ANALYZE).
 */
export const SESSION_SETTINGS = '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off';

/** How often an unavailable store asks the database whether it is back. */
const PROBE_MS = 1000;
/** How long `close` waits for calls already running. */
const CLOSE_WAIT_MS = 5000;
const RETRYABLE = new Set(['40001', '40P01']);
const UNREACHABLE = /^(08|57P0|53300)|^E(CONNREFUSED|CONNRESET|TIMEDOUT|NOTFOUND|HOSTUNREACH|NETUNREACH|PIPE|AI_AGAIN)$/;

const codeOf = (error: unknown) => String((error as { code?: unknown })?.code ?? '');
const isUnreachable = (error: unknown) =>
  UNREACHABLE.test(codeOf(error)) || /Connection terminated|timeout exceeded when trying to connect|not queryable|connection error/i.test((error as Error)?.message ?? '');
const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

export class PostgresStore implements Store {
  readonly name = 'postgres';
  /** `user@host:port/database` (never the password), for messages. */
  readonly location: string;
  readonly #pool: pg.Pool;
  readonly #reads: ReadLanes<Connection, Statement, pg.QueryResult>;
  readonly #url: string;
  readonly #schema: string;
  readonly #channels = new Set<StoreChannel>();
  readonly #maxAttempts: number;
  readonly #sql: Statements;
  #ready: Promise<void> | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Whether the database answered: false from an unreachable error until a call or the probe succeeds. */
  #available = true;
  readonly #availability = new Set<(available: boolean, reason: string) => void>();
  /** While unavailable and watched, a probe each PROBE_MS, so that its return is noticed without traffic. */
  #probe: NodeJS.Timeout | undefined;
  /** Calls running now; `close` waits for them. */
  #running = 0;
  #idle: (() => void) | undefined;
  /**
   * Counters since the store was made: committed transactions, re-runs after a serialization
   * failure, transactions that gave up (503), and round trips to the database (each a wait for
   * its answer) made by reads and transactions.
   */
  readonly stats = { committed: 0, retried: 0, exhausted: 0, roundTrips: 0 };

  constructor(options: PostgresStoreOptions) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new Error(`not a PostgreSQL URL: expected postgres://USER@HOST:PORT/DATABASE (got ${JSON.stringify(options.url.replace(/:[^:@/]*@/, ':***@'))})`);
    }
    if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new Error(`not a PostgreSQL URL: the scheme must be postgres:// (got ${url.protocol}//)`);
    this.#schema = options.schema ?? url.searchParams.get('schema') ?? 'burrow';
    url.searchParams.delete('schema');
    // `options` in the URL still apply, ahead of SESSION_SETTINGS.
    const startup = [url.searchParams.get('options'), SESSION_SETTINGS].filter(Boolean).join(' ');
    url.searchParams.delete('options');
    this.location = `${decodeURIComponent(url.username) || '(default user)'}@${url.host || 'localhost'}${url.pathname}`;
    this.#maxAttempts = options.maxAttempts ?? 12;
    this.#sql = statements(quote(this.#schema));
    this.#url = url.toString();
    const poolSize = options.poolSize ?? defaultPoolSize();
    this.#pool = new pg.Pool({
      connectionString: this.#url,
      max: poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
      allowExitOnIdle: true,
      application_name: 'burrow',
      options: startup,
      // A transaction's statements that wait on nothing go together: one round trip (#batch).
      pipeline: true,
    } as pg.PoolConfig);
    // A server that goes away kills idle and busy connections alike; the next call reports it.
    this.#pool.on('error', () => undefined);
    this.#pool.on('connect', (client) => void client.on('error', () => undefined));
    const pool = this.#pool;
    this.#reads = new ReadLanes<Connection, Statement, pg.QueryResult>({ connect: () => pool.connect() as Promise<Connection>, query: (statement) => pool.query(statement), run: runOn, socketOf }, readLanesFor(poolSize));
  }

  watchAvailability(listener: (available: boolean, reason: string) => void): () => void {
    this.#availability.add(listener);
    return () => void this.#availability.delete(listener);
  }

  /** The database stopped answering (`reason`): said once, then probed until it answers. */
  #lost(reason: string): void {
    if (!this.#available || this.#closed) return;
    this.#available = false;
    for (const listener of this.#availability) listener(false, reason);
    if (this.#availability.size === 0) return;
    let probing = false;
    this.#probe = setInterval(() => {
      if (probing) return;
      probing = true;
      this.#pool.query('SELECT 1').then(
        () => this.#regained(),
        () => (probing = false),
      );
    }, PROBE_MS);
    this.#probe.unref();
  }

  /** The database answered again (a call, or the probe). */
  #regained(): void {
    if (this.#available) return;
    this.#available = true;
    clearInterval(this.#probe);
    this.#probe = undefined;
    if (this.#closed) return;
    for (const listener of this.#availability) listener(true, '');
  }

  /** Connects and creates or migrates the schema; every call does this first, once. */
  open(): Promise<void> {
    this.#ready ??= this.#migrate().catch((error) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async get(scope: Scope, id: string): Promise<StoredRecord | undefined> {
    return this.#read((reader) => reader.get(scope, id));
  }

  async page(scope: Scope, query: PageQuery): Promise<StoredRecord[]> {
    return this.#read((reader) => reader.page(scope, query));
  }

  async readMany(reads: readonly Read[]): Promise<ReadResult[]> {
    return this.#read((reader) => reader.readMany(reads));
  }

  async scopes(): Promise<Scope[]> {
    return this.#read(async () => (await this.#reads.query(this.#sql.scopes)).rows as Scope[]);
  }

  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.#tracked(() => this.#transaction(work));
  }

  /** LISTEN/NOTIFY between the servers of this database, and which are alive (./postgres/channel.ts). Closed with the store. */
  async openChannel(): Promise<StoreChannel> {
    if (this.#closed) throw new StoreUnavailableError(`the PostgreSQL store (${this.location}) is closed`);
    await this.open();
    const client = new pg.Client({ connectionString: this.#url, application_name: 'burrow-channel' });
    const channel = await openPostgresChannel(client as unknown as ChannelClient, this.#schema, this.location);
    this.#channels.add(channel);
    return channel;
  }

  async #transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    await this.open();
    // Records that runs of this transaction wrote before failing: the next run locks them first.
    const contended = new Set<string>();
    for (let attempt = 1; ; attempt++) {
      const client = await this.#connect();
      const batch = (statements: readonly Statement[]) => this.#batch(statements, (statement) => runOn(client, statement), client);
      // The run opens with its first statement, in that statement's round trip; a re-run first
      // takes the locks, so that its snapshot starts after the holder before it committed.
      const opening: Statement[] = contended.size > 0 ? [{ text: this.#sql.lock, values: [lockKeys(this.#schema, contended)] }] : [];
      const tx = new SqlTransaction(batch, this.#sql, [...opening, 'BEGIN ISOLATION LEVEL SERIALIZABLE']);
      let broken: Error | undefined;
      let failure: unknown;
      try {
        const result = await work(tx);
        await tx.commit();
        this.stats.committed++;
        return result;
      } catch (thrown) {
        // A database error that the callback caught still dooms the transaction.
        failure = tx.failure ?? thrown;
        if (isUnreachable(failure)) broken = failure as Error;
        else if (tx.began) await batch(['ROLLBACK']).catch((rollback: Error) => void (broken = rollback));
      } finally {
        if (opening.length > 0 && tx.began && !broken) await batch(['SELECT pg_advisory_unlock_all()']).catch((unlock: Error) => void (broken = unlock));
        client.release(broken);
      }
      const conflict = RETRYABLE.has(codeOf(failure));
      // A connection lost before COMMIT was sent took the transaction with it: run it again.
      if (!conflict && !(isUnreachable(failure) && !tx.committing)) throw this.#translate(failure);
      if (attempt >= this.#maxAttempts) {
        if (conflict) this.stats.exhausted++;
        throw this.#translate(failure);
      }
      if (conflict) {
        this.stats.retried++;
        for (const key of tx.written) contended.add(key);
      }
      // Jittered exponential backoff: up to 2, 4, 8, … ms, at most 100 ms.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(100, 2 ** attempt)));
    }
  }

  /**
   * Refuses new calls (StoreUnavailableError, so a server answers 503), lets the calls already
   * running finish (for up to 5 s), then closes the connections.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      clearInterval(this.#probe);
      if (this.#running > 0) {
        await new Promise<void>((resolve) => {
          this.#idle = resolve;
          setTimeout(resolve, CLOSE_WAIT_MS).unref();
        });
      }
      await Promise.all([...this.#channels].map((channel) => channel.close()));
      this.#reads.close();
      await this.#pool.end();
    })();
    return this.#closing;
  }

  async #tracked<T>(call: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError(`the PostgreSQL store (${this.location}) is closed`);
    this.#running++;
    try {
      const answer = await call();
      if (!this.#available) this.#regained();
      return answer;
    } finally {
      if (--this.#running === 0) this.#idle?.();
    }
  }

  /** Runs reads on the pool; a dropped connection is retried once (reads are idempotent). */
  #read<T>(read: (reader: SqlTransaction) => Promise<T>): Promise<T> {
    return this.#tracked(() => this.#readOnce(read));
  }

  async #readOnce<T>(read: (reader: SqlTransaction) => Promise<T>): Promise<T> {
    await this.open();
    const reader = new SqlTransaction(this.#readBatch, this.#sql, [], this.#keyReads);
    try {
      return await read(reader);
    } catch (error) {
      if (!isUnreachable(error)) throw error;
      try {
        return await read(reader);
      } catch (again) {
        throw this.#translate(again);
      }
    }
  }

  /** Reads' statements, on the read lanes (made once: no closures per read). */
  readonly #readStatement = (statement: Statement) => this.#reads.query(statement);
  readonly #readBatch = (statements: readonly Statement[]) => this.#batch(statements, this.#readStatement);
  /** Reads by key of one turn, in one statement on a read lane (./postgres/key-reads.ts). */
  readonly #keyReads = new MergedKeyReads<StoredData>(async (accounts, kinds, ids) => {
    this.stats.roundTrips++;
    return (await this.#reads.query(statementOf(this.#sql, this.#sql.readMany([]), [accounts, kinds, ids]), true)).rows as KeyRow<StoredData>[];
  });

  /**
   * Sends `statements` at once (the pool's connections pipeline: each is written without waiting
   * for the answer to the one before; on a transaction's `client`, in one socket write) and waits
   * for every answer: one round trip. Rejects with the first statement's error; the statements
   * after a failed one fail too inside a transaction.
   */
  async #batch(statements: readonly Statement[], query: (statement: Statement) => Promise<pg.QueryResult>, client?: pg.PoolClient): Promise<pg.QueryResult[]> {
    this.stats.roundTrips++;
    const socket = client && socketOf(client);
    socket?.cork();
    let sent: Promise<pg.QueryResult>[];
    try {
      sent = statements.map(query);
    } finally {
      socket?.uncork();
    }
    const answers = await Promise.allSettled(sent);
    const failed = answers.find((answer) => answer.status === 'rejected');
    if (failed) throw failed.reason;
    return answers.map((answer) => (answer as PromiseFulfilledResult<pg.QueryResult>).value);
  }

  async #connect(): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (error) {
      throw this.#translate(error);
    }
  }

  #translate(error: unknown): unknown {
    if (isUnreachable(error)) {
      const unreachable = new StoreUnavailableError(`PostgreSQL at ${this.location} is unreachable (${(error as Error).message || codeOf(error)})`, { cause: error });
      this.#lost(unreachable.message);
      return unreachable;
    }
    // pg's words for a server that asks for a password the URL did not give (SCRAM, PostgreSQL's default).
    if (/client password must be a (non-empty )?string/.test((error as Error)?.message ?? '')) {
      return new Error(`PostgreSQL at ${this.location}: the server asks for a password; put it in the URL (postgres://USER:PASSWORD@HOST/DB) or PGPASSWORD`, { cause: error });
    }
    if (RETRYABLE.has(codeOf(error))) return new StoreUnavailableError(`PostgreSQL at ${this.location} is too busy: a transaction conflicted ${this.#maxAttempts} times`, { cause: error });
    return error;
  }

  async #migrate(): Promise<void> {
    const client = await this.#connect();
    const schema = quote(this.#schema);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      // Servers starting at once take turns; the later ones find the schema up to date.
      await client.query(`SELECT pg_advisory_xact_lock(${0x62757272}, hashtext($1))`, [this.#schema]);
      const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [this.#schema]);
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const current = Number((await client.query(`SELECT coalesce(max(version), 0) AS v FROM ${schema}.schema_migrations`)).rows[0].v);
      const latest = MIGRATIONS.at(-1)!.version;
      if (current > latest) throw new Error(`schema ${this.#schema} is at version ${current}, newer than this Burrow knows (${latest}); upgrade Burrow`);
      for (const migration of MIGRATIONS.filter((m) => m.version > current)) {
        await client.query(`SET LOCAL search_path TO ${schema}`);
        await client.query(migration.sql);
        await client.query(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
      }
      await client.query('COMMIT');
    } catch (error) {
      if (isUnreachable(error)) broken = error as Error;
      else await client.query('ROLLBACK').catch(() => undefined);
      const translated = this.#translate(error);
      throw translated instanceof StoreUnavailableError ? translated : new Error(`PostgreSQL at ${this.location}: ${(error as Error).message}`, { cause: error });
    } finally {
      client.release(broken);
    }
  }
}

/** Connects to `options.url` and migrates the schema; rejects with a message naming the database. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const store = new PostgresStore(options);
  try {
    await store.open();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

type Statements = ReturnType<typeof statements>;

/** Upserts of up to this many records go as prepared statements (a request writes a few; imports write thousands). */
const PREPARED_PUT_ROWS = 4;

function statements(schema: string) {
  const sql = statementTexts(schema);
  // Each connection parses and plans these once, then only binds values: a request's statements
  // skip PostgreSQL's parse and plan steps (named prepared statements).
  const texts = [
    sql.get, sql.first, sql.before, sql.insert, sql.delete,
    ...Array.from({ length: PREPARED_PUT_ROWS }, (_, n) => sql.put(n + 1)),
    // readMany as a request sends it: records by key (the API key's), and a record or a page.
    sql.readMany([]), sql.readMany([false]), sql.readMany([true]),
  ];
  return { ...sql, prepared: new Map(texts.map((text, n) => [text, `burrow_${n}`])) };
}

function statementTexts(schema: string) {
  const table = `${schema}.records`;
  /** readMany's texts by shape (which pages have a before id), made once. */
  const readManyTexts = new Map<string, string>();
  return {
    get: `SELECT data FROM ${table} WHERE account = $1 AND kind = $2 AND id = $3`,
    /**
     * Records by key and pages, in one statement (one snapshot): the keys as three arrays
     * (accounts, kinds, ids; their rows numbered 1…), then each page's account, kind, before id
     * (when `pages[i]` is true) and limit (its rows numbered -i), by number then id, highest first.
     */
    readMany: (pages: readonly boolean[]) => {
      const shape = pages.map(Number).join('');
      const known = readManyTexts.get(shape);
      if (known !== undefined) return known;
      let p = 3;
      const parts = [`SELECT key.n, id, data FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS key (account, kind, id, n) JOIN ${table} USING (account, kind, id)`];
      for (const [i, before] of pages.entries()) {
        parts.push(`(SELECT ${-i}, id, data FROM ${table} WHERE account = $${++p} AND kind = $${++p}${before ? ` AND id < $${++p}` : ''} ORDER BY id DESC LIMIT $${++p})`);
      }
      const text = pages.length === 0 ? `SELECT n, data FROM (${parts[0]}) AS found` : `SELECT n, data FROM (${parts.join(' UNION ALL ')}) AS found ORDER BY n, id DESC`;
      readManyTexts.set(shape, text);
      return text;
    },
    first: `SELECT data FROM ${table} WHERE account = $1 AND kind = $2 ORDER BY id DESC LIMIT $3`,
    before: `SELECT data FROM ${table} WHERE account = $1 AND kind = $2 AND id < $3 ORDER BY id DESC LIMIT $4`,
    /** An upsert of `rows` records (parameters account, kind, id, data of each in turn). */
    put: (rows: number) =>
      `INSERT INTO ${table} (account, kind, id, data) VALUES ${Array.from({ length: rows }, (_, n) => `($${4 * n + 1}, $${4 * n + 2}, $${4 * n + 3}, $${4 * n + 4}::jsonb)`).join(', ')} ON CONFLICT (account, kind, id) DO UPDATE SET data = EXCLUDED.data`,
    insert: `INSERT INTO ${table} (account, kind, id, data) VALUES ($1, $2, $3, $4::jsonb) ON CONFLICT (account, kind, id) DO NOTHING`,
    delete: `DELETE FROM ${table} WHERE account = $1 AND kind = $2 AND id = $3`,
    deleteAccount: `DELETE FROM ${table} WHERE account = $1`,
    scopes: `SELECT DISTINCT account, kind FROM ${table}`,
    /** Session-level advisory locks on record keys, in the order given (ascending: no deadlock between lockers). */
    lock: `SELECT pg_advisory_lock(key) FROM unnest($1::bigint[]) AS key`,
  };
}

/**
 * jsonb cannot hold U+0000 or a lone surrogate, which JSON (and so an API description) may
 * contain. A record with one is stored as its JSON text (where they are `\u` escapes) under ESCAPED.
 */
const ESCAPED = '$burrow_json';
const UNSTORABLE = /\\u(0000|d[89a-f])/i;
const encode = (record: StoredRecord) => {
  const json = JSON.stringify(record);
  return UNSTORABLE.test(json) ? JSON.stringify({ id: record.id, [ESCAPED]: json }) : json;
};
/** A record as PostgreSQL answers its jsonb. */
type StoredData = Record<string, unknown>;
const decode = (data: StoredData) => (typeof data[ESCAPED] === 'string' ? JSON.parse(data[ESCAPED]) : data) as StoredRecord;

/** At most this many record locks per run; beyond them, the run relies on retries alone. */
const MAX_LOCKS = 32;

/** 64-bit advisory lock keys of records (`schema account kind id`), ascending. */
function lockKeys(schema: string, records: Iterable<string>): string[] {
  const keys = [...records].map((record) => createHash('sha256').update(`${schema}\0${record}`).digest().readBigInt64BE(0));
  return keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, MAX_LOCKS).map(String);
}

type Statement = string | pg.QueryConfig;

/** A pool connection with what is used of it beyond its types: its socket, and ref/unref as pg.Client has them. */
type Connection = pg.PoolClient & LaneClient & { connection: { stream: { cork(): void; uncork(): void } } };

/**
 * Runs `statement` on `client` as client.query would, without the copy of its config that
 * client.query makes (through property descriptors: ~5 µs, a twentieth of a GET's CPU).
 */
function runOn(client: pg.PoolClient, statement: Statement): Promise<pg.QueryResult> {
  if (typeof statement === 'string') return client.query(statement);
  return new Promise((resolve, reject) => {
    const Query = pg.Query as unknown as new (text: string, values: unknown[] | undefined, done: (error: Error | null, result: pg.QueryResult) => void) => pg.Submittable & { name?: string };
    const query = new Query(statement.text, statement.values, (error, result) => (error ? reject(error) : resolve(result)));
    if (statement.name !== undefined) query.name = statement.name;
    client.query(query);
  });
}

/** The socket of a connection, to cork while several statements are written to it. */
const socketOf = (client: pg.PoolClient) => (client as Connection).connection.stream;

/** `text` with `values`, under its prepared statement's name where it has one. */
function statementOf(sql: Statements, text: string, values: unknown[]): pg.QueryConfig {
  const name = sql.prepared.get(text);
  return name === undefined ? { text, values } : { name, text, values };
}

/** Sends statements together, in one round trip, and answers their results in order. */
type Batch = (statements: readonly Statement[]) => Promise<pg.QueryResult[]>;

/** Puts sent to the database in one statement at most (4 parameters each, of PostgreSQL's 65535). */
const PUTS_PER_STATEMENT = 1000;

/**
 * The contract's reads and writes as SQL; remembers the first database error it saw. Nothing is
 * sent until a statement needs an answer: the statements that open the transaction (BEGIN, and
 * the locks of a re-run) go with its first statement, and puts, which answer nothing, wait and go
 * as multi-row upserts ahead of the next statement (which may read them) or with COMMIT, all in
 * that statement's round trip. A create that reads one thing is BEGIN + the read, then the puts +
 * COMMIT: two round trips; a snapshot import of 100,000 records is 100 statements, not 100,000.
 */
class SqlTransaction implements StoreTransaction {
  failure: unknown;
  /** The records this run wrote (`account kind id`, NUL-separated). */
  readonly written = new Set<string>();
  /** Whether COMMIT was sent: a connection lost after that may have committed. */
  committing = false;
  readonly #batch: Batch;
  readonly #sql: Statements;
  /** Puts not yet sent, by record key (a later put of one record replaces the earlier). */
  readonly #puts = new Map<string, unknown[]>();
  /** Statements that open the transaction, sent ahead of its first one. */
  readonly #opening: Statement[];
  /** Outside a transaction: where reads by key alone go, to share a statement with other requests'. */
  readonly #keyReads: MergedKeyReads<StoredData> | undefined;

  constructor(batch: Batch, sql: Statements, opening: Statement[] = [], keyReads?: MergedKeyReads<StoredData>) {
    this.#batch = batch;
    this.#sql = sql;
    this.#opening = opening;
    this.#keyReads = keyReads;
  }

  /** Whether the transaction was opened (its first round trip sent). */
  get began(): boolean {
    return this.#opening.length === 0;
  }

  /** Sends the waiting puts and COMMIT in one round trip (nothing for a run that sent and wrote nothing). */
  async commit(): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.began && this.#puts.size === 0) return;
    this.committing = true;
    const [done] = await this.#send(['COMMIT']);
    // COMMIT of a transaction that an error aborted answers ROLLBACK, without an error of its own.
    if (done!.command !== 'COMMIT') throw this.failure ?? new Error(`COMMIT answered ${done!.command}`);
  }

  /** The waiting puts as upserts. */
  #takePuts(): Statement[] {
    if (this.#puts.size === 0) return [];
    const rows = [...this.#puts.values()];
    this.#puts.clear();
    const statements: Statement[] = [];
    for (let from = 0; from < rows.length; from += PUTS_PER_STATEMENT) {
      const chunk = rows.slice(from, from + PUTS_PER_STATEMENT);
      statements.push(this.#statement(this.#sql.put(chunk.length), chunk.flat()));
    }
    return statements;
  }

  /** Sends `statements` behind the opening ones and the waiting puts, in one round trip; answers theirs. */
  async #send(statements: Statement[]): Promise<pg.QueryResult[]> {
    const ahead = [...this.#opening.splice(0), ...this.#takePuts()];
    try {
      return (await this.#batch([...ahead, ...statements])).slice(ahead.length);
    } catch (error) {
      this.failure ??= error;
      throw error;
    }
  }

  async #run(text: string, values: unknown[]): Promise<pg.QueryResult> {
    return (await this.#send([this.#statement(text, values)]))[0]!;
  }

  /** Records by key through the statement the turn's reads share. */
  async #readKeys(keyReads: MergedKeyReads<StoredData>, keys: readonly RecordKey[]): Promise<(StoredRecord | undefined)[]> {
    return (await keyReads.read(keys)).map((data) => (data === undefined ? undefined : decode(data)));
  }

  #statement(text: string, values: unknown[]): pg.QueryConfig {
    return statementOf(this.#sql, text, values);
  }

  async get(scope: Scope, id: string): Promise<StoredRecord | undefined> {
    if (this.#keyReads) return (await this.#readKeys(this.#keyReads, [{ scope, id }]))[0];
    const row = (await this.#run(this.#sql.get, [scope.account, scope.kind, id])).rows[0];
    return row && decode(row.data);
  }

  async readMany(reads: readonly Read[]): Promise<ReadResult[]> {
    const keys = reads.filter((read): read is RecordKey => !isPageRead(read));
    const pages = reads.filter(isPageRead);
    if (pages.length === 0 && this.#keyReads) return this.#readKeys(this.#keyReads, keys);
    const values: unknown[] = [keys.map((key) => key.scope.account), keys.map((key) => key.scope.kind), keys.map((key) => key.id)];
    for (const { scope, page } of pages) values.push(scope.account, scope.kind, ...(page.beforeId === undefined ? [] : [page.beforeId]), page.limit);
    const { rows } = await this.#run(this.#sql.readMany(pages.map((read) => read.page.beforeId !== undefined)), values);
    const records: (StoredRecord | undefined)[] = keys.map(() => undefined);
    const pageRows: StoredRecord[][] = pages.map(() => []);
    for (const row of rows) {
      const n = Number(row.n);
      if (n > 0) records[n - 1] = decode(row.data);
      else pageRows[-n]!.push(decode(row.data));
    }
    let key = 0;
    let page = 0;
    return reads.map((read) => (isPageRead(read) ? pageRows[page++]! : records[key++]));
  }

  async page(scope: Scope, query: PageQuery): Promise<StoredRecord[]> {
    const result = query.beforeId === undefined
      ? await this.#run(this.#sql.first, [scope.account, scope.kind, query.limit])
      : await this.#run(this.#sql.before, [scope.account, scope.kind, query.beforeId, query.limit]);
    return result.rows.map((row) => decode(row.data));
  }

  async put(scope: Scope, record: StoredRecord): Promise<void> {
    const key = `${scope.account}\0${scope.kind}\0${record.id}`;
    this.written.add(key);
    this.#puts.set(key, [scope.account, scope.kind, record.id, encode(record)]);
  }

  async insert(scope: Scope, record: StoredRecord): Promise<boolean> {
    this.written.add(`${scope.account}\0${scope.kind}\0${record.id}`);
    return ((await this.#run(this.#sql.insert, [scope.account, scope.kind, record.id, encode(record)])).rowCount ?? 0) > 0;
  }

  async delete(scope: Scope, id: string): Promise<boolean> {
    this.written.add(`${scope.account}\0${scope.kind}\0${id}`);
    return ((await this.#run(this.#sql.delete, [scope.account, scope.kind, id])).rowCount ?? 0) > 0;
  }

  async deleteAccount(account: string): Promise<void> {
    await this.#run(this.#sql.deleteAccount, [account]);
  }
}
