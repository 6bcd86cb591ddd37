import pg from 'pg';

/**
 * The connections that every read shares (a read is one statement in its own implicit
 * transaction, so reads need no connection of their own). A lane is a pool connection held in
 * pipeline mode: reads go on it without waiting for the answers before them, and those sent in
 * one turn of the event loop leave in one socket write at its end (the lane's socket is corked
 * until setImmediate). A busy server so wakes PostgreSQL once per turn and lane, not once per
 * read: on two cores, waking the backend (and being woken) was most of a GET's cost.
 *
 * Each read goes to the lane with the fewest reads in flight; up to `size` lanes are taken from
 * the pool, a new one when all are busy (with `size` 0, reads take pool connections one at a
 * time, as transactions do). A lane whose connection breaks fails its reads (the store retries
 * a read once) and is given back to the pool to be discarded. A lane with nothing in flight does
 * not keep the process alive, as an idle pool connection would not.
 */
export class ReadLanes {
  readonly #pool: pg.Pool;
  readonly #size: number;
  readonly #lanes: Lane[] = [];
  #leasing: Promise<Lane> | undefined;
  #closed = false;

  constructor(pool: pg.Pool, size: number) {
    this.#pool = pool;
    this.#size = size;
  }

  async query(statement: string | pg.QueryConfig): Promise<pg.QueryResult> {
    // A pool of one connection keeps it for transactions: reads take it in turn with them.
    if (this.#size === 0) return this.#pool.query(statement);
    let lane: Lane | undefined;
    for (const candidate of this.#lanes) if (!lane || candidate.inFlight < lane.inFlight) lane = candidate;
    if (!lane || (lane.inFlight > 0 && this.#lanes.length < this.#size)) lane = await this.#lease(lane);
    return lane.query(statement);
  }

  /** Gives every lane back to the pool (before the pool ends: it waits for connections held). */
  close(): void {
    this.#closed = true;
    for (const lane of this.#lanes.splice(0)) lane.release();
  }

  /** A new lane; while one is being connected, reads wait for it (or take `busy`, if any). */
  async #lease(busy: Lane | undefined): Promise<Lane> {
    if (this.#leasing) return busy ?? this.#leasing;
    this.#leasing = (async () => {
      const client = await this.#pool.connect();
      const lane = new Lane(client, () => {
        const at = this.#lanes.indexOf(lane);
        if (at >= 0) this.#lanes.splice(at, 1);
      });
      if (this.#closed) lane.release();
      else this.#lanes.push(lane);
      return lane;
    })().finally(() => (this.#leasing = undefined));
    return this.#leasing;
  }
}

/** What is used of a pool connection beyond its types: its socket, and ref/unref as pg.Client has them. */
type LaneClient = pg.PoolClient & { ref(): void; unref(): void; connection: { stream: { cork(): void; uncork(): void } } };

/**
 * Runs `statement` on `client` as client.query would, without the copy of its config that
 * client.query makes (through property descriptors: ~5 µs, a twentieth of a GET's CPU).
 */
export function runOn(client: pg.PoolClient, statement: string | pg.QueryConfig): Promise<pg.QueryResult> {
  if (typeof statement === 'string') return client.query(statement);
  return new Promise((resolve, reject) => {
    const Query = pg.Query as unknown as new (text: string, values: unknown[] | undefined, done: (error: Error | null, result: pg.QueryResult) => void) => pg.Submittable & { name?: string };
    const query = new Query(statement.text, statement.values, (error, result) => (error ? reject(error) : resolve(result)));
    if (statement.name !== undefined) query.name = statement.name;
    client.query(query);
  });
}

/** The socket of a connection, to cork while several statements are written to it. */
export const socketOf = (client: pg.PoolClient) => (client as LaneClient).connection.stream;

class Lane {
  inFlight = 0;
  readonly #client: LaneClient;
  readonly #gone: () => void;
  #corked = false;
  #released = false;
  readonly #flush = (): void => {
    this.#corked = false;
    socketOf(this.#client).uncork();
  };

  constructor(client: pg.PoolClient, gone: () => void) {
    this.#client = client as LaneClient;
    this.#gone = gone;
    this.#client.unref();
    const broken = (error?: Error) => this.release(error ?? new Error('the connection ended'));
    client.on('error', broken);
    client.on('end', () => broken());
  }

  async query(statement: string | pg.QueryConfig): Promise<pg.QueryResult> {
    if (this.#released) throw new Error('Connection terminated: the read connection was given back to the pool');
    if (this.inFlight++ === 0) this.#client.ref();
    if (!this.#corked) {
      this.#corked = true;
      socketOf(this.#client).cork();
      setImmediate(this.#flush);
    }
    try {
      return await runOn(this.#client, statement);
    } catch (error) {
      // Any error but a statement's (severity ERROR; a FATAL one ends the session, as does an
      // error of the socket) is the connection's: no later read may be sent on it, the store's
      // retry of this one among them.
      if ((error as { severity?: unknown }).severity !== 'ERROR') this.release(error as Error);
      throw error;
    } finally {
      if (--this.inFlight === 0 && !this.#released) this.#client.unref();
    }
  }

  /** Gives the connection back to the pool: discarded with `error`, else kept for others. */
  release(error?: Error): void {
    if (this.#released) return;
    this.#released = true;
    this.#gone();
    this.#client.ref();
    this.#client.release(error);
  }
}
