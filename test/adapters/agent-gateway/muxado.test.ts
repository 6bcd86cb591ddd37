import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Duplex, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, test, type TestContext } from 'node:test';
import { encodeFrame, encodeHeader, FLAG_FIN, FLAG_SYN, FrameDecoder, FrameError, MUXADO_ERRORS, type Frame } from '../../../adapters/agent-gateway/muxado/frames.ts';
import { MuxadoSession, type MuxadoCloseReason, type MuxadoSessionOptions } from '../../../adapters/agent-gateway/muxado/session.ts';
import { MuxadoStreamError, type MuxadoStream } from '../../../adapters/agent-gateway/muxado/stream.ts';
import { framePeer, Recorder, socketPair } from './helpers.ts';

const WINDOW = 256 * 1024;
const OPTIONS = { window: WINDOW, maxStreams: 16, maxFrameBytes: WINDOW, maxHeldBytes: 8 * 1024 * 1024 };

/**
 * A session whose streams have an 'error' listener: a stream that ends with its session errors,
 * as a socket does, and tests that are not about it must not die of it.
 */
function session(socket: Duplex, role: 'client' | 'server', options: Partial<MuxadoSessionOptions> = {}): MuxadoSession {
  const mux = new MuxadoSession(socket, { ...OPTIONS, role, ...options });
  mux.on('stream', (stream: MuxadoStream) => stream.on('error', () => {}));
  return mux;
}

function open(mux: MuxadoSession): MuxadoStream {
  const stream = mux.openStream();
  stream.on('error', () => {});
  return stream;
}

const data = (streamId: number, bytes: Buffer | string, flags = 0): Frame => ({ type: 'data', streamId, flags, data: Buffer.from(bytes) });
const nextStream = (mux: MuxadoSession) => once(mux, 'stream').then(([stream]) => stream as MuxadoStream);

/** Everything the stream reads until its end (the writing side stays as it is). */
function readAll(stream: MuxadoStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

/** Waits for `check` to hold, a tick at a time (it follows bytes through loopback sockets). */
async function until(check: () => boolean, what = ''): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 20000) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function pair(t: TestContext, server: Partial<MuxadoSessionOptions> = {}) {
  const [a, b] = await socketPair(t);
  return { client: session(a, 'client'), server: session(b, 'server', server) };
}

describe('frames', () => {
  test('the header packs length, type, flags and stream id big-endian', () => {
    assert.deepEqual([...encodeHeader('data', FLAG_SYN, 3, 5)], [0, 0, 5, 0x12, 0, 0, 0, 3]);
    assert.deepEqual([...encodeFrame({ type: 'wndinc', streamId: 2, flags: 0, increment: 0x10000 })], [0, 0, 4, 0x20, 0, 0, 0, 2, 0, 1, 0, 0]);
    assert.deepEqual([...encodeFrame({ type: 'rst', streamId: 7, flags: 0, error: MUXADO_ERRORS.flowControl })], [0, 0, 4, 0x00, 0, 0, 0, 7, 0, 0, 0, 3]);
    assert.deepEqual([...encodeFrame({ type: 'goaway', streamId: 0, flags: 0, lastStreamId: 9, error: 1, message: Buffer.from('no') })], [0, 0, 10, 0x30, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0x6e, 0x6f]);
  });

  test('decoding survives any split of the byte stream and masks the reserved bit of stream ids', () => {
    const frames: Frame[] = [
      data(1, 'hello', FLAG_SYN),
      { type: 'wndinc', streamId: 1, flags: 0, increment: 5 },
      data(1, '', FLAG_FIN),
      { type: 'rst', streamId: 3, flags: 0, error: 6 },
      { type: 'goaway', streamId: 0, flags: 0, lastStreamId: 3, error: 0, message: Buffer.from('bye') },
    ];
    const bytes = Buffer.concat(frames.map(encodeFrame));
    const decoder = new FrameDecoder(1024);
    const decoded = [...bytes].flatMap((byte) => decoder.push(Buffer.from([byte])));
    assert.deepEqual(decoded, frames);
    const reserved = Buffer.concat([encodeHeader('data', 0, 5, 0)]);
    reserved.writeUInt8(reserved[4]! | 0x80, 4);
    assert.equal(new FrameDecoder(1024).push(reserved)[0]!.streamId, 5);
  });

  test('refuses unknown types, lengths over the limit and malformed control frames as soon as the header arrives', () => {
    const header = (word: number, streamId: number) => {
      const bytes = Buffer.alloc(8);
      bytes.writeUInt32BE(word >>> 0, 0);
      bytes.writeUInt32BE(streamId, 4);
      return bytes;
    };
    const refuse = (bytes: Buffer, error: number, message: RegExp) =>
      assert.throws(() => new FrameDecoder(1024).push(bytes), (thrown: FrameError) => thrown instanceof FrameError && thrown.error === error && message.test(thrown.message));
    refuse(header((0 << 8) | 0x70, 1), MUXADO_ERRORS.protocol, /unknown frame type 7/);
    refuse(header((1025 << 8) | 0x10, 1), MUXADO_ERRORS.frameSize, /data frame of 1025 bytes is over the limit of 1024/);
    refuse(header((4 << 8) | 0x10, 0), MUXADO_ERRORS.protocol, /data frame on stream 0/);
    refuse(header((5 << 8) | 0x20, 1), MUXADO_ERRORS.frameSize, /wndinc frame of 5 bytes \(must be 4\)/);
    refuse(header((8 << 8) | 0x30, 1), MUXADO_ERRORS.protocol, /goaway frame on stream 1/);
    refuse(header((4 << 8) | 0x30, 0), MUXADO_ERRORS.frameSize, /goaway frame of 4 bytes \(at least 8\)/);
  });
});

describe('streams', () => {
  test('either side opens streams (client odd ids, server even) and data flows both ways', async (t) => {
    const { client, server } = await pair(t);
    const accepted = nextStream(server);
    const fromClient = open(client);
    fromClient.end('ping');
    const atServer = await accepted;
    assert.equal(fromClient.id % 2, 1);
    assert.equal(atServer.id, fromClient.id);
    assert.equal((await readAll(atServer)).toString(), 'ping');
    atServer.end('pong');
    assert.equal((await readAll(fromClient)).toString(), 'pong');

    const acceptedByClient = nextStream(client);
    const fromServer = open(server);
    fromServer.end('hello');
    const atClient = await acceptedByClient;
    assert.equal(atClient.id % 2, 0);
    assert.equal((await readAll(atClient)).toString(), 'hello');
  });

  test('FIN half-closes: the side that ended still reads what the other writes', async (t) => {
    const { client, server } = await pair(t);
    const accepted = nextStream(server);
    const stream = open(client);
    stream.end('question');
    const atServer = await accepted;
    assert.equal((await readAll(atServer)).toString(), 'question');
    atServer.write('first, ');
    atServer.end('then the answer');
    assert.equal((await readAll(stream)).toString(), 'first, then the answer');
  });

  test('4 MiB each way at once through Node stream pipelines arrive whole (windows and backpressure)', async (t) => {
    const { client, server } = await pair(t);
    const up = randomBytes(4 * 1024 * 1024);
    const down = randomBytes(4 * 1024 * 1024);
    const accepted = nextStream(server);
    const stream = open(client);
    const hash = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    const uploading = pipeline(Readable.from([up.subarray(0, 1000), up.subarray(1000)]), stream);
    const downloaded = readAll(stream);
    const atServer = await accepted;
    const [uploaded] = await Promise.all([readAll(atServer), pipeline(Readable.from([down]), atServer), uploading]);
    assert.equal(hash(uploaded), hash(up));
    assert.equal(hash(await downloaded), hash(down));
  });

  test('a writer stops at the peer window and goes on as the reader reads; every byte read is credited back', async (t) => {
    const [a, b] = await socketPair(t);
    const server = session(b, 'server');
    const peer = framePeer(a);
    server.on('stream', (stream: MuxadoStream) => {
      if (stream.id === 1) stream.write(Buffer.alloc(WINDOW + 100_000, 7));
      if (stream.id === 3) stream.pipe(stream);
    });
    peer.send(data(1, 'open', FLAG_SYN));
    const dataOn = (id: number) => peer.frames.events.filter((frame): frame is Extract<Frame, { type: 'data' }> => frame.type === 'data' && frame.streamId === id);
    const bytesOn = (id: number) => dataOn(id).reduce((sum, frame) => sum + frame.data.length, 0);
    await peer.frames.next(() => bytesOn(1) === WINDOW);
    // An echo on another stream: everything the server wrote before it is here when it is.
    peer.send(data(3, 'sync', FLAG_SYN));
    await peer.frames.next((frame) => frame.type === 'data' && frame.streamId === 3);
    assert.equal(bytesOn(1), WINDOW, 'not a byte past the window');
    peer.send({ type: 'wndinc', streamId: 1, flags: 0, increment: 100_000 });
    await peer.frames.next(() => bytesOn(1) === WINDOW + 100_000);

    // The server reads what the peer sends and credits it back in WNDINCs.
    const read = nextStream(server).then(readAll);
    const sent = WINDOW + 50_000;
    peer.send(data(5, Buffer.alloc(WINDOW, 1), FLAG_SYN));
    await peer.frames.next((frame) => frame.type === 'wndinc' && frame.streamId === 5);
    peer.send(data(5, Buffer.alloc(sent - WINDOW, 2), FLAG_FIN));
    assert.equal((await read).length, sent);
    const credited = peer.frames.events.reduce((sum, frame) => sum + (frame.type === 'wndinc' && frame.streamId === 5 ? frame.increment : 0), 0);
    assert.ok(credited >= sent - WINDOW, `credited ${credited}`);
  });

  test('data past the window resets that stream (flowControl); the session goes on', async (t) => {
    const [a, b] = await socketPair(t);
    const server = session(b, 'server');
    const peer = framePeer(a);
    const errors = new Recorder<MuxadoStreamError>();
    server.on('stream', (stream: MuxadoStream) => {
      stream.on('error', (error: MuxadoStreamError) => errors.push(error));
      if (stream.id === 3) stream.pipe(stream);
    });
    peer.send(data(1, Buffer.alloc(200_000), FLAG_SYN), data(1, Buffer.alloc(100_000)));
    const rst = await peer.frames.next((frame) => frame.type === 'rst');
    assert.deepEqual(rst, { type: 'rst', streamId: 1, flags: 0, error: MUXADO_ERRORS.flowControl });
    assert.match((await errors.next(() => true)).message, /stream 1 received 100000 bytes with a window of 62144/);
    peer.send(data(3, 'still here', FLAG_SYN));
    const echo = await peer.frames.next((frame) => frame.type === 'data' && frame.streamId === 3);
    assert.equal(echo.type === 'data' && echo.data.toString(), 'still here');
    assert.equal(server.closed, undefined);
  });

  test('destroying a stream resets it for the peer, whose stream ends with an error', async (t) => {
    const { client, server } = await pair(t);
    const accepted = nextStream(server);
    const stream = open(client);
    stream.write('x');
    const atServer = await accepted;
    const failed = once(atServer, 'error');
    stream.destroy();
    const [error] = (await failed) as [MuxadoStreamError];
    assert.equal(error.error, MUXADO_ERRORS.streamCancelled);
    assert.match(error.message, /stream 1 was reset by the peer \(streamCancelled\)/);
  });

  test('streams past the limit are refused with RST (streamsExhausted)', async (t) => {
    const { client, server } = await pair(t, { maxStreams: 2 });
    server.on('stream', () => {});
    const streams = [open(client), open(client), open(client)];
    const refused = once(streams[2]!, 'error');
    for (const stream of streams) stream.write('x');
    const [error] = (await refused) as [MuxadoStreamError];
    assert.equal(error.error, MUXADO_ERRORS.streamsExhausted);
    assert.equal(server.streamCount, 2);
  });

  test('data for an unknown stream is answered with RST (streamClosed)', async (t) => {
    const [a, b] = await socketPair(t);
    session(b, 'server');
    const peer = framePeer(a);
    peer.send(data(41, 'late'));
    assert.deepEqual(await peer.frames.next((frame) => frame.type === 'rst'), { type: 'rst', streamId: 41, flags: 0, error: MUXADO_ERRORS.streamClosed });
  });
});

describe('session end', () => {
  test('GOAWAY from the peer ends the session and its streams, with the peer\'s code and message', async (t) => {
    const { client, server } = await pair(t);
    const accepted = nextStream(server);
    open(client).write('x');
    const atServer = await accepted;
    const streamFailed = once(atServer, 'error');
    const closed = once(server, 'close');
    client.close(MUXADO_ERRORS.enhanceYourCalm, 'slow down');
    const [reason] = (await closed) as [MuxadoCloseReason];
    assert.deepEqual(reason, { kind: 'remote-goaway', error: MUXADO_ERRORS.enhanceYourCalm, message: 'slow down' });
    assert.match(((await streamFailed) as [Error])[0].message, /closed with its session/);
    assert.throws(() => server.openStream(), /the session is closed: slow down/);
  });

  test('the streams of an ended session all fail with one error, not one (and one stack) each', async (t) => {
    const { client, server } = await pair(t);
    const streams: MuxadoStream[] = [];
    for (let i = 0; i < 8; i++) {
      const accepted = nextStream(server);
      open(client).write('x');
      streams.push(await accepted);
    }
    const failures = streams.map((stream) => once(stream, 'error'));
    server.close();
    const errors = (await Promise.all(failures)).map(([error]) => error as MuxadoStreamError);
    assert.equal(new Set(errors).size, 1);
    assert.equal(errors[0]!.error, MUXADO_ERRORS.sessionClosed);
    assert.equal(server.held, 0, 'nothing is held for the peer once the session ended');
  });

  test('the bytes a session holds: unread DATA, then writes waiting for window, counted and given back', async (t) => {
    const { client, server } = await pair(t);
    const accepted = nextStream(server);
    const stream = open(client);
    stream.write(Buffer.alloc(100_000));
    const atServer = await accepted;
    atServer.pause();
    await until(() => server.held >= 100_000, `server ${server.held}`);
    // Past the client's 256 KiB window, its write waits in the stream: counted at the client.
    stream.write(Buffer.alloc(WINDOW));
    await until(() => client.held >= 100_000, `client ${client.held}`);
    atServer.resume();
    await until(() => server.held === 0 && client.held === 0, `both ${server.held} ${client.held}`);
  });

  for (const [name, bytes, error, message] of [
    ['an unknown frame type', Buffer.from([0, 0, 0, 0x50, 0, 0, 0, 1]), MUXADO_ERRORS.protocol, 'unknown frame type 5'],
    ['a frame over the size limit', encodeHeader('data', FLAG_SYN, 1, WINDOW + 1), MUXADO_ERRORS.frameSize, `data frame of ${WINDOW + 1} bytes is over the limit of ${WINDOW}`],
    ['a stream id of the server\'s side', encodeFrame(data(2, 'x', FLAG_SYN)), MUXADO_ERRORS.protocol, 'the peer opened stream 2, an id of the wrong side'],
    ['stream ids that do not grow', Buffer.concat([encodeFrame(data(5, 'x', FLAG_SYN)), encodeFrame(data(3, 'y', FLAG_SYN))]), MUXADO_ERRORS.protocol, 'the peer opened stream 3 after stream 5 (ids must grow)'],
  ] as const) {
    test(`${name} ends the session with a GOAWAY naming it`, async (t) => {
      const [a, b] = await socketPair(t);
      const server = session(b, 'server');
      server.on('stream', () => {});
      const peer = framePeer(a);
      const closed = once(server, 'close');
      peer.send(bytes);
      const goaway = await peer.goaway();
      assert.equal(goaway.error, error);
      assert.equal(goaway.message.toString(), message);
      assert.deepEqual((await closed)[0], { kind: 'protocol-error', error, message });
      await peer.closed;
    });
  }

  describe('new stream ids out of order (maxReorder: Go\'s muxado sends SYNs from several goroutines)', () => {
    /** A server session that takes SYNs up to 2 streams out of order, and a peer writing frames by hand. */
    async function reordering(t: TestContext) {
      const [a, b] = await socketPair(t);
      const server = session(b, 'server', { maxReorder: 2, reorderNote: '(limit test_reorder)' });
      const opened = new Recorder<number>();
      server.on('stream', (stream: MuxadoStream) => opened.push(stream.id));
      return { server, opened, peer: framePeer(a) };
    }

    test('any odd id not used yet is a new stream, within 2 streams below the highest', async (t) => {
      const { server, opened, peer } = await reordering(t);
      peer.send(data(5, 'x', FLAG_SYN), data(1, 'x', FLAG_SYN), data(3, 'x', FLAG_SYN), data(9, 'x', FLAG_SYN), data(7, 'x', FLAG_SYN));
      await opened.next((id) => id === 7);
      assert.deepEqual(opened.events, [5, 1, 3, 9, 7]);
      assert.equal(server.closed, undefined);
    });

    for (const [name, frames, message] of [
      ['an id used before (the stream still open)', [data(5, 'x', FLAG_SYN), data(3, 'x', FLAG_SYN), data(3, 'y', FLAG_SYN)], 'the peer opened stream 3 a second time'],
      ['an id used before (the highest)', [data(5, 'x', FLAG_SYN), data(5, 'y', FLAG_SYN)], 'the peer opened stream 5 a second time'],
      ['an id more than 2 streams back', [data(9, 'x', FLAG_SYN), data(3, 'x', FLAG_SYN)], 'the peer opened stream 3 after stream 9, more than 2 streams out of order (limit test_reorder)'],
      ['an id still unused once the highest moved past it by more than 2 streams', [data(1, 'x', FLAG_SYN), data(5, 'x', FLAG_SYN), data(9, 'x', FLAG_SYN), data(3, 'x', FLAG_SYN)], 'the peer opened stream 3 after stream 9, more than 2 streams out of order (limit test_reorder)'],
    ] as const) {
      test(`${name} ends the session with a GOAWAY naming it`, async (t) => {
        const { server, peer } = await reordering(t);
        const closed = once(server, 'close');
        peer.send(...frames);
        const goaway = await peer.goaway();
        assert.equal(goaway.message.toString(), message);
        assert.equal(goaway.lastStreamId, Math.max(...frames.map((frame) => frame.streamId)));
        assert.deepEqual((await closed)[0], { kind: 'protocol-error', error: MUXADO_ERRORS.protocol, message });
      });
    }
  });

  test('a peer that sends but never reads is cut off once too much waits for it', async () => {
    // A connection whose far end never takes what is written to it (no kernel buffers to fill first).
    const connection = new Duplex({ read() {}, write() {} });
    const server = session(connection, 'server', { maxHeldBytes: 16 * 1024, heldNote: '(limit test_held)' });
    const closed = once(server, 'close');
    // Data on streams that do not exist: the server answers each 8-byte frame with a 12-byte RST.
    connection.push(Buffer.concat(Array.from({ length: 2048 }, (_, i) => encodeFrame(data(2 * i + 1, '')))));
    const [reason] = (await closed) as [MuxadoCloseReason];
    // 1366 RSTs of 12 bytes: the first past the bound.
    assert.deepEqual(reason, { kind: 'peer-not-reading', error: MUXADO_ERRORS.enhanceYourCalm, message: 'the session held 16392 bytes for the peer, more than 16384 (limit test_held)' });
    assert.ok(connection.destroyed, 'a socket over the bound by itself cannot take a GOAWAY: it is cut');
  });
});
