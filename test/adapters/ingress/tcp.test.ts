import ngrok, { type Session } from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, createServer as createNetServer, type Server } from 'node:net';
import type { Duplex } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import { startAgentGateway } from '../../../adapters/agent-gateway/index.ts';
import { createIngress } from '../../../adapters/ingress/index.ts';
import { generateCertificateAuthority, signClientCertificate, signServerCertificate } from '../../../lib/ca/certificate-authority.ts';
import type { Delivery, TcpTraffic, Traffic } from '../../../lib/index.ts';
import { createTestInstance, type TestInstance } from '../../helpers.ts';
import { until } from '../agent-gateway/helpers.ts';
import { listenLocally, startIngressServer } from './fixtures.ts';
import { connectTls, fingerprintOf, next } from './helpers.ts';

/**
 * TCP endpoints with real listening ports, and TCP and TLS edges, with the real parts: the
 * vendor's agent (@ngrok/ngrok) on Burrow's agent gateway, the ingress listening on loopback,
 * raw sockets (node:net) and node:tls as clients, local echo services behind the agent.
 */

async function setUp(t: TestContext) {
  const deliveries = new Set<(delivery: Delivery) => void>();
  const api = await createTestInstance({ eventSinks: [{ deliver: (delivery) => deliveries.forEach((listener) => listener(delivery)) }] });
  // Agents close while the gateway still serves them (after-hooks run in the order registered).
  const agents: Session[] = [];
  t.after(() => Promise.all(agents.map((agent) => agent.close().catch(() => undefined))));
  const gateway = await startAgentGateway(api.burrow);
  t.after(() => gateway.close());
  const errors: unknown[] = [];
  const ingress = await createIngress(api.burrow, { sessions: () => gateway.sessions(), accountOf: (session) => session.context.account, http: {}, tls: {}, onError: (error) => errors.push(error) });
  t.after(() => ingress.close());
  const ca = (await api.burrow.services.ca()).certificatePem;
  const credential = await ok(api, 'POST', '/credentials', {});
  const token = credential.token as string;
  const agent = async () => {
    const session = await new ngrok.SessionBuilder().authtoken(token).serverAddr(`localhost:${gateway.address.port}`).caCert(Buffer.from(ca)).handleDisconnection(() => false).connect();
    agents.push(session);
    return session;
  };
  /** The next TCP connection the journal records (ask before connecting). */
  const recorded = () => next<Traffic>((listener) => api.burrow.traffic.watch(listener), (traffic) => traffic.protocol === 'tcp') as Promise<TcpTraffic>;
  const delivered = (type: string) => next<Delivery>((listener) => (deliveries.add(listener), () => void deliveries.delete(listener)), (d) => d.event.event_type === type);
  return { api, gateway, ingress, ca, token, credentialId: credential.id as string, agent, agents, recorded, delivered, errors };
}

async function ok(api: TestInstance, method: string, path: string, body?: unknown): Promise<any> {
  const res = await api.request(method, path, body);
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

/** A TCP service that answers each chunk with `prefix` and the chunk, closed after the test. */
async function startEcho(t: TestContext, prefix = 'echo: '): Promise<number> {
  const echo = await listenLocally(
    createNetServer((socket) => {
      socket.on('data', (chunk: Buffer) => socket.write(`${prefix}${chunk}`));
      socket.on('error', () => socket.destroy());
    }),
  );
  t.after(() => echo.close());
  return echo.port;
}

const portOf = (url: string) => Number(url.slice(url.lastIndexOf(':') + 1));

/** The first chunk `socket` reads; rejects when it closes first. */
function firstChunk(socket: Duplex): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    socket.once('data', (answer: Buffer) => resolve(String(answer)));
    socket.once('close', () => reject(new Error('the connection closed without an answer')));
  });
}

/** Sends `text` on a new connection to `port` and answers the first chunk that comes back. */
async function roundTrip(port: number, text: string): Promise<string> {
  const socket = netConnect(port, '127.0.0.1');
  try {
    await once(socket, 'connect');
    socket.write(text);
    return await firstChunk(socket);
  } finally {
    socket.destroy();
  }
}

/** How a connection to `port` ends when the client only waits: 'refused' (nothing listens) or 'closed' (by the server, with no byte). */
async function closedOn(port: number): Promise<'refused' | 'closed'> {
  const socket = netConnect(port, '127.0.0.1');
  socket.on('data', () => assert.fail('the connection carried bytes'));
  return new Promise((resolve) => {
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED' ? 'refused' : 'closed'));
    socket.once('close', () => resolve('closed'));
  });
}

/** Listens on a port nobody else holds and answers it (the server stays until the test ends). */
async function occupy(t: TestContext, port = 0): Promise<number> {
  const server: Server = createNetServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

describe('agent TCP endpoints', () => {
  test('a bind gets a real port on the ingress host: the SDK, GET /tunnels and GET /endpoints see tcp://localhost:PORT, and bytes round-trip', async (t) => {
    const { api, agent, recorded, errors } = await setUp(t);
    const session = await agent();
    const listener = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${await startEcho(t)}`);
    const url = listener.url()!;
    assert.match(url, /^tcp:\/\/localhost:\d+$/);
    assert.deepEqual((await ok(api, 'GET', '/tunnels')).tunnels.map((tunnel: any) => tunnel.public_url), [url]);
    assert.deepEqual((await ok(api, 'GET', '/endpoints')).endpoints.map((endpoint: any) => endpoint.url), [url]);

    const journaled = recorded();
    assert.equal(await roundTrip(portOf(url), 'hello'), 'echo: hello');
    const traffic = await journaled;
    assert.equal(traffic.account, api.accountId);
    assert.deepEqual(traffic.endpoints, [{ id: listener.id(), url }]);
    assert.equal(traffic.answeredBy, 'upstream');
    assert.equal(traffic.conn.clientIp, '127.0.0.1');
    assert.equal(traffic.conn.serverPort, portOf(url));
    assert.equal(traffic.bytesIn, 5);
    assert.equal(traffic.bytesOut, 11);
    const [entry] = api.burrow.traffic.list({ endpoint: listener.id() });
    assert.equal(entry!.protocol, 'tcp');
    assert.equal(entry!.bytes_in, 5);
    assert.equal(entry!.bytes_out, 11);
    assert.deepEqual(errors, []);
  });

  test('ngrok.forward({ proto: "tcp", addr }) is given a real port too', async (t) => {
    const { gateway, ca, token } = await setUp(t);
    const echo = await startEcho(t, 'forwarded: ');
    const listener = await ngrok.forward({ proto: 'tcp', addr: `127.0.0.1:${echo}`, authtoken: token, server_addr: `localhost:${gateway.address.port}`, session_ca_cert: ca });
    try {
      assert.match(listener.url()!, /^tcp:\/\/localhost:\d+$/);
      assert.equal(await roundTrip(portOf(listener.url()!), 'x'), 'forwarded: x');
    } finally {
      // Before the gateway closes (see setUp).
      await ngrok.disconnect();
    }
  });

  test("a reserved address's bind listens on the address's own port; a port the ingress cannot listen on refuses the bind, naming it", async (t) => {
    const { api, agent } = await setUp(t);
    const session = await agent();
    const reserved = await ok(api, 'POST', '/reserved_addrs', { region: 'us' });
    const listener = await session.tcpEndpoint().remoteAddr(reserved.addr).listenAndForward(`tcp://127.0.0.1:${await startEcho(t)}`);
    assert.equal(listener.url(), `tcp://${reserved.addr}`);
    assert.equal(await roundTrip(portOf(reserved.addr), 'reserved'), 'echo: reserved');

    const taken = await ok(api, 'POST', '/reserved_addrs', { region: 'us' });
    await occupy(t, portOf(taken.addr));
    await assert.rejects(session.tcpEndpoint().remoteAddr(taken.addr).listen(false), (error: Error) => {
      assert.match(error.message, new RegExp(`port ${portOf(taken.addr)} of the ingress host 127\\.0\\.0\\.1: it is in use`));
      return true;
    });
    assert.equal((await ok(api, 'GET', '/tunnels')).tunnels.length, 1, 'the refused bind left no tunnel');
  });

  test("on_tcp_connect and the bind's own IP restriction run on each connection: a refusal closes it, and the journal says which rule", async (t) => {
    const { agent, recorded } = await setUp(t);
    const session = await agent();
    const echo = await startEcho(t);
    const policy = JSON.stringify({ on_tcp_connect: [{ name: 'loopback out', expressions: ["conn.client_ip == '127.0.0.1' && conn.server_port > 0"], actions: [{ type: 'deny' }] }] });
    const denied = await session.tcpEndpoint().trafficPolicy(policy).listenAndForward(`tcp://127.0.0.1:${echo}`);
    const restricted = await session.tcpEndpoint().allowCidr('10.0.0.0/8').listenAndForward(`tcp://127.0.0.1:${echo}`);
    const excluded = await session.tcpEndpoint().denyCidr('127.0.0.0/8').listenAndForward(`tcp://127.0.0.1:${echo}`);
    const allowed = await session.tcpEndpoint().allowCidr('127.0.0.0/8').listenAndForward(`tcp://127.0.0.1:${echo}`);

    const journaled = recorded();
    assert.equal(await closedOn(portOf(denied.url()!)), 'closed');
    const traffic = await journaled;
    assert.equal(traffic.answeredBy, 'policy');
    assert.deepEqual(
      traffic.rules.map((rule) => [rule.phase, rule.name, rule.matched, rule.actions.map((action) => action.type)]),
      [['on_tcp_connect', 'loopback out', true, ['deny']]],
    );
    assert.equal(await closedOn(portOf(restricted.url()!)), 'closed');
    assert.equal(await closedOn(portOf(excluded.url()!)), 'closed');
    assert.equal(await roundTrip(portOf(allowed.url()!), 'in'), 'echo: in');
  });

  test('the agent going away releases its ports: new connections are refused', async (t) => {
    const { api, agent, agents, credentialId } = await setUp(t);
    const session = await agent();
    const echo = await startEcho(t);
    const closing = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${echo}`);
    const staying = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${echo}`);
    assert.equal(await roundTrip(portOf(closing.url()!), 'a'), 'echo: a');

    await closing.close();
    await until(() => closedOn(portOf(closing.url()!)), (how) => how === 'refused', 'the closed listener\'s port released');
    assert.equal(await roundTrip(portOf(staying.url()!), 'b'), 'echo: b');

    // Deleting the credential ends the session (the SDK's own close is noticed by heartbeat only).
    await ok(api, 'DELETE', `/credentials/${credentialId}`);
    agents.splice(agents.indexOf(session), 1);
    await until(() => closedOn(portOf(staying.url()!)), (how) => how === 'refused', "the ended session's port released");
    assert.deepEqual((await ok(api, 'GET', '/tunnels')).tunnels, []);
  });

  test("tcp_connection_closed.v0 reaches the subscriptions that ask for it, with the vendor's fields", async (t) => {
    const { api, agent, delivered } = await setUp(t);
    const destination = await ok(api, 'POST', '/event_destinations', { format: 'json', target: { logs: { auth: { role: { role_ref: 'r' } }, log_group_ref: 'g' } } });
    await ok(api, 'POST', '/event_subscriptions', { sources: [{ type: 'tcp_connection_closed.v0' }], destination_ids: [destination.id] });
    const session = await agent();
    const policy = JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'log', config: { metadata: { port: '${conn.server_port}' } } }] }] });
    const listener = await session.tcpEndpoint().trafficPolicy(policy).allowCidr('127.0.0.0/8').listenAndForward(`tcp://127.0.0.1:${await startEcho(t)}`);
    const port = portOf(listener.url()!);

    const arriving = delivered('tcp_connection_closed.v0');
    assert.equal(await roundTrip(port, 'event'), 'echo: event');
    const { event, destinationId } = await arriving;
    assert.equal(destinationId, destination.id);
    assert.equal(event.account_id, api.accountId);
    const object = event.object as any;
    assert.equal(object.conn.client_ip, '127.0.0.1');
    assert.equal(object.conn.server_ip, '127.0.0.1');
    assert.equal(object.conn.server_port, port);
    assert.equal(object.conn.server_name, '');
    assert.equal(object.conn.bytes_in, 5);
    assert.equal(object.conn.bytes_out, 11);
    assert.match(object.conn.start_ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(object.conn.end_ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(object.ip_policy, { decision: 'allow' });
    assert.deepEqual(object.traffic_policy, { logs: [{ metadata: { port } }] });
  });
});

describe('burrow serve', () => {
  /** `burrow serve` with an HTTP ingress and `--public-host publicHost`, an agent, and one TCP bind round-tripped; answers the server. */
  async function tcpBindUnder(t: TestContext, publicHost: string, url: RegExp) {
    const ingress = await startIngressServer(['--http-ingress-addr', '127.0.0.1:0', '--public-host', publicHost]);
    let session: Session;
    try {
      session = await ingress.agent(t);
    } finally {
      // After the agent's own close (after-hooks run in the order registered).
      t.after(() => ingress.stop());
    }
    const listener = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${await startEcho(t)}`);
    assert.match(listener.url()!, url);
    assert.equal(await roundTrip(portOf(listener.url()!), 'served'), 'echo: served');
    return ingress;
  }

  test('with --http-ingress-addr and --public-host NAME, an agent\'s TCP bind is tcp://NAME:PORT, PORT listening on the ingress host', async (t) => {
    await tcpBindUnder(t, 'tunnels.example.test', /^tcp:\/\/tunnels\.example\.test:\d+$/);
  });

  test('with --public-host IP, an agent\'s TCP bind is tcp://IP:PORT, and the start-up line names where the gateway listens', async (t) => {
    const ingress = await tcpBindUnder(t, '203.0.113.5', /^tcp:\/\/203\.0\.113\.5:\d+$/);
    const gatewayPort = ingress.port('agent');
    const lines = await ingress.server.outputUntil((output) => output.some((line) => line.startsWith('agent gateway: ')));
    const line = lines.find((output) => output.startsWith('agent gateway: '))!;
    assert.ok(line.startsWith(`agent gateway: 127.0.0.1:${gatewayPort} (ngrok agent: server_addr 203.0.113.5:${gatewayPort},`), line);
  });
});

describe('TCP edges', () => {
  test("the ingress listens on each hostport's port: bytes reach a labeled tunnel of the tunnel-group backend, or a static address; ip_restriction closes refused clients", async (t) => {
    const { api, ingress, agent } = await setUp(t);
    const session = await agent();
    await session.labeledListener().label('service', 'echo').listenAndForward(`tcp://127.0.0.1:${await startEcho(t, 'tunnel: ')}`);
    const group = await ok(api, 'POST', '/backends/tunnel_group', { labels: { service: 'echo' } });
    const first = await ok(api, 'POST', '/reserved_addrs', { region: 'us' });
    const edge = await ok(api, 'POST', '/edges/tcp', { hostports: [first.addr], backend: { backend_id: group.id } });
    await ingress.syncTcpEdges();
    assert.equal(await roundTrip(portOf(first.addr), 'one'), 'tunnel: one');

    const fixed = await ok(api, 'POST', '/backends/static', { address: `127.0.0.1:${await startEcho(t, 'static: ')}` });
    const second = await ok(api, 'POST', '/reserved_addrs', { region: 'us' });
    const staticEdge = await ok(api, 'POST', '/edges/tcp', { hostports: [second.addr], backend: { backend_id: fixed.id } });
    await ingress.syncTcpEdges();
    assert.equal(await roundTrip(portOf(second.addr), 'two'), 'static: two');

    const policy = await ok(api, 'POST', '/ip_policies', {});
    await ok(api, 'POST', '/ip_policy_rules', { ip_policy_id: policy.id, cidr: '127.0.0.0/8', action: 'deny' });
    await ok(api, 'PUT', `/edges/tcp/${edge.id}/ip_restriction`, { ip_policy_ids: [policy.id] });
    assert.equal(await closedOn(portOf(first.addr)), 'closed');

    // Hostports moved or deleted stop being listened on.
    await ok(api, 'DELETE', `/edges/tcp/${staticEdge.id}`);
    await ingress.syncTcpEdges();
    assert.equal(await closedOn(portOf(second.addr)), 'refused');
  });
});

describe('TLS edges', () => {
  test('a TLS edge holding NAME:443 takes the connections for that server name: passed through to the service by default, terminated by Burrow with tls_termination at the edge, where mutual_tls asks for a client certificate', async (t) => {
    const { api, ingress, agent, ca, recorded } = await setUp(t);
    const ownCa = await generateCertificateAuthority({ now: new Date(), commonName: 'service CA' });
    const serviceCertificate = await signServerCertificate(ownCa, { now: new Date(), dnsNames: ['vault.burrow.test'] });
    const tlsService = await listenLocally(
      createTlsServer({ cert: serviceCertificate.certificatePem, key: serviceCertificate.privateKeyPem }, (socket) => {
        socket.on('data', (chunk: Buffer) => socket.write(`tls service: ${chunk}`));
        socket.on('error', () => socket.destroy());
      }),
    );
    t.after(() => tlsService.close());
    const session = await agent();
    await session.labeledListener().label('service', 'vault').listenAndForward(`tcp://127.0.0.1:${tlsService.port}`);
    await session.labeledListener().label('service', 'plain').listenAndForward(`tcp://127.0.0.1:${await startEcho(t, 'plain: ')}`);
    const vault = await ok(api, 'POST', '/backends/tunnel_group', { labels: { service: 'vault' } });
    const plain = await ok(api, 'POST', '/backends/tunnel_group', { labels: { service: 'plain' } });
    const passed = await ok(api, 'POST', '/edges/tls', { hostports: ['vault.burrow.test:443'], backend: { backend_id: vault.id } });
    await ok(api, 'POST', '/edges/tls', { hostports: ['plain.burrow.test:443'], backend: { backend_id: plain.id }, tls_termination: { terminate_at: 'edge' } });
    const tlsPort = ingress.tls!.port;

    const journaled = recorded();
    const { socket: through, certificate } = await connectTls(t, tlsPort, 'vault.burrow.test', ownCa.certificatePem);
    assert.equal(certificate, fingerprintOf(serviceCertificate.certificatePem));
    through.write('secret');
    assert.equal(await firstChunk(through), 'tls service: secret');
    through.destroy();
    const traffic = await journaled;
    assert.deepEqual(traffic.endpoints, [{ id: passed.id, url: 'tls://vault.burrow.test' }]);
    assert.equal(traffic.serverName, 'vault.burrow.test');

    const terminated = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: 'plain.burrow.test', ca });
    t.after(() => terminated.destroy());
    await once(terminated, 'secureConnect');
    assert.equal(terminated.getPeerCertificate().subject.CN, 'plain.burrow.test');
    terminated.write('hi');
    assert.equal(await firstChunk(terminated), 'plain: hi');
    terminated.destroy();

    const authority = await ok(api, 'POST', '/certificate_authorities', { ca_pem: ownCa.certificatePem });
    const mutual = await ok(api, 'POST', '/edges/tls', { hostports: ['mutual.burrow.test:443'], backend: { backend_id: plain.id }, tls_termination: { terminate_at: 'edge' } });
    await ok(api, 'PUT', `/edges/tls/${mutual.id}/mutual_tls`, { certificate_authority_ids: [authority.id] });
    const anonymous = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: 'mutual.burrow.test', ca });
    t.after(() => anonymous.destroy());
    const ended = await Promise.race([once(anonymous, 'error').then(() => 'closed'), once(anonymous, 'close').then(() => 'closed'), once(anonymous, 'data').then(() => 'answered')]);
    assert.equal(ended, 'closed');
    const keys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const clientCertificate = signClientCertificate(ownCa, { now: new Date(), publicKey: keys.publicKey, commonName: 'client', validDays: 1 });
    const presented = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: 'mutual.burrow.test', ca, cert: clientCertificate.certificatePem, key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) });
    t.after(() => presented.destroy());
    await once(presented, 'secureConnect');
    presented.write('cert');
    assert.equal(await firstChunk(presented), 'plain: cert');
  });

  test("an HTTPS connection on_tcp_connect refuses is journaled as a connection, naming the rule; with terminate-tls's mutual TLS, conn.tls.client.* describe the verified certificate", async (t) => {
    const { api, ingress, ca, recorded } = await setUp(t);
    const tlsPort = ingress.tls!.port;
    await ok(api, 'POST', '/reserved_domains', { domain: 'refused.burrow.test' });
    const refusing = JSON.stringify({
      on_tcp_connect: [{ name: 'no loopback', expressions: ["conn.client_ip == '127.0.0.1'"], actions: [{ type: 'deny' }] }],
      on_http_request: [{ actions: [{ type: 'custom-response', config: { body: 'never' } }] }],
    });
    const endpoint = await ok(api, 'POST', '/endpoints', { type: 'cloud', url: 'https://refused.burrow.test', traffic_policy: refusing });
    const journaled = recorded();
    const refused = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: 'refused.burrow.test', ca });
    t.after(() => refused.destroy());
    assert.equal(await Promise.race([once(refused, 'error').then(() => 'closed'), once(refused, 'close').then(() => 'closed'), once(refused, 'secureConnect').then(() => 'handshake')]), 'closed');
    const traffic = await journaled;
    assert.deepEqual(traffic.endpoints, [{ id: endpoint.id, url: 'https://refused.burrow.test' }]);
    assert.equal(traffic.answeredBy, 'policy');
    assert.equal(traffic.serverName, 'refused.burrow.test');
    assert.deepEqual(traffic.rules.map((rule) => [rule.phase, rule.name, rule.matched, rule.actions.map((action) => action.type)]), [['on_tcp_connect', 'no loopback', true, ['deny']]]);

    const clientCa = await generateCertificateAuthority({ now: new Date(), commonName: 'client CA' });
    await ok(api, 'POST', '/reserved_domains', { domain: 'mtls.burrow.test' });
    const mutual = JSON.stringify({
      on_tcp_connect: [{ actions: [{ type: 'terminate-tls', config: { mutual_tls_certificate_authorities: [clientCa.certificatePem] } }] }],
      on_http_request: [{ actions: [{ type: 'custom-response', config: { body: '${conn.tls.client.subject.common_name} from ${conn.tls.client.issuer.common_name}' } }] }],
    });
    await ok(api, 'POST', '/endpoints', { type: 'cloud', url: 'https://mtls.burrow.test', traffic_policy: mutual });
    const keys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const certificate = signClientCertificate(clientCa, { now: new Date(), publicKey: keys.publicKey, commonName: 'alice', validDays: 1 });
    const req = httpsRequest({ host: '127.0.0.1', port: tlsPort, servername: 'mtls.burrow.test', path: '/', headers: { host: 'mtls.burrow.test' }, ca, cert: certificate.certificatePem, key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }), agent: false });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    let body = '';
    for await (const chunk of res) body += String(chunk);
    assert.equal(body, 'alice from client CA');
  });

  test("terminate-tls on a TLS endpoint terminates as it runs: later rules read actions.ngrok.terminate_tls.* (the client certificate's subject) and close the connection of the wrong client", async (t) => {
    const { api, ingress, agent, ca, recorded } = await setUp(t);
    const tlsPort = ingress.tls!.port;
    const clientCa = await generateCertificateAuthority({ now: new Date(), commonName: 'client CA' });
    await ok(api, 'POST', '/reserved_domains', { domain: 'only-alice.burrow.test' });
    const policy = JSON.stringify({
      on_tcp_connect: [
        { actions: [{ type: 'terminate-tls', config: { min_version: '1.3', max_version: '1.3', mutual_tls_certificate_authorities: [clientCa.certificatePem] } }] },
        {
          name: 'alice only',
          expressions: ["actions.ngrok.terminate_tls.client.subject.common_name != 'alice'"],
          actions: [{ type: 'log', config: { metadata: { refused: '${actions.ngrok.terminate_tls.client.subject}', version: '${actions.ngrok.terminate_tls.version}', sni: '${actions.ngrok.terminate_tls.sni}' } } }, { type: 'close-connection' }],
        },
      ],
    });
    const session = await agent();
    await session.tlsEndpoint().domain('only-alice.burrow.test').trafficPolicy(policy).listenAndForward(`tcp://127.0.0.1:${await startEcho(t, 'plain: ')}`);
    const keys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const key = keys.privateKey.export({ type: 'pkcs8', format: 'pem' });
    const certificateOf = (commonName: string) => signClientCertificate(clientCa, { now: new Date(), publicKey: keys.publicKey, commonName, validDays: 1 }).certificatePem;

    const aliceJournaled = recorded();
    const alice = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: 'only-alice.burrow.test', ca, cert: certificateOf('alice'), key });
    t.after(() => alice.destroy());
    await once(alice, 'secureConnect');
    alice.write('hello');
    assert.equal(await firstChunk(alice), 'plain: hello');
    alice.destroy();
    assert.equal((await aliceJournaled).answeredBy, 'upstream');

    const journaled = recorded();
    const bob = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: 'only-alice.burrow.test', ca, cert: certificateOf('bob'), key });
    t.after(() => bob.destroy());
    // TLS 1.3: the client's handshake completes before the server has read its certificate; the close follows.
    await assert.rejects(firstChunk(bob.once('secureConnect', () => bob.write('hello'))), /closed without an answer/);
    const traffic = await journaled;
    assert.equal(traffic.answeredBy, 'policy');
    assert.deepEqual(traffic.rules.map((rule) => [rule.name ?? rule.index, rule.matched, rule.actions.map((action) => action.type)]), [[0, true, ['terminate-tls']], ['alice only', true, ['log', 'close-connection']]]);
    assert.deepEqual(traffic.logs.map((entry) => entry.metadata), [{ refused: 'CN=bob', version: '1.3', sni: 'only-alice.burrow.test' }]);
  });
});
