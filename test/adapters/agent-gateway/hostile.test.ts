import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { AgentRelayError } from '../../../adapters/agent-gateway/index.ts';
import { LIMITS } from '../../../lib/limits.ts';
import { encodeHeader, MUXADO_ERRORS } from '../../../adapters/agent-gateway/muxado/frames.ts';
import type { MuxadoStream } from '../../../adapters/agent-gateway/muxado/stream.ts';
import { HEARTBEAT_STREAM_TYPE, openTypedStream } from '../../../adapters/agent-gateway/muxado/typed.ts';
import { decodeProxyHeader, STREAM_TYPES } from '../../../adapters/agent-gateway/protocol.ts';
import { readMessage, writeMessage } from '../../../adapters/agent-gateway/rpc.ts';
import { connectAgent, connectRawAgent, connectTls, framePeer, manualTimers, startGateway, type GatewayFixture } from './helpers.ts';

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
  test('a stream other than Auth first ends the session', async (t) => {
    const fixture = await startGateway(t);
    const agent = await connectRawAgent(t, fixture);
    void agent.call(STREAM_TYPES.bind, { Proto: 'http' }).catch(() => {});
    const reason = await agent.closed;
    assert.deepEqual(reason, { kind: 'remote-goaway', error: MUXADO_ERRORS.protocol, message: 'stream of type 1 before a successful Auth' });
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

  test('an Auth over the message limit ends the session', async (t) => {
    const fixture = await startGateway(t);
    const stillServed = await bystander(fixture);
    const agent = await connectRawAgent(t, fixture);
    void agent.call(STREAM_TYPES.auth, `{"Version":["3"],"Padding":"${'x'.repeat(LIMITS.agent_message_bytes.value)}"}`).catch(() => {});
    const reason = await agent.closed;
    assert.deepEqual(reason, { kind: 'remote-goaway', error: MUXADO_ERRORS.protocol, message: `a message of more than ${LIMITS.agent_message_bytes.value} bytes (limit agent_message_bytes)` });
    await stillServed();
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
    const again = await agent.call(STREAM_TYPES.bind, { Id: 'my-own-id', Proto: 'tcp', Opts: {} });
    assert.equal(again.Error, `this session already has a tunnel with id 'my-own-id'${codeLine(9007)}`);
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
      const request = await readMessage(stream, 1024);
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
