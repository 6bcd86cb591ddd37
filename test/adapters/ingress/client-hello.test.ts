import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { connect } from 'node:tls';
import { CLIENT_HELLO_MAX_BYTES, ClientHelloError, clientHelloOf } from '../../../adapters/ingress/client-hello.ts';

/** The first bytes node's TLS client sends (its ClientHello), with `servername` or none. */
async function clientHello(servername?: string): Promise<Buffer> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const client = connect({ host: '127.0.0.1', port: (server.address() as { port: number }).port, ...(servername ? { servername } : {}) });
    client.on('error', () => undefined);
    const [socket] = await once(server, 'connection');
    const [bytes] = (await once(socket, 'data')) as [Buffer];
    client.destroy();
    socket.destroy();
    return bytes;
  } finally {
    server.close();
  }
}

/** The handshake message of `hello` framed again as two records, split at `at` bytes. */
function inTwoRecords(hello: Buffer, at: number): Buffer {
  const message = hello.subarray(5, 5 + hello.readUInt16BE(3));
  const record = (part: Buffer) => Buffer.concat([Buffer.from([0x16, 0x03, 0x01, part.length >> 8, part.length & 0xff]), part]);
  return Buffer.concat([record(message.subarray(0, at)), record(message.subarray(at))]);
}

/** The server name clientHelloOf reads, or undefined while it needs more bytes. */
const serverNameOf = (bytes: Buffer) => clientHelloOf(bytes)?.serverName;

describe('clientHelloOf: the SNI of a ClientHello', () => {
  test("reads node's ClientHello, lower case, whole or split over two records; asks for more while incomplete", async () => {
    const hello = await clientHello('App.Example.COM');
    assert.equal(serverNameOf(hello), 'app.example.com');
    assert.equal(serverNameOf(hello.subarray(0, 3)), undefined);
    assert.equal(serverNameOf(hello.subarray(0, hello.length - 1)), undefined);
    const split = inTwoRecords(hello, 40);
    assert.equal(serverNameOf(split), 'app.example.com');
    assert.equal(serverNameOf(split.subarray(0, 50)), undefined);
  });

  test("answers '' for a ClientHello without a server name", async () => {
    assert.equal(serverNameOf(await clientHello()), '');
  });

  test('refuses bytes that are no ClientHello, a truncated one, and one past the bound', async () => {
    assert.throws(() => serverNameOf(Buffer.from('GET / HTTP/1.1\r\n\r\n')), ClientHelloError);
    assert.throws(() => serverNameOf(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00])), /not a ClientHello/);
    const hello = await clientHello('app.example.com');
    const lying = Buffer.from(hello);
    lying[5 + 4 + 2 + 32] = 0xff; // a session id longer than the message
    assert.throws(() => serverNameOf(lying), /truncated or malformed/);
    // A full record whose ClientHello claims 16 MiB, then the next record: more is never enough.
    const full = Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0xff, 0xff, 0xff]), Buffer.alloc(0x4000 - 4)]);
    const endless = Buffer.concat([full, Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00]), Buffer.alloc(CLIENT_HELLO_MAX_BYTES)]).subarray(0, CLIENT_HELLO_MAX_BYTES);
    assert.throws(() => serverNameOf(endless), /longer than/);
  });
});
