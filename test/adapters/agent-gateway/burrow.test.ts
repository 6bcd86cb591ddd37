import ngrok, { type Session, type SessionBuilder } from '@ngrok/ngrok';
import ngrokApi from '@ngrok/ngrok-api';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCli } from '../../../bin/burrow.ts';
import { generateCertificateAuthority } from '../../../lib/ca/certificate-authority.ts';
import { after, before, describe, test, type TestContext } from 'node:test';
import { startServer, type RunningServer } from '../../helpers.ts';
import { Recorder, until } from './helpers.ts';

/**
 * The vendor's own agent (@ngrok/ngrok 1.7.0) against `burrow serve --agent-addr 127.0.0.1:0`,
 * trusting the CA served at /_burrow/ca.pem, with a tunnel credential's token as its authtoken;
 * the official API client (@ngrok/ngrok-api) lists what it started. Commands go through plain
 * fetch (the 0.11.0 client posts the bare id as their body: docs/compatibility.md).
 */

const { Ngrok } = ngrokApi as unknown as { Ngrok: new (config: { apiToken: string; baseUrl: string }) => any };

let server: RunningServer;
let client: any;
let caPem: string;
let agentAddr: string;

before(async () => {
  server = await startServer(['--quiet', '--agent-addr', '127.0.0.1:0']);
  client = new Ngrok({ apiToken: server.token!, baseUrl: server.url });
  const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
  agentAddr = health.body.listeners.agent;
  caPem = await (await fetch(`${server.url}/_burrow/ca.pem`)).text();
});

after(async () => {
  await server?.stop();
});

/** The vendor's agent, connected to the gateway with `token`; closed after the test. */
async function connect(t: TestContext, token: string, configure: (builder: SessionBuilder) => SessionBuilder = (b) => b): Promise<Session> {
  let done = false;
  t.after(() => void (done = true));
  const builder = new ngrok.SessionBuilder().authtoken(token).serverAddr(agentAddr.replace('127.0.0.1', 'localhost')).caCert(Buffer.from(caPem)).handleDisconnection(() => !done);
  const session = await configure(builder).connect();
  t.after(() => session.close().catch(() => undefined));
  return session;
}

const sessions = async () => (await client.tunnelSessions.list()) as any[];
const command = (id: string, name: string) =>
  fetch(`${server.url}/tunnel_sessions/${id}/${name}`, { method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}' });

describe('burrow serve --agent-addr', () => {
  test('health lists the listeners; the CA is served without a token and signs the gateway', async () => {
    const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
    assert.equal(health.body.listeners.api, new URL(server.url).host);
    assert.match(health.body.listeners.agent, /^127\.0\.0\.1:\d+$/);
    assert.equal(health.body.listeners.ssh, null);
    const answer = await fetch(`${server.url}/_burrow/ca.pem`);
    assert.equal(answer.headers.get('content-type'), 'application/x-pem-file');
    const ca = new X509Certificate(caPem);
    assert.equal(ca.ca, true);
    await server.outputUntil((lines) => lines.some((line) => line.startsWith(`agent gateway: ${health.body.listeners.agent} `)));
  });
});

describe('the agent gateway options', () => {
  test('--agent-addr HOST:PORT (or BURROW_AGENT_ADDR), --region, --public-host, --ca-cert with --ca-key', () => {
    assert.equal(parseCli([], {}).agentAddr, undefined, 'off unless given');
    assert.deepEqual(parseCli(['--agent-addr', '0.0.0.0:4443'], {}).agentAddr, { host: '0.0.0.0', port: 4443 });
    assert.deepEqual(parseCli(['--agent-addr', '[::1]:0'], {}).agentAddr, { host: '::1', port: 0 });
    assert.deepEqual(parseCli([], { BURROW_AGENT_ADDR: 'localhost:0' }).agentAddr, { host: 'localhost', port: 0 });
    assert.throws(() => parseCli(['--agent-addr', '4443'], {}), /^Error: --agent-addr must be HOST:PORT, e\.g\. 127\.0\.0\.1:4443 or \[::1\]:0 \(got 4443\)$/);
    assert.throws(() => parseCli(['--agent-addr', 'host:70000'], {}), /--agent-addr must be HOST:PORT/);
    assert.equal(parseCli(['--region', 'eu'], {}).region, 'eu');
    assert.throws(() => parseCli(['--region', 'mars'], {}), /^Error: --region must be one of us, eu, .* \(got mars\)$/);
    assert.throws(() => parseCli(['--public-host', 'a b'], {}), /--public-host must be a DNS name or an IP address/);
    assert.throws(() => parseCli(['--ca-cert', 'ca.pem'], {}), /^Error: --ca-cert and --ca-key go together/);
    assert.throws(() => parseCli(['--ca-cert', '/nonexistent/ca.pem', '--ca-key', '/nonexistent/key.pem'], {}), /^Error: --ca-cert \/nonexistent\/ca\.pem: ENOENT/);
  });

  test('--ca-cert/--ca-key: the CA brought is served and signs the gateway; a key of another CA is refused', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'burrow-ca-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const [ca, other] = await Promise.all([generateCertificateAuthority({ now: new Date(), commonName: 'Brought CA' }), generateCertificateAuthority({ now: new Date() })]);
    writeFileSync(join(dir, 'ca.pem'), ca.certificatePem);
    writeFileSync(join(dir, 'ca.key'), ca.privateKeyPem);
    writeFileSync(join(dir, 'other.key'), other.privateKeyPem);
    assert.throws(() => parseCli(['--ca-cert', join(dir, 'ca.pem'), '--ca-key', join(dir, 'other.key')], {}), /^Error: --ca-cert\/--ca-key: the CA private key does not belong to the CA certificate$/);
    const brought = await startServer(['--quiet', '--agent-addr', '127.0.0.1:0', '--ca-cert', join(dir, 'ca.pem'), '--ca-key', join(dir, 'ca.key')]);
    t.after(() => brought.stop());
    assert.equal(await (await fetch(`${brought.url}/_burrow/ca.pem`)).text(), ca.certificatePem);
    const credential = (await brought.request('POST', '/credentials', {})).body;
    const addr = (await brought.request('GET', '/_burrow/health', undefined, { token: null })).body.listeners.agent;
    const session = await new ngrok.SessionBuilder().authtoken(credential.token).serverAddr(addr).caCert(Buffer.from(ca.certificatePem)).handleDisconnection(() => false).connect();
    t.after(() => session.close().catch(() => undefined));
    assert.equal((await brought.request('GET', '/tunnel_sessions')).body.tunnel_sessions.length, 1);
  });
});

describe('sessions of the real agent', () => {
  test('the session is listed with what the agent said; binds become tunnels and endpoints; they go with it', async (t) => {
    const credential = await client.credentials.create({ description: 'agent' });
    const session = await connect(t, credential.token, (b) => b.metadata('build 42'));
    const [listed] = await until(sessions, (list) => list.length === 1, 'the session listed');
    assert.equal(listed.agentVersion, '1.7.0');
    assert.equal(listed.os, 'linux');
    assert.equal(listed.metadata, 'build 42');
    assert.equal(listed.ip, '127.0.0.1');
    assert.equal(listed.region, 'us');
    assert.equal(listed.transport, 'burrow/v2');
    assert.equal(listed.credential.id, credential.id);

    const https = await session.httpEndpoint().metadata('web').listen(false);
    assert.match(https.url() ?? '', /^https:\/\/[0-9a-f]{16}\.burrow\.internal$/);
    const tcp = await session.tcpEndpoint().listen(false);
    assert.match(tcp.url() ?? '', /^tcp:\/\/0\.tcp\.us\.burrow\.internal:\d+$/);
    const tunnels = (await client.tunnels.list()) as any[];
    assert.deepEqual(tunnels.map((tunnel) => tunnel.publicUrl).sort(), [https.url(), tcp.url()].sort());
    assert.ok(tunnels.every((tunnel) => tunnel.tunnelSession.id === listed.id));
    assert.equal(tunnels.find((tunnel) => tunnel.publicUrl === https.url()).metadata, 'web');
    const endpoints = (await client.endpoints.list()) as any[];
    assert.deepEqual(endpoints.map((endpoint) => endpoint.url).sort(), [https.url(), tcp.url()].sort());

    // A labeled bind joins the tunnel group backends whose labels it has.
    const backend = await client.backends.tunnelGroupBackends.create({ labels: { edge: 'web' } });
    const labeled = await session.labeledListener().label('edge', 'web').listen(false);
    assert.deepEqual((await client.backends.tunnelGroupBackends.get(backend.id)).tunnels.map((tunnel: any) => tunnel.id), [labeled.id()]);
    await labeled.close();
    await until(async () => (await client.backends.tunnelGroupBackends.get(backend.id)).tunnels as any[], (list) => list.length === 0, 'the labeled tunnel gone from the backend');
    await client.backends.tunnelGroupBackends.delete(backend.id).catch(() => undefined);

    await https.close();
    await until(async () => (await client.tunnels.list()) as any[], (list) => list.length === 1, 'the closed listener unbound');
    // Deleting the credential ends the session; the agent cannot come back with its token.
    await client.credentials.delete(credential.id).catch(() => undefined);
    await until(sessions, (list) => list.length === 0, 'the session ended');
    assert.deepEqual(await client.tunnels.list(), []);
    assert.deepEqual(await client.endpoints.list(), []);
  });

  test('a well-formed unknown token is 107, a malformed one 105, each with a message saying why', async (t) => {
    await assert.rejects(connect(t, `${'A'.repeat(27)}_${'b'.repeat(27)}`), (error: Error) => {
      assert.match(error.message, /The authtoken you specified is not valid: not the token of a tunnel credential/);
      assert.match(error.message, /ERR_BURROW_107/);
      return true;
    });
    await assert.rejects(connect(t, 'badtoken'), (error: Error) => {
      assert.match(error.message, /token: not of the shape of a tunnel credential's token/);
      assert.match(error.message, /ERR_BURROW_105/);
      assert.doesNotMatch(error.message, /badtoken/, 'the token is not echoed');
      return true;
    });
    assert.deepEqual(await sessions(), []);
  });

  test('a domain with invalid characters is 326, before any reservation check', async (t) => {
    const credential = await client.credentials.create({});
    const session = await connect(t, credential.token);
    await assert.rejects(session.httpEndpoint().domain('1.21 gigawatts').listen(false), (error: Error) => {
      assert.match(error.message, /hostname: invalid character ' ' in '1\.21 gigawatts'/);
      assert.match(error.message, /ERR_BURROW_326/);
      return true;
    });
    await session.close();
    await client.credentials.delete(credential.id).catch(() => undefined);
    await until(sessions, (list) => list.length === 0, 'the session ended');
  });

  test("a bind outside the credential's ACL, or on a domain the account has not reserved, is refused naming it", async (t) => {
    const credential = await client.credentials.create({ acl: ['bind:*.example.com'] });
    await client.reservedDomains.create({ domain: 'app.example.com' });
    const session = await connect(t, credential.token);
    const allowed = await session.httpEndpoint().domain('app.example.com').listen(false);
    assert.equal(allowed.url(), 'https://app.example.com');
    await assert.rejects(session.httpEndpoint().domain('other.example.com').listen(false), (error: Error) => {
      assert.match(error.message, /hostname: other\.example\.com is not a reserved domain of this account/);
      assert.match(error.message, /ERR_BURROW_9015/);
      return true;
    });
    await assert.rejects(session.httpEndpoint().listen(false), (error: Error) => {
      assert.match(error.message, new RegExp(`hostname: tunnel credential '${credential.id}' may not bind [0-9a-f]{16}\\.burrow\\.internal; its acl: bind:\\*\\.example\\.com`));
      assert.match(error.message, /ERR_BURROW_9014/);
      return true;
    });
    await session.close();
    await client.reservedDomains.delete((await client.reservedDomains.list())[0].id).catch(() => undefined);
    await client.credentials.delete(credential.id).catch(() => undefined);
    await until(sessions, (list) => list.length === 0, 'the session ended');
  });

  test("an enforced agent IP restriction refuses the agent's address", async (t) => {
    const policy = await client.ipPolicies.create({});
    await client.ipPolicyRules.create({ ipPolicyId: policy.id, cidr: '10.0.0.0/8', action: 'allow' });
    const restriction = await client.ipRestrictions.create({ type: 'agent', enforced: true, ipPolicyIds: [policy.id] });
    t.after(async () => {
      await client.ipRestrictions.delete(restriction.id).catch(() => undefined);
    });
    const credential = await client.credentials.create({});
    await assert.rejects(connect(t, credential.token), (error: Error) => {
      assert.match(error.message, new RegExp(`ip: agent IP restriction '${restriction.id}' denies 127\\.0\\.0\\.1`));
      assert.match(error.message, /ERR_BURROW_220/);
      return true;
    });
    await client.ipRestrictions.delete(restriction.id).catch(() => undefined);
    await client.credentials.delete(credential.id).catch(() => undefined);
  });
});

describe('commands reach the real agent', () => {
  test('update and stop reach its handlers; a stopped agent leaves the list', async (t) => {
    const credential = await client.credentials.create({});
    const calls = new Recorder<string>();
    // As the vendor's CLI does, the agent exits on stop: it does not reconnect.
    let stopped = false;
    const stop = () => {
      stopped = true;
      calls.push('stop');
    };
    await connect(t, credential.token, (b) => b.handleStopCommand(stop).handleUpdateCommand((update) => calls.push(`update ${update.version}`)).handleDisconnection(() => !stopped));
    const [session] = await until(sessions, (list) => list.length === 1, 'the session listed');
    assert.equal((await command(session.id, 'update')).status, 204);
    await calls.next((call) => call.startsWith('update'));
    assert.equal((await command(session.id, 'stop')).status, 204);
    await calls.next((call) => call === 'stop');
    await until(sessions, (list) => list.length === 0, 'the stopped session gone');
    await client.credentials.delete(credential.id).catch(() => undefined);
  });

  test('after a restart the agent reconnects under a new session id', async (t) => {
    const credential = await client.credentials.create({});
    const calls = new Recorder<string>();
    await connect(t, credential.token, (b) => b.handleRestartCommand(() => calls.push('restart')));
    const [first] = await until(sessions, (list) => list.length === 1, 'the session listed');
    assert.equal((await command(first.id, 'restart')).status, 204);
    await calls.next((call) => call === 'restart');
    const [second] = await until(sessions, (list) => list.length === 1 && list[0].id !== first.id, 'the agent back under a new id');
    assert.equal(second.credential.id, credential.id);
    await client.credentials.delete(credential.id).catch(() => undefined);
    await until(sessions, (list) => list.length === 0, 'the session ended');
  });

  test('an agent without handlers answers unsupported: 805, 804, 806 with its own reason', async (t) => {
    const credential = await client.credentials.create({});
    await connect(t, credential.token);
    const [session] = await until(sessions, (list) => list.length === 1, 'the session listed');
    for (const [name, code] of [['stop', 805], ['restart', 804], ['update', 806]] as const) {
      const answer = await command(session.id, name);
      assert.equal(answer.status, 400);
      const body = (await answer.json()) as { error_code: string; msg: string };
      assert.equal(body.error_code, `ERR_BURROW_${code}`);
      assert.match(body.msg, new RegExp(`the agent of tunnel session '${session.id}' does not support remote ${name}: the agent has not defined a callback for this operation`));
    }
    await client.credentials.delete(credential.id).catch(() => undefined);
    await until(sessions, (list) => list.length === 0, 'the session ended');
  });
});
