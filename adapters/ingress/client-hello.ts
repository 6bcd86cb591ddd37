/**
 * The server name (SNI, RFC 6066 §3) of a TLS connection, read from its first bytes, the
 * ClientHello (RFC 8446 §4.1.2), without terminating TLS: the TLS ingress routes by it, and passes
 * the bytes on untouched to an agent that terminates TLS itself. A ClientHello may span several
 * handshake records; at most CLIENT_HELLO_MAX_BYTES are read.
 */

/** The most a ClientHello may take (one record's worth, 16 KiB, plus record headers). */
export const CLIENT_HELLO_MAX_BYTES = 16 * 1024 + 5 * 4;

/** Bytes that are not the start of a TLS connection, or a ClientHello that cannot be read. */
export class ClientHelloError extends Error {}

const RECORD_HEADER = 5;
const HANDSHAKE_RECORD = 0x16;
const CLIENT_HELLO = 0x01;
const SERVER_NAME_EXTENSION = 0x0000;
const HOST_NAME = 0x00;

/**
 * The server name in `bytes` (the connection's first bytes): the name, lower case; '' for a
 * ClientHello without one; undefined while more bytes are needed. Throws ClientHelloError for
 * bytes that are no TLS ClientHello.
 */
export function serverNameOf(bytes: Buffer): string | undefined {
  // The handshake message, reassembled from the handshake records so far.
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + RECORD_HEADER <= bytes.length) {
    if (bytes[offset] !== HANDSHAKE_RECORD || bytes[offset + 1] !== 0x03) throw new ClientHelloError('the connection does not start with a TLS handshake record');
    const length = bytes.readUInt16BE(offset + 3);
    if (offset + RECORD_HEADER + length > bytes.length) break;
    parts.push(bytes.subarray(offset + RECORD_HEADER, offset + RECORD_HEADER + length));
    offset += RECORD_HEADER + length;
  }
  const message = Buffer.concat(parts);
  if (message.length < 4) return needMore(bytes);
  if (message[0] !== CLIENT_HELLO) throw new ClientHelloError('the first handshake message is not a ClientHello');
  const length = message.readUIntBE(1, 3);
  if (4 + length > message.length) return needMore(bytes);
  return helloServerName(message.subarray(4, 4 + length));
}

function needMore(bytes: Buffer): undefined {
  if (bytes.length >= CLIENT_HELLO_MAX_BYTES) throw new ClientHelloError(`the ClientHello is longer than ${CLIENT_HELLO_MAX_BYTES} bytes`);
  return undefined;
}

/** The server name of a ClientHello's body. */
function helloServerName(hello: Buffer): string {
  const reader = new Reader(hello);
  reader.skip(2 + 32); // legacy_version, random
  reader.skip(reader.uint(1)); // legacy_session_id
  reader.skip(reader.uint(2)); // cipher_suites
  reader.skip(reader.uint(1)); // legacy_compression_methods
  if (reader.done()) return '';
  const extensions = new Reader(reader.take(reader.uint(2)));
  while (!extensions.done()) {
    const type = extensions.uint(2);
    const data = new Reader(extensions.take(extensions.uint(2)));
    if (type !== SERVER_NAME_EXTENSION) continue;
    const names = new Reader(data.take(data.uint(2)));
    while (!names.done()) {
      const nameType = names.uint(1);
      const name = names.take(names.uint(2));
      if (nameType === HOST_NAME) return name.toString('latin1').toLowerCase().replace(/\.$/, '');
    }
  }
  return '';
}

/** Reads length-prefixed fields, refusing any that runs past the end. */
class Reader {
  readonly #bytes: Buffer;
  #offset = 0;
  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }
  uint(size: 1 | 2): number {
    return this.take(size).readUIntBE(0, size);
  }
  take(length: number): Buffer {
    if (this.#offset + length > this.#bytes.length) throw new ClientHelloError('the ClientHello is truncated or malformed');
    const part = this.#bytes.subarray(this.#offset, this.#offset + length);
    this.#offset += length;
    return part;
  }
  skip(length: number): void {
    this.take(length);
  }
  done(): boolean {
    return this.#offset >= this.#bytes.length;
  }
}
