import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * Proxy streams kept across the requests of one client connection. The vendor's agent joins each
 * proxy stream to a new connection to its local service (ngrok-rust `forward_to`), so a stream per
 * request costs a stream open and close, a TCP connect and an accept per request. Instead, each
 * client connection keeps one stream per upstream tunnel whose requests go down it one after
 * another (http1-upstream.ts), as the client's own connection carries them; a request that comes
 * while the stream is busy (a pipelining client) waits its turn; the proxy header (the client's
 * address) is the same for all of them.
 *
 * An HTTP/2 client's requests run side by side: each takes the first of its connection's streams
 * to the upstream that no request has, or a new one (`takeFree`), so a browser's page keeps as many
 * streams (and app connections) as it had requests at once, not one per request.
 *
 * A kept stream idles at most IDLE_MS, or less when the service's `Keep-Alive: timeout=N` hint says
 * so (N − 1 s; none when that is 0), so that Burrow drops it before the service does; the streams
 * go with the client's connection.
 */

const IDLE_MS = 4000;

/** A kept stream lent to one request. */
export interface KeptStream {
  readonly stream: Duplex;
  /** An earlier request of the client's connection used it. */
  readonly reused: boolean;
  /**
   * The request is done with the stream: it is kept for the next (`keep`, with the service's
   * `Keep-Alive` header as `hint`), else closed.
   */
  release(keep: boolean, hint?: string): void;
}

/** Gets a kept stream, or the error that kept one from opening. */
type Borrower = (error: Error | undefined, kept?: KeptStream) => void;

interface Slot {
  stream: Duplex | undefined;
  busy: boolean;
  readonly waiting: { readonly open: () => Duplex; readonly use: Borrower }[];
  timer: NodeJS.Timeout | undefined;
}

/** The kept streams of one client connection, by upstream (one key per agent session and tunnel). */
export class KeptStreams {
  readonly #slots = new Map<string, Slot>();
  #closed = false;

  constructor(client: Socket) {
    client.once('close', () => {
      this.#closed = true;
      for (const slot of this.#slots.values()) {
        clearTimeout(slot.timer);
        slot.stream?.destroy();
      }
      this.#slots.clear();
    });
  }

  /**
   * Lends `key`'s stream to `use` once no other request has it: the kept one, or a new one from
   * `open` (whose failure `use` gets instead).
   */
  take(key: string, open: () => Duplex, use: Borrower): void {
    let slot = this.#slots.get(key);
    if (!slot) this.#slots.set(key, (slot = { stream: undefined, busy: false, waiting: [], timer: undefined }));
    if (slot.busy) return void slot.waiting.push({ open, use });
    this.#lend(slot, open, use);
  }

  /**
   * As `take`, for a client whose requests run side by side (HTTP/2): the first of `key`'s streams
   * that no request has, or a new one. At most as many as the client has requests at once.
   */
  takeFree(key: string, open: () => Duplex, use: Borrower): void {
    for (let i = 0; ; i++) {
      const free = `${key}#${i}`;
      if (!this.#slots.get(free)?.busy) return this.take(free, open, use);
    }
  }

  #lend(slot: Slot, open: () => Duplex, use: Borrower): void {
    clearTimeout(slot.timer);
    let reused = true;
    if (!slot.stream || slot.stream.destroyed || !slot.stream.writable || this.#closed) {
      reused = false;
      let stream: Duplex;
      try {
        stream = open();
      } catch (error) {
        use(error as Error);
        return this.#next(slot);
      }
      slot.stream = stream;
      // A proxy stream's failure reaches the request that has it; an idle one just goes.
      stream.on('error', () => undefined);
      stream.once('close', () => {
        if (slot.stream !== stream) return;
        clearTimeout(slot.timer);
        slot.stream = undefined;
      });
    }
    const stream = slot.stream!;
    slot.busy = true;
    let released = false;
    use(undefined, {
      stream,
      reused,
      release: (keep, hint) => {
        if (released) return;
        released = true;
        slot.busy = false;
        const idleMs = keep ? idleMsOf(hint) : 0;
        if (idleMs > 0 && !stream.destroyed && !this.#closed) {
          slot.timer = setTimeout(() => stream.destroy(), idleMs).unref();
        } else if (!stream.destroyed) {
          // As node's client did with a connection it would not keep: end it, then let it go.
          if (slot.stream === stream) slot.stream = undefined;
          if (stream.writable) stream.end(() => stream.destroy());
          else stream.destroy();
        }
        this.#next(slot);
      },
    });
  }

  #next(slot: Slot): void {
    const waiting = slot.waiting.shift();
    if (waiting) this.#lend(slot, waiting.open, waiting.use);
  }
}

/** How long a kept stream may idle, as node's HTTP agent reads the service's `Keep-Alive` hint. */
function idleMsOf(hint: string | undefined): number {
  const seconds = hint === undefined ? undefined : /^timeout=(\d+)/.exec(hint)?.[1];
  if (seconds === undefined) return IDLE_MS;
  const hinted = Number.parseInt(seconds, 10) * 1000 - 1000;
  return hinted > 0 ? Math.min(hinted, IDLE_MS) : 0;
}

/** The kept streams of `client`'s connection, made on its first request. */
export function keptStreamsOf(pools: WeakMap<Socket, KeptStreams>, client: Socket): KeptStreams {
  let pool = pools.get(client);
  if (!pool) pools.set(client, (pool = new KeptStreams(client)));
  return pool;
}
