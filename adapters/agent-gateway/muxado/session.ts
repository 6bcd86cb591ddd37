import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { encodeFrame, encodeHeader, FLAG_FIN, FLAG_SYN, FrameDecoder, FrameError, MUXADO_ERRORS, muxadoErrorName, STREAM_ID_MAX, type Frame } from './frames.ts';
import { MuxadoStream, type StreamTransport } from './stream.ts';

/** The credit that answers a peer's WNDINC at once (see `#handle`). */
const NUDGE_BYTES = 1;

/**
 * A muxado session over one byte stream (a TLS socket): streams opened by either side, routed
 * by id (the client opens odd ids, the server even ones), flow control per stream (./stream.ts),
 * GOAWAY to end. Any violation of the framing rules ends this session with a GOAWAY naming it;
 * stream-level faults reset only that stream, as the vendor's implementation does.
 *
 * Events: 'stream' (a MuxadoStream the peer opened), 'close' (once, with a MuxadoCloseReason).
 */

export interface MuxadoSessionOptions {
  /** 'server' opens even stream ids and accepts odd ones; 'client' the reverse. */
  readonly role: 'client' | 'server';
  /** Per-stream flow-control window, the same for both directions (the vendor's is 256 KiB). */
  readonly window: number;
  /** Streams open at once; a stream the peer opens past this is refused with RST. */
  readonly maxStreams: number;
  /** The longest frame body accepted. */
  readonly maxFrameBytes: number;
  /** Bytes queued on the socket for a peer that does not read, before the session is ended. */
  readonly maxBufferedWriteBytes: number;
  /** Words naming the frame and unread bounds at the end of the messages that enforce them (`(limit …)`). */
  readonly limitNotes?: { readonly frame?: string; readonly unread?: string };
}

/** Why a session ended. */
export interface MuxadoCloseReason {
  /**
   * remote-goaway: the peer said goodbye; local-close: close() was called; protocol-error: the
   * peer broke the framing rules; socket-closed: the connection ended or failed; peer-not-reading:
   * the peer left too much unread.
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
  #nextLocalId: number;
  #lastRemoteId = 0;
  #closed: MuxadoCloseReason | undefined;
  readonly #transport: StreamTransport;

  constructor(socket: Duplex, options: MuxadoSessionOptions) {
    super();
    this.#socket = socket;
    this.#options = options;
    this.#decoder = new FrameDecoder(options.maxFrameBytes, options.limitNotes?.frame);
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
    this.#write(encodeFrame({ type: 'goaway', streamId: 0, flags: 0, lastStreamId: this.#lastRemoteId, error, message: Buffer.from(message) }));
    this.#end(reason);
  }

  #end(reason: MuxadoCloseReason): void {
    if (this.#closed) return;
    this.#closed = reason;
    const detail = reason.error === undefined ? reason.message : `${muxadoErrorName(reason.error)}: ${reason.message}`;
    for (const stream of [...this.#streams.values()]) stream.sessionEnded(detail);
    this.#streams.clear();
    this.#drained();
    this.#socket.end();
    this.emit('close', reason);
  }

  #write(bytes: Buffer): void {
    if (this.#socket.destroyed || this.#socket.writableEnded) return;
    this.#socket.write(bytes);
    if (this.#socket.writableLength > this.#options.maxBufferedWriteBytes && !this.#closed) {
      const note = this.#options.limitNotes?.unread;
      this.#end({ kind: 'peer-not-reading', message: `the peer left more than ${this.#options.maxBufferedWriteBytes} bytes unread${note ? ` ${note}` : ''}` });
      this.#socket.destroy();
    }
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
      this.#lastRemoteId = id;
      if (this.#streams.size >= this.#options.maxStreams) {
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

  /** A new remote stream id must have the peer's parity and be above every id it used before. */
  #acceptsRemoteId(id: number): boolean {
    const remoteParity = this.#options.role === 'server' ? 1 : 0;
    if (id % 2 !== remoteParity) {
      this.#protocolError(MUXADO_ERRORS.protocol, `the peer opened stream ${id}, an id of the wrong side`);
      return false;
    }
    if (id <= this.#lastRemoteId) {
      this.#protocolError(MUXADO_ERRORS.protocol, `the peer opened stream ${id} after stream ${this.#lastRemoteId} (ids must grow)`);
      return false;
    }
    return true;
  }
}
