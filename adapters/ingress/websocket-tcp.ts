import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HeaderList } from '../../lib/traffic/facts.ts';

/**
 * The WebSocket-to-TCP conversion an agent asks for with its bind's `WebsocketTCPConverter`
 * (SDK `websocketTcpConversion()`), or an HTTPS edge route's `websocket_tcp_converter` module: the edge answers the client's WebSocket handshake itself
 * (RFC 6455) and carries the connection to the agent as a plain TCP stream. The payload of each
 * data frame the client sends (binary or text, fragments as they come) goes down the proxy stream
 * as bytes; each chunk the agent's service sends comes back as one binary frame. Pings are
 * answered with pongs; a close frame is answered with one and ends the stream; the stream's end
 * sends a close frame (1000). Nothing is held but a frame's head or a control frame (at most 125
 * bytes): payloads stream through. A frame that breaks the protocol (unmasked, reserved bits
 * without an extension, an unknown opcode, a control frame too long or fragmented) is answered
 * with close 1002 and both sides end. No extension (permessage-deflate) or subprotocol is agreed.
 */

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

const OPCODES = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** Close codes (RFC 6455 §7.4.1). */
const NORMAL = 1000;
const PROTOCOL_ERROR = 1002;

/** Frame payloads past 2^53 bytes cannot be counted exactly; nobody sends them. */
const MAX_LENGTH_HIGH_WORD = 2 ** 21;

/** Why `req` is not a WebSocket opening handshake a server may accept (RFC 6455 §4.2.1), or undefined when it is one. */
export function websocketHandshakeProblem(req: IncomingMessage): string | undefined {
  const tokens = (name: string) => String(req.headers[name] ?? '').toLowerCase().split(',').map((token) => token.trim());
  if (req.method !== 'GET') return `a WebSocket handshake is a GET, not ${req.method ?? ''}`;
  if (!tokens('connection').includes('upgrade') || !tokens('upgrade').includes('websocket')) return `the request asks to upgrade to ${JSON.stringify(req.headers.upgrade ?? '')}, not to websocket`;
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || Buffer.from(key, 'base64').length !== 16) return 'the WebSocket handshake has no valid Sec-WebSocket-Key';
  if (req.headers['sec-websocket-version'] !== '13') return 'the WebSocket handshake asks for a version other than 13';
  return undefined;
}

/** The answer that accepts the handshake of `req` (one websocketHandshakeProblem passed). */
export function websocketAccepted(req: IncomingMessage): HeaderList {
  const accept = createHash('sha1').update(`${String(req.headers['sec-websocket-key'])}${GUID}`).digest('base64');
  return [
    ['Upgrade', 'websocket'],
    ['Connection', 'Upgrade'],
    ['Sec-WebSocket-Accept', accept],
  ];
}

/** A frame from the server (never masked). */
function frame(opcode: number, payload: Uint8Array): Buffer {
  const length = payload.length;
  const head = length < 126 ? Buffer.from([0x80 | opcode, length]) : length < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (length >= 126 && length < 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 126;
    head.writeUInt16BE(length, 2);
  } else if (length >= 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 127;
    head.writeUIntBE(length, 4, 6);
  }
  return Buffer.concat([head, payload]);
}

const closeFrame = (code: number) => frame(OPCODES.close, Buffer.from([code >> 8, code & 0xff]));

/** A frame's head as read. */
interface FrameHead {
  readonly fin: boolean;
  readonly opcode: number;
  readonly mask: Buffer;
  readonly length: number;
}

/**
 * Reads the client's frames from `socket` (beginning with `head`, bytes that came with the
 * handshake) and joins them to `stream` as described in the file comment. The handshake's answer
 * has been written. After a close frame the client has `closeWaitMs` to close its connection.
 */
export function joinWebSocketToStream(socket: Duplex & { setTimeout(ms: number, callback: () => void): unknown }, stream: Duplex, head: Buffer, closeWaitMs: number): void {
  let pending: Buffer = Buffer.alloc(0);
  let current: (FrameHead & { read: number }) | undefined;
  let control: Buffer[] = [];
  let closing = false;

  const finish = () => {
    socket.destroy();
    stream.destroy();
  };
  /**
   * Ends the client's side with `last` (a close frame) and the agent's stream. The client's
   * connection then closes once the client ends its side too (what it still sends is dropped), or
   * after `closeWaitMs`.
   */
  const close = (last: Buffer, agentSide: 'end' | 'destroy') => {
    closing = true;
    socket.end(last);
    socket.setTimeout(closeWaitMs, () => socket.destroy());
    if (agentSide === 'end') stream.end();
    else stream.destroy();
  };
  const fail = () => close(closeFrame(PROTOCOL_ERROR), 'destroy');

  /** Reads a frame's head from `pending`, or undefined until it is all there. */
  const readHead = (): FrameHead | 'bad' | undefined => {
    if (pending.length < 2) return undefined;
    const [first, second] = [pending[0]!, pending[1]!];
    let offset = 2;
    let length = second & 0x7f;
    if (length === 126) {
      if (pending.length < 4) return undefined;
      length = pending.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (pending.length < 10) return undefined;
      if (pending.readUInt32BE(2) >= MAX_LENGTH_HIGH_WORD) return 'bad';
      length = pending.readUInt32BE(2) * 2 ** 32 + pending.readUInt32BE(6);
      offset = 10;
    }
    if (pending.length < offset + 4) return undefined;
    const opcode = first & 0x0f;
    const masked = (second & 0x80) !== 0;
    const fin = (first & 0x80) !== 0;
    const control = opcode >= 8;
    if (!masked || (first & 0x70) !== 0 || ![0, 1, 2, 8, 9, 10].includes(opcode) || (control && (!fin || length > 125))) return 'bad';
    const mask = Buffer.from(pending.subarray(offset, offset + 4));
    pending = pending.subarray(offset + 4);
    return { fin, opcode, mask, length };
  };

  /** Handles a whole control frame. */
  const onControl = (opcode: number, payload: Buffer) => {
    if (opcode === OPCODES.ping) return void socket.write(frame(OPCODES.pong, payload));
    if (opcode !== OPCODES.close) return;
    // The client's close: answered with its own code (or none), and the agent's stream ends.
    close(payload.length >= 2 ? closeFrame(payload.readUInt16BE(0)) : frame(OPCODES.close, Buffer.alloc(0)), 'end');
  };

  const onData = (chunk: Buffer) => {
    if (closing) return;
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (!closing) {
      if (!current) {
        const read = readHead();
        if (read === 'bad') return fail();
        if (!read) return;
        current = { ...read, read: 0 };
        control = [];
      }
      const take = Math.min(current.length - current.read, pending.length);
      const payload = Buffer.from(pending.subarray(0, take));
      for (let i = 0; i < take; i++) payload[i]! ^= current.mask[(current.read + i) % 4]!;
      pending = pending.subarray(take);
      current.read += take;
      if (current.opcode >= 8) control.push(payload);
      else if (take > 0 && !stream.write(payload)) {
        socket.pause();
        stream.once('drain', () => socket.resume());
      }
      if (current.read < current.length) return;
      const done = current;
      current = undefined;
      if (done.opcode >= 8) onControl(done.opcode, Buffer.concat(control));
    }
  };

  stream.on('data', (chunk: Buffer) => {
    if (closing) return;
    if (!socket.write(frame(OPCODES.binary, chunk))) {
      stream.pause();
      socket.once('drain', () => stream.resume());
    }
  });
  // The agent's service ended its side: the client is told with a normal close.
  stream.once('end', () => {
    if (!closing) close(closeFrame(NORMAL), 'destroy');
  });
  socket.on('data', onData);
  socket.once('error', finish).once('close', finish);
  stream.once('error', finish).once('close', () => {
    if (!closing) finish();
  });
  if (head.length > 0) onData(head);
}
