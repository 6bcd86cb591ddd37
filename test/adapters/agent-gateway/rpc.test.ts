import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { decodeAuth, decodeBind, errorText, MessageError } from '../../../adapters/agent-gateway/protocol.ts';
import { MessageTooLargeError, readMessage } from '../../../adapters/agent-gateway/rpc.ts';

/** Feeds `bytes` to readMessage one byte at a time, as a slow agent would. */
function readByteByByte(bytes: Buffer, maxBytes = 1024, end = false): Promise<unknown> {
  const stream = new PassThrough();
  const read = readMessage(stream, { maxBytes, maxDepth: 64 });
  for (const byte of bytes) stream.write(Buffer.from([byte]));
  if (end) stream.end();
  return read;
}

describe('readMessage', () => {
  test('finds the end of one JSON object however it is split, braces and quotes inside strings included', async () => {
    const message = { a: '}"{[\\', b: [{ c: 'grüße 🦫' }], d: null };
    assert.deepEqual(await readByteByByte(Buffer.from(` \n${JSON.stringify(message)}\r\n`)), message);
  });

  test('refuses what is not one JSON object', async () => {
    await assert.rejects(readByteByByte(Buffer.from('["array"]')), (error: Error) => error instanceof MessageError && error.message === 'a message must be a JSON object');
    await assert.rejects(readByteByByte(Buffer.from('{"a":tru}')), /the message is not JSON/);
    await assert.rejects(readByteByByte(Buffer.from('{"a":'), 1024, true), /the stream ended inside a message/);
    await assert.rejects(readByteByByte(Buffer.alloc(0), 1024, true), /the stream ended without a message/);
  });

  test('stops reading after the object', async () => {
    const stream = new PassThrough();
    const read = readMessage(stream, { maxBytes: 1024, maxDepth: 64 });
    stream.write('{"a":1} {"b":');
    assert.deepEqual(await read, { a: 1 });
    assert.equal(stream.isPaused(), true);
  });

  test('stops at the limit without reading on', async () => {
    await assert.rejects(readByteByByte(Buffer.from(`{"pad":"${'x'.repeat(100)}"}`), 64), (error: Error) => error instanceof MessageTooLargeError && error.message === 'a message of more than 64 bytes');
    assert.deepEqual(await readByteByByte(Buffer.from(`{"pad":"${'x'.repeat(54)}"}`), 64), { pad: 'x'.repeat(54) });
  });
});

describe('messages', () => {
  test('an Auth with nothing but versions decodes to empty values and commands not stated', () => {
    const auth = decodeAuth({ Version: ['3'] });
    assert.equal(auth.authtoken, '');
    assert.equal(auth.heartbeatInterval, 0);
    assert.deepEqual(auth.commands, { stop: { state: 'not-stated' }, restart: { state: 'not-stated' }, update: { state: 'not-stated' } });
  });

  test('a TLS bind decodes its termination certificate and key (base64 on the wire)', () => {
    const bind = decodeBind({ Proto: 'tls', Opts: { Domain: 'x.example.com', TLSTermination: { cert: Buffer.from('CERT').toString('base64'), key: Buffer.from('KEY').toString('base64') } } });
    assert.equal(bind.proto, 'tls');
    if (bind.proto !== 'tls') return;
    assert.equal(bind.options.tlsTermination?.certPem.toString(), 'CERT');
    assert.equal(bind.options.tlsTermination?.keyPem.toString(), 'KEY');
    assert.throws(() => decodeBind({ Proto: 'tls', Opts: { TLSTermination: { cert: 'not base64!' } } }), /Bind\.Opts\.TLSTermination\.cert: expected base64 text/);
  });

  test('error text: message, blank line, code line (no code: the message alone)', () => {
    assert.equal(errorText('refused', 'ERR_NGROK_105'), 'refused\n\nERR_NGROK_105\n');
    assert.equal(errorText('refused', undefined), 'refused');
  });
});
