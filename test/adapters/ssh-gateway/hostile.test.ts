import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import ssh2 from 'ssh2';
import { LIMITS } from '../../../lib/limits.ts';
import type { ManualTimers } from '../agent-gateway/helpers.ts';
import { OPENSSH_MISSING, runSsh, startSshGateway, type SshGatewayEvent, type SshGatewayFixture } from './helpers.ts';

/**
 * What a hostile or broken client does to the SSH gateway: each ends (or is refused on) its own
 * connection, and a real OpenSSH client is served right after.
 */

const skip = OPENSSH_MISSING ? 'OpenSSH (ssh, ssh-keygen) is not installed' : false;

const isEnded = (event: SshGatewayEvent): event is Extract<SshGatewayEvent, { kind: 'ended' }> => event.kind === 'ended';

/** The gateway still serves a real client: a session is bound and then closed by the server. */
async function stillServes(t: TestContext, fixture: SshGatewayFixture): Promise<void> {
  const ssh = runSsh(t, fixture, ['-R', '0:localhost:80', 'v2@127.0.0.1', 'tcp']);
  await ssh.waitForStdout(/Forwarding  tcp:\/\//);
  for (const session of fixture.gateway.sessions()) session.close();
  await ssh.exited;
  assert.deepEqual(fixture.errors, []);
}

/** An ssh2 client logged in with the fixture's key (ssh2 reads OpenSSH private keys). */
async function ssh2Client(t: TestContext, fixture: SshGatewayFixture, config: Partial<ssh2.ConnectConfig> = {}): Promise<ssh2.Client> {
  const client = new ssh2.Client();
  client.on('error', () => {});
  t.after(() => void client.end());
  client.connect({ host: '127.0.0.1', port: fixture.port, username: 'v2', privateKey: readFileSync(fixture.key.file), readyTimeout: 20_000, ...config });
  await once(client, 'ready');
  return client;
}

describe('SSH gateway: hostile input ends only that connection', { skip }, () => {
  test('bytes that are not SSH: the connection closes, no session, the next client is served', async (t) => {
    const fixture = await startSshGateway(t);
    for (const garbage of [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), Buffer.from('SSH-2.0-evil\r\n' + '\x00\xff'.repeat(4096)), Buffer.alloc(70_000, 0x41)]) {
      const socket = connect(fixture.port, '127.0.0.1');
      socket.on('error', () => {});
      socket.on('data', () => {});
      socket.write(garbage);
      await once(socket, 'close');
    }
    assert.deepEqual(fixture.events.events, []);
    await stillServes(t, fixture);
  });

  /** A client connected and left alone, once the gateway's handshake deadline for it is set. */
  async function silentClient(fixture: Awaited<ReturnType<typeof startSshGateway>>): Promise<{ socket: Socket; timers: ManualTimers }> {
    const timers = fixture.timers as ManualTimers;
    const socket = connect(fixture.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('data', () => {});
    await once(socket, 'connect');
    await timers.whenPending(LIMITS.ssh_handshake_ms.value);
    return { socket, timers };
  }

  test('a client that never finishes the handshake is cut when ssh_handshake_ms runs out', async (t) => {
    const fixture = await startSshGateway(t);
    const { socket, timers } = await silentClient(fixture);
    timers.advance(LIMITS.ssh_handshake_ms.value);
    await once(socket, 'close');
    await stillServes(t, fixture);
  });

  test('the handshake deadline runs from the connection, whatever the client dribbles meanwhile', async (t) => {
    const fixture = await startSshGateway(t);
    const { socket, timers } = await silentClient(fixture);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    // One byte of a version line a tenth of the deadline: a timer reset by bytes would never fire.
    for (const byte of 'SSH-2.0-d') {
      socket.write(byte);
      timers.advance(LIMITS.ssh_handshake_ms.value / 10);
    }
    socket.write('r');
    timers.advance(LIMITS.ssh_handshake_ms.value / 10);
    await closed;
    await stillServes(t, fixture);
  });

  test(`at most ${LIMITS.ssh_unbound_connections.value} connections wait for a tunnel at once: more are closed at accept, and a freed place is taken again`, async (t) => {
    const fixture = await startSshGateway(t);
    /** A connection, once the gateway answers it (its version line) or closes it without a word. */
    const open = async (): Promise<{ socket: Socket; answered: boolean }> => {
      const socket = connect(fixture.port, '127.0.0.1');
      socket.on('error', () => {});
      t.after(() => void socket.destroy());
      const answered = await new Promise<boolean>((resolve) => {
        socket.once('data', () => resolve(true));
        socket.once('close', () => resolve(false));
      });
      return { socket, answered };
    };
    const waiting = await Promise.all(Array.from({ length: LIMITS.ssh_unbound_connections.value }, open));
    assert.ok(waiting.every((connection) => connection.answered));
    assert.equal((await open()).answered, false);
    // The gateway learns of a close in its own time; until then a new connection is closed too.
    const answeredAgain = async () => {
      for (;;) {
        const next = await open();
        next.socket.destroy();
        if (next.answered) return;
      }
    };
    waiting[0]!.socket.destroy();
    await answeredAgain();
    for (const { socket } of waiting) socket.destroy();
  });

  test(`a client that stops reading holds the gateway's unsent bytes near ${LIMITS.ssh_unsent_bytes.value}: its proxied connections wait until it reads`, async (t) => {
    const fixture = await startSshGateway(t);
    const client = await ssh2Client(t, fixture);
    const forwarded: ssh2.ClientChannel[] = [];
    client.on('tcp connection', (_info, accept) => forwarded.push(accept().on('data', () => {})));
    const bound = new Promise<number>((resolve, reject) => client.forwardIn('localhost', 0, (error, port) => (error ? reject(error) : resolve(port))));
    client.exec('tcp', (_error, stream) => stream?.on('data', () => {}));
    await bound;
    const session = fixture.gateway.sessions()[0]!;
    const CHANNELS = 32;
    const proxies: Duplex[] = [];
    for (let i = 0; i < CHANNELS; i++) proxies.push(await session.openProxy(session.tunnel()!.tunnelId, { clientAddr: { ip: '203.0.113.9', port: 40000 + i } }));
    // The client stops reading its socket: each channel's window (2 MiB from ssh2) would let the gateway send 64 MiB.
    const socket = (client as unknown as { _sock: Socket })._sock;
    socket.pause();
    let most = 0;
    let reachedLimit: () => void;
    const limitReached = new Promise<void>((resolve) => (reachedLimit = resolve));
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pumped = proxies.map(async (proxy) => {
      for (let sent = 0; sent < 2 * 1024 * 1024; sent += chunk.length) {
        await new Promise<void>((resolve, reject) => proxy.write(chunk, (error) => (error ? reject(error) : resolve())));
        most = Math.max(most, session.unsentBytes());
        if (most >= LIMITS.ssh_unsent_bytes.value) reachedLimit();
      }
    });
    await limitReached;
    socket.resume();
    await Promise.all(pumped);
    // One write may pass the limit, by at most one chunk and its packets' framing.
    t.diagnostic(`the gateway held at most ${most} bytes unsent`);
    assert.ok(most <= LIMITS.ssh_unsent_bytes.value + 2 * chunk.length, `the gateway held ${most} bytes unsent`);
    for (const proxy of proxies) proxy.destroy();
    await stillServes(t, fixture);
  });

  test('a shell without a forward is told why; an authenticated client that runs no command is cut when ssh_handshake_ms runs out', async (t) => {
    const fixture = await startSshGateway(t);
    const client = await ssh2Client(t, fixture);
    const channel = await new Promise<ssh2.ClientChannel>((resolve, reject) => client.shell(false, (error, stream) => (error ? reject(error) : resolve(stream))));
    let stderr = '';
    channel.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    channel.on('data', () => {});
    const timers = fixture.timers as ManualTimers;
    // The shell request was answered with the usage: the session ended on its own.
    await once(channel, 'close');
    assert.match(stderr, /burrow: no remote forward was asked for/);
    const ended = await fixture.events.next(isEnded);
    assert.equal(ended.reason.kind, 'command-ended');

    const idle = await ssh2Client(t, fixture);
    timers.advance(LIMITS.ssh_handshake_ms.value);
    await once(idle, 'close');
    const cut = await fixture.events.next((event): event is Extract<SshGatewayEvent, { kind: 'ended' }> => isEnded(event) && event.session.id === 'ss_2');
    assert.deepEqual(cut.reason, { kind: 'protocol-error', message: `no tunnel bound within ${LIMITS.ssh_handshake_ms.value} ms (limit ssh_handshake_ms)` });
    await stillServes(t, fixture);
  });

  test(`more than ${LIMITS.ssh_auth_attempts.value} authentication attempts end the connection`, async (t) => {
    const fixture = await startSshGateway(t);
    const keys = Array.from({ length: LIMITS.ssh_auth_attempts.value + 5 }, () => ssh2.utils.generateKeyPairSync('ed25519').private);
    let offered = 0;
    let asked = 0;
    const acceptsKey = fixture.handler.acceptsKey;
    fixture.handler.acceptsKey = (...args) => {
      asked += 1;
      return acceptsKey(...args);
    };
    const client = new ssh2.Client();
    client.on('error', () => {});
    const closed = once(client, 'close');
    client.connect({
      host: '127.0.0.1',
      port: fixture.port,
      username: 'v2',
      readyTimeout: 20_000,
      authHandler: (_methods, _partial, next) => {
        const key = keys[offered++];
        next(key ? { type: 'publickey', username: 'v2', key } : 'none');
      },
    });
    t.after(() => void client.end());
    await closed;
    // The gateway looked up the keys of the attempts within the limit only, then cut the client off.
    assert.equal(asked, LIMITS.ssh_auth_attempts.value);
    assert.deepEqual(fixture.events.events, []);
    await stillServes(t, fixture);
  });

  test(`more than ${LIMITS.ssh_handshake_bytes.value} bytes before the tunnel is bound end the connection, naming the limit`, async (t) => {
    const fixture = await startSshGateway(t);
    const client = await ssh2Client(t, fixture);
    const env = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`BIG_${i}`, 'x'.repeat(1024)]));
    client.exec('http', { env }, () => {});
    await once(client, 'close');
    const ended = await fixture.events.next(isEnded);
    assert.deepEqual(ended.reason, { kind: 'protocol-error', message: `more than ${LIMITS.ssh_handshake_bytes.value} bytes before a tunnel was bound (limit ssh_handshake_bytes)` });
    await stillServes(t, fixture);
  });

  test(`a command longer than ${LIMITS.ssh_command_bytes.value} bytes is refused, naming the limit`, async (t) => {
    const fixture = await startSshGateway(t);
    const ssh = runSsh(t, fixture, ['-R', '0:localhost:80', 'v2@127.0.0.1', `http --basic-auth ${'a'.repeat(LIMITS.ssh_command_bytes.value)}`]);
    assert.equal(await ssh.exited, 1);
    assert.match(ssh.stderr(), new RegExp(`burrow: the command is ${LIMITS.ssh_command_bytes.value + 18} bytes, more than ${LIMITS.ssh_command_bytes.value} \\(limit ssh_command_bytes\\)`));
  });

  test('many session channels, a second forward and direct-tcpip are refused; the first session binds', async (t) => {
    const fixture = await startSshGateway(t);
    const client = await ssh2Client(t, fixture);
    // Forwards are answered once the command has bound the tunnel (or refused), so they are awaited after it.
    const forwards = Promise.allSettled(
      [0, 0].map((port) => new Promise<number>((resolve, reject) => client.forwardIn('localhost', port, (error, bound) => (error ? reject(error) : resolve(bound))))),
    );
    const opened = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        new Promise<ssh2.ClientChannel>((resolve, reject) => client.exec(i === 0 ? 'tcp' : 'http', (error, stream) => (error ? reject(error) : resolve(stream)))),
      ),
    );
    assert.equal(opened.filter((result) => result.status === 'fulfilled').length, 1);
    const direct = await new Promise<Error | undefined>((resolve) => client.forwardOut('127.0.0.1', 1, '127.0.0.1', 22, (error) => resolve(error)));
    assert.match(String(direct), /Channel open failure/);
    // The first forward is answered with the endpoint's port; the second is refused (one endpoint per connection).
    const [first, second] = await forwards;
    assert.deepEqual(first, { status: 'fulfilled', value: 20001 });
    assert.equal(second!.status, 'rejected');
    assert.equal(fixture.gateway.sessions().length, 1);
    assert.equal(fixture.gateway.sessions()[0]!.tunnel()?.url, 'tcp://tcp.burrow.test:20001');
    await stillServes(t, fixture);
  });
});
