import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { connect as netConnect, createServer as createNetServer } from 'node:net';
import { after, before, describe, test, type TestContext } from 'node:test';
import { connect as tlsConnect, createServer as createTlsServer, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { parseCli } from '../../../bin/burrow.ts';
import { generateCertificateAuthority, signServerCertificate, type CertificateAuthority } from '../../../lib/ca/certificate-authority.ts';
import type { RunningServer } from '../../helpers.ts';
import { listenLocally, startIngressServer, startJsonApp, type IngressServer } from './fixtures.ts';
import { connectTls, fingerprintOf } from './helpers.ts';

/**
 * `burrow serve --tls-ingress-addr …`: TLS connections routed by SNI. HTTPS endpoints are
 * terminated by Burrow (with the domain's own certificate, else one Burrow's CA signs) and served
 * as HTTP; TLS endpoints pass through to the agent's service, which terminates TLS itself. The
 * vendor's agent, node's https and tls clients.
 */

let ingress: IngressServer;
let server: RunningServer;
let burrowCa: string;
let tlsPort: number;
let app: Awaited<ReturnType<typeof startJsonApp>>;
/** A CA of the test's own, for the account's uploaded certificate and the TLS app behind the agent. */
let ownCa: CertificateAuthority;

before(async () => {
  ingress = await startIngressServer(['--tls-ingress-addr', '127.0.0.1:0']);
  server = ingress.server;
  burrowCa = ingress.ca;
  tlsPort = ingress.port('tls_ingress');
  ownCa = await generateCertificateAuthority({ now: new Date(), commonName: 'test CA' });
  app = await startJsonApp();
});

after(async () => {
  await ingress?.stop();
  await app?.close();
});

const agent = (t: TestContext) => ingress.agent(t);
const reserve = (domain: string, certificateId?: string) => ingress.reserve(domain, certificateId);

/** One HTTPS request to the TLS ingress for `name`, trusting `ca`; the answer and the certificate the ingress served. */
async function httpsCall(name: string, ca: string, path = '/', options: RequestOptions & Pick<ConnectionOptions, 'ALPNProtocols'> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: string; certificate: PeerCertificate }> {
  const req = httpsRequest({ host: '127.0.0.1', port: tlsPort, servername: name, path, headers: { host: name }, ca, agent: false, ...options });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  const certificate = (res.socket as import('node:tls').TLSSocket).getPeerCertificate();
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { status: res.statusCode ?? 0, headers: res.headers, body, certificate };
}

describe('the TLS ingress option', () => {
  test('--tls-ingress-addr HOST:PORT (or BURROW_TLS_INGRESS_ADDR), off unless given', () => {
    assert.equal(parseCli([], {}).tlsIngressAddr, undefined);
    assert.deepEqual(parseCli(['--tls-ingress-addr', '127.0.0.1:8443'], {}).tlsIngressAddr, { host: '127.0.0.1', port: 8443 });
    assert.deepEqual(parseCli([], { BURROW_TLS_INGRESS_ADDR: '0.0.0.0:0' }).tlsIngressAddr, { host: '0.0.0.0', port: 0 });
    assert.throws(() => parseCli(['--tls-ingress-addr', ':8443'], {}), /--tls-ingress-addr must be HOST:PORT/);
  });

  test('health lists tls_ingress (the HTTP listener stays off unless asked for) and the start-up says where it is', async () => {
    const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
    assert.match(health.body.listeners.tls_ingress, /^127\.0\.0\.1:\d+$/);
    assert.equal(health.body.listeners.http_ingress, null);
    await server.outputUntil((lines) => lines.some((line) => line.startsWith(`tls ingress: ${health.body.listeners.tls_ingress} `)));
  });
});

describe('HTTPS endpoints through the TLS ingress', () => {
  test("Burrow terminates TLS with a certificate its CA signs for the name, and the request reaches the agent's app", async (t) => {
    const session = await agent(t);
    await reserve('secure.example.com');
    await session.httpEndpoint().domain('secure.example.com').listenAndForward(`http://127.0.0.1:${app.port}`);
    const answered = await httpsCall('secure.example.com', burrowCa, '/over/tls?x=1');
    assert.equal(answered.status, 200);
    const seen = JSON.parse(answered.body);
    assert.equal(seen.url, '/over/tls?x=1');
    assert.equal(seen.headers['x-forwarded-proto'], 'https');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(answered.certificate.subject.CN, 'secure.example.com');
    assert.equal(new X509Certificate(answered.certificate.raw).checkIssued(new X509Certificate(burrowCa)), true);

    // A name of the service zone nobody serves is still answered over TLS, with the zone's one
    // wildcard certificate: the offline page.
    const offline = await httpsCall('nobody.burrow.internal', burrowCa);
    assert.equal(offline.status, 404);
    assert.equal(offline.headers['ngrok-error-code'], 'ERR_BURROW_3200');
    assert.equal(offline.certificate.subject.CN, '*.burrow.internal');
  });

  test("an agent's URL without a reservation (under the service zone or a vendor zone) is served with that zone's one wildcard certificate, as the vendor serves its own", async (t) => {
    const session = await agent(t);
    const listener = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${app.port}`);
    const name = new URL(listener.url()!).hostname;
    assert.match(name, /^[^.]+\.burrow\.internal$/);
    const served = await httpsCall(name, burrowCa, '/zone');
    assert.equal(served.status, 200);
    assert.equal(JSON.parse(served.body).url, '/zone');
    assert.equal(served.certificate.subject.CN, '*.burrow.internal');
    const offline = await httpsCall('nobody.burrow.internal', burrowCa);
    assert.equal(offline.certificate.serialNumber, served.certificate.serialNumber, 'one certificate for the zone');
    // A name under one of the vendor's zones, bound without a reservation: that zone's wildcard.
    await session.httpEndpoint().domain('mine.ngrok.app').listenAndForward(`http://127.0.0.1:${app.port}`);
    const vendorZone = await httpsCall('mine.ngrok.app', burrowCa, '/vendor-zone');
    assert.equal(vendorZone.status, 200);
    assert.equal(vendorZone.certificate.subject.CN, '*.ngrok.app');
  });

  test("the reserved domain's own certificate (POST /tls_certificates) is served for its name", async (t) => {
    const own = await signServerCertificate(ownCa, { now: new Date(), dnsNames: ['own.example.com'] });
    const uploaded = await server.request('POST', '/tls_certificates', { certificate_pem: own.certificatePem, private_key_pem: own.privateKeyPem });
    assert.equal(uploaded.status, 201, uploaded.text);
    await reserve('own.example.com', uploaded.body.id);
    const session = await agent(t);
    await session.httpEndpoint().domain('own.example.com').listenAndForward(`http://127.0.0.1:${app.port}`);
    const answered = await httpsCall('own.example.com', ownCa.certificatePem, '/mine');
    assert.equal(answered.status, 200);
    assert.equal(new X509Certificate(answered.certificate.raw).fingerprint256, fingerprintOf(own.certificatePem));
    assert.equal(JSON.parse(answered.body).url, '/mine');
  });

  test('a cloud endpoint answers over HTTPS', async () => {
    await reserve('cloud-tls.example.com');
    const policy = JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { status_code: 200, body: 'cloud over tls' } }] }] });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://cloud-tls.example.com', traffic_policy: policy })).status, 201);
    const answered = await httpsCall('cloud-tls.example.com', burrowCa);
    assert.equal(answered.body, 'cloud over tls');
  });

  test("conn.tls.ja4_fingerprint is the JA4 fingerprint of the client's ClientHello", async () => {
    await reserve('ja4.example.com');
    const policy = JSON.stringify({
      on_http_request: [
        { expressions: ["conn.tls.ja4_fingerprint.startsWith('t13d')"], actions: [{ type: 'custom-response', config: { status_code: 200, headers: { 'x-ja4': '${conn.tls.ja4_fingerprint}' }, body: '${conn.tls.ja4_fingerprint}' } }] },
        { actions: [{ type: 'custom-response', config: { status_code: 418, body: 'not TLS 1.3 with a server name: ${conn.tls.ja4_fingerprint}' } }] },
      ],
    });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://ja4.example.com', traffic_policy: policy })).status, 201);
    // node's client offers TLS 1.3 with the server name and no ALPN: `t13d`, the counts, `00`.
    const plain = await httpsCall('ja4.example.com', burrowCa);
    assert.equal(plain.status, 200, plain.body);
    assert.match(plain.body, /^t13d\d{4}00_[0-9a-f]{12}_[0-9a-f]{12}$/);
    assert.equal(plain.headers['x-ja4'], plain.body);
    // Offering ALPN http/1.1 adds one extension and marks `h1`; both hashes leave SNI and ALPN out.
    const alpn = await httpsCall('ja4.example.com', burrowCa, '/', { ALPNProtocols: ['http/1.1'] });
    const extensions = Number(plain.body.slice(6, 8));
    assert.equal(alpn.body, `${plain.body.slice(0, 6)}${String(extensions + 1).padStart(2, '0')}h1${plain.body.slice(10)}`);
    // TLS 1.2 at most: `t12d`, the second rule answers.
    const older = await httpsCall('ja4.example.com', burrowCa, '/', { maxVersion: 'TLSv1.2' });
    assert.equal(older.status, 418);
    assert.match(older.body, /^not TLS 1\.3 with a server name: t12d\d{4}00_[0-9a-f]{12}_[0-9a-f]{12}$/);
  });
});

describe('TLS endpoints through the TLS ingress', () => {
  test("the connection passes through untouched: the agent's service terminates TLS with its own certificate", async (t) => {
    const appCertificate = await signServerCertificate(ownCa, { now: new Date(), dnsNames: ['pass.example.com'] });
    const tlsApp = await listenLocally(
      createTlsServer({ cert: appCertificate.certificatePem, key: appCertificate.privateKeyPem }, (socket) => {
        socket.on('data', (chunk: Buffer) => socket.write(`echo: ${chunk}`));
        socket.on('error', () => socket.destroy());
      }),
    );
    t.after(() => tlsApp.close());
    const tlsAppPort = tlsApp.port;

    await reserve('pass.example.com');
    const session = await agent(t);
    const listener = await session.tlsEndpoint().domain('pass.example.com').listenAndForward(`tcp://127.0.0.1:${tlsAppPort}`);
    assert.equal(listener.url(), 'tls://pass.example.com');

    const { socket: client, certificate } = await connectTls(t, tlsPort, 'pass.example.com', ownCa.certificatePem);
    assert.equal(certificate, fingerprintOf(appCertificate.certificatePem));
    client.write('ping');
    const [echoed] = (await once(client, 'data')) as [Buffer];
    assert.equal(String(echoed), 'echo: ping');
  });

  test("the agent's termination option: Burrow terminates TLS with the agent's certificate and sends the plain bytes down; its IP restriction closes refused clients", async (t) => {
    const echo = await listenLocally(
      createNetServer((socket) => {
        socket.on('data', (chunk: Buffer) => socket.write(`plain: ${chunk}`));
        socket.on('error', () => socket.destroy());
      }),
    );
    t.after(() => echo.close());
    const edgeCertificate = await signServerCertificate(ownCa, { now: new Date(), dnsNames: ['edge.example.com'] });
    await reserve('edge.example.com');
    await reserve('closed.example.com');
    const session = await agent(t);
    const target = `tcp://127.0.0.1:${echo.port}`;
    await session.tlsEndpoint().domain('edge.example.com').termination(Buffer.from(edgeCertificate.certificatePem), Buffer.from(edgeCertificate.privateKeyPem)).listenAndForward(target);
    await session.tlsEndpoint().domain('closed.example.com').allowCidr('10.0.0.0/8').listenAndForward(target);

    const { socket: client, certificate } = await connectTls(t, tlsPort, 'edge.example.com', ownCa.certificatePem);
    assert.equal(certificate, fingerprintOf(edgeCertificate.certificatePem));
    client.write('hi');
    const [answered] = (await once(client, 'data')) as [Buffer];
    assert.equal(String(answered), 'plain: hi');

    const refused = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: 'closed.example.com', ca: ownCa.certificatePem });
    const [error] = (await once(refused, 'error')) as [Error & { code?: string }];
    assert.match(String(error.code ?? error.message), /ECONNRESET|socket disconnected|EPIPE/);
  });

  test('a connection without a server name, or with bytes that are no TLS, is closed', async () => {
    for (const bytes of [Buffer.from('GET / HTTP/1.1\r\nHost: pass.example.com\r\n\r\n')]) {
      const socket = netConnect(tlsPort, '127.0.0.1');
      socket.end(bytes);
      const chunks: Buffer[] = [];
      for await (const chunk of socket) chunks.push(chunk as Buffer);
      assert.equal(Buffer.concat(chunks).length, 0);
    }
    const unnamed = tlsConnect({ host: '127.0.0.1', port: tlsPort, ca: burrowCa });
    const [error] = (await once(unnamed, 'error')) as [Error & { code?: string }];
    assert.match(String(error.code ?? error.message), /ECONNRESET|socket disconnected|EPIPE/);
  });
});
