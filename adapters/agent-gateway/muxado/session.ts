import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { encodeFrame, encodeHeader, FLAG_FIN, FLAG_SYN, FrameDecoder, FrameError, MUXADO_ERRORS, muxadoErrorName, STREAM_ID_MAX, type Frame } from './frames.ts';
import { MuxadoStream, MuxadoStreamError, type StreamTransport } from './stream.ts';

/** The credit that answers a peer's WNDINC at once (see `#handle`). */
const NUDGE_BYTES = 1;

/**
 * A muxado session over one byte stream (a TLS socket): streams opened by either side, routed
 * by id (the client opens odd ids, the server even ones), flow control per stream (./stream.ts),
 * GOAWAY to end. Any violation of the framing rules ends this session with a GOAWAY naming it;
 * stream-level faults reset only that stream, as the vendor's implementation does.
 *
 * Events: 'stream' (a MuxadoStream the peer opened), 'close' (once, with a MuxadoCloseReason).
 *
 * What the session makes this process hold for its peer is one figure, `held`: the socket's
 * unsent bytes, a frame received in part, and every stream's bytes (./stream.ts lists them).
 * Past `maxHeldBytes` the session ends with a GOAWAY naming the bound, so a peer that sends without
 * reading, or never grants window, costs at most that much (plus the frame that crossed it).
 */

/** The bounds a session may raise once its peer is trusted more (the agent gateway does at Auth). */
export interface MuxadoSessionBounds {
  /** Streams open at once; a stream the peer opens past this is refused with RST. */
  readonly maxStreams: number;
  /** The most `held` may be before the session ends. */
  readonly maxHeldBytes: number;
  /** Words naming `maxHeldBytes` at the end of the message that enforces it (`(limit …)`). */
  readonly heldNote?: string;
}

export interface MuxadoSessionOptions extends MuxadoSessionBounds {
  /** 'server' opens even stream ids and accepts odd ones; 'client' the reverse. */
  readonly role: 'client' | 'server';
  /** Per-stream flow-control window, the same for both directions (the vendor's is 256 KiB). */
  readonly window: number;
  /** The longest frame body accepted. */
  readonly maxFrameBytes: number;
  /** Words naming the frame bound at the end of the message that enforces it (`(limit …)`). */
  readonly frameNote?: string;
  /**
   * How many streams behind the peer's highest id a new stream may still arrive (default 0: ids
   * must grow). Go's muxado numbers a stream when it is created but sends its SYN with the first
   * write, from whichever goroutine writes first, so the vendor's agent opens 5 before 3 at times.
   */
  readonly maxReorder?: number;
  /** Words naming `maxReorder` at the end of the message that enforces it (`(limit …)`). */
  readonly reorderNote?: string;
}

/** Why a session ended. */
export interface MuxadoCloseReason {
  /**
   * remote-goaway: the peer said goodbye; local-close: close() was called; protocol-error: the
   * peer broke the framing rules; socket-closed: the connection ended or failed; peer-not-reading:
   * the session held more than its bound for the peer (unread, or waiting for window).
   */
  readonly kind: 'remote-goaway' | 'local-close' | 'protocol-error' | 'socket-closed' | 'peer-not-reading';
  /** The muxado error code sent or received in a GOAWAY, if any. */
  readonly error?: number;
  readonly message: string;
}

export class MuxadoSession extends EventEmitter {
  readonly #socket: Duplex;
  readonly #options: MuxadoSessionOptions;
  readonly #decoder: FrameDecoder;
  readonly #streams = new Map<number, MuxadoStream>();
  readonly #drainWaiters: (() => void)[] = [];
  #bounds: MuxadoSessionBounds;
  /** The bytes the streams hold, as they report them. */
  #streamBytes = 0;
  #nextLocalId: number;
  /** The peer's highest stream id so far. */
  #lastRemoteId = 0;
  /** The ids the peer used within `maxReorder` streams below #lastRemoteId: the rest of that range may still come, once. */
  readonly #recentRemoteIds = new Set<number>();
  #closed: MuxadoCloseReason | undefined;
  readonly #transport: StreamTransport;

  constructor(socket: Duplex, options: MuxadoSessionOptions) {
    super();
    this.#socket = socket;
    this.#options = options;
    this.#bounds = options;
    this.#decoder = new FrameDecoder(options.maxFrameBytes, options.frameNote);
    this.#nextLocalId = options.role === 'server' ? 2 : 1;
    const session = this;
    this.#transport = {
      sendData: (id, flags, data) => this.#write(Buffer.concat([encodeHeader('data', flags, id, data.length), data])),
      sendWindowIncrement: (id, increment) => this.#write(encodeFrame({ type: 'wndinc', streamId: id, flags: 0, increment })),
      sendReset: (id, error) => this.#write(encodeFrame({ type: 'rst', streamId: id, flags: 0, error })),
      get congested() {
        return session.#socket.writableNeedDrain;
      },
      whenDrained: (callback) => {
        if (this.#closed) callback();
        else this.#drainWaiters.push(callback);
      },
      forget: (id) => {
        this.#streams.delete(id);
      },
      hold: (delta) => {
        this.#streamBytes += delta;
        if (delta > 0) this.#checkHeld();
      },
    };
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('drain', () => this.#drained());
    socket.on('end', () => this.#end({ kind: 'socket-closed', message: 'the peer closed the connection' }));
    socket.on('close', () => this.#end({ kind: 'socket-closed', message: 'the connection closed' }));
    socket.on('error', (error: Error) => this.#end({ kind: 'socket-closed', message: `connection error: ${error.message}` }));
  }

  /** Why the session ended, once it has. */
  get closed(): MuxadoCloseReason | undefined {
    return this.#closed;
  }

  /** Streams open now. */
  get streamCount(): number {
    return this.#streams.size;
  }

  /** The bytes this session holds for its peer now (see above). */
  get held(): number {
    return this.#streamBytes + this.#socket.writableLength + this.#decoder.buffered;
  }

  /** Replaces the stream and held-bytes bounds; streams already open stay. */
  setBounds(bounds: MuxadoSessionBounds): void {
    this.#bounds = bounds;
  }

  /** Opens a stream; the peer learns of it with the first DATA frame (SYN). */
  openStream(): MuxadoStream {
    if (this.#closed) throw new Error(`the session is closed: ${this.#closed.message}`);
    if (this.#nextLocalId > STREAM_ID_MAX) throw new Error('the session has used up its stream ids');
    const stream = new MuxadoStream(this.#transport, this.#nextLocalId, this.#options.window, true);
    this.#nextLocalId += 2;
    this.#streams.set(stream.id, stream);
    return stream;
  }

  /** Ends the session with a GOAWAY carrying `error` and `message`, then closes the connection. */
  close(error: number = MUXADO_ERRORS.none, message = ''): void {
    this.#goAway(error, message, { kind: 'local-close', error, message: message || 'closed' });
  }

  /**
   * Ends the session by closing the connection, without a GOAWAY. The vendor's agent (muxado 0.5)
   * reads nothing after a GOAWAY yet still opens streams, so its close() would wait forever on the
   * answer to its Unbind; a closed connection fails those at once, as a network cut does.
   */
  end(message = 'closed'): void {
    this.#end({ kind: 'local-close', message });
  }

  #goAway(error: number, message: string, reason: MuxadoCloseReason): void {
    if (this.#closed) return;
    // Not #write: the GOAWAY that ends a session over a bound must not find it over the bound again.
    this.#send(encodeFrame({ type: 'goaway', streamId: 0, flags: 0, lastStreamId: this.#lastRemoteId, error, message: Buffer.from(message) }));
    this.#end(reason);
  }

  #end(reason: MuxadoCloseReason): void {
    if (this.#closed) return;
    this.#closed = reason;
    const detail = reason.error === undefined ? reason.message : `${muxadoErrorName(reason.error)}: ${reason.message}`;
    // One error for every stream: hundreds of stacks captured (and formatted by whoever logs one) cost tens of ms.
    const ended = new MuxadoStreamError(MUXADO_ERRORS.sessionClosed, `the stream closed with its session: ${detail}`);
    for (const stream of [...this.#streams.values()]) stream.sessionEnded(ended);
    this.#streams.clear();
    this.#drained();
    this.#socket.end();
    this.emit('close', reason);
  }

  #write(bytes: Buffer): void {
    this.#send(bytes);
    this.#checkHeld();
  }

  #send(bytes: Buffer): void {
    if (!this.#socket.destroyed && !this.#socket.writableEnded) this.#socket.write(bytes);
  }

  /** Past `maxHeldBytes`: a GOAWAY naming the bound; a socket that alone is over it cannot deliver one, and is cut. */
  #checkHeld(): void {
    if (this.#closed) return;
    const held = this.held;
    const { maxHeldBytes, heldNote } = this.#bounds;
    if (held <= maxHeldBytes) return;
    const message = `the session held ${held} bytes for the peer, more than ${maxHeldBytes}${heldNote ? ` ${heldNote}` : ''}`;
    this.#goAway(MUXADO_ERRORS.enhanceYourCalm, message, { kind: 'peer-not-reading', error: MUXADO_ERRORS.enhanceYourCalm, message });
    if (this.#socket.writableLength > maxHeldBytes) this.#socket.destroy();
  }

  /** Wakes waiting writers one at a time, while the socket takes more: each writes a frame at most past the mark. */
  #drained(): void {
    while (this.#drainWaiters.length > 0 && (this.#closed || !this.#socket.writableNeedDrain)) this.#drainWaiters.shift()!();
  }

  #receive(chunk: Buffer): void {
    if (this.#closed) return;
    let frames: Frame[];
    try {
      frames = this.#decoder.push(chunk);
    } catch (error) {
      if (!(error instanceof FrameError)) throw error;
      this.#protocolError(error.error, error.message);
      return;
    }
    for (const frame of frames) {
      if (this.#closed) return;
      this.#handle(frame);
    }
    this.#checkHeld();
  }

  #protocolError(error: number, message: string): void {
    this.#goAway(error, message, { kind: 'protocol-error', error, message });
  }

  #handle(frame: Frame): void {
    switch (frame.type) {
      case 'goaway':
        this.#end({ kind: 'remote-goaway', error: frame.error, message: frame.message.toString('utf8') || 'the peer went away' });
        return;
      case 'rst':
        this.#streams.get(frame.streamId)?.receiveReset(frame.error);
        return;
      case 'wndinc': {
        const stream = this.#streams.get(frame.streamId);
        stream?.receiveWindowIncrement(frame.increment);
        // The vendor's agent writes with Nagle's algorithm on (no TCP_NODELAY): its next small frame
        // (a proxied answer) waits for the TCP acknowledgement of this one, which Linux delays up to
        // 40 ms when nothing goes back. A byte of credit sent at once carries that acknowledgement.
        // Such a nudge is not answered, or two sessions of ours would nudge each other forever.
        if (frame.increment > NUDGE_BYTES) stream?.grantCredit(NUDGE_BYTES);
        return;
      }
      case 'data':
        this.#handleData(frame.streamId, frame.flags, frame.data);
    }
  }

  #handleData(id: number, flags: number, data: Buffer): void {
    const fin = (flags & FLAG_FIN) !== 0;
    if (flags & FLAG_SYN) {
      if (!this.#acceptsRemoteId(id)) return;
      if (this.#streams.size >= this.#bounds.maxStreams) {
        this.#transport.sendReset(id, MUXADO_ERRORS.streamsExhausted);
        return;
      }
      const stream = new MuxadoStream(this.#transport, id, this.#options.window, false);
      this.#streams.set(id, stream);
      if (stream.receiveData(data, fin)) this.emit('stream', stream);
      return;
    }
    const stream = this.#streams.get(id);
    if (stream) stream.receiveData(data, fin);
    else if (!(fin && data.length === 0)) this.#transport.sendReset(id, MUXADO_ERRORS.streamClosed);
  }

  /**
   * A new remote stream id must have the peer's parity, never have been used, and be above every
   * id the peer used before, or at most `maxReorder` streams below the highest (see that option).
   * What this remembers is at most `maxReorder` + 1 ids.
   */
  #acceptsRemoteId(id: number): boolean {
    const remoteParity = this.#options.role === 'server' ? 1 : 0;
    if (id % 2 !== remoteParity) {
      this.#protocolError(MUXADO_ERRORS.protocol, `the peer opened stream ${id}, an id of the wrong side`);
      return false;
    }
    const reorder = this.#options.maxReorder ?? 0;
    const last = this.#lastRemoteId;
    if (id <= last) {
      if (reorder === 0) {
        this.#protocolError(MUXADO_ERRORS.protocol, `the peer opened stream ${id} after stream ${last} (ids must grow)`);
        return false;
      }
      if (this.#recentRemoteIds.has(id)) {
        this.#protocolError(MUXADO_ERRORS.protocol, `the peer opened stream ${id} a second time`);
        return false;
      }
      if (id < last - 2 * reorder) {
        const note = this.#options.reorderNote ? ` ${this.#options.reorderNote}` : '';
        this.#protocolError(MUXADO_ERRORS.protocol, `the peer opened stream ${id} after stream ${last}, more than ${reorder} streams out of order${note}`);
        return false;
      }
    } else {
      this.#lastRemoteId = id;
      for (const used of this.#recentRemoteIds) if (used < id - 2 * reorder) this.#recentRemoteIds.delete(used);
    }
    if (reorder > 0) this.#recentRemoteIds.add(id);
    return true;
  }
}
