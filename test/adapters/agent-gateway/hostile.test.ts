import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { AgentRelayError } from '../../../adapters/agent-gateway/index.ts';
import { LIMITS } from '../../../lib/limits.ts';
import { encodeHeader, FLAG_FIN, FLAG_SYN, MUXADO_ERRORS, type Frame } from '../../../adapters/agent-gateway/muxado/frames.ts';
import type { MuxadoStream } from '../../../adapters/agent-gateway/muxado/stream.ts';
import { HEARTBEAT_STREAM_TYPE, openTypedStream } from '../../../adapters/agent-gateway/muxado/typed.ts';
import { decodeProxyHeader, STREAM_TYPES, STREAM_WINDOW_BYTES } from '../../../adapters/agent-gateway/protocol.ts';
import { AGENT_MESSAGE_BOUNDS, readMessage, writeMessage } from '../../../adapters/agent-gateway/rpc.ts';
import { connectAgent, connectRawAgent, connectTls, framePeer, manualTimers, REFUSED_CODE, REFUSED_MESSAGE, REFUSED_TOKEN, startGateway, type GatewayFixture } from './helpers.ts';

/**
 * What the vendor's agent never does, from peers written here: garbage, broken frames, bad or
 * oversized messages, silence, and replies the SDK cannot give. Each ends (or refuses) only the
 * peer's own session; an SDK session on the same gateway goes on.
 */

/** An SDK session beside the hostile peer, and a check that it still gets answers. */
async function bystander(fixture: GatewayFixture) {
  await connectAgent(fixture, (builder) => builder.authtoken('bystander').handleStopCommand(() => {}));
  const session = fixture.gateway.sessions().find((live) => live.context.token === 'bystander')!;
  return async () => {
    assert.equal(session.ended, undefined);
    assert.deepEqual(await session.command('stop'), { outcome: 'ok' });
  };
}

const codeLine = (code: number) => `\n\nERR_BURROW_${code}\n`;

describe('peers that do not speak the protocol', () => {
  test('plain text instead of TLS: the connection is closed, nothing reaches the handler', async (t) => {
    const fixture = await startGateway(t);
    const stillServed = await bystander(fixture);
    const socket = connect(fixture.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.end('GET / HTTP/1.1\r\nHost: burrow\r\n\r\n');
    await once(socket, 'close');
    assert.equal(fixture.events.events.filter((event) => event.kind === 'auth').length, 1, 'only the bystander authenticated');
    await stillServed();
  });

  test('TLS, then bytes that are not muxado frames: a GOAWAY names the fault and the connection closes', async (t) => {
    const fixture = await startGateway(t);
    const stillServed = await bystander(fixture);
    const peer = framePeer(await connectTls(t, fixture));
    peer.send(Buffer.from([0x00, 0x00, 0x04, 0x90, 0xde, 0xad, 0xbe, 0xef]));
    const goaway = await peer.goaway();
    assert.equal(goaway.error, MUXADO_ERRORS.protocol);
    assert.equal(goaway.message.toString(), 'unknown frame type 9');
    await peer.closed;
    await stillServed();
  });

  test('a frame longer than the limit is refused by its header', async (t) => {
    const fixture = await startGateway(t);
    const peer = framePeer(await connectTls(t, fixture));
    peer.send(encodeHeader('data', 0x2, 1, 0xffffff));
    const goaway = await peer.goaway();
    assert.equal(goaway.error, MUXADO_ERRORS.frameSize);
    assert.match(goaway.message.toString(), /^data frame of 16777215 bytes is over the limit of 262144 \(limit agent_frame_bytes\)$/);
  });

  test('a truncated frame, then the peer hangs up: the session it had is reported ended, the gateway goes on', async (t) => {
    const fixture = await startGateway(t);
    const stillServed = await bystander(fixture);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    agent.socket.write(encodeHeader('data', 0, 9, 100).subarray(0, 5));
    agent.socket.end();
    const ended = await fixture.events.next((event) => event.kind === 'ended');
    assert.equal(ended.kind === 'ended' && ended.reason.kind, 'disconnected');
    await stillServed();
  });

  test('a connection that never authenticates is cut when the handshake time is up (TCP only, and TLS without Auth)', async (t) => {
    const timers = manualTimers();
    const fixture = await startGateway(t, { timers });
    const silentTcp = connect(fixture.port, '127.0.0.1');
    silentTcp.on('error', () => {});
    await once(silentTcp, 'connect');
    const silentTls = await connectTls(t, fixture);
    await timers.whenPending(LIMITS.agent_handshake_ms.value);
    const closed = [once(silentTcp, 'close'), once(silentTls, 'close')];
    timers.advance(LIMITS.agent_handshake_ms.value - 1);
    assert.equal(silentTls.destroyed, false);
    timers.advance(1);
    await Promise.all(closed);
  });
});

describe('Auth from a hand-written agent', () => {
  test('a Bind opened before Auth (the v2 CLI agent\'s way) waits, and is answered once Auth succeeded', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    const bind = agent.call(STREAM_TYPES.bind, { Id: 'early', Proto: 'http', Opts: {} });
    assert.equal((await agent.auth()).Error, '');
    assert.deepEqual([(await bind).Id, (await bind).URL, (await bind).Error], ['early', 'http://t1.burrow.test', '']);
  });

  test('from a peer written frame by frame: a Bind on stream 5 before the Auth on stream 3, both answered (ids out of order, and the Bind before Auth)', async (t) => {
    const fixture = await startGateway(t);
    const peer = framePeer(await connectTls(t, fixture));
    const typed = (type: number, message: unknown) => Buffer.concat([Buffer.from([type >>> 24, (type >>> 16) & 0xff, (type >>> 8) & 0xff, type & 0xff]), Buffer.from(JSON.stringify(message))]);
    /** The JSON the gateway wrote on `stream`, read to its FIN. */
    const reply = async (stream: number) => {
      await peer.frames.next((frame) => frame.type === 'data' && frame.streamId === stream && (frame.flags & FLAG_FIN) !== 0);
      return JSON.parse(Buffer.concat(peer.frames.events.flatMap((frame) => (frame.type === 'data' && frame.streamId === stream ? [frame.data] : []))).toString());
    };
    peer.send(
      { type: 'data', streamId: 5, flags: FLAG_SYN, data: typed(STREAM_TYPES.bind, { Id: 'tunnel-a', Proto: 'https', Opts: {} }) },
      { type: 'data', streamId: 3, flags: FLAG_SYN, data: typed(STREAM_TYPES.auth, { Version: ['2'], ClientId: '', Extra: { OS: 'linux', Authtoken: 'v2-token', Version: '2.3.41' } }) },
    );
    assert.deepEqual([(await reply(3)).ClientId, (await reply(3)).Error], ['ts_1', '']);
    assert.deepEqual([(await reply(5)).Id, (await reply(5)).URL], ['tunnel-a', 'https://t1.burrow.test']);
  });

  test('a Bind opened before an Auth that is refused closes with the session; nothing is bound', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    const bind = agent.call(STREAM_TYPES.bind, { Id: '', Proto: 'http', Opts: {} });
    assert.equal((await agent.auth({ AuthToken: REFUSED_TOKEN })).Error, `${REFUSED_MESSAGE}${codeLine(REFUSED_CODE)}`);
    await assert.rejects(bind);
    await agent.closed;
    assert.deepEqual(fixture.events.events.filter((event) => event.kind === 'bind'), []);
  });

  test('a Bind with no Auth at all waits until the handshake time is up, then the connection is cut', async (t) => {
    const timers = manualTimers();
    const fixture = await startGateway(t, { timers });
    const agent = await connectRawAgent(t, fixture);
    const bind = agent.call(STREAM_TYPES.bind, { Id: '', Proto: 'http', Opts: {} });
    // A heartbeat's echo says the gateway has read what came before it: the Bind waits there.
    const heartbeat = openTypedStream(agent.mux, HEARTBEAT_STREAM_TYPE);
    heartbeat.on('error', () => {});
    heartbeat.write(Buffer.from('beat'));
    await once(heartbeat, 'data');
    timers.advance(LIMITS.agent_handshake_ms.value);
    await assert.rejects(bind);
    assert.match((await agent.closed).message, /no successful Auth within 10000 ms \(limit agent_handshake_ms\)/);
  });

  test('a malformed Auth is answered with the key at fault, then the session ends', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    const reply = await agent.call(STREAM_TYPES.auth, { Version: '3', Extra: {} });
    assert.equal(reply.Error, `Auth.Version: expected a list of strings${codeLine(215)}`);
    await agent.closed;
    const notJson = await connectRawAgent(t, fixture);
    assert.match((await notJson.call(STREAM_TYPES.auth, '{"Version": [3,]}')).Error, /^the message is not JSON: /);
    const notObject = await connectRawAgent(t, fixture);
    assert.equal((await notObject.call(STREAM_TYPES.auth, '["3"]')).Error, `a message must be a JSON object${codeLine(215)}`);
  });

  test('an agent that speaks no version of ours is told which we speak', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    const reply = await agent.call(STREAM_TYPES.auth, { Version: ['4', '1'], Extra: {} });
    assert.equal(reply.Error, `the agent speaks protocol versions ["4","1"]; this server speaks 3 and 2${codeLine(217)}`);
    await agent.closed;
  });

  test('an agent that speaks only version 2 gets version 2', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    const reply = await agent.call(STREAM_TYPES.auth, { Version: ['2'], Extra: { AuthToken: 'v2' } });
    assert.deepEqual(reply, {
      Version: '2',
      ClientId: 'ts_1',
      Error: '',
      Extra: { Version: 'burrow', Region: 'eu', Cookie: 'cookie-1', AccountName: 'Test Account', SessionDuration: 0, PlanName: '', Banner: '', AgentSessionID: 'ts_1' },
    });
    assert.equal(fixture.gateway.sessions()[0]?.protocolVersion, '2');
  });

  test('keys are matched without regard to case, as the vendor\'s Go server does (a Go agent writes Authtoken)', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.call(STREAM_TYPES.auth, { version: ['3'], clientid: '', extra: { Authtoken: 'go-token', OS: 'darwin', stopUnsupportedError: '' } });
    const event = await fixture.events.next((recorded) => recorded.kind === 'auth');
    assert.equal(event.kind === 'auth' && event.auth.authtoken, 'go-token');
    const auth = fixture.gateway.sessions()[0]!.auth;
    assert.equal(auth.os, 'darwin');
    assert.equal('authtoken' in auth, false, 'a live session keeps no token');
    assert.deepEqual(auth.commands.stop, { state: 'supported' });
    assert.deepEqual(auth.commands.update, { state: 'not-stated' });
  });

  test('an Auth past what a connection may hold before Auth ends the session, with a GOAWAY naming the bound', async (t) => {
    const fixture = await startGateway(t);
    const stillServed = await bystander(fixture);
    const agent = await connectRawAgent(t, fixture);
    void agent.call(STREAM_TYPES.auth, `{"Version":["3"],"Padding":"${'x'.repeat(LIMITS.agent_message_bytes.value)}"}`).catch(() => {});
    const reason = await agent.closed;
    assert.equal(reason.error, MUXADO_ERRORS.enhanceYourCalm);
    assert.match(reason.message, new RegExp(`^the session held \\d+ bytes for the peer, more than ${LIMITS.agent_held_bytes_before_auth.value} \\(limit agent_held_bytes_before_auth\\)$`));
    await stillServed();
  });

  test('an Auth nested past the depth limit is refused before it is parsed, and the session ends', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    const deep = `{"Version":["3"],"Extra":{"AuthToken":"t","Deep":${'['.repeat(100)}${']'.repeat(100)}}}`;
    assert.equal((await agent.call(STREAM_TYPES.auth, deep)).Error, `a message nested deeper than 64 levels (limit agent_message_depth)${codeLine(215)}`);
    await agent.closed;
    assert.deepEqual(fixture.events.events, [], 'the handler never saw it');
  });

  test('a second Auth ends the session', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    void agent.auth().catch(() => {});
    assert.equal((await agent.closed).message, 'a second Auth on one session');
    assert.equal((await fixture.events.next((event) => event.kind === 'ended')).kind, 'ended');
  });

  test('a handler that fails (not a refusal) makes an internal error for the agent and an onError report', async (t) => {
    const fixture = await startGateway(t);
    fixture.handler.authenticate = async () => {
      throw new Error('the database is down');
    };
    const agent = await connectRawAgent(t, fixture);
    assert.equal((await agent.auth()).Error, `internal server error${codeLine(9004)}`);
    assert.equal((fixture.errors[0] as Error).message, 'the database is down');
  });
});

describe('RPCs from a hand-written agent', () => {
  test('Bind answers with the id, URL, protocol and the options with the hostname chosen', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    const opts = { Domain: '', Hostname: '', Auth: '', Subdomain: '', HostHeaderRewrite: false, ProxyProto: 0, Custom: { kept: true } };
    const reply = await agent.call(STREAM_TYPES.bind, { Id: '', Proto: 'https', ForwardsTo: 'http://localhost:80', Opts: opts, Extra: { Metadata: 'm' } });
    assert.deepEqual(reply, { Id: 'tn_1', URL: 'https://t1.burrow.test', Proto: 'https', Opts: { ...opts, Hostname: 't1.burrow.test' }, Error: '', Extra: { Token: '', TunnelID: 'tn_1' } });
    const tcp = await agent.call(STREAM_TYPES.bind, { Id: 'my-own-id', Proto: 'tcp', Opts: { Addr: '', ProxyProto: 1 } });
    assert.deepEqual([tcp.Id, tcp.URL, tcp.Opts.Addr], ['my-own-id', 'tcp.burrow.test:20002', 'tcp.burrow.test:20002'].map((v, i) => (i === 1 ? `tcp://${v}` : v)));
  });

  test('a Bind repeating an Id the session holds is answered with the tunnel it has, also when both arrive at once; nothing more is bound', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    const [first, racing] = await Promise.all([0, 1].map(() => agent.call(STREAM_TYPES.bind, { Id: 'my-own-id', Proto: 'tcp', Opts: { Addr: '', ProxyProto: 1 } })));
    const again = await agent.call(STREAM_TYPES.bind, { Id: 'my-own-id', Proto: 'tcp', Opts: {} });
    assert.deepEqual(racing, first);
    assert.deepEqual(again, first);
    assert.deepEqual([first.Id, first.URL, first.Error], ['my-own-id', 'tcp://tcp.burrow.test:20001', '']);
    assert.equal(fixture.events.events.filter((event) => event.kind === 'bind').length, 1);
  });

  test('a malformed Bind is refused with the key at fault; the session goes on', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    assert.equal((await agent.call(STREAM_TYPES.bind, { Proto: 'udp' })).Error, `Bind.Proto: expected one of http, https, tcp, tls (got 'udp')${codeLine(215)}`);
    assert.equal((await agent.call(STREAM_TYPES.bind, { Proto: 'tcp', Opts: { ProxyProto: 3 } })).Error, `Bind.Opts.ProxyProto: expected 0, 1 or 2${codeLine(215)}`);
    assert.equal((await agent.call(STREAM_TYPES.bind, { Proto: 'http', Opts: { IPRestriction: { allow_cidrs: 'all' } } })).Error, `Bind.Opts.IPRestriction.allow_cidrs: expected a list of strings${codeLine(215)}`);
    assert.equal((await agent.call(STREAM_TYPES.bindLabeled, { Labels: { edge: 7 } })).Error, `StartTunnelWithLabel.Labels: expected an object of strings${codeLine(215)}`);
    assert.equal((await agent.call(STREAM_TYPES.bind, { Proto: 'tcp', Opts: {} })).URL, 'tcp://tcp.burrow.test:20001');
  });

  test('a Bind over the message limit ends the session, naming the limit', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    void agent.call(STREAM_TYPES.bind, `{"Proto":"http","Padding":"${'x'.repeat(LIMITS.agent_message_bytes.value)}"}`).catch(() => {});
    const reason = await agent.closed;
    assert.deepEqual(reason, { kind: 'remote-goaway', error: MUXADO_ERRORS.protocol, message: `a message of more than ${LIMITS.agent_message_bytes.value} bytes (limit agent_message_bytes)` });
  });

  test('a Bind whose Opts nest 5,000 deep is answered with the depth limit; nothing is bound and the session goes on', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    const deep = `{"Proto":"http","Opts":{"Custom":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}}`;
    assert.equal((await agent.call(STREAM_TYPES.bind, deep)).Error, `a message nested deeper than 64 levels (limit agent_message_depth)${codeLine(215)}`);
    assert.equal(fixture.events.events.filter((event) => event.kind === 'bind').length, 0);
    assert.deepEqual(await agent.call(STREAM_TYPES.serverInfo, {}), { Region: 'eu' });
  });

  test('a Bind whose reply cannot be encoded is undone (the handler unbinds) and answered with an internal error', async (t) => {
    const fixture = await startGateway(t);
    // A handler fault: a tunnel id JSON cannot write.
    fixture.handler.bind = async () => ({ tunnelId: 7n as unknown as string, url: 'https://broken.burrow.test' });
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    const reply = await agent.call(STREAM_TYPES.bind, { Id: 'mine', Proto: 'https', Opts: {} });
    assert.equal(reply.Error, `internal server error${codeLine(9004)}`);
    const unbound = await fixture.events.next((event) => event.kind === 'unbind');
    assert.equal(unbound.kind === 'unbind' && unbound.tunnelId, 7n as unknown as string);
    assert.deepEqual(fixture.gateway.sessions()[0]!.tunnels(), []);
    assert.match(String(fixture.errors[0]), /BigInt/);
    assert.deepEqual(await agent.call(STREAM_TYPES.serverInfo, {}), { Region: 'eu' });
  });

  test('Unbind of an id the session does not have is refused; SrvInfo answers the region', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    assert.deepEqual(await agent.call(STREAM_TYPES.unbind, { Id: 'tn_404' }), { Error: `this session has no tunnel with id 'tn_404'${codeLine(9001)}`, Extra: null });
    assert.deepEqual(await agent.call(STREAM_TYPES.serverInfo, {}), { Region: 'eu' });
  });

  test('stream types only the server opens are reset; the session goes on', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    const proxy = openTypedStream(agent.mux, STREAM_TYPES.proxy);
    const [error] = (await once(proxy, 'error')) as [Error & { error: number }];
    assert.equal(error.error, MUXADO_ERRORS.streamCancelled);
    assert.deepEqual(await agent.call(STREAM_TYPES.serverInfo, {}), { Region: 'eu' });
  });

  test('streams past the limit are refused; the ones before go on', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    // The gateway's own heartbeat stream counts too.
    const streams: MuxadoStream[] = [];
    for (let i = 0; i < LIMITS.agent_streams.value; i += 1) {
      const stream = openTypedStream(agent.mux, HEARTBEAT_STREAM_TYPE);
      stream.on('error', () => {});
      streams.push(stream);
    }
    const [error] = (await once(streams.at(-1)!, 'error')) as [Error & { error: number }];
    assert.equal(error.error, MUXADO_ERRORS.streamsExhausted);
    streams[0]!.write('ping');
    const [echo] = (await once(streams[0]!, 'data')) as [Buffer];
    assert.equal(echo.toString(), 'ping');
  });

  test('the proxy header the gateway writes: little-endian length, then the JSON the agent reads', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    await agent.call(STREAM_TYPES.bind, { Proto: 'tcp', Opts: {} });
    const proxy = fixture.gateway.sessions()[0]!.openProxy('tn_1', { clientAddr: '192.0.2.55:61000' });
    proxy.on('error', () => {});
    proxy.write('payload');
    const { type, stream } = await agent.incoming.next(() => true);
    assert.equal(type, STREAM_TYPES.proxy);
    const length = Number((await stream.readPrefix(8)).readBigInt64LE(0));
    const json = JSON.parse((await stream.readPrefix(length)).toString());
    assert.deepEqual(json, { Id: 'tn_1', ClientAddr: '192.0.2.55:61000', Proto: 'tcp', EdgeType: '0', PassthroughTLS: false });
    assert.deepEqual(decodeProxyHeader(json), { id: 'tn_1', clientAddr: '192.0.2.55:61000', proto: 'tcp', edgeType: 'undefined', passthroughTls: false });
    assert.equal((await stream.readPrefix(7)).toString(), 'payload');
  });
});

describe('commands to a hand-written agent', () => {
  test('a handler that fails is answered as failed, with the agent\'s words; Update carries its arguments', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth({ StopUnsupportedError: '', RestartUnsupportedError: 'restarts are off', UpdateUnsupportedError: '' });
    const live = fixture.gateway.sessions()[0]!;
    const answer = async (type: number, reply: unknown) => {
      const { stream } = await agent.incoming.next((incoming) => incoming.type === type);
      const request = await readMessage(stream, AGENT_MESSAGE_BOUNDS);
      writeMessage(stream, reply);
      return request;
    };
    const [stop, stopRequest] = await Promise.all([live.command('stop'), answer(STREAM_TYPES.stop, { Error: 'the disk is full' })]);
    assert.deepEqual(stop, { outcome: 'failed', message: 'the disk is full' });
    assert.deepEqual(stopRequest, {});
    const [restart] = await Promise.all([live.command('restart'), answer(STREAM_TYPES.restart, { Error: 'restarts are off' })]);
    assert.deepEqual(restart, { outcome: 'unsupported', message: 'restarts are off' });
    const [update, updateRequest] = await Promise.all([live.command('update', { version: '2.0.0', permitMajorVersion: true }), answer(STREAM_TYPES.update, {})]);
    assert.deepEqual(update, { outcome: 'ok' });
    assert.deepEqual(updateRequest, { Version: '2.0.0', PermitMajorVersion: true });
  });

  test('an agent that said nothing about commands is not asked', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    assert.deepEqual(await fixture.gateway.sessions()[0]!.command('update', { version: '', permitMajorVersion: false }), {
      outcome: 'unsupported',
      message: 'the agent (0.0.1) does not support remote update',
    });
    assert.deepEqual(agent.incoming.events, []);
  });

  test('no answer in time, or a session that ended: AgentRelayError', async (t) => {
    const timers = manualTimers();
    // Heartbeats far apart: the command's timeout is what this advances to.
    const fixture = await startGateway(t, { timers, heartbeatIntervalMs: 3_600_000 });
    const agent = await connectRawAgent(t, fixture);
    await agent.auth({ RestartUnsupportedError: '' });
    const live = fixture.gateway.sessions()[0]!;
    const restart = live.command('restart');
    await agent.incoming.next((incoming) => incoming.type === STREAM_TYPES.restart);
    await timers.whenPending(LIMITS.agent_command_answer_ms.value);
    timers.advance(LIMITS.agent_command_answer_ms.value);
    await assert.rejects(restart, (error: Error) => error instanceof AgentRelayError && /did not answer restart within 30000 ms \(limit agent_command_answer_ms\)/.test(error.message));
    assert.throws(() => live.openProxy('tn_404', { clientAddr: '1.2.3.4:5' }), /session ts_1 has no tunnel tn_404/);
    live.close();
    await agent.closed;
    await assert.rejects(live.command('restart'), /session ts_1 has ended \(the session was closed by the server\)/);
  });
});

describe('what one connection may make the gateway hold', () => {
  /** DATA frames of `size` bytes carrying `total` bytes on `stream`, the first with SYN. */
  const dataFrames = (stream: number, total: number, size: number, first: Buffer = Buffer.alloc(0)) =>
    Array.from({ length: Math.ceil(total / size) }, (_, i): Frame => ({ type: 'data', streamId: stream, flags: i === 0 ? FLAG_SYN : 0, data: i === 0 ? Buffer.concat([first, Buffer.alloc(size - first.length)]) : Buffer.alloc(size) }));
  const heartbeatType = Buffer.from([0xff, 0xff, 0xff, 0xff]);

  test('before Auth, a stream past the SDK\'s few is refused with RST', { timeout: 20_000 }, async (t) => {
    const fixture = await startGateway(t);
    const peer = framePeer(await connectTls(t, fixture));
    const ids = Array.from({ length: LIMITS.agent_streams_before_auth.value + 1 }, (_, i) => 2 * i + 1);
    peer.send(...ids.map((id): Frame => ({ type: 'data', streamId: id, flags: FLAG_SYN, data: heartbeatType })));
    const refused = await peer.frames.next((frame) => frame.type === 'rst');
    assert.deepEqual(refused, { type: 'rst', streamId: ids.at(-1), flags: 0, error: MUXADO_ERRORS.streamsExhausted });
  });

  test('before Auth, a heartbeat stream whose echo is never granted window ends the session at the small bound, with a GOAWAY naming it', { timeout: 20_000 }, async (t) => {
    const fixture = await startGateway(t);
    const stillServed = await bystander(fixture);
    const peer = framePeer(await connectTls(t, fixture));
    // The echo takes the peer's 256 KiB window, then waits for a WNDINC that never comes.
    peer.send(...dataFrames(1, 320 * 1024, 64 * 1024, heartbeatType));
    const goaway = await peer.goaway();
    assert.equal(goaway.error, MUXADO_ERRORS.enhanceYourCalm);
    assert.match(goaway.message.toString(), new RegExp(`more than ${LIMITS.agent_held_bytes_before_auth.value} \\(limit agent_held_bytes_before_auth\\)$`));
    await peer.closed;
    await stillServed();
  });

  test('after Auth, streams that are never read count against the connection\'s bound, and past it the session ends', { timeout: 60_000 }, async (t) => {
    const fixture = await startGateway(t);
    const stillServed = await bystander(fixture);
    const agent = await connectRawAgent(t, fixture);
    await agent.auth();
    // Each stream: echoes the gateway cannot send (the agent reads none), then a window of DATA the
    // echo does not take: some 300 KiB held per stream, so a few more streams than windows in the bound.
    const payload = Buffer.alloc(4 * STREAM_WINDOW_BYTES);
    const streams = Array.from({ length: LIMITS.agent_held_bytes.value / STREAM_WINDOW_BYTES + 8 }, () => {
      const stream = openTypedStream(agent.mux, HEARTBEAT_STREAM_TYPE);
      stream.on('error', () => {});
      stream.pause();
      stream.write(payload);
      return stream;
    });
    const reason = await agent.closed;
    assert.equal(reason.error, MUXADO_ERRORS.enhanceYourCalm);
    assert.match(reason.message, new RegExp(`more than ${LIMITS.agent_held_bytes.value} \\(limit agent_held_bytes\\)$`));
    assert.ok(streams.length > 0);
    const ended = await fixture.events.next((event) => event.kind === 'ended' && event.session.context.token === 'raw-token');
    assert.equal(ended.kind === 'ended' && ended.reason.kind, 'peer-not-reading');
    await stillServed();
  });
});
