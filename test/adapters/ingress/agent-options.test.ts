import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { connect as http2Connect, constants as http2Constants, createServer as createHttp2Server, type ClientHttp2Session, type Http2ServerRequest, type Http2ServerResponse, type IncomingHttpHeaders as Http2Headers } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, createServer as createNetServer, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { after, before, describe, test, type TestContext } from 'node:test';
import { startIngressServer, startJsonApp, type IngressServer } from './fixtures.ts';
import { callIngress, serveLocally, startUpperService, upgradeCall, WebSocketFrames } from './helpers.ts';

/**
 * Options the vendor's agent (the @ngrok/ngrok SDK) sets on its listeners, as the vendor's edge
 * applies them to clients' traffic through Burrow's ingress: IP restrictions, the PROXY protocol,
 * WebSocket-to-TCP conversion, HTTP/2 to the upstream.
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
  const port = await serveLocally(
    t,
    createNetServer((socket) => {
      connections++;
      socket.once('data', (chunk: Buffer) => socket.end(chunk.toString().toUpperCase()));
    }),
  );
  return { port, seen: () => connections };
}

/** A PROXY protocol header as a service behind the agent reads it. */
interface ProxyHeader {
  readonly version: 1 | 2;
  readonly source: string;
  readonly destination: string;
}

/**
 * Reads a PROXY protocol header (v1 or v2) off the start of `socket`; resolves it with the bytes
 * after it, or undefined when the first bytes are none.
 */
function readProxyHeader(socket: Socket): Promise<{ header: ProxyHeader; rest: Buffer } | undefined> {
  const V2 = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
  return new Promise((resolve) => {
    let bytes = Buffer.alloc(0);
    const done = (result: { header: ProxyHeader; rest: Buffer } | undefined) => {
      socket.off('data', onData);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      if (bytes.length >= 16 && bytes.subarray(0, 12).equals(V2)) {
        const length = bytes.readUInt16BE(14);
        if (bytes.length < 16 + length) return;
        const family = bytes[13];
        const size = family === 0x11 ? 4 : 16;
        const address = (at: number) => (size === 4 ? [...bytes.subarray(at, at + 4)].join('.') : bytes.subarray(at, at + 16).toString('hex'));
        const ports = 16 + 2 * size;
        return done({
          header: { version: 2, source: `${address(16)}:${bytes.readUInt16BE(ports)}`, destination: `${address(16 + size)}:${bytes.readUInt16BE(ports + 2)}` },
          rest: bytes.subarray(16 + length),
        });
      }
      const end = bytes.indexOf('\r\n');
      if (end === -1 && bytes.length < 108) return;
      const line = /^PROXY TCP[46] (\S+) (\S+) (\d+) (\d+)$/.exec(bytes.subarray(0, end).toString('latin1'));
      if (!line) return done(undefined);
      done({ header: { version: 1, source: `${line[1]}:${line[3]}`, destination: `${line[2]}:${line[4]}` }, rest: bytes.subarray(end + 2) });
    };
    socket.on('data', onData);
  });
}

/**
 * A local service that expects a PROXY protocol header on each connection (closing one without)
 * and hands the connection on after it: to an HTTP server answering the header it came with as
 * JSON (`http`), or to `raw` with the header and the first bytes after it.
 */
async function startProxyProtocolService(t: TestContext, raw?: (socket: Socket, header: ProxyHeader, rest: Buffer) => void): Promise<number> {
  const headers = new WeakMap<Socket, ProxyHeader>();
  const http = createHttpServer((req, res) => res.end(JSON.stringify({ url: req.url, proxy: headers.get(req.socket) })));
  return serveLocally(
    t,
    createNetServer((socket) => {
      void readProxyHeader(socket).then((read) => {
        if (!read) return void socket.destroy();
        if (raw) return raw(socket, read.header, read.rest);
        headers.set(socket, read.header);
        socket.unshift(read.rest);
        http.emit('connection', socket);
      });
    }),
  );
}

describe('the PROXY protocol (proxyProto)', () => {
  test('HTTP: the header of the version asked for reaches the service before the request, naming the client and the ingress address it reached', async (t) => {
    const session = await ingress.agent(t);
    const port = await startProxyProtocolService(t);
    for (const version of ['1', '2'] as const) {
      const listener = await session.httpEndpoint().proxyProto(version).listenAndForward(`http://127.0.0.1:${port}`);
      const client = netConnect(ingress.port('http_ingress'), '127.0.0.1');
      await once(client, 'connect');
      const clientPort = client.localPort;
      client.write(`GET /v${version} HTTP/1.1\r\nHost: ${hostOf(listener.url())}\r\nConnection: close\r\n\r\n`);
      let answer = '';
      for await (const chunk of client) answer += String(chunk);
      const seen = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      assert.equal(seen.url, `/v${version}`);
      assert.deepEqual(seen.proxy, { version: Number(version), source: `127.0.0.1:${clientPort}`, destination: `127.0.0.1:${ingress.port('http_ingress')}` });
    }
  });

  test('TCP and TLS: the header comes first, then the client\'s own bytes (a TLS ClientHello passed through untouched)', async (t) => {
    const session = await ingress.agent(t);
    const seen: { header: ProxyHeader; first: number }[] = [];
    const port = await startProxyProtocolService(t, (socket, header, rest) => {
      const first = (bytes: Buffer) => {
        seen.push({ header, first: bytes[0]! });
        socket.end(`${header.version} ${bytes.toString('latin1').startsWith('ping') ? 'pong' : 'tls'}`);
      };
      if (rest.length > 0) first(rest);
      else socket.once('data', first);
    });
    const tcp = await session.tcpEndpoint().proxyProto('2').listenAndForward(`tcp://127.0.0.1:${port}`);
    assert.equal(await tcpExchange(tcp.url()!, 'ping'), '2 pong');
    assert.equal(seen[0]!.header.source.startsWith('127.0.0.1:'), true);
    assert.equal(seen[0]!.header.destination, `127.0.0.1:${new URL(tcp.url()!).port}`);

    const tls = await session.tlsEndpoint().proxyProto('1').listenAndForward(`tcp://127.0.0.1:${port}`);
    const client = tlsConnect({ host: '127.0.0.1', port: ingress.port('tls_ingress'), servername: hostOf(tls.url()) });
    await new Promise((resolve) => client.on('error', () => undefined).once('close', resolve));
    assert.equal(seen[1]!.header.version, 1);
    assert.equal(seen[1]!.header.destination, `127.0.0.1:${ingress.port('tls_ingress')}`);
    assert.equal(seen[1]!.first, 0x16, 'a TLS handshake record follows the header');
  });
});

describe('WebSocket-to-TCP conversion (websocketTcpConversion)', () => {
  test('a request that is no WebSocket handshake answers ERR_NGROK_3206; a handshake is accepted by the ingress and its messages\' bytes reach a TCP service, whose bytes come back as binary frames', async (t) => {
    const session = await ingress.agent(t);
    const service = await startUpperService(t);
    const listener = await session.httpEndpoint().websocketTcpConversion().listenAndForward(`http://127.0.0.1:${service.port}`);
    const host = hostOf(listener.url());
    const port = ingress.port('http_ingress');

    const plain = await callIngress(port, { host, path: '/' });
    assert.equal(plain.status, 400);
    assert.equal(plain.headers['ngrok-error-code'], 'ERR_BURROW_3206');
    assert.match(plain.body.toString(), /Expected a websocket request with a &#34;Connection: upgrade&#34; header but did not receive one\./);

    const opened = await upgradeCall(port, host, '/any/path');
    assert.ok('switched' in opened, 'the ingress accepts the handshake');
    assert.equal(opened.switched.statusCode, 101);
    const ws = new WebSocketFrames(opened.socket, opened.head);
    // A text message in two fragments, then a binary one: their bytes, in order, as TCP.
    ws.send(1, 'hel', { fin: false });
    ws.send(0, 'lo ');
    ws.send(2, 'world');
    assert.equal((await ws.read(11)).toString(), 'HELLO WORLD');
    ws.send(9, 'are you there');
    assert.deepEqual(await ws.next(), { fin: true, opcode: 10, payload: Buffer.from('are you there') });
    // 256 KiB in one frame each way, streamed.
    const big = Buffer.alloc(256 * 1024, 'abcdefgh');
    ws.send(2, big);
    assert.equal((await ws.read(big.length)).equals(Buffer.from(big.toString().toUpperCase())), true);
    // The client's close is answered with its code and ends the service's connection.
    ws.send(8, Buffer.from([0x03, 0xe8]));
    assert.deepEqual(await ws.next(), { fin: true, opcode: 8, payload: Buffer.from([0x03, 0xe8]) });
    assert.equal(await service.ended[0], 11 + big.length);
  });

  test('the service\'s end closes the WebSocket (1000); a frame that breaks the protocol (unmasked) is answered with 1002', async (t) => {
    const session = await ingress.agent(t);
    const hangUp = await serveLocally(t, createNetServer((socket) => socket.once('data', () => socket.end('bye'))));
    const listener = await session.httpEndpoint().websocketTcpConversion().listenAndForward(`http://127.0.0.1:${hangUp}`);
    const host = hostOf(listener.url());
    const port = ingress.port('http_ingress');

    const first = await upgradeCall(port, host, '/');
    assert.ok('switched' in first);
    const ws = new WebSocketFrames(first.socket, first.head);
    ws.send(2, 'hi');
    assert.equal((await ws.read(3)).toString(), 'bye');
    assert.deepEqual(await ws.next(), { fin: true, opcode: 8, payload: Buffer.from([0x03, 0xe8]) });

    const second = await upgradeCall(port, host, '/');
    assert.ok('switched' in second);
    const broken = new WebSocketFrames(second.socket, second.head);
    broken.send(2, 'not masked', { masked: false });
    assert.deepEqual(await broken.next(), { fin: true, opcode: 8, payload: Buffer.from([0x03, 0xea]) });
    assert.equal(await broken.next(), undefined, 'the ingress closes the connection after');
  });
});

/** An app that speaks HTTP/2 only (h2c with prior knowledge; an HTTP/1.1 request is no HTTP/2 preface and is dropped): answers what it got as JSON. */
async function startHttp2App(t: TestContext): Promise<number> {
  const server = createHttp2Server(async (req: Http2ServerRequest, res: Http2ServerResponse) => {
    const hash = createHash('sha256');
    let length = 0;
    for await (const chunk of req) {
      hash.update(chunk as Buffer);
      length += (chunk as Buffer).length;
    }
    res.setHeader('content-type', 'application/json');
    res.setHeader('set-cookie', ['a=1', 'b=2']);
    res.end(JSON.stringify({ version: req.httpVersion, method: req.method, path: req.url, authority: req.authority, headers: req.headers, length, sha256: hash.digest('hex') }));
  });
  return serveLocally(t, server as unknown as import('node:net').Server);
}

describe('HTTP/2 to the upstream (appProtocol("http2"))', () => {
  test('requests reach an HTTP/2-only app as HTTP/2, bodies both ways; GET /endpoints says upstream_protocol http2', async (t) => {
    const session = await ingress.agent(t);
    const port = await startHttp2App(t);
    const h2 = await session.httpEndpoint().appProtocol('http2').listenAndForward(`http://127.0.0.1:${port}`);
    const h1 = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${port}`);
    const host = hostOf(h2.url());
    const body = Buffer.alloc(1024 * 1024, 'h2');
    const answer = await callIngress(ingress.port('http_ingress'), { method: 'POST', host, path: '/upload?x=1', headers: { 'x-test': 'yes', cookie: 'c=3' }, body });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.headers['set-cookie'], ['a=1', 'b=2']);
    const seen = JSON.parse(answer.body.toString());
    assert.deepEqual(
      [seen.version, seen.method, seen.path, seen.authority, seen.headers['x-test'], seen.headers['x-forwarded-proto'], seen.headers['content-length'], seen.length, seen.sha256],
      ['2.0', 'POST', '/upload?x=1', host, 'yes', 'http', String(body.length), body.length, createHash('sha256').update(body).digest('hex')],
    );
    // A chunked request body arrives whole, framed by the HTTP/2 stream alone.
    const chunked = await callIngress(ingress.port('http_ingress'), { method: 'PUT', host, path: '/chunks', headers: { 'transfer-encoding': 'chunked' }, body: Buffer.from('some bytes') });
    assert.deepEqual([JSON.parse(chunked.body.toString()).length, JSON.parse(chunked.body.toString()).headers['content-length']], [10, undefined]);

    const endpoints = await ingress.server.request('GET', '/endpoints');
    const protocolOf = (url: string | null) => endpoints.body.endpoints.find((endpoint: { url: string }) => endpoint.url === url).upstream_protocol;
    assert.equal(protocolOf(h2.url()), 'http2');
    assert.equal(protocolOf(h1.url()), 'http1');
    // Spoken to in HTTP/1.1, the same app drops the connection: the 502 the appProtocol option avoids.
    assert.equal((await callIngress(ingress.port('http_ingress'), { host: hostOf(h1.url()) })).status, 502);
  });

  test('an upstream protocol other than http1 or http2 refuses the bind (ERR_NGROK_15003)', async (t) => {
    const session = await ingress.agent(t);
    await assert.rejects(session.httpEndpoint().appProtocol('http3').listen(), /15003|Upstream protocol is invalid: http3/);
  });
});

/** An HTTP/2 connection to the TLS ingress for `name` (ALPN h2, trusting Burrow's CA), closed after the test. */
async function http2Client(t: TestContext, name: string): Promise<ClientHttp2Session> {
  const session = http2Connect(`https://${name}`, { host: '127.0.0.1', port: ingress.port('tls_ingress'), servername: name, ca: ingress.ca } as never);
  t.after(() => session.destroy());
  await once(session, 'connect');
  assert.equal((session.socket as import('node:tls').TLSSocket).alpnProtocol, 'h2');
  return session;
}

/** One HTTP/2 request on `session`: its status, headers and body. */
async function http2Call(session: ClientHttp2Session, headers: Record<string, string>, body?: Buffer): Promise<{ status: number; headers: Http2Headers; body: Buffer }> {
  const request = session.request(headers, { endStream: body === undefined });
  if (body) request.end(body);
  const [answer] = (await once(request, 'response')) as [Http2Headers];
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return { status: Number(answer[':status']), headers: answer, body: Buffer.concat(chunks) };
}

describe('HTTP/2 clients on the TLS ingress (ALPN h2)', () => {
  test('requests over one HTTP/2 connection, side by side, reach the agent\'s HTTP/1.1 app through the same policy path; an HTTP/2 app too', async (t) => {
    const session = await ingress.agent(t);
    const h1 = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${app.port}`);
    const name = hostOf(h1.url());
    const client = await http2Client(t, name);
    const [first, second] = await Promise.all([
      http2Call(client, { ':method': 'GET', ':path': '/one?x=1', 'x-test': 'a' }),
      http2Call(client, { ':method': 'POST', ':path': '/two' }, Buffer.from('a body')),
    ]);
    assert.equal(first.status, 200);
    const seen1 = JSON.parse(first.body.toString());
    // The :authority becomes the Host (node's client names the port).
    assert.deepEqual([seen1.url, seen1.headers.host, seen1.headers['x-test'], seen1.headers['x-forwarded-proto']], ['/one?x=1', `${name}:443`, 'a', 'https']);
    assert.equal(JSON.parse(second.body.toString()).url, '/two');

    // The agent's options apply as for HTTP/1.1: an IP restriction answers its 403 page on the stream.
    const restricted = await session.httpEndpoint().allowCidr('192.0.2.0/24').listenAndForward(`http://127.0.0.1:${app.port}`);
    const refused = await http2Call(await http2Client(t, hostOf(restricted.url())), { ':method': 'GET', ':path': '/' });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers['ngrok-error-code'], 'ERR_BURROW_3205');

    const h2app = await startHttp2App(t);
    const both = await session.httpEndpoint().appProtocol('http2').listenAndForward(`http://127.0.0.1:${h2app}`);
    const through = await http2Call(await http2Client(t, hostOf(both.url())), { ':method': 'PUT', ':path': '/up' }, Buffer.from('0123456789'));
    const seen2 = JSON.parse(through.body.toString());
    assert.deepEqual([through.status, seen2.version, seen2.method, seen2.length, seen2.authority], [200, '2.0', 'PUT', 10, `${hostOf(both.url())}:443`]);
  });

  test("an HTTP/2 connection's requests reuse proxy streams as they free up, so the agent keeps as many app connections as there were requests at once", async (t) => {
    const session = await ingress.agent(t);
    // The app answers the port its caller connected from: one agent connection, one port.
    const ports = await serveLocally(t, createHttpServer((req, res) => res.end(String(req.socket.remotePort))));
    const listener = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${ports}`);
    const client = await http2Client(t, hostOf(listener.url()));
    const from = async (path: string) => (await http2Call(client, { ':method': 'GET', ':path': path })).body.toString();
    const first = await from('/1');
    assert.equal(await from('/2'), first, 'one request at a time: one stream, one app connection');
    const together = await Promise.all([from('/a'), from('/b'), from('/c')]);
    assert.equal(new Set(together).size, 3, 'three at once: three streams');
    assert.ok(together.includes(first), 'the kept one among them');
    assert.ok(together.includes(await from('/3')), 'and a freed one serves the next');
  });

  test("HTTP/2 trailers both ways: a client's trailing HEADERS are req.trailers, an HTTP/2 app's are res.trailers (the reference's examples)", async (t) => {
    const session = await ingress.agent(t);
    const trailing = await serveLocally(t, createHttp2Server(async (req: Http2ServerRequest, res: Http2ServerResponse) => {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      res.setHeader('content-type', 'text/plain');
      res.write(`${body} seen with ${req.headers['x-request-trailers']}`);
      res.addTrailers({ baz: 'fizz' });
      res.end();
    }) as unknown as import('node:net').Server);
    const policy = JSON.stringify({
      on_http_request: [{ expressions: ["'Fizz' in req.trailers['baz']"], actions: [{ type: 'add-headers', config: { headers: { 'x-request-trailers': "${req.trailers['baz'].join(',')}" } } }] }],
      on_http_response: [{ expressions: ["'fizz' in res.trailers['baz']"], actions: [{ type: 'add-headers', config: { headers: { 'x-response-trailer': "${res.trailers['baz'][0]}" } } }] }],
    });
    const listener = await session.httpEndpoint().appProtocol('http2').trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${trailing}`);
    const client = await http2Client(t, hostOf(listener.url()));
    const request = client.request({ ':method': 'POST', ':path': '/trailers' }, { waitForTrailers: true });
    request.once('wantTrailers', () => request.sendTrailers({ baz: 'Fizz' }));
    request.end('hello');
    const trailers = once(request, 'trailers') as Promise<[Http2Headers]>;
    const [answer] = (await once(request, 'response')) as [Http2Headers];
    let body = '';
    for await (const chunk of request) body += String(chunk);
    assert.equal(answer['x-response-trailer'], 'fizz');
    assert.equal(body, 'hello seen with Fizz');
    // The app's trailing HEADERS reach the client as its own (gRPC's grpc-status travels so).
    assert.equal((await trailers)[0].baz, 'fizz');
  });

  test('a body longer than the Content-Length the client declared never reaches the app (the stream is reset)', async (t) => {
    const session = await ingress.agent(t);
    const urls: string[] = [];
    const counting = await serveLocally(t, createHttpServer((req, res) => {
      urls.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.end('ok'));
    }));
    const listener = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${counting}`);
    const client = await http2Client(t, hostOf(listener.url()));
    const smuggled = Buffer.from('hello' + 'GET /second HTTP/1.1\r\nHost: x\r\n\r\n');
    const request = client.request({ ':method': 'POST', ':path': '/first', 'content-length': '5' }, { endStream: false });
    request.end(smuggled);
    await new Promise((resolve) => request.on('error', () => undefined).once('close', resolve));
    assert.notEqual(request.rstCode, http2Constants.NGHTTP2_NO_ERROR);
    // The connection is still good, and the app saw no second request.
    assert.equal((await http2Call(client, { ':method': 'GET', ':path': '/after' })).status, 200);
    assert.ok(urls.includes('/after') && !urls.includes('/second'), `the app saw ${urls.join(', ')}`);
  });
});
