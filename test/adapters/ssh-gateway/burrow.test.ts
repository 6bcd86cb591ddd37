import ngrokApi from '@ngrok/ngrok-api';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseCli } from '../../../bin/burrow.ts';
import { sshKeygen, tempDir } from '../../fixtures/openssh.ts';
import { startServer, type RunningServer } from '../../helpers.ts';
import { until } from '../agent-gateway/helpers.ts';
import { callIngress } from '../../fixtures/live-ingress.ts';
import { createServer } from 'node:http';
import { OPENSSH_MISSING, runSsh, type SshKey, type SshTarget } from './helpers.ts';
import { keyFingerprint } from '../../../adapters/ssh-gateway/index.ts';

/**
 * The real OpenSSH client (`ssh -R`) against `burrow serve --ssh-addr 127.0.0.1:0`, with a public
 * key registered as an SSH credential; the official API client (@ngrok/ngrok-api) lists the
 * session, its tunnel and endpoint, and deleting the credential ends it.
 */

const { Ngrok } = ngrokApi as unknown as { Ngrok: new (config: { apiToken: string; baseUrl: string }) => any };
const skip = OPENSSH_MISSING ? 'OpenSSH (ssh, ssh-keygen) is not installed' : false;

let server: RunningServer;
let client: any;
let target: Omit<SshTarget, 'key'>;
const dir = tempDir('burrow-ssh-serve-');

function key(name: string): SshKey {
  const made = sshKeygen(dir.path, name, 'ed25519');
  return { ...made, fingerprint: keyFingerprint(Buffer.from(made.publicKey.split(' ')[1]!, 'base64')) };
}

before(async () => {
  if (skip) return;
  server = await startServer(['--quiet', '--ssh-addr', '127.0.0.1:0', '--http-ingress-addr', '127.0.0.1:0']);
  client = new Ngrok({ apiToken: server.token!, baseUrl: server.url });
  const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
  const [host, port] = String(health.body.listeners.ssh).split(':');
  assert.equal(host, '127.0.0.1');
  const banner = await server.outputUntil((lines) => lines.some((line) => line.startsWith('ssh gateway: ')));
  const hostKey = /host key (\S+ [A-Za-z0-9+/=]+)/.exec(banner.find((line) => line.startsWith('ssh gateway: '))!)![1]!;
  target = { port: Number(port), dir: dir.path, knownHosts: `[127.0.0.1]:${port} ${hostKey}` };
});

after(async () => {
  await server?.stop();
  dir.remove();
});

const sessions = async () => (await client.tunnelSessions.list()) as any[];
const command = (id: string, name: string) =>
  fetch(`${server.url}/tunnel_sessions/${id}/${name}`, { method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}' });

describe('burrow serve --ssh-addr', { skip }, () => {
  test('--ssh-addr HOST:PORT (or BURROW_SSH_ADDR), off unless given', () => {
    assert.equal(parseCli([], {}).sshAddr, undefined);
    assert.deepEqual(parseCli(['--ssh-addr', '0.0.0.0:2222'], {}).sshAddr, { host: '0.0.0.0', port: 2222 });
    assert.deepEqual(parseCli([], { BURROW_SSH_ADDR: '[::1]:0' }).sshAddr, { host: '::1', port: 0 });
    assert.throws(() => parseCli(['--ssh-addr', '2222'], {}), /^Error: --ssh-addr must be HOST:PORT/);
  });

  test('a registered key opens a session with transport ssh; its tunnel and endpoint are listed; closing ssh ends them', async (t) => {
    const mine = key('owner');
    const credential = await client.sshCredentials.create({ publicKey: mine.publicKey, description: 'laptop' });
    const ssh = runSsh(t, { ...target, key: mine }, ['-R', '0:localhost:8080', 'v2@127.0.0.1', 'http']);
    const [, url] = await ssh.waitForStdout(/Forwarding  (https:\/\/\S+)\n/);
    const [listed] = await until(sessions, (list) => list.length === 1, 'the session listed');
    assert.equal(listed.transport, 'ssh');
    assert.equal(listed.credential.id, credential.id);
    assert.equal(listed.ip, '127.0.0.1');
    assert.match(listed.agentVersion, /^OpenSSH_/);
    const tunnels = (await client.tunnels.list()) as any[];
    assert.deepEqual(tunnels.map((tunnel) => [tunnel.publicUrl, tunnel.tunnelSession.id]), [[url, listed.id]]);
    // The client does not tell the server its local target (8080 here): nothing is shown, never an invented http://localhost:80.
    assert.deepEqual(tunnels.map((tunnel) => tunnel.forwardsTo), ['']);
    const endpoints = (await client.endpoints.list()) as any[];
    const endpoint = endpoints.find((candidate) => candidate.url === url);
    assert.ok(endpoint, JSON.stringify(endpoints));
    assert.equal(endpoint.upstreamUrl, '', JSON.stringify(endpoint));

    // The log tells it, --quiet as the server is: opened with the client's software and address, closed with why.
    await server.outputUntil((lines) => lines.some((line) => new RegExp(`^\\S+Z agent session ${listed.id} opened: ssh OpenSSH_\\S+ from 127\\.0\\.0\\.1:\\d+, account ac_\\w+$`).test(line)));

    ssh.child.kill('SIGTERM');
    await until(sessions, (list) => list.length === 0, 'the session gone');
    await server.outputUntil((lines) => lines.some((line) => new RegExp(`^\\S+Z agent session ${listed.id} closed: disconnected`).test(line)));
    assert.deepEqual(await client.tunnels.list(), []);
    await client.sshCredentials.delete(credential.id).catch(() => undefined);
  });

  test('its endpoint serves traffic through the ingress, down the ssh client to its local service, with the header flags applied; gone with the session', async (t) => {
    const mine = key('traffic');
    const credential = await client.sshCredentials.create({ publicKey: mine.publicKey });
    t.after(() => client.sshCredentials.delete(credential.id).catch(() => undefined));
    const app = createServer((req, res) => res.end(`${req.method} ${req.url} for ${req.headers['x-forwarded-for']} ${req.headers['x-from-flag'] ?? ''}`));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      app.closeAllConnections();
      app.close();
    });
    const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
    const ingressPort = Number(String(health.body.listeners.http_ingress).split(':')[1]);
    const local = (app.address() as { port: number }).port;
    const ssh = runSsh(t, { ...target, key: mine }, ['-R', `0:localhost:${local}`, 'v2@127.0.0.1', 'http', '--request-header-add', 'x-from-flag:yes']);
    const [, url] = await ssh.waitForStdout(/Forwarding  (https:\/\/\S+)\n/);
    const host = new URL(url!).host;

    for (const path of ['/one', '/two?x=1']) {
      const answer = await callIngress(ingressPort, host, path, { method: 'POST', body: Buffer.from('body') });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.text, `POST ${path} for 127.0.0.1 yes`);
    }

    const [live] = await sessions();
    ssh.child.kill('SIGTERM');
    await until(sessions, (list) => list.length === 0, 'the session gone');
    // --quiet: the line of the session's close, none of the requests it carried (those would come before it).
    const lines = await server.outputUntil((lines) => lines.some((line) => line.includes(` agent session ${live.id} closed: `)));
    assert.ok(!lines.some((line) => line.includes(`${host}/one`) || line.includes(`${host}/two`)), lines.join('\n'));
    const offline = await callIngress(ingressPort, host, '/one');
    assert.equal(offline.status, 404);
    assert.equal(offline.headers['ngrok-error-code'], 'ERR_BURROW_3200');
  });

  test("the credential's ACL applies to the bind; deleting the credential ends the session and the user reads why", async (t) => {
    const mine = key('acl');
    const credential = await client.sshCredentials.create({ publicKey: mine.publicKey, acl: ['bind:*.allowed.burrow.internal'] });
    const refused = runSsh(t, { ...target, key: mine }, ['-R', 'elsewhere.burrow.internal:443:localhost:8080', 'v2@127.0.0.1', 'http']);
    assert.equal(await refused.exited, 1);
    assert.match(refused.stderr(), new RegExp(`burrow: .*SSH credential '${credential.id}' may not bind elsewhere\\.burrow\\.internal.* \\(ERR_BURROW_\\d+\\)\\n`));

    const ssh = runSsh(t, { ...target, key: mine }, ['-R', 'app.allowed.burrow.internal:443:localhost:8080', 'v2@127.0.0.1', 'http']);
    await ssh.waitForStdout(/Forwarding  https:\/\/app\.allowed\.burrow\.internal\n/);
    await until(sessions, (list) => list.length === 1, 'the session listed');
    await client.sshCredentials.delete(credential.id).catch(() => undefined);
    assert.equal(await ssh.exited, 0);
    assert.match(ssh.stderr(), /burrow: tunnel session \S+ has ended/);
    await until(sessions, (list) => list.length === 0, 'the session gone');
  });

  test('POST /tunnel_sessions/{id}/stop closes the connection; restart and update are unsupported for an SSH client', async (t) => {
    const mine = key('commands');
    const credential = await client.sshCredentials.create({ publicKey: mine.publicKey });
    t.after(() => client.sshCredentials.delete(credential.id).catch(() => undefined));
    const ssh = runSsh(t, { ...target, key: mine }, ['-R', '0:localhost:8080', 'v2@127.0.0.1', 'http']);
    await ssh.waitForStdout(/Forwarding  /);
    const [listed] = await until(sessions, (list) => list.length === 1, 'the session listed');
    for (const kind of ['restart', 'update']) {
      const answer = await command(listed.id, kind);
      assert.equal(answer.status, 400, kind);
      assert.match((await answer.json()).msg, new RegExp(`does not support remote ${kind}: an SSH client \\(ssh -R\\) cannot ${kind}`));
    }
    assert.equal((await command(listed.id, 'stop')).status, 204);
    assert.equal(await ssh.exited, 0);
    assert.match(ssh.stderr(), /burrow: the session was stopped through the API\n/);
    await until(sessions, (list) => list.length === 0, 'the session gone');
  });

  test('a key registered in two accounts logs in as the account it names', async (t) => {
    const shared = key('shared');
    const other = (await server.request('POST', '/_burrow/accounts', {}, { token: server.operatorToken! })).body;
    const first = await client.sshCredentials.create({ publicKey: shared.publicKey });
    t.after(() => client.sshCredentials.delete(first.id).catch(() => undefined));
    assert.equal((await server.request('POST', '/ssh_credentials', { public_key: shared.publicKey }, { token: other.token })).status, 201);
    const ambiguous = runSsh(t, { ...target, key: shared }, ['-R', '0:localhost:8080', 'v2@127.0.0.1', 'http'], { batch: false });
    assert.equal(await ambiguous.exited, 255);
    assert.match(ambiguous.stderr(), /is an SSH credential of 2 accounts \(ac_\w+, ac_\w+\): log in as <account id>@host to choose one/);
    const chosen = runSsh(t, { ...target, key: shared }, ['-R', '0:localhost:8080', `${other.account_id}@127.0.0.1`, 'http']);
    await chosen.waitForStdout(new RegExp(`Account     ${other.account_id}\n`));
    assert.deepEqual(await sessions(), [], 'the session is the other account\'s');
    chosen.child.kill('SIGTERM');
    await chosen.exited;
  });

  test('an unknown key is refused', async (t) => {
    const stranger = key('stranger');
    const ssh = runSsh(t, { ...target, key: stranger }, ['-R', '0:localhost:8080', 'v2@127.0.0.1', 'http'], { batch: false });
    assert.equal(await ssh.exited, 255);
    assert.ok(ssh.stderr().includes(`no SSH credential has the key ${stranger.fingerprint}`), ssh.stderr());
    assert.deepEqual(await sessions(), []);
  });
});
