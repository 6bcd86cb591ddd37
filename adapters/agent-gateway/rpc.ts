import type { Readable, Writable } from 'node:stream';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import { MessageError } from './protocol.ts';

/**
 * The typed RPC layer (ngrok-rust `ngrok/src/internals/raw_session.rs`): one request per typed
 * stream, as a JSON object; the reply is one JSON object, after which the replier ends its side.
 * The requester does not end its side after the request, so the request's end is found by
 * scanning the JSON as it arrives (linear, bounded by maxBytes) rather than by waiting for FIN.
 */

/** A message longer than the limit; the session that sent it is ended. */
export class MessageTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`a message of more than ${limit} bytes`);
    this.name = 'MessageTooLargeError';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** The limits a message is read within, and the words that name them in refusals (`(limit …)`). */
export interface MessageBounds {
  readonly maxBytes: number;
  readonly maxDepth: number;
  readonly depthNote?: string;
  /** Told of the bytes the reader keeps while the message is incomplete (+), and when it lets them go (−). */
  readonly retain?: (delta: number) => void;
}

/** The bounds of every message an agent sends (lib/limits.ts). */
export const AGENT_MESSAGE_BOUNDS: MessageBounds = {
  maxBytes: LIMITS.agent_message_bytes.value,
  maxDepth: LIMITS.agent_message_depth.value,
  depthNote: limitNote('agent_message_depth'),
};

/**
 * Finds where a JSON object ends in a byte stream without parsing it: tracks nesting outside
 * strings. Bytes of multi-byte UTF-8 characters never equal the ASCII delimiters, so bytes do.
 * Nesting past `maxDepth` is refused at the byte that crosses it, before the rest arrives: parsing
 * a message nested 500,000 deep held the event loop for hundreds of ms, and encoding a reply that
 * echoes one threw (JSON.stringify recurses).
 */
class ObjectEndScanner {
  #depth = 0;
  #inString = false;
  #escaped = false;

  constructor(
    private readonly maxDepth: number,
    private readonly depthNote = '',
  ) {}

  /** The offset just past the object's last byte within `chunk`, or -1 if it goes on. */
  scan(chunk: Buffer): number {
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (byte === BACKSLASH) this.#escaped = true;
        else if (byte === QUOTE) this.#inString = false;
        continue;
      }
      if (this.#depth === 0) {
        if (isWhitespace(byte)) continue;
        if (byte !== OPEN_BRACE) throw new MessageError('a message must be a JSON object');
      }
      if (byte === QUOTE) this.#inString = true;
      else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        this.#depth += 1;
        if (this.#depth > this.maxDepth) throw new MessageError(`a message nested deeper than ${this.maxDepth} levels${this.depthNote && ` ${this.depthNote}`}`);
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        this.#depth -= 1;
        if (this.#depth === 0) return i + 1;
      }
    }
    return -1;
  }
}

/**
 * Reads one JSON object from `stream` and stops reading there (a requester sends nothing after
 * its request; anything it does is left unread). Rejects with a MessageError when the bytes do
 * not start one JSON object, nest past `maxDepth` or the stream ends first, with
 * MessageTooLargeError past `maxBytes`.
 */
export function readMessage(stream: Readable, bounds: MessageBounds): Promise<unknown> {
  const { maxBytes, retain } = bounds;
  return new Promise((resolve, reject) => {
    const scanner = new ObjectEndScanner(bounds.maxDepth, bounds.depthNote);
    const chunks: Buffer[] = [];
    let total = 0;
    const finish = (outcome: () => void) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.pause();
      retain?.(-total);
      outcome();
    };
    const onData = (chunk: Buffer) => {
      let end: number;
      try {
        end = scanner.scan(chunk);
      } catch (error) {
        return finish(() => reject(error));
      }
      const used = end === -1 ? chunk.length : end;
      if (total + used > maxBytes) return finish(() => reject(new MessageTooLargeError(maxBytes)));
      total += used;
      retain?.(used);
      chunks.push(chunk.subarray(0, used));
      if (end === -1) return;
      finish(() => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch (error) {
          reject(new MessageError(`the message is not JSON: ${(error as Error).message}`));
        }
      });
    };
    const onEnd = () => finish(() => reject(new MessageError(total === 0 ? 'the stream ended without a message' : 'the stream ended inside a message')));
    const onError = (error: Error) => finish(() => reject(error));
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}

/** Writes one JSON message and ends the writing side (the reply of an RPC). Throws, writing nothing, when `message` cannot be encoded. */
export function writeMessage(stream: Writable, message: unknown): void {
  stream.end(JSON.stringify(message));
}
