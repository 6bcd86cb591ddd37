import type { Session } from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http2 from 'node:http2';
import pg from 'pg';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, createServer as createNetServer } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import type { Duplex } from 'node:stream';
import { after, before, describe, test, type TestContext } from 'node:test';
import { generateCertificateAuthority, signServerCertificate } from '../../../lib/index.ts';
import { createDatabase, POSTGRES_MISSING, testCluster } from '../../fixtures/postgres-cluster.ts';
import { bindWhenFree, connectAgent, startClusterNode, type ClusterNode as Node } from '../../fixtures/burrow-cluster.ts';
import { listenLocally } from '../ingress/fixtures.ts';
import { callIngress, seen, startApp } from '../ingress/helpers.ts';

/**
 * Three `burrow serve` processes on one PostgreSQL database, each with an agent gateway, an
 * ingress (HTTP and TLS) and a peer link (issue 45, item 1): the vendor's agent SDK connects to A,
 * and requests through A's, B's and C's ingress all reach its app (B and C relay them to A over
 * the peer link). kill -9 A: its endpoint answers the offline page through B and C; the agent
 * connects to B instead and is reached through B and C again. The peer port refuses clients
 * without a certificate of the instance CA. Figures printed: the time from the kill to the
 * offline page, and from the new bind to traffic flowing.
 */

const cluster = await testCluster();
const OPERATOR = 'cluster-traffic-operator-token';

describe('three servers on one PostgreSQL database are one ingress', { skip: cluster ? false : POSTGRES_MISSING }, () => {
  let url: string;
  let a: Node;
  let b: Node;
  let c: Node;
  let token: string;
  let caPem: string;
  const sessions: Session[] = [];

  const start = () => startClusterNode(url, OPERATOR);

  before(async () => {
    url = await createDatabase(cluster!, 'cluster');
    a = await start();
    [b, c] = await Promise.all([start(), start()]);
    token = a.server.token!;
    caPem = await (await fetch(`${a.server.url}/_burrow/ca.pem`)).text();
  });

  after(async () => {
    await Promise.all(sessions.map((session) => session.close().catch(() => undefined)));
    await Promise.all([a, b, c].map((node) => node?.server.stop('SIGKILL')));
  });

  async function agentOn(node: Node): Promise<Session> {
    const session = await connectAgent(node, token, caPem);
    sessions.push(session);
    return session;
  }

  const https = (node: Node, host: string, path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port: node.tls, servername: host, path, headers: { host }, ca: caPem, agent: false }, async (res) => {
        const chunks: Buffer[] = [];
        for await (const chunk of res) chunks.push(chunk as Buffer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
      });
      req.on('error', reject).end();
    });

  async function websocket(node: Node, host: string): Promise<string> {
    const req = httpRequest({ host: '127.0.0.1', port: node.http, path: '/ws', agent: false, headers: { host, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' } });
    req.end();
    const [, socket] = (await once(req, 'upgrade')) as [IncomingMessage, Duplex];
    socket.write('hello through the peer link');
    const [echoed] = (await once(socket, 'data')) as [Buffer];
    socket.destroy();
    return echoed.toString();
  }

  const hostOf = (endpoint: string) => new URL(endpoint).hostname;
  const portOf = (hostport: string) => Number(hostport.slice(hostport.lastIndexOf(':') + 1));

  /** An API call through `node` with the account's key; a refusal fails the test. */
  async function api(node: Node, method: string, path: string, body?: unknown) {
    const res = await node.server.request(method, path, body, { token });
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** A TCP service answering each chunk with `prefix` and the chunk. */
  async function startEcho(t: TestContext, prefix: string) {
    const echo = await listenLocally(createNetServer((socket) => socket.on('data', (chunk: Buffer) => socket.write(`${prefix}${chunk}`)).on('error', () => socket.destroy())));
    t.after(() => echo.close());
    return echo;
  }

  test('an agent on A is reached through A, B and C: HTTP, HTTPS, WebSocket and TLS passthrough; its policy runs once, on the server that took the request', async (t: TestContext) => {
    const app = await startApp(t);
    const session = await agentOn(a);
    const policy = JSON.stringify({ on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-policy-ran': 'once' } } }] }] });
    const host = hostOf((await session.httpEndpoint().trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${app}`)).url()!);
    for (const node of [a, b, c]) {
      const answer = await callIngress(node.http, { host, path: '/plain' });
      assert.equal(answer.status, 200, answer.body.toString());
      assert.equal(seen(answer).url, '/plain');
      assert.equal(seen(answer).headers['x-policy-ran'], 'once');
      const secure = await https(node, host, '/secure');
      assert.equal(secure.status, 200, secure.body);
      assert.equal(JSON.parse(secure.body).url, '/secure');
      assert.equal(await websocket(node, host), 'HELLO THROUGH THE PEER LINK');
    }

    const ownCa = await generateCertificateAuthority({ now: new Date() });
    const tlsHost = `pass-${Date.now()}.example.com`;
    const appCertificate = await signServerCertificate(ownCa, { now: new Date(), dnsNames: [tlsHost] });
    const tlsApp = await listenLocally(
      createTlsServer({ cert: appCertificate.certificatePem, key: appCertificate.privateKeyPem }, (socket) => {
        socket.on('data', (chunk: Buffer) => socket.write(`echo: ${chunk}`));
        socket.on('error', () => socket.destroy());
      }),
    );
    t.after(() => tlsApp.close());
    assert.equal((await a.server.request('POST', '/reserved_domains', { domain: tlsHost }, { token })).status, 201);
    await session.tlsEndpoint().domain(tlsHost).listenAndForward(`tcp://127.0.0.1:${tlsApp.port}`);
    for (const node of [b, c]) {
      const client = tlsConnect({ host: '127.0.0.1', port: node.tls, servername: tlsHost, ca: ownCa.certificatePem });
      await once(client, 'secureConnect');
      client.write('ping');
      const [echoed] = (await once(client, 'data')) as [Buffer];
      client.destroy();
      assert.equal(String(echoed), 'echo: ping');
    }
  });

  test("forward-internal from a cloud endpoint reaches an internal endpoint whose agent is on another server", async (t: TestContext) => {
    const app = await startApp(t, 'internal app');
    const n = Date.now();
    const [front, internal] = [`front-${n}.example.com`, `https://api-${n}.internal`];
    assert.equal((await b.server.request('POST', '/reserved_domains', { domain: front }, { token })).status, 201);
    const policy = JSON.stringify({ on_http_request: [{ actions: [{ type: 'forward-internal', config: { url: internal } }] }] });
    assert.equal((await b.server.request('POST', '/endpoints', { type: 'cloud', url: `https://${front}`, traffic_policy: policy }, { token })).status, 201);
    await (await agentOn(c)).httpEndpoint().domain(hostOf(internal)).listenAndForward(`http://127.0.0.1:${app}`);
    const answer = await callIngress(b.http, { host: front, path: '/inside' });
    assert.equal(answer.status, 200, answer.body.toString());
    assert.deepEqual([seen(answer).app, seen(answer).url], ['internal app', '/inside']);
    // Internal endpoints take no traffic from clients, through any server.
    assert.equal((await callIngress(b.http, { host: hostOf(internal) })).headers['ngrok-error-code'], 'ERR_BURROW_3200');
  });

  test("a TCP endpoint of the agent on A, and a TCP edge whose labeled tunnel is on A, answer on the same ports of another server's ingress (on 127.0.0.2), relayed to A", async (t: TestContext) => {
    const d = await startClusterNode(url, OPERATOR, '127.0.0.2');
    t.after(() => d.server.stop('SIGKILL'));
    const session = await agentOn(a);
    const listener = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${(await startEcho(t, 'tcp echo: ')).port}`);
    const label = `echo-${Date.now()}`;
    await session.labeledListener().label('service', label).listenAndForward(`tcp://127.0.0.1:${(await startEcho(t, 'tcp edge: ')).port}`);
    const group = await api(c, 'POST', '/backends/tunnel_group', { labels: { service: label } });
    const reserved = await api(c, 'POST', '/reserved_addrs', { region: 'us' });
    await api(c, 'POST', '/edges/tcp', { hostports: [reserved.addr], backend: { backend_id: group.id } });
    // D listens for both at its next look at the store (every 5 s); until then the ports are closed.
    const started = performance.now();
    const answered = async (port: number) => {
      for (;;) {
        const answer = await new Promise<string | undefined>((resolve) => {
          const socket = netConnect({ host: '127.0.0.2', port }, () => socket.write('ping'));
          socket.once('data', (chunk: Buffer) => {
            socket.destroy();
            resolve(String(chunk));
          });
          socket.once('error', () => resolve(undefined));
          socket.once('close', () => resolve(undefined));
        });
        if (answer !== undefined) return answer;
        assert.ok(performance.now() - started < 15_000, `D did not answer on port ${port} within 15 s`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    assert.equal(await answered(Number(new URL(listener.url()!).port)), 'tcp echo: ping');
    console.log(`# cluster: a TCP endpoint bound on A answered through D after ${(performance.now() - started).toFixed(0)} ms`);
    assert.equal(await answered(portOf(reserved.addr)), 'tcp edge: ping');
  });

  test("an HTTPS edge's tunnel group backend reaches labeled agents on any server: through B and C to A's, shared with C's; the edge's modules run once; a closed tunnel leaves the group everywhere; a TLS edge alike", async (t: TestContext) => {
    const host = `edge-${Date.now()}.example.com`;
    // Configured through C, the agent's tunnel bound on A: the edge and its backend are shared records.
    const group = await api(c, 'POST', '/backends/tunnel_group', { labels: { app: `shop-${host}` } });
    const edge = await api(c, 'POST', '/edges/https', { hostports: [`${host}:443`] });
    const route = await api(c, 'POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/', backend: { backend_id: group.id } });
    await api(c, 'PUT', `/edges/https/${edge.id}/routes/${route.id}/request_headers`, { add: { 'x-edge-ran': 'once' } });
    const labeled = async (node: Node, name: string) => {
      const session = await agentOn(node);
      return session.labeledListener().label('app', `shop-${host}`).listenAndForward(`http://127.0.0.1:${await startApp(t, name)}`);
    };
    const onA = await labeled(a, 'on A');
    for (const node of [b, c]) {
      const answer = await callIngress(node.http, { host, path: '/cart' });
      assert.equal(answer.status, 200, answer.body.toString());
      assert.deepEqual([seen(answer).app, seen(answer).url, seen(answer).headers['x-edge-ran']], ['on A', '/cart', 'once']);
      const secure = await https(node, host, '/secure');
      assert.equal(secure.status, 200, secure.body);
      assert.deepEqual([JSON.parse(secure.body).app, JSON.parse(secure.body).url], ['on A', '/secure']);
    }

    // A second labeled agent, on C: B shares requests between two relayed tunnels, C between its own and A's.
    await labeled(c, 'on C');
    for (const node of [b, c]) {
      const apps = new Set<string>();
      for (let i = 0; i < 30; i++) apps.add(seen(await callIngress(node.http, { host, path: `/n/${i}` })).app);
      assert.deepEqual([...apps].sort(), ['on A', 'on C'], `both labeled tunnels serve through ${node === b ? 'B' : 'C'}`);
    }

    // A's agent closes its tunnel: it leaves the group's record, and every server sends to C's alone.
    await onA.close();
    const closed = performance.now();
    while ((await api(b, 'GET', `/backends/tunnel_group/${group.id}`)).tunnels.length !== 1) {
      assert.ok(performance.now() - closed < 10_000, "A's tunnel still in the group 10 s after its agent closed it");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const node of [a, b, c]) for (let i = 0; i < 5; i++) assert.equal(seen(await callIngress(node.http, { host })).app, 'on C');

    // A TLS edge terminating at the edge: B's and C's TLS ingress terminate, A's labeled tunnel gets the bytes.
    const tlsHost = `tls-${host}`;
    const service = await startEcho(t, 'tls edge: ');
    await (await agentOn(a)).labeledListener().label('service', tlsHost).listenAndForward(`tcp://127.0.0.1:${service.port}`);
    const plain = await api(c, 'POST', '/backends/tunnel_group', { labels: { service: tlsHost } });
    await api(c, 'POST', '/edges/tls', { hostports: [`${tlsHost}:443`], backend: { backend_id: plain.id }, tls_termination: { terminate_at: 'edge' } });
    for (const node of [b, c]) {
      const client = tlsConnect({ host: '127.0.0.1', port: node.tls, servername: tlsHost, ca: caPem });
      await once(client, 'secureConnect');
      client.write('hi');
      const [echoed] = (await once(client, 'data')) as [Buffer];
      client.destroy();
      assert.equal(String(echoed), 'tls edge: hi');
    }
  });

  test('the peer port refuses a client without a certificate of the CA, and one with a certificate of another CA', async () => {
    const [host, port] = [b.peer.slice(0, b.peer.lastIndexOf(':')), Number(b.peer.slice(b.peer.lastIndexOf(':') + 1))];
    const refused = async (options: object) => {
      const socket = tlsConnect({ host, port, servername: 'peer.burrow.invalid', ca: caPem, ALPNProtocols: ['h2'], ...options });
      // TLS 1.3: the server's refusal of the client certificate arrives after the client's handshake is done.
      const outcome = await new Promise<string>((resolve) => {
        socket.once('error', (error) => resolve(`error: ${error.message}`));
        socket.once('close', () => resolve('closed'));
        socket.once('data', () => resolve('answered'));
      });
      socket.destroy();
      return outcome;
    };
    assert.match(await refused({}), /error|closed/);
    const other = await generateCertificateAuthority({ now: new Date() });
    const stranger = await signServerCertificate(other, { now: new Date(), dnsNames: ['peer.burrow.invalid'], clientAuth: true });
    assert.match(await refused({ cert: stranger.certificatePem, key: stranger.privateKeyPem }), /error|closed/);

    // The instance CA signs more than servers' certificates (kubernetes operators' bindings): one it
    // signed that no server registered gets no answer either.
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    const setting = (await db.query(`SELECT data FROM burrow.records WHERE account = '_instance' AND kind = 'setting' AND id = 'certificate_authority'`)).rows[0].data;
    await db.end();
    const signed = await signServerCertificate({ certificatePem: setting.certificate_pem, privateKeyPem: setting.private_key_pem }, { now: new Date(), dnsNames: ['peer.burrow.invalid'], clientAuth: true });
    const outcome = await new Promise<string>((resolve) => {
      const session = http2.connect(`https://${b.peer}`, { ca: caPem, cert: signed.certificatePem, key: signed.privateKeyPem, servername: 'peer.burrow.invalid', checkServerIdentity: () => undefined });
      session.on('error', (error) => resolve(`error: ${error.message}`));
      session.on('close', () => resolve('closed'));
      const asked = session.request({ ':path': '/tunnels/tn_anything' });
      asked.on('response', (headers) => resolve(`answered ${headers[':status']}`));
      asked.on('error', (error) => resolve(`error: ${error.message}`));
      asked.end();
    });
    assert.match(outcome, /^(error|closed)/);
  });

  test('kill -9 A: its endpoint is offline through B and C at once; the agent connects to B and is reached through B and C again', async (t: TestContext) => {
    const app = await startApp(t);
    const host = `moving-${Date.now()}.example.com`;
    assert.equal((await a.server.request('POST', '/reserved_domains', { domain: host }, { token })).status, 201);
    await (await agentOn(a)).httpEndpoint().domain(host).listenAndForward(`http://127.0.0.1:${app}`);
    for (const node of [b, c]) assert.equal((await callIngress(node.http, { host })).status, 200);

    const killed = performance.now();
    await a.server.stop('SIGKILL');
    const offline: number[] = [];
    for (const node of [b, c]) {
      for (;;) {
        const answer = await callIngress(node.http, { host });
        if (answer.headers['ngrok-error-code'] === 'ERR_BURROW_3200') break;
        assert.ok(performance.now() - killed < 15_000, `still answered ${answer.status} through a server 15 s after A died`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      offline.push(performance.now() - killed);
    }

    // A's tunnel holds the name until B or C ends A's sessions (A's advisory lock is gone with it).
    await bindWhenFree(await agentOn(b), host, app, 30_000);
    const bound = performance.now();
    for (const node of [b, c]) assert.equal((await callIngress(node.http, { host, path: '/again' })).status, 200);
    console.log(`# cluster: offline through B ${offline[0]!.toFixed(0)} ms and C ${offline[1]!.toFixed(0)} ms after kill -9 A; the name free for B ${(bound - killed).toFixed(0)} ms after; B and C serve at once`);
  });

  test('a server whose agents others relay to stops on SIGTERM at once, its endpoints then offline through them', async (t: TestContext) => {
    const app = await startApp(t);
    const e = await startClusterNode(url, OPERATOR);
    t.after(() => e.server.stop('SIGKILL'));
    const host = hostOf((await (await agentOn(e)).httpEndpoint().listenAndForward(`http://127.0.0.1:${app}`)).url()!);
    assert.equal((await callIngress(b.http, { host })).status, 200, 'B relays to E');
    const stopping = performance.now();
    assert.equal(await e.server.stop('SIGTERM'), 0);
    const stopMs = performance.now() - stopping;
    assert.ok(stopMs < 5_000, `E took ${stopMs} ms to stop`);
    assert.equal((await callIngress(b.http, { host })).headers['ngrok-error-code'], 'ERR_BURROW_3200');
  });
});
