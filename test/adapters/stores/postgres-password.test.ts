import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { openPostgresStore } from '../../../adapters/stores/postgres-store.ts';

/**
 * A server that asks for a password (SCRAM-SHA-256, PostgreSQL's default) when the URL gave none:
 * a stand-in that speaks the protocol as far as its first SCRAM message is all this needs, so it
 * runs without PostgreSQL installed.
 */
function message(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from(type), length, body]);
}
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

test('a PostgreSQL URL without a password, against a server that asks for one, says so', async () => {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let stage = 0;
    socket.on('data', () => {
      // Startup → AuthenticationSASL; the client's first SCRAM message → AuthenticationSASLContinue.
      if (stage++ === 0) socket.write(message('R', Buffer.concat([int32(10), Buffer.from('SCRAM-SHA-256\0\0')])));
      else socket.write(message('R', Buffer.concat([int32(11), Buffer.from('r=nonce-and-more,s=c2FsdA==,i=4096')])));
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const { PGPASSWORD: _, ...env } = process.env;
  const saved = process.env;
  process.env = env;
  try {
    await assert.rejects(
      openPostgresStore({ url: `postgres://burrow@127.0.0.1:${port}/burrow` }),
      new RegExp(`^Error: PostgreSQL at burrow@127\\.0\\.0\\.1:${port}/burrow: the server asks for a password; put it in the URL \\(postgres://USER:PASSWORD@HOST/DB\\) or PGPASSWORD$`),
    );
  } finally {
    process.env = saved;
    for (const socket of sockets) socket.destroy();
    server.close();
  }
});
