/**
 * The connections that every read shares (a read is one statement in its own implicit
 * transaction, so reads need no connection of their own). A lane is a pool connection held in
 * pipeline mode: reads go on it without waiting for the answers before them, and those sent in
 * one turn of the event loop leave in one socket write at its end (the lane's socket is corked
 * until setImmediate; a statement sent `atOnce`, itself made at a turn's end, goes then). A busy
 * server so wakes PostgreSQL once per turn and lane, not once per read: on two cores, waking the
 * backend (and being woken) was most of a GET's cost.
 *
 * Each read goes to the lane with the fewest reads in flight; up to `size` lanes are taken from
 * the pool, a new one when all are busy (with `size` 0, reads take pool connections one at a
 * time, as transactions do). A lane whose connection breaks fails its reads (the store retries
 * a read once) and is given back to the pool to be discarded. A lane with nothing in flight does
 * not keep the process alive, as an idle pool connection would not.
 */
export class ReadLanes<C extends LaneClient, S, R> {
  readonly #pool: LanePool<C, S, R>;
  readonly #size: number;
  readonly #lanes: Lane<C, S, R>[] = [];
  #leasing: Promise<Lane<C, S, R>> | undefined;
  #closed = false;

  constructor(pool: LanePool<C, S, R>, size: number) {
    this.#pool = pool;
    this.#size = size;
  }

  /** Runs `statement` on a lane: in the turn's write, or `atOnce` in a write of its own when the lane has none waiting. */
  async query(statement: S, atOnce = false): Promise<R> {
    // A pool of one connection keeps it for transactions: reads take it in turn with them.
    if (this.#size === 0) return this.#pool.query(statement);
    let lane: Lane<C, S, R> | undefined;
    for (const candidate of this.#lanes) if (!lane || candidate.inFlight < lane.inFlight) lane = candidate;
    if (!lane || (lane.inFlight > 0 && this.#lanes.length < this.#size)) lane = await this.#lease(lane);
    return lane.query(statement, atOnce);
  }

  /** Gives every lane back to the pool (before the pool ends: it waits for connections held). */
  close(): void {
    this.#closed = true;
    for (const lane of this.#lanes.splice(0)) lane.release();
  }

  /** A new lane; while one is being connected, reads wait for it (or take `busy`, if any). */
  async #lease(busy: Lane<C, S, R> | undefined): Promise<Lane<C, S, R>> {
    if (this.#leasing) return busy ?? this.#leasing;
    this.#leasing = (async () => {
      const client = await this.#pool.connect();
      const lane = new Lane(this.#pool, client, () => {
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

/** The part of a pool connection (pg.PoolClient) a lane uses: the store hands it over, as one module imports pg. */
export interface LaneClient {
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
  /** Whether the connection keeps the process alive (pg.Client's ref/unref of its socket). */
  ref(): void;
  unref(): void;
  /** Back to the pool: discarded with an error, else kept. */
  release(error?: Error): void;
}

/** The pool as the lanes use it: connections to lease, how a statement runs on one, and its socket. */
export interface LanePool<C extends LaneClient, S, R> {
  connect(): Promise<C>;
  /** A statement on a connection of the pool's choosing (lanes of size 0). */
  query(statement: S): Promise<R>;
  run(client: C, statement: S): Promise<R>;
  socketOf(client: C): { cork(): void; uncork(): void };
}

class Lane<C extends LaneClient, S, R> {
  inFlight = 0;
  readonly #pool: LanePool<C, S, R>;
  readonly #client: C;
  readonly #gone: () => void;
  #corked = false;
  #released = false;
  readonly #flush = (): void => {
    this.#corked = false;
    this.#pool.socketOf(this.#client).uncork();
  };

  constructor(pool: LanePool<C, S, R>, client: C, gone: () => void) {
    this.#pool = pool;
    this.#client = client;
    this.#gone = gone;
    this.#client.unref();
    const broken = (error?: Error) => this.release(error ?? new Error('the connection ended'));
    client.on('error', broken);
    client.on('end', () => broken());
  }

  async query(statement: S, atOnce: boolean): Promise<R> {
    if (this.#released) throw new Error('Connection terminated: the read connection was given back to the pool');
    if (this.inFlight++ === 0) this.#client.ref();
    // A statement sent at once on a lane that waits for nothing is written on its own (corked
    // while its messages are written); else it joins the turn's write.
    const alone = atOnce && !this.#corked;
    if (alone) this.#pool.socketOf(this.#client).cork();
    else if (!this.#corked) {
      this.#corked = true;
      this.#pool.socketOf(this.#client).cork();
      setImmediate(this.#flush);
    }
    try {
      const answer = this.#pool.run(this.#client, statement);
      if (alone) this.#pool.socketOf(this.#client).uncork();
      return await answer;
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
