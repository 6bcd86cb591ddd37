import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, createServer as createNetServer } from 'node:net';
import { after, before, describe, test, type TestContext } from 'node:test';
import { listenLocally, startIngressServer, startJsonApp, type IngressServer } from './fixtures.ts';
import { callIngress } from './helpers.ts';

/**
 * Options the vendor's agent (the @ngrok/ngrok SDK) sets on its listeners, as the vendor's edge
 * applies them to clients' traffic through Burrow's ingress: IP restrictions.
 */

let ingress: IngressServer;
let app: Awaited<ReturnType<typeof startJsonApp>>;

before(async () => {
  ingress = await startIngressServer(['--http-ingress-addr', '127.0.0.1:0', '--tls-ingress-addr', '127.0.0.1:0']);
  app = await startJsonApp();
});

after(async () => {
  await ingress?.stop();
  await app?.close();
});

const hostOf = (url: string | null) => new URL(url!).hostname;

/** One HTTPS request to the TLS ingress for `name` (trusting Burrow's CA). */
async function httpsCall(name: string, path = '/'): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const req = httpsRequest({ host: '127.0.0.1', port: ingress.port('tls_ingress'), servername: name, path, headers: { host: name }, ca: ingress.ca, agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { status: res.statusCode ?? 0, headers: res.headers, body };
}

/** Connects to the TCP endpoint `url`, writes `line`, and answers what came back before the ingress or the service closed. */
async function tcpExchange(url: string, line: string): Promise<string> {
  const { port } = new URL(url);
  const socket = netConnect(Number(port), '127.0.0.1');
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  socket.write(line);
  // A refused connection may end in a reset: only what arrived counts.
  await new Promise((resolve) => socket.on('error', () => undefined).once('close', resolve));
  return answer;
}

describe('IP restrictions on the agent\'s bind (allowCidr / denyCidr)', () => {
  test('an HTTP(S) endpoint refuses each request from a refused address with a 403 page (ERR_NGROK_3205), after the TLS handshake; other endpoints of the agent serve', async (t) => {
    const session = await ingress.agent(t);
    const allowedElsewhere = await session.httpEndpoint().allowCidr('10.0.0.0/8').listenAndForward(`http://127.0.0.1:${app.port}`);
    const denied = await session.httpEndpoint().denyCidr('127.0.0.0/8').listenAndForward(`http://127.0.0.1:${app.port}`);
    const open = await session.httpEndpoint().denyCidr('10.0.0.0/8').listenAndForward(`http://127.0.0.1:${app.port}`);
    for (const listener of [allowedElsewhere, denied]) {
      const answer = await callIngress(ingress.port('http_ingress'), { host: hostOf(listener.url()), path: '/x' });
      assert.equal(answer.status, 403);
      assert.equal(answer.headers['ngrok-error-code'], 'ERR_BURROW_3205');
      assert.match(answer.body.toString(), /Request blocked by IP restriction: 127\.0\.0\.1 (matches no allowed CIDR|is denied by 127\.0\.0\.0\/8)/);
    }
    const served = await callIngress(ingress.port('http_ingress'), { host: hostOf(open.url()), path: '/fine' });
    assert.equal(served.status, 200);
    assert.equal(JSON.parse(served.body.toString()).url, '/fine');

    const https = await session.httpEndpoint().allowCidr('192.0.2.0/24').listenAndForward(`http://127.0.0.1:${app.port}`);
    assert.match(https.url()!, /^https:/);
    const refused = await httpsCall(hostOf(https.url()), '/secret');
    assert.equal(refused.status, 403);
    assert.equal(refused.headers['ngrok-error-code'], 'ERR_BURROW_3205');
  });

  test('a TCP endpoint keeps the connection-time check: a refused address is closed before the service sees a byte', async (t) => {
    const session = await ingress.agent(t);
    const echo = await startEcho(t);
    const refused = await session.tcpEndpoint().allowCidr('10.0.0.0/8').listenAndForward(`tcp://127.0.0.1:${echo.port}`);
    const allowed = await session.tcpEndpoint().allowCidr('127.0.0.1/32').listenAndForward(`tcp://127.0.0.1:${echo.port}`);
    assert.equal(await tcpExchange(refused.url()!, 'hello\n'), '');
    assert.equal(echo.seen(), 0);
    assert.equal(await tcpExchange(allowed.url()!, 'hello\n'), 'HELLO\n');
  });
});

/** A TCP service that answers a line upper-cased and closes; counts the connections it saw. */
async function startEcho(t: TestContext): Promise<{ port: number; seen: () => number }> {
  let connections = 0;
  const local = await listenLocally(
    createNetServer((socket) => {
      connections++;
      socket.once('data', (chunk: Buffer) => socket.end(chunk.toString().toUpperCase()));
    }),
  );
  t.after(() => local.close());
  return { port: local.port, seen: () => connections };
}
