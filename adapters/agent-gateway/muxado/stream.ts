import { Duplex } from 'node:stream';
import { FLAG_FIN, FLAG_SYN, MUXADO_ERRORS, muxadoErrorName, WINDOW_MAX } from './frames.ts';

/**
 * One muxado stream as a Node Duplex, with the protocol's flow control in both directions:
 *
 * - Receiving: the peer may send at most `window` bytes that we have not yet handed to the
 *   reader. Bytes count as handed over once `push()` accepts them, so memory per stream stays
 *   under `window` plus the Readable's high-water mark; each hand-over is acknowledged with a
 *   WNDINC of that many bytes. More data than the window allows resets the stream (flowControl).
 * - Sending: writes wait while the peer's window is spent (until its WNDINC) and while the
 *   session's socket asks for a drain, so a slow peer slows the writer instead of filling memory.
 *
 * `end()` sends FIN (half-close: the stream still reads until the peer's FIN). `destroy()` before
 * both sides finished sends RST (streamCancelled). An RST from the peer destroys the stream with a
 * MuxadoStreamError, so consumers must listen for 'error', as with sockets.
 *
 * Every byte a stream holds is reported to its session (`StreamTransport.hold`), which bounds their
 * sum per connection: DATA received and not yet handed over, the Readable's and the Writable's
 * buffers (a write waiting for the peer's WNDINC keeps its chunk there), and what the consumer says
 * it keeps (`retain`, a message being read). The figure is recounted wherever one of them moves.
 */

/** What a stream needs from its session. */
export interface StreamTransport {
  sendData(streamId: number, flags: number, data: Buffer): void;
  sendWindowIncrement(streamId: number, increment: number): void;
  sendReset(streamId: number, error: number): void;
  /** True while the socket asks writers to wait for 'drain'. */
  readonly congested: boolean;
  /** Calls `callback` once the socket drained (or the session closed). */
  whenDrained(callback: () => void): void;
  /** The stream is finished both ways or reset: forget it. */
  forget(streamId: number): void;
  /** The bytes this stream holds changed by `delta` (see above). */
  hold(delta: number): void;
}

/** The stream was reset by the peer, or refused, or its session ended. */
export class MuxadoStreamError extends Error {
  readonly code = 'ERR_MUXADO_STREAM';
  constructor(
    readonly error: number,
    message: string,
  ) {
    super(message);
    this.name = 'MuxadoStreamError';
  }
}

/** The largest DATA frame a stream sends; smaller frames keep streams fair on one socket. */
const MAX_DATA_FRAME_BYTES = 32 * 1024;

export class MuxadoStream extends Duplex {
  #sendWindow: number;
  #receiveWindow: number;
  readonly #incoming: Buffer[] = [];
  #incomingBytes = 0;
  #retained = 0;
  /** What this stream last reported to `transport.hold`. */
  #held = 0;
  #recountQueued = false;
  /** Bytes of the chunk in _write already sent. */
  #writtenOfChunk = 0;
  #readerWants = false;
  #needsSyn: boolean;
  #localFin = false;
  #remoteFin = false;
  #endPushed = false;
  #reset = false;
  #heard = false;
  #waitingWrite: (() => void) | undefined;
  #prefix: { readonly length: number; resolve(bytes: Buffer): void; reject(error: Error): void } | undefined;

  constructor(
    private readonly transport: StreamTransport,
    readonly id: number,
    window: number,
    openedLocally: boolean,
  ) {
    super({ allowHalfOpen: true });
    this.#sendWindow = window;
    this.#receiveWindow = window;
    this.#needsSyn = openedLocally;
  }

  /**
   * Whether the peer has sent anything on this stream yet (data, window credit, a reset): a peer
   * that took a stream it did not open acknowledges its first bytes at once (the vendor's agent
   * grants their window back within milliseconds), so one that stays silent never took it.
   * 'heard' is emitted once, when it first does.
   */
  get heard(): boolean {
    return this.#heard;
  }

  #hear(): void {
    if (this.#heard) return;
    this.#heard = true;
    this.emit('heard');
  }

  /** DATA from the peer. Answers false (after resetting the stream) when it broke the rules. */
  receiveData(data: Buffer, fin: boolean): boolean {
    this.#hear();
    if (this.#remoteFin || this.#reset) {
      this.#resetLocally(MUXADO_ERRORS.streamClosed, `stream ${this.id} received data after the peer closed it`);
      return false;
    }
    if (data.length > this.#receiveWindow) {
      this.#resetLocally(MUXADO_ERRORS.flowControl, `stream ${this.id} received ${data.length} bytes with a window of ${this.#receiveWindow}`);
      return false;
    }
    this.#receiveWindow -= data.length;
    if (data.length > 0) {
      this.#incoming.push(data);
      this.#incomingBytes += data.length;
    }
    if (fin) {
      this.#remoteFin = true;
      this.#forgetIfDone();
    }
    if (this.#prefix) this.#takePrefix();
    else this.#deliver();
    this.#recount();
    return true;
  }

  /** The consumer keeps `delta` more bytes read from this stream (or, negative, let them go). */
  retain(delta: number): void {
    this.#retained += delta;
    this.#recount();
  }

  override write(chunk: unknown, encoding?: BufferEncoding | ((error: Error | null | undefined) => void), callback?: (error: Error | null | undefined) => void): boolean {
    const accepted = super.write(chunk, encoding as BufferEncoding, callback);
    // A write queued behind one that waits for credit reaches _write only later: count it now.
    this.#recount();
    return accepted;
  }

  #recount(): void {
    // writableLength still counts the part of the chunk in _write that already went to the socket.
    const held = this.destroyed ? 0 : this.#incomingBytes + this.readableLength + this.writableLength - this.#writtenOfChunk + this.#retained;
    if (held === this.#held) return;
    const delta = held - this.#held;
    this.#held = held;
    this.transport.hold(delta);
  }

  /**
   * The first `length` bytes from the peer, taken before any reader sees them (a typed stream's
   * type, a proxy stream's header). Call it before reading; rejects if the stream ends first.
   */
  readPrefix(length: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.#prefix = { length, resolve, reject };
      this.#takePrefix();
    });
  }

  #takePrefix(): void {
    const prefix = this.#prefix!;
    const buffered = this.#incoming.reduce((sum, chunk) => sum + chunk.length, 0);
    if (buffered >= prefix.length) {
      const all = Buffer.concat(this.#incoming.splice(0));
      if (all.length > prefix.length) this.#incoming.push(all.subarray(prefix.length));
      this.#incomingBytes -= prefix.length;
      this.#prefix = undefined;
      if (!this.#remoteFin) {
        this.#receiveWindow += prefix.length;
        this.transport.sendWindowIncrement(this.id, prefix.length);
      }
      prefix.resolve(all.subarray(0, prefix.length));
    } else if (this.destroyed && this.errored) {
      this.#prefix = undefined;
      prefix.reject(this.errored);
    } else if (this.#remoteFin || this.destroyed) {
      this.#prefix = undefined;
      prefix.reject(new MuxadoStreamError(MUXADO_ERRORS.streamClosed, `stream ${this.id} ended after ${buffered} of the first ${prefix.length} bytes`));
    }
  }

  /** Gives the peer `bytes` more to send on this stream, now (session.ts says why); not past WINDOW_MAX. */
  grantCredit(bytes: number): void {
    if (this.#remoteFin || this.#reset || this.#receiveWindow + bytes > WINDOW_MAX) return;
    this.#receiveWindow += bytes;
    this.transport.sendWindowIncrement(this.id, bytes);
  }

  /** WNDINC from the peer. */
  receiveWindowIncrement(increment: number): void {
    this.#hear();
    if (this.#sendWindow + increment > WINDOW_MAX) {
      this.#resetLocally(MUXADO_ERRORS.flowControl, `stream ${this.id} window grew past ${WINDOW_MAX}`);
      return;
    }
    this.#sendWindow += increment;
    this.#resumeWrite();
  }

  /** RST from the peer. */
  receiveReset(error: number): void {
    this.#hear();
    this.#reset = true;
    this.transport.forget(this.id);
    this.destroy(new MuxadoStreamError(error, `stream ${this.id} was reset by the peer (${muxadoErrorName(error)})`));
  }

  /** The session ended: the stream ends with it, with the one error the session gives all its streams. */
  sessionEnded(error: MuxadoStreamError): void {
    this.#reset = true;
    this.destroy(error);
  }

  override _read(): void {
    this.#readerWants = true;
    this.#deliver();
    // Readable.read() calls _read before it takes the chunk it returns: count after it did.
    if (!this.#recountQueued) {
      this.#recountQueued = true;
      queueMicrotask(() => {
        this.#recountQueued = false;
        this.#recount();
      });
    }
  }

  #deliver(): void {
    if (this.#prefix) return;
    let credit = 0;
    while (this.#readerWants && this.#incoming.length > 0) {
      const chunk = this.#incoming.shift()!;
      this.#incomingBytes -= chunk.length;
      credit += chunk.length;
      this.#readerWants = this.push(chunk);
    }
    if (credit > 0 && !this.#remoteFin && !this.#reset) {
      this.#receiveWindow += credit;
      this.transport.sendWindowIncrement(this.id, credit);
    }
    if (this.#incoming.length === 0 && this.#remoteFin && !this.#endPushed) {
      this.#endPushed = true;
      this.push(null);
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    let offset = 0;
    const send = () => {
      this.#waitingWrite = undefined;
      while (offset < chunk.length) {
        if (this.destroyed || this.#reset) {
          this.#writtenOfChunk = 0;
          return callback(new MuxadoStreamError(MUXADO_ERRORS.streamClosed, `stream ${this.id} is closed`));
        }
        if (this.#sendWindow === 0) {
          this.#waitingWrite = send;
          return this.#recount();
        }
        if (this.transport.congested) {
          this.transport.whenDrained(send);
          return this.#recount();
        }
        const size = Math.min(this.#sendWindow, chunk.length - offset, MAX_DATA_FRAME_BYTES);
        this.transport.sendData(this.id, this.#takeSyn(), chunk.subarray(offset, offset + size));
        this.#sendWindow -= size;
        offset += size;
        this.#writtenOfChunk = offset;
      }
      this.#writtenOfChunk = 0;
      callback();
      this.#recount();
    };
    this.#recount();
    send();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.#reset) return callback();
    this.transport.sendData(this.id, this.#takeSyn() | FLAG_FIN, Buffer.alloc(0));
    this.#localFin = true;
    this.#forgetIfDone();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#waitingWrite = undefined;
    this.#incoming.length = 0;
    this.#incomingBytes = 0;
    this.#recount();
    if (this.#prefix) this.#takePrefix();
    if (!this.#reset && !(this.#localFin && this.#remoteFin)) {
      this.#reset = true;
      this.transport.sendReset(this.id, MUXADO_ERRORS.streamCancelled);
    }
    this.transport.forget(this.id);
    callback(error);
  }

  #takeSyn(): number {
    if (!this.#needsSyn) return 0;
    this.#needsSyn = false;
    return FLAG_SYN;
  }

  #resumeWrite(): void {
    this.#waitingWrite?.();
  }

  #forgetIfDone(): void {
    if (this.#localFin && this.#remoteFin) this.transport.forget(this.id);
  }

  #resetLocally(error: number, message: string): void {
    this.#reset = true;
    this.transport.sendReset(this.id, error);
    this.transport.forget(this.id);
    this.destroy(new MuxadoStreamError(error, message));
  }
}
