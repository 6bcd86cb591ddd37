import { ALPN_EXTENSION, ja4Fingerprint, SERVER_NAME_EXTENSION, SIGNATURE_ALGORITHMS_EXTENSION, SUPPORTED_VERSIONS_EXTENSION } from './ja4.ts';

/**
 * The server name (SNI, RFC 6066 §3) of a TLS connection, read from its first bytes, the
 * ClientHello (RFC 8446 §4.1.2), without terminating TLS: the TLS ingress routes by it, and passes
 * the bytes on untouched to an agent that terminates TLS itself; and the hello's JA4 fingerprint
 * (ja4.ts, `conn.tls.ja4_fingerprint`). A ClientHello may span several handshake records; at most
 * CLIENT_HELLO_MAX_BYTES are read.
 */

/** The most a ClientHello may take (one record's worth, 16 KiB, plus record headers). */
export const CLIENT_HELLO_MAX_BYTES = 16 * 1024 + 5 * 4;

/** Bytes that are not the start of a TLS connection, or a ClientHello that cannot be read. */
export class ClientHelloError extends Error {}

const RECORD_HEADER = 5;
const HANDSHAKE_RECORD = 0x16;
const CLIENT_HELLO = 0x01;
const HOST_NAME = 0x00;

/** What the ingress reads of a ClientHello. */
export interface ClientHello {
  /** The server name, lower case; '' for a ClientHello without one. */
  readonly serverName: string;
  readonly ja4Fingerprint: string;
}

/**
 * The ClientHello in `bytes` (the connection's first bytes); undefined while more bytes are
 * needed. Throws ClientHelloError for bytes that are no TLS ClientHello.
 */
export function clientHelloOf(bytes: Buffer): ClientHello | undefined {
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
  return readHello(message.subarray(4, 4 + length));
}

function needMore(bytes: Buffer): undefined {
  if (bytes.length >= CLIENT_HELLO_MAX_BYTES) throw new ClientHelloError(`the ClientHello is longer than ${CLIENT_HELLO_MAX_BYTES} bytes`);
  return undefined;
}

/** What the ingress reads of a ClientHello's body. */
function readHello(hello: Buffer): ClientHello {
  const reader = new Reader(hello);
  const version = reader.uint(2); // legacy_version
  reader.skip(32); // random
  reader.skip(reader.uint(1)); // legacy_session_id
  const cipherSuites = uints(reader.take(reader.uint(2)));
  reader.skip(reader.uint(1)); // legacy_compression_methods
  const extensions: number[] = [];
  let serverName = '';
  let supportedVersions: number[] | undefined;
  let signatureAlgorithms: number[] = [];
  let firstAlpn: Buffer | undefined;
  const all = new Reader(reader.done() ? Buffer.alloc(0) : reader.take(reader.uint(2)));
  while (!all.done()) {
    const type = all.uint(2);
    extensions.push(type);
    const data = new Reader(all.take(all.uint(2)));
    if (type === SERVER_NAME_EXTENSION) serverName = hostName(new Reader(data.take(data.uint(2))));
    else if (type === SUPPORTED_VERSIONS_EXTENSION) supportedVersions = uints(data.take(data.uint(1)));
    else if (type === SIGNATURE_ALGORITHMS_EXTENSION) signatureAlgorithms = uints(data.take(data.uint(2)));
    else if (type === ALPN_EXTENSION) {
      const protocols = new Reader(data.take(data.uint(2)));
      if (!protocols.done()) firstAlpn = protocols.take(protocols.uint(1));
    }
  }
  return { serverName, ja4Fingerprint: ja4Fingerprint({ version, cipherSuites, extensions, signatureAlgorithms, ...(supportedVersions ? { supportedVersions } : {}), ...(firstAlpn ? { firstAlpn } : {}) }) };
}

/** The host name of a server_name list, lower case, without a final dot; '' without one. */
function hostName(names: Reader): string {
  while (!names.done()) {
    const nameType = names.uint(1);
    const name = names.take(names.uint(2));
    if (nameType === HOST_NAME) return name.toString('latin1').toLowerCase().replace(/\.$/, '');
  }
  return '';
}

/** A list of 16-bit values. */
function uints(bytes: Buffer): number[] {
  const reader = new Reader(bytes);
  const values: number[] = [];
  while (!reader.done()) values.push(reader.uint(2));
  return values;
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
