import ngrok, { type Session } from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { createIngress } from '../../../adapters/ingress/index.ts';
import { MemoryStore } from '../../../adapters/stores/memory-store.ts';
import { createBurrow, type HttpTraffic } from '../../../lib/index.ts';
import { LIMITS } from '../../../lib/limits.ts';
import { manualTimers, startGateway, type GatewayEvent } from '../agent-gateway/helpers.ts';
import { callIngress, seen as appSaw, startApp, upgradeCall, type Answer, type Call } from './helpers.ts';

/**
 * The HTTP ingress with the real parts: the vendor's agent (@ngrok/ngrok) connected to the agent
 * gateway, a local HTTP app it forwards to, and node's HTTP client sending requests to the ingress
 * by Host, through the endpoint's traffic policy.
 */

const HOST = 'app.burrow.test';

/** One request to the ingress, by default for HOST. */
const call = (port: number, options: Partial<Call> = {}) => callIngress(port, { host: HOST, ...options });

/** A gateway, an ingress routing to its sessions, and the app; `bind` starts the agent's endpoint. */
async function setUp(t: TestContext, gatewayOptions: Parameters<typeof startGateway>[1] = {}) {
  // Agents close while the gateway still serves them (after-hooks run in the order registered):
  // the SDK's close of a session the gateway has ended can wait forever.
  const agents: Session[] = [];
  t.after(() => Promise.all(agents.map((agent) => agent.close().catch(() => undefined))));
  const gateway = await startGateway(t, gatewayOptions);
  const burrow = createBurrow({ store: new MemoryStore() });
  const errors: unknown[] = [];
  const ingress = await createIngress(burrow, { sessions: () => gateway.gateway.sessions(), onError: (error) => errors.push(error) });
  t.after(() => ingress.close());
  const appPort = await startApp(t);
  /** The vendor's agent, connected to the gateway; it does not reconnect once disconnected. */
  const agent = async () => {
    const session = await new ngrok.SessionBuilder()
      .authtoken('agent-token')
      .serverAddr(`localhost:${gateway.port}`)
      .caCert(Buffer.from(gateway.caPem))
      .handleDisconnection(() => false)
      .connect();
    agents.push(session);
    return session;
  };
  /** Leaves an agent the gateway disconnected unclosed: the SDK's close of such a session can wait forever. */
  const disconnected = (session: Session) => agents.splice(agents.indexOf(session), 1);
  return { burrow, gateway, ingress, port: ingress.http!.port, appPort, errors, agent, disconnected };
}

const json = appSaw;

describe('HTTP ingress: routing to a live agent', () => {
  test('a request by Host reaches the app through the agent and its answer comes back; bodies stream both ways; keep-alive', async (t) => {
    const { agent, port, appPort, errors } = await setUp(t);
    const session = await agent();
    await session.httpEndpoint().domain(HOST).listenAndForward(`http://127.0.0.1:${appPort}`);

    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => keepAlive.destroy());
    const first = await call(port, { path: '/hello?x=1', headers: { 'X-Test': 'through' }, agent: keepAlive });
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-app'], 'yes');
    const seen = json(first);
    assert.equal(seen.method, 'GET');
    assert.equal(seen.url, '/hello?x=1');
    assert.equal(seen.headers.host, HOST);
    assert.equal(seen.headers['x-test'], 'through');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen.headers['x-forwarded-proto'], 'http');

    const upload = Buffer.alloc(3 * 1024 * 1024 + 5, 'burrow');
    const posted = await call(port, { method: 'POST', path: '/upload', body: upload, agent: keepAlive });
    assert.equal(posted.status, 200);
    assert.equal(posted.reusedSocket, true, 'the second request rides the kept-alive connection');
    assert.equal(json(posted).length, upload.length);
    assert.equal(json(posted).sha256, createHash('sha256').update(upload).digest('hex'));

    const download = await call(port, { path: '/download', agent: keepAlive });
    assert.equal(download.status, 200);
    assert.deepEqual(download.body, Buffer.alloc(1024 * 1024, 7));
    assert.deepEqual(errors, []);
  });

  test("a client connection's requests share one proxy stream, so the agent keeps one connection to the app; another client connection gets its own", async (t) => {
    const { agent, port } = await setUp(t);
    // The app answers the port its caller connected from: one agent connection, one port.
    const app = createServer((req, res) => {
      if (req.url === '/close') res.setHeader('Connection', 'close');
      res.end(String(req.socket.remotePort));
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      app.closeAllConnections();
      app.close();
    });
    const session = await agent();
    await session.httpEndpoint().domain(HOST).listenAndForward(`http://127.0.0.1:${(app.address() as { port: number }).port}`);
    const clients = [new Agent({ keepAlive: true, maxSockets: 1 }), new Agent({ keepAlive: true, maxSockets: 1 })] as const;
    t.after(() => clients.forEach((client) => client.destroy()));
    const from = async (client: Agent, path = '/') => {
      const answer = await call(port, { agent: client, path });
      assert.equal(answer.status, 200);
      return { port: answer.body.toString(), reused: answer.reusedSocket };
    };

    const first = await from(clients[0]);
    const second = await from(clients[0], '/again');
    assert.equal(second.reused, true);
    assert.equal(second.port, first.port, 'the same client connection, the same connection to the app');
    const other = await from(clients[1]);
    assert.notEqual(other.port, first.port, 'another client connection has a stream of its own');
    // The app ends its connection (Connection: close): the client's connection stays, and its next
    // request takes a new stream, so a new connection to the app.
    assert.equal((await from(clients[0], '/close')).port, first.port);
    const next = await from(clients[0]);
    assert.equal(next.reused, true, 'the client kept its connection');
    assert.notEqual(next.port, first.port);
  });

  test('no endpoint for the Host, and an endpoint whose agent went away, answer the vendor\'s offline page (3200) with our prefix', async (t) => {
    const { agent, disconnected, gateway, port, appPort } = await setUp(t);
    const unknown = await call(port, { host: 'nobody.burrow.test:8080' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers['ngrok-error-code'], 'ERR_BURROW_3200');
    assert.match(unknown.body.toString(), /ERR_BURROW_3200[\s\S]*The endpoint http:\/\/nobody\.burrow\.test is offline\./);

    const session = await agent();
    await session.httpEndpoint().domain(HOST).listenAndForward(`http://127.0.0.1:${appPort}`);
    assert.equal((await call(port)).status, 200);
    // The agent goes away (and, told not to, does not come back).
    gateway.gateway.sessions()[0]!.close('gone');
    await gateway.events.next((event: GatewayEvent) => event.kind === 'ended');
    disconnected(session);
    await gateway.events.next((event: GatewayEvent) => event.kind === 'ended');
    disconnected(session);
    const offline = await call(port);
    assert.equal(offline.status, 404);
    assert.equal(offline.headers['ngrok-error-code'], 'ERR_BURROW_3200');
  });
});

describe('HTTP ingress: an agent that closes', () => {
  test("listener.close() takes the endpoint offline at once; after session.close() the next request gets the offline page within agent_proxy_accept_ms, and the session ends", async (t) => {
    const acceptMs = 300;
    const timers = manualTimers();
    const { agent, gateway, port, appPort, disconnected } = await setUp(t, { proxyAcceptMs: acceptMs, timers });
    const session = await agent();
    const listener = await session.httpEndpoint().domain(HOST).listenAndForward(`http://127.0.0.1:${appPort}`);
    assert.equal((await call(port)).status, 200);
    await listener.close();
    const closed = await call(port);
    assert.equal(closed.status, 404);
    assert.equal(closed.headers['ngrok-error-code'], 'ERR_BURROW_3200');

    await session.httpEndpoint().domain(HOST).listenAndForward(`http://127.0.0.1:${appPort}`);
    assert.equal((await call(port)).status, 200);
    // The SDK stops taking streams but keeps its connection (and sends nothing) until it is dropped.
    await session.close();
    disconnected(session);
    const asked = call(port);
    await timers.whenPending(acceptMs);
    timers.advance(acceptMs);
    const gone = await asked;
    assert.equal(gone.status, 404);
    assert.equal(gone.headers['ngrok-error-code'], 'ERR_BURROW_3200');
    assert.match(gone.body.toString(), /did not take a proxied connection within 300 ms \(limit agent_proxy_accept_ms\)/);
    const ended = await gateway.events.next((event): event is Extract<GatewayEvent, { kind: 'ended' }> => event.kind === 'ended');
    assert.equal(ended.reason.kind, 'heartbeat-timeout');
    assert.equal((await call(port)).status, 404, 'the endpoint is offline for everyone');
  });
});

describe('HTTP ingress: the endpoint\'s traffic policy on live traffic', () => {
  const POLICY = JSON.stringify({
    on_http_request: [
      { name: 'no admin', expressions: ["req.url.path.startsWith('/admin')"], actions: [{ type: 'deny', config: { status_code: 403 } }] },
      { expressions: ["req.url.path == '/old'"], actions: [{ type: 'redirect', config: { to: '/new', status_code: 301 } }] },
      { expressions: ["req.url.path == '/teapot'"], actions: [{ type: 'custom-response', config: { status_code: 418, body: 'short and stout', headers: { 'content-type': 'text/plain' } } }] },
      { expressions: ["req.url.path.startsWith('/v1/')"], actions: [{ type: 'url-rewrite', config: { from: '/v1/', to: '/api/' } }] },
      { actions: [{ type: 'add-headers', config: { headers: { 'x-policy': 'added for ${conn.client_ip}' } } }, { type: 'remove-headers', config: { headers: ['x-secret'] } }] },
    ],
    on_http_response: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-served-by': 'burrow' } } }, { type: 'remove-headers', config: { headers: ['x-app'] } }] }],
  });

  test('deny, redirect, custom-response, url-rewrite, add/remove-headers change the real request and response', async (t) => {
    const { agent, gateway, port, appPort } = await setUp(t);
    const session = await agent();
    await session.httpEndpoint().domain(HOST).trafficPolicy(POLICY).listenAndForward(`http://127.0.0.1:${appPort}`);

    const passed = await call(port, { path: '/items', headers: { 'X-Secret': 'hidden' } });
    assert.equal(passed.status, 200);
    assert.equal(json(passed).headers['x-policy'], 'added for 127.0.0.1');
    assert.equal(json(passed).headers['x-secret'], undefined);
    assert.equal(passed.headers['x-served-by'], 'burrow');
    assert.equal(passed.headers['x-app'], undefined);

    const denied = await call(port, { path: '/admin/users' });
    assert.equal(denied.status, 403);
    assert.equal(denied.headers['x-served-by'], undefined, 'a request answered by the policy never reaches the response phase');

    const moved = await call(port, { path: '/old' });
    assert.equal(moved.status, 301);
    assert.equal(moved.headers.location, `http://${HOST}/new`);

    const teapot = await call(port, { path: '/teapot' });
    assert.equal(teapot.status, 418);
    assert.equal(teapot.body.toString(), 'short and stout');

    const rewritten = await call(port, { path: '/v1/things?q=1' });
    assert.equal(json(rewritten).url, '/api/things?q=1');
  });

  test('the SDK\'s basic auth and a rate-limit refuse with the engine\'s answers', async (t) => {
    const { agent, gateway, port, appPort } = await setUp(t);
    const session = await agent();
    const limited = JSON.stringify({
      on_http_request: [{ expressions: ["req.url.path == '/limited'"], actions: [{ type: 'rate-limit', config: { name: 'one', algorithm: 'sliding_window', capacity: 1, rate: '60s', bucket_key: ['conn.client_ip'] } }] }],
    });
    await session.httpEndpoint().domain(HOST).basicAuth('user', 'password12').trafficPolicy(limited).listenAndForward(`http://127.0.0.1:${appPort}`);

    const refused = await call(port);
    assert.equal(refused.status, 401);
    assert.match(String(refused.headers['www-authenticate']), /^Basic/);
    const authorization = `Basic ${Buffer.from('user:password12').toString('base64')}`;
    assert.equal((await call(port, { headers: { authorization } })).status, 200);
    assert.equal((await call(port, { headers: { authorization: `Basic ${Buffer.from('user:wrong-one').toString('base64')}` } })).status, 401);

    assert.equal((await call(port, { path: '/limited', headers: { authorization } })).status, 200);
    const second = await call(port, { path: '/limited', headers: { authorization } });
    assert.equal(second.status, 429);
  });
});

describe('HTTP ingress: req.trailers and res.trailers', () => {
  test("the reference's examples on live HTTP/1.1 chunked trailers: 'Fizz' in req.trailers['baz'] (the request's, after its body) and 'fizz' in res.trailers['baz'] (the app's answer's)", async (t) => {
    const { agent, port } = await setUp(t);
    const seenBodies: { body: string; trailers: string | undefined; received: Record<string, string | undefined> }[] = [];
    const trailing = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        seenBodies.push({ body: text, trailers: req.headers['x-request-trailers'] as string | undefined, received: { ...req.trailers } });
        res.writeHead(200, { 'content-type': 'text/plain', trailer: 'Baz' });
        res.write('answer ');
        res.addTrailers({ Baz: req.url === '/fizz' ? 'fizz' : 'other' });
        res.end('done');
      });
    });
    trailing.listen(0, '127.0.0.1');
    await once(trailing, 'listening');
    t.after(() => trailing.close());
    const session = await agent();
    const policy = JSON.stringify({
      on_http_request: [{ expressions: ["'Fizz' in req.trailers['baz']"], actions: [{ type: 'add-headers', config: { headers: { 'x-request-trailers': "${req.trailers['baz'].join(',')}" } } }] }],
      on_http_response: [{ expressions: ["'fizz' in res.trailers['baz']"], actions: [{ type: 'add-headers', config: { headers: { 'x-response-trailer': "${res.trailers['baz'][0]}" } } }] }],
    });
    await session.httpEndpoint().domain(HOST).trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${(trailing.address() as import('node:net').AddressInfo).port}`);

    /** A chunked POST with trailers `trailers`, and the answer. */
    const send = async (path: string, trailers: Record<string, string>) => {
      const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { host: HOST, 'transfer-encoding': 'chunked', trailer: Object.keys(trailers).join(', ') }, agent: false });
      req.write('hello ');
      req.addTrailers(trailers);
      req.end('world');
      const [res] = (await once(req, 'response')) as [IncomingMessage];
      let body = '';
      for await (const chunk of res) body += String(chunk);
      return { headers: res.headers, body, trailers: res.trailers };
    };
    const both = await send('/fizz', { Baz: 'Fizz' });
    assert.equal(both.body, 'answer done', 'the answer read to its end for res.trailers is relayed whole');
    assert.equal(both.headers['x-response-trailer'], 'fizz');
    assert.deepEqual(seenBodies.at(-1), { body: 'hello world', trailers: 'Fizz', received: { baz: 'Fizz' } }, 'the request body read to its end for req.trailers goes on whole, its trailers after it');
    const neither = await send('/other', { Baz: 'Buzz' });
    assert.equal(neither.headers['x-response-trailer'], undefined);
    assert.equal(neither.body, 'answer done');
    assert.deepEqual(seenBodies.at(-1), { body: 'hello world', trailers: undefined, received: { baz: 'Buzz' } });
    // The app's trailers go on to the client, read whole for the policy or streamed without one.
    assert.deepEqual(both.trailers, { baz: 'fizz' });
    await session.httpEndpoint().domain('plain.example.com').listenAndForward(`http://127.0.0.1:${(trailing.address() as import('node:net').AddressInfo).port}`);
    const streamed = request({ host: '127.0.0.1', port, path: '/fizz', headers: { host: 'plain.example.com' }, agent: false });
    streamed.end();
    const [answer] = (await once(streamed, 'response')) as [IncomingMessage];
    let text = '';
    for await (const chunk of answer) text += String(chunk);
    assert.equal(text, 'answer done');
    assert.deepEqual(answer.trailers, { baz: 'fizz' });
    // And a request's trailers go on to the app without a policy that reads them: streamed, after the body.
    const upload = request({ host: '127.0.0.1', port, path: '/up', method: 'POST', headers: { host: 'plain.example.com', 'transfer-encoding': 'chunked', trailer: 'X-Checksum' }, agent: false });
    upload.write('hello ');
    upload.addTrailers({ 'X-Checksum': 'abc123', 'Content-Type': 'text/evil' });
    upload.end('world');
    const [uploaded] = (await once(upload, 'response')) as [IncomingMessage];
    uploaded.resume();
    await once(uploaded, 'end');
    assert.deepEqual(seenBodies.at(-1)!.received, { 'x-checksum': 'abc123' }, 'a field that may not be a trailer stays behind');
    assert.equal(seenBodies.at(-1)!.body, 'hello world');
  });
});

describe('HTTP ingress: forward-internal', () => {
  test('a public endpoint hands requests to an internal one, whose own policy runs; internal endpoints take no clients', async (t) => {
    const { agent, port, appPort } = await setUp(t);
    const session = await agent();
    const forward = (url: string, path: string) => ({ expressions: [`req.url.path == '${path}'`], actions: [{ type: 'forward-internal', config: { url } }] });
    const front = JSON.stringify({
      on_http_request: [forward('https://api.internal', '/api'), forward('https://gone.internal', '/gone')],
      on_http_response: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-front': 'seen' } } }] }],
    });
    const api = JSON.stringify({
      on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-internal': 'yes' } } }] }],
      on_http_response: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-api': 'seen' } } }] }],
    });
    await session.httpEndpoint().domain(HOST).trafficPolicy(front).listenAndForward(`http://127.0.0.1:${appPort}`);
    await session.httpEndpoint().domain('api.internal').trafficPolicy(api).listenAndForward(`http://127.0.0.1:${appPort}`);

    const forwarded = await call(port, { path: '/api' });
    assert.equal(forwarded.status, 200);
    assert.equal(json(forwarded).headers['x-internal'], 'yes');
    assert.equal(forwarded.headers['x-api'], 'seen');
    assert.equal(forwarded.headers['x-front'], 'seen');

    const direct = await call(port, { path: '/other' });
    assert.equal(json(direct).headers['x-internal'], undefined);

    const gone = await call(port, { path: '/gone' });
    assert.equal(gone.status, 404);
    assert.equal(gone.headers['ngrok-error-code'], 'ERR_BURROW_3200');

    const outside = await call(port, { host: 'api.internal' });
    assert.equal(outside.status, 404);
    assert.equal(outside.headers['ngrok-error-code'], 'ERR_BURROW_3200');
  });
});

/** Reads `socket` until it has sent `text` (the socket stays open). */
function readUntil(socket: Duplex, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += String(chunk);
      if (!seen.includes(text)) return;
      socket.off('data', onData).off('end', onEnd);
      resolve(seen);
    };
    const onEnd = () => reject(new Error(`the connection ended before ${JSON.stringify(text)} (got ${JSON.stringify(seen)})`));
    socket.on('data', onData).once('end', onEnd);
  });
}

describe('HTTP ingress: WebSocket upgrades', () => {
  test('the handshake runs the request and response phases, then bytes flow both ways; refusals of the policy or the app are answered', async (t) => {
    const { agent, port, appPort, burrow } = await setUp(t);
    const journaled = (path: string) =>
      new Promise<HttpTraffic>((resolve) => {
        const stop = burrow.traffic.watch((traffic) => {
          if (traffic.protocol === 'http' && new URL(traffic.request.url).pathname === path) resolve(traffic), stop();
        });
      });
    const session = await agent();
    const policy = JSON.stringify({
      on_http_request: [{ expressions: ["req.url.path == '/ws-denied'"], actions: [{ type: 'deny', config: { status_code: 403 } }] }],
      // A switch has no body, so no trailers: res.trailers is {} (not unknown) on a 101.
      on_http_response: [{ expressions: ['res.trailers.size() == 0'], actions: [{ type: 'add-headers', config: { headers: { 'x-served-by': 'burrow' } } }] }],
    });
    await session.httpEndpoint().domain(HOST).trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${appPort}`);

    const opened = await upgradeCall(port, HOST, '/ws');
    assert.ok('switched' in opened, 'the handshake switches protocols');
    t.after(() => opened.socket.destroy());
    assert.equal(opened.switched.statusCode, 101);
    assert.equal(opened.switched.headers.upgrade, 'websocket');
    assert.equal(opened.switched.headers['x-served-by'], 'burrow');
    assert.equal(opened.switched.headers['x-forwarded-proto-seen'], 'http');
    opened.socket.write('hello through burrow');
    assert.equal(await readUntil(opened.socket, 'HELLO THROUGH BURROW'), 'HELLO THROUGH BURROW');
    opened.socket.write('and back again');
    assert.equal(await readUntil(opened.socket, 'AND BACK AGAIN'), 'AND BACK AGAIN');
    // The upgrade is journaled once its connection closes, the bytes each way as its bodies.
    const upgraded = journaled('/ws');
    opened.socket.end();
    const traffic = await upgraded;
    assert.equal(traffic.answeredBy, 'upstream');
    assert.equal(traffic.response?.status, 101);
    assert.equal(traffic.request.bodyBytes, 'hello through burrowand back again'.length);
    assert.equal(traffic.response?.bodyBytes, 'hello through burrowand back again'.length);
    assert.deepEqual(traffic.endpoints.map((endpoint) => endpoint.url), [`https://${HOST}`]);

    const deniedSeen = journaled('/ws-denied');
    const denied = await upgradeCall(port, HOST, '/ws-denied');
    assert.ok('refused' in denied);
    assert.equal(denied.refused.status, 403);
    const deniedTraffic = await deniedSeen;
    assert.equal(deniedTraffic.answeredBy, 'policy');
    assert.equal(deniedTraffic.response?.status, 403);

    const refused = await upgradeCall(port, HOST, '/elsewhere');
    assert.ok('refused' in refused);
    assert.equal(refused.refused.status, 403);
    assert.equal(refused.refused.body.toString(), 'nope');
    assert.equal(refused.refused.headers['x-served-by'], 'burrow');
  });
});

describe('HTTP ingress: hostile clients', () => {
  test('an oversized head is refused naming its limit; garbage gets a 400; others are still served', async (t) => {
    const { agent, gateway, port, appPort } = await setUp(t);
    const session = await agent();
    await session.httpEndpoint().domain(HOST).listenAndForward(`http://127.0.0.1:${appPort}`);

    const big = await call(port, { headers: { 'X-Big': 'a'.repeat(LIMITS.ingress_header_bytes.value + 1) } });
    assert.equal(big.status, 431);
    assert.match(big.body.toString(), /limit ingress_header_bytes/);

    const socket = connect(port, '127.0.0.1');
    socket.end('NOT HTTP AT ALL\r\n\r\n');
    const chunks: Buffer[] = [];
    for await (const chunk of socket) chunks.push(chunk as Buffer);
    assert.match(Buffer.concat(chunks).toString(), /^HTTP\/1\.1 400 Bad Request/);

    assert.equal((await call(port)).status, 200);
  });
});
