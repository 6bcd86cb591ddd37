import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { SshGatewayError } from '../../../adapters/ssh-gateway/index.ts';
import { OPENSSH_MISSING, runSsh, startSshGateway, type SshGatewayEvent } from './helpers.ts';

/** The real OpenSSH client (`ssh -R`) against the SSH gateway, with a recording session handler. */

const skip = OPENSSH_MISSING ? 'OpenSSH (ssh, ssh-keygen) is not installed' : false;

/** A local HTTP service on loopback, as the user's `-R …:localhost:<port>` target. */
async function localHttp(t: TestContext): Promise<number> {
  const server = createHttpServer((req, res) => res.end(`hello from ${req.url}`));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/** A local TCP service that answers each line with its reverse. */
async function localEcho(t: TestContext): Promise<number> {
  const server = createServer((socket) => socket.on('data', (data: Buffer) => socket.write(Buffer.from(data.toString().trim()).reverse().toString() + '\n')));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/** Writes `request` to a proxied channel and answers all it reads until the channel closes (ended by the service, or after the first line). */
async function exchange(channel: Duplex, request: string, endAfterFirstLine = false): Promise<string> {
  let reply = '';
  channel.on('data', (chunk: Buffer) => {
    reply += chunk.toString();
    if (endAfterFirstLine && reply.includes('\n')) channel.end();
  });
  // An SSH channel closes once both sides have ended it.
  channel.on('end', () => channel.end());
  channel.write(request);
  await once(channel, 'close');
  return reply;
}

const isBind = (event: SshGatewayEvent): event is Extract<SshGatewayEvent, { kind: 'bind' }> => event.kind === 'bind';
const isEnded = (event: SshGatewayEvent): event is Extract<SshGatewayEvent, { kind: 'ended' }> => event.kind === 'ended';

describe('SSH gateway with the real OpenSSH client', { skip }, () => {
  test('ssh -R 0:localhost:PORT v2@host http: the user is told the URL, proxied requests reach the local service, closing ssh ends the session', async (t) => {
    const fixture = await startSshGateway(t);
    const local = await localHttp(t);
    const ssh = runSsh(t, fixture, ['-R', `0:localhost:${local}`, 'v2@127.0.0.1', 'http']);
    await ssh.waitForStdout(/Forwarding  https:\/\/t1\.burrow\.test\r?\n/);
    assert.match(ssh.stdout(), /^\nburrow \(via SSH\) \(Ctrl\+C to quit\)\n\nAccount     Test Account \(Plan: Free\)\nRegion      eu\nForwarding  https:\/\/t1\.burrow\.test\n$/);
    // OpenSSH's own line: the port the gateway answered for the "0" of -R is the endpoint's.
    await ssh.waitForStderr(new RegExp(`Allocated port 443 for remote forward to localhost:${local}`));

    const bind = await fixture.events.next(isBind);
    assert.deepEqual(bind.request, { proto: 'https', name: '', basicAuth: [], trafficPolicy: null });
    assert.equal(bind.session.login.user, 'v2');
    assert.match(bind.session.login.software, /^OpenSSH_\d/);
    assert.equal(bind.session.key.fingerprint, fixture.key.fingerprint);
    assert.equal(bind.session.key.algorithm, 'ssh-ed25519');
    assert.equal(bind.session.remote.ip, '127.0.0.1');
    assert.deepEqual(bind.session.tunnel()?.forward, { address: 'localhost', port: 443 });
    assert.deepEqual(fixture.gateway.sessions().map((session) => session.id), ['ss_1']);
    assert.deepEqual(fixture.gateway.hostKeys(), [fixture.knownHosts.split(' ').slice(1, 3).join(' ')]);

    for (const path of ['/one', '/two']) {
      const channel = await bind.session.openProxy('st_1', { clientAddr: { ip: '203.0.113.9', port: 40000 } });
      const reply = await exchange(channel, `GET ${path} HTTP/1.1\r\nHost: t1.burrow.test\r\nConnection: close\r\n\r\n`);
      assert.match(reply, /^HTTP\/1\.1 200 OK\r\n/);
      assert.ok(reply.endsWith(`hello from ${path}`), reply);
    }
    await assert.rejects(bind.session.openProxy('st_9', { clientAddr: { ip: '203.0.113.9', port: 40000 } }), /no tunnel st_9/);

    ssh.child.kill('SIGTERM');
    const ended = await fixture.events.next(isEnded);
    assert.equal(ended.reason.kind, 'disconnected', ended.reason.message);
    assert.equal(ended.session.id, 'ss_1');
    assert.deepEqual(fixture.gateway.sessions(), []);
    await assert.rejects(bind.session.openProxy('st_1', { clientAddr: { ip: '203.0.113.9', port: 40000 } }), /has ended/);
    assert.deepEqual(fixture.errors, []);
  });

  test('the -R remote name is the domain; remote port 80 asks for plain HTTP', async (t) => {
    const fixture = await startSshGateway(t);
    const local = await localHttp(t);
    const ssh = runSsh(t, fixture, ['-R', `app.example.com:80:localhost:${local}`, 'v2@127.0.0.1', 'http']);
    await ssh.waitForStdout(/Forwarding  http:\/\/app\.example\.com\n/);
    const bind = await fixture.events.next(isBind);
    assert.deepEqual(bind.request, { proto: 'http', name: 'app.example.com', basicAuth: [], trafficPolicy: null });
    // A named forward is matched by name and the port asked for.
    const channel = await bind.session.openProxy('st_1', { clientAddr: { ip: '198.51.100.1', port: 1234 } });
    assert.match(await exchange(channel, 'GET /named HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n'), /hello from \/named$/);
  });

  test('tcp: a free address when the remote port is 0; the client learns its port; bytes flow both ways', async (t) => {
    const fixture = await startSshGateway(t);
    const local = await localEcho(t);
    const ssh = runSsh(t, fixture, ['-R', `0:localhost:${local}`, 'v2@127.0.0.1', 'tcp']);
    await ssh.waitForStdout(/Forwarding  tcp:\/\/tcp\.burrow\.test:20001\n/);
    await ssh.waitForStderr(new RegExp(`Allocated port 20001 for remote forward to localhost:${local}`));
    const bind = await fixture.events.next(isBind);
    assert.deepEqual(bind.request, { proto: 'tcp', name: '', basicAuth: [], trafficPolicy: null });
    const channel = await bind.session.openProxy('st_1', { clientAddr: { ip: '192.0.2.7', port: 5555 } });
    assert.equal(await exchange(channel, 'burrow\n', true), 'worrub\n');
  });

  test('tcp with a reserved address (host:port of -R), tls with a domain, a user name that is not a version', async (t) => {
    const fixture = await startSshGateway(t);
    const local = await localEcho(t);
    const tcp = runSsh(t, fixture, ['-R', `1.tcp.example.com:20002:localhost:${local}`, 'v2@127.0.0.1', 'tcp']);
    await tcp.waitForStdout(/Forwarding  tcp:\/\/1\.tcp\.example\.com:20002\n/);
    const tls = runSsh(t, fixture, ['-R', `secure.example.com:443:localhost:${local}`, 'someone@127.0.0.1', 'tls']);
    await tls.waitForStdout(/Forwarding  tls:\/\/secure\.example\.com\n/);
    const binds = await Promise.all([fixture.events.next((e) => isBind(e) && e.request.proto === 'tcp'), fixture.events.next((e) => isBind(e) && e.request.proto === 'tls')]);
    assert.deepEqual(binds.map((event) => (event as Extract<SshGatewayEvent, { kind: 'bind' }>).request.name), ['1.tcp.example.com:20002', 'secure.example.com']);
    assert.equal((binds[1] as Extract<SshGatewayEvent, { kind: 'bind' }>).session.login.user, 'someone');
    assert.equal(fixture.gateway.sessions().length, 2);
  });

  test('flags quoted for the remote side: --basic-auth and the header flags become the request', async (t) => {
    const fixture = await startSshGateway(t);
    const local = await localHttp(t);
    const ssh = runSsh(t, fixture, [
      '-R', `0:localhost:${local}`, 'v2@127.0.0.1',
      'http', "--basic-auth 'ann:correct horse'", '--basic-auth=bob:battery-staple', "--request-header-add='is-burrow: 1'", '--request-header-remove', 'referrer',
    ]);
    await ssh.waitForStdout(/Forwarding  https:\/\/t1\.burrow\.test\n/);
    const bind = await fixture.events.next(isBind);
    assert.deepEqual(bind.request.basicAuth, [
      { username: 'ann', password: 'correct horse' },
      { username: 'bob', password: 'battery-staple' },
    ]);
    assert.deepEqual(JSON.parse(bind.request.trafficPolicy!), {
      on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { 'is-burrow': '1' } } }, { type: 'remove-headers', config: { headers: ['referrer'] } }] }],
    });
  });

  test('a bind the handler refuses: the user reads why on stderr, ssh exits 1, the session ends', async (t) => {
    const fixture = await startSshGateway(t);
    fixture.handler.bind = async () => {
      throw new SshGatewayError("ERR_BURROW_1326: the credential's ACL does not allow binding 'forbidden.example.com' (rules: bind:*.allowed.example.com)");
    };
    const ssh = runSsh(t, fixture, ['-R', 'forbidden.example.com:443:localhost:8080', 'v2@127.0.0.1', 'http']);
    assert.equal(await ssh.exited, 1);
    assert.match(ssh.stderr(), /burrow: ERR_BURROW_1326: the credential's ACL does not allow binding 'forbidden\.example\.com' \(rules: bind:\*\.allowed\.example\.com\)\n/);
    assert.equal(ssh.stdout(), '');
    const ended = await fixture.events.next(isEnded);
    assert.equal(ended.reason.kind, 'command-ended');
    assert.match(ended.reason.message, /ERR_BURROW_1326/);
  });

  test('commands the grammar refuses are explained; --help prints the usage and exits 0', async (t) => {
    const fixture = await startSshGateway(t);
    const cases: [string[], RegExp][] = [
      [['-R', '0:localhost:80', 'v2@127.0.0.1', 'ftp'], /burrow: unknown command 'ftp': say http, tcp or tls\n/],
      [['-R', '0:localhost:80', 'v2@127.0.0.1', 'http', '--colour', 'red'], /burrow: unknown flag --colour for http \(see http --help\)\n/],
      [['-R', '0:localhost:80', 'v2@127.0.0.1', 'http', '--traffic-policy-url=https://example.com/p.yml'], /burrow: --traffic-policy-url is not supported by this gateway: Burrow runs offline/],
      [['-R', '8080:localhost:80', 'v2@127.0.0.1', 'http'], /burrow: remote port 8080: a http endpoint listens on 80 or 443 \(or say 0\)\n/],
      [['-R', '12345:localhost:22', 'v2@127.0.0.1', 'tcp'], /burrow: remote port 12345: a fixed TCP address needs its reserved host too/],
      [['-R', '0:localhost:80', 'v3@127.0.0.1', 'http'], /burrow: unknown command syntax version 'v3': this gateway speaks v2/],
      [['-R', '0:localhost:80', 'v2@127.0.0.1', 'http', "--basic-auth 'unterminated"], /burrow: unterminated ' quote at character 19 of the command\n/],
      [['v2@127.0.0.1', 'http'], /burrow: no remote forward was asked for: run ssh -R 0:localhost:<local port>/],
    ];
    for (const [args, message] of cases) {
      const ssh = runSsh(t, fixture, args);
      assert.equal(await ssh.exited, 1, args.join(' '));
      assert.match(ssh.stderr(), message);
    }
    const help = runSsh(t, fixture, ['-R', '0:localhost:80', 'v2@127.0.0.1', 'tcp', '--help']);
    assert.equal(await help.exited, 0);
    assert.match(help.stdout(), /^usage: ssh -R \[<remote name>:\]<remote port>:<local host>:<local port> v2@<host> -p <port> <http\|tcp\|tls> \[flags\]\n/);
    assert.match(help.stdout(), /--remote-addr VALUE/);
    assert.doesNotMatch(help.stdout(), /--basic-auth/);
    assert.equal(fixture.events.events.filter(isBind).length, 0);
    assert.equal(fixture.events.events.filter(isEnded).length, cases.length + 1);
  });

  test('an unknown key is refused at authentication, with the reason shown to a non-batch client', async (t) => {
    const fixture = await startSshGateway(t);
    const batch = runSsh(t, fixture, ['-R', '0:localhost:80', 'v2@127.0.0.1', 'http'], { key: fixture.unknownKey });
    assert.equal(await batch.exited, 255);
    assert.match(batch.stderr(), /v2@127\.0\.0\.1: Permission denied \(publickey/);

    const interactive = runSsh(t, fixture, ['-R', '0:localhost:80', 'v2@127.0.0.1', 'http'], { key: fixture.unknownKey, batch: false });
    assert.equal(await interactive.exited, 255);
    assert.ok(
      interactive.stderr().includes(`no SSH credential has the key ${fixture.unknownKey.fingerprint}: register your public key as an SSH credential (POST /ssh_credentials) and connect again.`),
      interactive.stderr(),
    );
    assert.match(interactive.stderr(), /Permission denied \(publickey\)/);
    // The key was refused when offered, before the client proved it holds it: no session was asked for.
    assert.deepEqual(fixture.events.events, []);
    assert.deepEqual(fixture.gateway.sessions(), []);
  });

  test('the server closes a session (credential deleted): the user reads why and ssh exits', async (t) => {
    const fixture = await startSshGateway(t);
    const ssh = runSsh(t, fixture, ['-R', '0:localhost:80', 'v2@127.0.0.1', 'http']);
    await ssh.waitForStdout(/Forwarding  /);
    const bind = await fixture.events.next(isBind);
    bind.session.close('the SSH credential of this session was deleted');
    assert.equal(await ssh.exited, 0);
    assert.match(ssh.stderr(), /burrow: the SSH credential of this session was deleted\n/);
    const ended = await fixture.events.next(isEnded);
    assert.deepEqual(ended.reason, { kind: 'closed-by-server', message: 'the SSH credential of this session was deleted' });
  });

  test('with a terminal (ssh -t), Ctrl+C ends the session', async (t) => {
    const fixture = await startSshGateway(t);
    const ssh = runSsh(t, fixture, ['-tt', '-R', '0:localhost:80', 'v2@127.0.0.1', 'http']);
    await ssh.waitForStdout(/Forwarding  https:\/\/t1\.burrow\.test\r\n/);
    ssh.child.stdin!.write('\x03');
    const ended = await fixture.events.next(isEnded);
    assert.deepEqual(ended.reason, { kind: 'disconnected', message: 'the user quit' });
    assert.equal(await ssh.exited, 0);
  });
});
