import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import { AgentGatewayError } from '../../../adapters/agent-gateway/index.ts';
import type { GatewayEvent } from './helpers.ts';
import { connectAgent, connectRawAgent, manualTimers, Recorder, REFUSED_CODE, REFUSED_MESSAGE, REFUSED_TOKEN, startGateway, startRelay, testPki } from './helpers.ts';

/**
 * The vendor's own agent, the @ngrok/ngrok SDK (1.7.0, a native build of ngrok-rust), against the
 * gateway: every exchange here is the real agent's, unchanged, over TLS trusting the test CA.
 */

async function listen(t: TestContext, server: { listen(port: number, host: string, cb: () => void): unknown; address(): unknown; close(cb: () => void): unknown }): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

/** A local HTTP service: answers the method, path, a header and the body's length and hash; echoes with ?echo. */
async function startHttpService(t: TestContext): Promise<number> {
  return listen(
    t,
    createHttpServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      if (req.url?.endsWith('?echo')) return res.end(body);
      res.end(`${req.method} ${req.url} x-test=${req.headers['x-test'] ?? ''} length=${body.length} sha256=${createHash('sha256').update(body).digest('hex')}`);
    }),
  );
}

/** Writes `request` on a proxy stream and reads everything until the agent ends it. */
async function exchange(stream: Duplex, request: string | Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.end(request);
  await once(stream, 'end');
  return Buffer.concat(chunks);
}

/**
 * Lets the gateway finish the handler call it is in: its continuation (recording the tunnel,
 * writing the reply) is microtasks only, all done before the next turn of the event loop.
 */
const gatewayContinued = () => new Promise((resolve) => setImmediate(resolve));

const httpRequest = (path: string, body = Buffer.alloc(0), method = 'POST') =>
  Buffer.concat([Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: app.example.com\r\nX-Test: through-the-tunnel\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`), body]);

const isBind = (event: GatewayEvent): event is Extract<GatewayEvent, { kind: 'bind' }> => event.kind === 'bind';
const isEnded = (event: GatewayEvent): event is Extract<GatewayEvent, { kind: 'ended' }> => event.kind === 'ended';

describe('Auth', () => {
  test('the handler receives the Auth the SDK sends; the session is live with its context', async (t) => {
    const fixture = await startGateway(t);
    await connectAgent(fixture, (builder) => builder.authtoken('tok_123').metadata('agent metadata').handleStopCommand(() => {}));
    const auth = await fixture.events.next((event) => event.kind === 'auth');
    assert.equal(auth.kind, 'auth');
    if (auth.kind !== 'auth') return;
    assert.deepEqual(auth.auth.versions, ['3', '2']);
    assert.equal(auth.auth.authtoken, 'tok_123');
    assert.equal(auth.auth.metadata, 'agent metadata');
    assert.equal(auth.auth.os, 'linux');
    assert.equal(auth.auth.agentVersion, '1.7.0');
    assert.equal(auth.auth.clientType, 'ngrok-javascript');
    assert.match(auth.auth.userAgent, /^ngrok-javascript\/1\.7\.0 ngrok-rust\//);
    assert.equal(auth.auth.clientId, '', 'a first connection has no session id yet');
    assert.deepEqual(auth.auth.commands.stop, { state: 'supported' });
    assert.equal(auth.auth.commands.restart.state, 'unsupported');
    assert.equal(auth.ip, '127.0.0.1');
    const [session] = fixture.gateway.sessions();
    assert.equal(session?.id, 'ts_1');
    assert.equal(session?.protocolVersion, '3');
    assert.deepEqual(session?.context, { token: 'tok_123' });
    assert.equal(session?.remote.ip, '127.0.0.1');
  });

  test('a refused token reaches the SDK with the message and the code (ERR_BURROW_ prefix: the code stays in the message)', async (t) => {
    const fixture = await startGateway(t);
    await assert.rejects(
      connectAgent(fixture, (builder) => builder.authtoken(REFUSED_TOKEN)),
      (error: Error & { errorCode?: string }) => {
        assert.equal(error.message, `failed to connect session: ${REFUSED_MESSAGE}\nERR_BURROW_${REFUSED_CODE}`);
        assert.equal(error.errorCode, undefined, 'the SDK recognises only its vendor prefix');
        return true;
      },
    );
    assert.deepEqual(fixture.gateway.sessions(), []);
    assert.equal(fixture.events.events.filter((event) => event.kind === 'ended').length, 0, 'a refused Auth is no session');
  });

  test('with the vendor prefix, the SDK reports the code as errorCode', async (t) => {
    const fixture = await startGateway(t, { errorCodePrefix: 'ERR_NGROK_' });
    await assert.rejects(connectAgent(fixture, (builder) => builder.authtoken(REFUSED_TOKEN)), (error: Error & { errorCode?: string }) => {
      assert.equal(error.errorCode, `ERR_NGROK_${REFUSED_CODE}`);
      assert.equal(error.message, `failed to connect session: ${REFUSED_MESSAGE} error_code: ERR_NGROK_${REFUSED_CODE}`);
      return true;
    });
  });
});

describe('binds', () => {
  test('http, https, tcp and tls endpoints: the handler sees what the SDK asked for, the SDK learns the URLs chosen', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const https = await session
      .httpEndpoint()
      .domain('app.example.com')
      .metadata('web')
      .allowCidr('10.0.0.0/8')
      .basicAuth('ada', 'correct horse')
      .trafficPolicy('{"on_http_request":[]}')
      .proxyProto('2')
      .listen(false);
    const http = await session.httpEndpoint().scheme('HTTP').listen(false);
    const tcp = await session.tcpEndpoint().remoteAddr('1.tcp.example.com:21000').listen(false);
    const tls = await session.tlsEndpoint().domain('tls.example.com').listen(false);

    assert.equal(https.url(), 'https://app.example.com');
    assert.match(http.url() ?? '', /^http:\/\/t\d+\.burrow\.test$/);
    assert.equal(tcp.url(), 'tcp://1.tcp.example.com:21000');
    assert.equal(tls.url(), 'tls://tls.example.com');
    assert.equal(https.proto(), 'https');
    assert.equal(tcp.proto(), 'tcp');

    const binds = fixture.events.events.filter(isBind);
    const [httpsBind, httpBind, tcpBind, tlsBind] = binds.map((event) => event.request);
    assert.equal(httpsBind?.kind === 'endpoint' && httpsBind.proto, 'https');
    if (httpsBind?.kind !== 'endpoint' || (httpsBind.proto !== 'https' && httpsBind.proto !== 'http')) return assert.fail('https bind');
    assert.equal(httpsBind.metadata, 'web');
    assert.equal(httpsBind.options.domain, 'app.example.com');
    assert.equal(httpsBind.options.proxyProto, 2);
    assert.deepEqual(httpsBind.options.ipRestriction, { allowCidrs: ['10.0.0.0/8'], denyCidrs: [] });
    assert.deepEqual(httpsBind.options.basicAuth, [{ username: 'ada', password: 'correct horse' }]);
    assert.equal(httpsBind.options.trafficPolicy, '{"on_http_request":[]}');
    assert.equal(httpBind?.kind === 'endpoint' && httpBind.proto, 'http');
    assert.equal(tcpBind?.kind === 'endpoint' && tcpBind.proto === 'tcp' && tcpBind.options.addr, '1.tcp.example.com:21000');
    assert.equal(tlsBind?.kind === 'endpoint' && tlsBind.proto === 'tls' && tlsBind.options.tlsTermination, null);
    const live = fixture.gateway.sessions()[0]!;
    assert.deepEqual(
      live.tunnels().map((tunnel) => [tunnel.tunnelId, tunnel.bindId, tunnel.url]),
      binds.map((event) => [event.result.tunnelId, event.result.tunnelId, event.result.url]),
      'the bind id is the tunnel id when the agent names none',
    );
  });

  test('a labeled tunnel: the handler sees its labels, the SDK learns its id', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const listener = await session.labeledListener().label('edge', 'edghts_2abc').label('team', 'blue').metadata('labeled').listen(false);
    const bind = await fixture.events.next(isBind);
    assert.deepEqual(bind.request, { kind: 'labeled', labels: { edge: 'edghts_2abc', team: 'blue' }, forwardsTo: bind.request.forwardsTo, forwardsProto: '', metadata: 'labeled' });
    assert.equal(listener.id(), bind.result.tunnelId);
    assert.deepEqual(listener.labels(), { edge: 'edghts_2abc', team: 'blue' });
  });

  test('a refused bind reaches the SDK with the handler\'s message and code', async (t) => {
    const fixture = await startGateway(t);
    fixture.handler.bind = async (_session, request) => {
      throw new AgentGatewayError(9014, `${request.kind === 'endpoint' && 'domain' in request.options ? request.options.domain : request.kind}: the credential's ACL does not allow this bind`);
    };
    const session = await connectAgent(fixture);
    await assert.rejects(session.httpEndpoint().domain('forbidden.example.com').listen(false), (error: Error) => {
      assert.equal(error.message, "failed to start listener: forbidden.example.com: the credential's ACL does not allow this bind\nERR_BURROW_9014");
      return true;
    });
  });

  test('closing a listener unbinds its tunnel', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const listener = await session.httpEndpoint().listen(false);
    const bind = await fixture.events.next(isBind);
    await listener.close();
    const unbind = await fixture.events.next((event) => event.kind === 'unbind');
    assert.equal(unbind.kind === 'unbind' && unbind.tunnelId, bind.result.tunnelId);
    assert.deepEqual(fixture.gateway.sessions()[0]!.tunnels(), []);
  });

  test('StopTunnel from the server ends the SDK listener with the message and code', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const port = await startHttpService(t);
    const listener = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${port}`);
    const live = fixture.gateway.sessions()[0]!;
    const joined = listener.join();
    live.stopTunnel(listener.id(), { message: 'the endpoint was deleted', code: 3200 });
    await assert.rejects(joined, /ListenerClosed \{ message: "the endpoint was deleted", error_code: Some\("ERR_BURROW_3200"\) \}/);
    assert.deepEqual(live.tunnels(), []);
  });
});

describe('proxy streams', () => {
  test('carry HTTP to the local service the SDK forwards to, and its answer back (a 1 MiB body each way)', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const port = await startHttpService(t);
    const listener = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${port}`);
    const live = fixture.gateway.sessions()[0]!;

    const small = await exchange(live.openProxy(listener.id(), { clientAddr: '203.0.113.7:40000' }), httpRequest('/hello?x=1', Buffer.from('abc')));
    assert.match(small.toString(), /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(small.toString(), /POST \/hello\?x=1 x-test=through-the-tunnel length=3 sha256=ba7816bf/);

    const big = randomBytes(1024 * 1024);
    const [echoed, hashed] = await Promise.all([
      exchange(live.openProxy(listener.id(), { clientAddr: '203.0.113.8:40001' }), httpRequest('/big?echo', big)),
      exchange(live.openProxy(listener.id(), { clientAddr: '203.0.113.9:40002' }), httpRequest('/big', big)),
    ]);
    assert.ok(echoed.subarray(echoed.length - big.length).equals(big), 'the echoed body came back whole');
    assert.match(hashed.toString(), new RegExp(`length=${big.length} sha256=${createHash('sha256').update(big).digest('hex')}`));
  });

  test('carry raw TCP bytes both ways', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const port = await listen(
      t,
      createTcpServer((socket) => {
        socket.on('data', (chunk) => socket.write(Buffer.from(chunk).reverse()));
        socket.on('end', () => socket.end());
      }),
    );
    const listener = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${port}`);
    const stream = fixture.gateway.sessions()[0]!.openProxy(listener.id(), { clientAddr: '198.51.100.1:5000' });
    const reply = await exchange(stream, Buffer.from([1, 2, 3, 4, 5]));
    assert.deepEqual([...reply], [5, 4, 3, 2, 1]);
  });

  test('carry TLS through to a TLS service (passthrough)', async (t) => {
    const fixture = await startGateway(t);
    const { server, ca } = await testPki();
    const session = await connectAgent(fixture);
    const port = await listen(
      t,
      createTlsServer({ cert: server.certificatePem, key: server.privateKeyPem }, (socket) => socket.end(`secret handshake via ${socket.servername}`)),
    );
    const listener = await session.tlsEndpoint().listenAndForward(`tls://localhost:${port}`);
    const stream = fixture.gateway.sessions()[0]!.openProxy(listener.id(), { clientAddr: '198.51.100.2:5001' });
    stream.on('error', () => {});
    const client = tlsConnect({ socket: stream, servername: 'localhost', ca: ca.certificatePem });
    client.on('error', () => {});
    t.after(() => void client.destroy());
    let text = '';
    client.on('data', (chunk) => (text += chunk));
    await once(client, 'end');
    assert.equal(text, 'secret handshake via localhost');
  });

  test('reach a labeled tunnel as an edge connection', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const port = await startHttpService(t);
    const listener = await session.labeledListener().label('edge', 'edghts_1').listenAndForward(`http://127.0.0.1:${port}`);
    const stream = fixture.gateway.sessions()[0]!.openProxy(listener.id(), { clientAddr: '198.51.100.3:5002', proto: 'https', edgeType: 'https' });
    assert.match((await exchange(stream, httpRequest('/edge', Buffer.alloc(0), 'GET'))).toString(), /GET \/edge x-test=through-the-tunnel length=0/);
  });
});

describe('commands', () => {
  test('stop, restart and update reach the SDK handlers, and their replies come back', async (t) => {
    const fixture = await startGateway(t);
    const calls = new Recorder<string>();
    await connectAgent(fixture, (builder) =>
      builder
        .handleStopCommand(() => calls.push('stop'))
        .handleRestartCommand(() => calls.push('restart'))
        .handleUpdateCommand((update) => calls.push(`update ${update.version} ${update.permitMajorVersion}`)),
    );
    const live = fixture.gateway.sessions()[0]!;
    assert.deepEqual(await live.command('stop'), { outcome: 'ok' });
    assert.deepEqual(await live.command('restart'), { outcome: 'ok' });
    assert.deepEqual(await live.command('update', { version: '1.8.0', permitMajorVersion: true }), { outcome: 'ok' });
    await calls.next((call) => call === 'stop');
    await calls.next((call) => call === 'restart');
    await calls.next((call) => call === 'update 1.8.0 true');
  });

  test('an SDK without handlers answers unsupported, with its own reason', async (t) => {
    const fixture = await startGateway(t);
    await connectAgent(fixture);
    const live = fixture.gateway.sessions()[0]!;
    for (const kind of ['stop', 'restart'] as const) {
      const reply = await live.command(kind);
      assert.equal(reply.outcome, 'unsupported');
      assert.equal(reply.outcome === 'unsupported' && reply.message, live.auth.commands[kind].state === 'unsupported' && live.auth.commands[kind].reason);
    }
    assert.equal((await live.command('update', { version: '', permitMajorVersion: false })).outcome, 'unsupported');
  });
});

describe('session end', () => {
  test('when the connection drops, sessionEnded reports it with the tunnels still listed', async (t) => {
    const fixture = await startGateway(t);
    const relay = await startRelay(t, fixture.port);
    const session = await connectAgent(fixture, undefined, { port: relay.port, reconnect: false });
    await session.httpEndpoint().listen(false);
    relay.cut();
    const ended = await fixture.events.next(isEnded);
    assert.equal(ended.reason.kind, 'disconnected');
    assert.equal(ended.session.tunnels().length, 1);
    assert.deepEqual(fixture.gateway.sessions(), []);
  });

  test('when the agent stops answering heartbeats, the session ends after interval + tolerance', async (t) => {
    const timers = manualTimers();
    const fixture = await startGateway(t, { timers, heartbeatIntervalMs: 1000, heartbeatToleranceMs: 3000 });
    const relay = await startRelay(t, fixture.port);
    await connectAgent(fixture, undefined, { port: relay.port, reconnect: false });
    await timers.whenPending(1000);
    relay.freeze();
    timers.advance(1000);
    assert.deepEqual(fixture.gateway.sessions().length, 1, 'a heartbeat sent is not yet a missed one');
    timers.advance(2999);
    assert.deepEqual(fixture.gateway.sessions().length, 1);
    timers.advance(1);
    const ended = await fixture.events.next(isEnded);
    assert.deepEqual(ended.reason, { kind: 'heartbeat-timeout', message: 'no heartbeat answer within 3000 ms (limit agent_heartbeat_answer_ms)' });
  });

  test('an agent that answers heartbeats keeps its session', async (t) => {
    const timers = manualTimers();
    const fixture = await startGateway(t, { timers, heartbeatIntervalMs: 1000, heartbeatToleranceMs: 3000 });
    await connectAgent(fixture);
    for (let beat = 0; beat < 3; beat += 1) {
      await timers.whenPending(1000);
      timers.advance(1000);
    }
    await timers.whenPending(1000);
    timers.advance(3000);
    assert.equal(fixture.gateway.sessions().length, 1);
    assert.equal(fixture.events.events.filter(isEnded).length, 0);
  });

  test('closed by the server, the connection just closes (no GOAWAY), so the SDK fails what it still asks instead of waiting; its close() returns', async (t) => {
    const fixture = await startGateway(t);
    const raw = await connectRawAgent(t, fixture);
    await raw.auth();
    fixture.gateway.sessions()[0]!.close('maintenance');
    const reason = await raw.closed;
    assert.equal(reason.kind, 'socket-closed', `the agent saw ${reason.kind}: ${reason.message}`);

    const session = await connectAgent(fixture, undefined, { reconnect: false });
    await session.httpEndpoint().listen(false);
    await session.tcpEndpoint().listen(false);
    const sdkSession = fixture.gateway.sessions().find((live) => live.ended === undefined)!;
    sdkSession.close('maintenance');
    await fixture.events.next((event) => event.kind === 'ended' && event.session === sdkSession);
    await session.close().catch(() => undefined);
  });

  test('closed by the server, the agent reconnects with its session id and cookie and rebinds under its bind ids', async (t) => {
    const fixture = await startGateway(t);
    const session = await connectAgent(fixture);
    const port = await startHttpService(t);
    const listener = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${port}`);
    fixture.gateway.sessions()[0]!.close('maintenance');
    const ended = await fixture.events.next(isEnded);
    assert.deepEqual(ended.reason, { kind: 'closed-by-server', message: 'maintenance' });
    const again = await fixture.events.next((event) => event.kind === 'auth' && event.auth.clientId !== '');
    assert.equal(again.kind === 'auth' && again.auth.clientId, 'ts_1');
    assert.equal(again.kind === 'auth' && again.auth.cookie, 'cookie-1');
    const rebind = await fixture.events.next((event): event is Extract<GatewayEvent, { kind: 'bind' }> => event.kind === 'bind' && event.session.id === 'ts_2');
    assert.equal(rebind.request.kind === 'endpoint' && rebind.request.clientId, listener.id());
    await gatewayContinued();
    const live = fixture.gateway.sessions()[0]!;
    assert.equal(live.id, 'ts_2');
    assert.deepEqual(live.tunnels().map((tunnel) => [tunnel.tunnelId, tunnel.bindId]), [[rebind.result.tunnelId, listener.id()]]);
    const reply = await exchange(live.openProxy(rebind.result.tunnelId, { clientAddr: '203.0.113.1:1' }), httpRequest('/after-reconnect'));
    assert.match(reply.toString(), /POST \/after-reconnect/);
  });
});
