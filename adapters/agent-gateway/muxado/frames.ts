/**
 * muxado frames: the wire format of the vendor's stream multiplexer (ngrok-rust `muxado/src/frame.rs`
 * and `codec.rs`; docs/agent-protocol.md). Each frame is an 8-byte header, then `length` body bytes:
 *
 *     uint24 length | uint4 type | uint4 flags | uint32 stream id (high bit reserved)
 *
 * Types: RST (0, body uint32 error code), DATA (1, bytes), WNDINC (2, body uint32 increment),
 * GOAWAY (3, stream 0, body uint32 last stream id, uint32 error code, message bytes). Flags:
 * FIN 0x1, SYN 0x2. Integers are big-endian.
 */

export const FRAME_HEADER_BYTES = 8;

export const FRAME_TYPES = { rst: 0, data: 1, wndinc: 2, goaway: 3 } as const;
export type FrameType = keyof typeof FRAME_TYPES;
const TYPE_NAMES: readonly FrameType[] = ['rst', 'data', 'wndinc', 'goaway'];

export const FLAG_FIN = 0x1;
export const FLAG_SYN = 0x2;

/** Stream ids and window increments are 31-bit; the high bit is reserved and masked off. */
export const STREAM_ID_MAX = 0x7fffffff;
export const WINDOW_MAX = 0x7fffffff;
/** The largest body the 24-bit length field can carry. */
export const FRAME_LENGTH_MAX = 0xffffff;

/** muxado's error codes, as RST and GOAWAY carry them (`muxado/src/errors.rs`). */
export const MUXADO_ERRORS = {
  none: 0x00,
  protocol: 0x01,
  internal: 0x02,
  flowControl: 0x03,
  streamClosed: 0x04,
  streamRefused: 0x05,
  streamCancelled: 0x06,
  streamReset: 0x07,
  frameSize: 0x08,
  acceptQueueFull: 0x09,
  enhanceYourCalm: 0x0a,
  remoteGoneAway: 0x0b,
  streamsExhausted: 0x0c,
  writeTimeout: 0x0d,
  sessionClosed: 0x0e,
  peerEof: 0x0f,
} as const;

/** The name of a muxado error code, for messages (`0x03` → `flowControl`). */
export function muxadoErrorName(code: number): string {
  return Object.entries(MUXADO_ERRORS).find(([, value]) => value === code)?.[0] ?? `unknown error 0x${code.toString(16)}`;
}

export type Frame =
  | { readonly type: 'rst'; readonly streamId: number; readonly flags: number; readonly error: number }
  | { readonly type: 'data'; readonly streamId: number; readonly flags: number; readonly data: Buffer }
  | { readonly type: 'wndinc'; readonly streamId: number; readonly flags: number; readonly increment: number }
  | { readonly type: 'goaway'; readonly streamId: number; readonly flags: number; readonly lastStreamId: number; readonly error: number; readonly message: Buffer };

/** A violation of the framing rules; `error` is the muxado code a GOAWAY reports it with. */
export class FrameError extends Error {
  constructor(
    readonly error: number,
    message: string,
  ) {
    super(message);
    this.name = 'FrameError';
  }
}

/** The 8-byte header of a frame. */
export function encodeHeader(type: FrameType, flags: number, streamId: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32BE(((length & FRAME_LENGTH_MAX) << 8 | (FRAME_TYPES[type] << 4) | (flags & 0x0f)) >>> 0, 0);
  header.writeUInt32BE(streamId & STREAM_ID_MAX, 4);
  return header;
}

/** A whole frame, header and body. */
export function encodeFrame(frame: Frame): Buffer {
  switch (frame.type) {
    case 'data':
      return Buffer.concat([encodeHeader('data', frame.flags, frame.streamId, frame.data.length), frame.data]);
    case 'rst':
    case 'wndinc': {
      const body = Buffer.allocUnsafe(4);
      body.writeUInt32BE(frame.type === 'rst' ? frame.error >>> 0 : frame.increment & WINDOW_MAX, 0);
      return Buffer.concat([encodeHeader(frame.type, frame.flags, frame.streamId, 4), body]);
    }
    case 'goaway': {
      const body = Buffer.allocUnsafe(8);
      body.writeUInt32BE(frame.lastStreamId & STREAM_ID_MAX, 0);
      body.writeUInt32BE(frame.error >>> 0, 4);
      return Buffer.concat([encodeHeader('goaway', frame.flags, 0, 8 + frame.message.length), body, frame.message]);
    }
  }
}

interface Header {
  readonly type: FrameType;
  readonly flags: number;
  readonly streamId: number;
  readonly length: number;
}

/**
 * Turns a byte stream into frames. Headers are checked as soon as they arrive, so a frame that is
 * too long or malformed is refused before its body is buffered.
 */
export class FrameDecoder {
  readonly #chunks: Buffer[] = [];
  #buffered = 0;
  #header: Header | undefined;

  /** `maxFrameBytes`: the longest body accepted (FRAME_LENGTH_MAX at most); `limitNote` ends the refusal's message. */
  constructor(
    private readonly maxFrameBytes: number,
    private readonly limitNote = '',
  ) {}

  /** Bytes received but not yet part of a whole frame. */
  get buffered(): number {
    return this.#buffered;
  }

  /** Adds bytes; answers the frames they complete. Throws a FrameError on a framing violation. */
  push(chunk: Buffer): Frame[] {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (!this.#header) {
        if (this.#buffered < FRAME_HEADER_BYTES) return frames;
        this.#header = this.#checkHeader(this.#take(FRAME_HEADER_BYTES));
      }
      if (this.#buffered < this.#header.length) return frames;
      frames.push(decodeBody(this.#header, this.#take(this.#header.length)));
      this.#header = undefined;
    }
  }

  #take(n: number): Buffer {
    if (n === 0) return Buffer.alloc(0);
    this.#buffered -= n;
    if (this.#chunks[0]!.length >= n) {
      const first = this.#chunks[0]!;
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[0]!;
      const part = Math.min(chunk.length, n - filled);
      chunk.copy(out, filled, 0, part);
      filled += part;
      if (part === chunk.length) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(part);
    }
    return out;
  }

  #checkHeader(bytes: Buffer): Header {
    const word = bytes.readUInt32BE(0);
    const length = word >>> 8;
    const typeCode = (word >>> 4) & 0x0f;
    const flags = word & 0x0f;
    const streamId = bytes.readUInt32BE(4) & STREAM_ID_MAX;
    const type = TYPE_NAMES[typeCode];
    if (type === undefined) throw new FrameError(MUXADO_ERRORS.protocol, `unknown frame type ${typeCode}`);
    if (length > this.maxFrameBytes) {
      throw new FrameError(MUXADO_ERRORS.frameSize, `${type} frame of ${length} bytes is over the limit of ${this.maxFrameBytes}${this.limitNote && ` ${this.limitNote}`}`);
    }
    if (type === 'goaway') {
      if (streamId !== 0) throw new FrameError(MUXADO_ERRORS.protocol, `goaway frame on stream ${streamId} (must be 0)`);
      if (length < 8) throw new FrameError(MUXADO_ERRORS.frameSize, `goaway frame of ${length} bytes (at least 8)`);
    } else {
      if (streamId === 0) throw new FrameError(MUXADO_ERRORS.protocol, `${type} frame on stream 0`);
      if (type !== 'data' && length !== 4) throw new FrameError(MUXADO_ERRORS.frameSize, `${type} frame of ${length} bytes (must be 4)`);
    }
    return { type, flags, streamId, length };
  }
}

function decodeBody(header: Header, body: Buffer): Frame {
  const { type, flags, streamId } = header;
  switch (type) {
    case 'data':
      return { type, flags, streamId, data: body };
    case 'rst':
      return { type, flags, streamId, error: body.readUInt32BE(0) };
    case 'wndinc':
      return { type, flags, streamId, increment: body.readUInt32BE(0) & WINDOW_MAX };
    case 'goaway':
      return { type, flags, streamId, lastStreamId: body.readUInt32BE(0) & STREAM_ID_MAX, error: body.readUInt32BE(4), message: body.subarray(8) };
  }
}
