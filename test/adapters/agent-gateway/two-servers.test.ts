import ngrok, { type Session, type SessionBuilder } from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createDatabase, POSTGRES_MISSING, testCluster } from '../../fixtures/postgres-cluster.ts';
import { startServer, type RunningServer } from '../../helpers.ts';
import { Recorder, until } from './helpers.ts';

/**
 * Two `burrow serve --agent-addr` processes on one PostgreSQL database: the vendor's agent
 * connects to A; B lists its session, and a stop sent to B reaches it (LISTEN/NOTIFY); when A is
 * killed, B ends A's sessions (A's advisory lock went with its connection).
 */

const cluster = await testCluster();
const OPERATOR = 'agents-two-servers-operator-token';

describe('agents on two servers over one PostgreSQL database', { skip: cluster ? false : POSTGRES_MISSING }, () => {
  let a: RunningServer;
  let b: RunningServer;
  let token: string;
  let caPem: string;

  before(async () => {
    const url = await createDatabase(cluster!, 'agents');
    const serve = () => startServer(['--data', url, '--quiet', '--operator-token', OPERATOR, '--agent-addr', '127.0.0.1:0']);
    const started = await Promise.allSettled([serve(), serve()]);
    [a, b] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined)) as [RunningServer, RunningServer];
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    token = (a.token ?? b.token)!;
    caPem = await (await fetch(`${a.url}/_burrow/ca.pem`)).text();
  });

  after(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
  });

  const api = (server: RunningServer, method: string, path: string, body?: unknown) => server.request(method, path, body, { token });
  const sessionsOf = (server: RunningServer) => async () => (await api(server, 'GET', '/tunnel_sessions')).body.tunnel_sessions as any[];

  async function connectTo(t: TestContext, server: RunningServer, configure: (builder: SessionBuilder) => SessionBuilder): Promise<Session> {
    const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
    const credential = (await api(server, 'POST', '/credentials', {})).body;
    let done = false;
    t.after(() => void (done = true));
    const builder = new ngrok.SessionBuilder()
      .authtoken(credential.token)
      .serverAddr(health.body.listeners.agent)
      .caCert(Buffer.from(caPem))
      .handleDisconnection(() => !done);
    const session = await configure(builder).connect();
    t.after(() => session.close().catch(() => undefined));
    return session;
  }

  test('both servers share one CA, kept in the database', async () => {
    assert.equal(await (await fetch(`${b.url}/_burrow/ca.pem`)).text(), caPem);
    assert.match(caPem, /^-----BEGIN CERTIFICATE-----/);
  });

  test("a session on A is listed through B, and B's stop reaches the agent on A", async (t) => {
    const calls = new Recorder<string>();
    // As the vendor's CLI does, the agent exits on stop: it does not reconnect.
    let stopped = false;
    const stop = () => {
      stopped = true;
      calls.push('stop');
    };
    await connectTo(t, a, (builder) => builder.handleStopCommand(stop).handleUpdateCommand(() => calls.push('update')).handleDisconnection(() => !stopped));
    const [session] = await until(sessionsOf(b), (list) => list.length === 1, 'the session listed through B');
    assert.equal(session.agent_version, '1.7.0');
    const updated = await api(b, "POST", `/tunnel_sessions/${session.id}/update`, {});
    assert.equal(updated.status, 204, JSON.stringify(updated.body));
    await calls.next((call) => call === 'update');
    assert.equal((await api(b, 'POST', `/tunnel_sessions/${session.id}/stop`, {})).status, 204);
    await calls.next((call) => call === 'stop');
    await until(sessionsOf(b), (list) => list.length === 0, 'the stopped session gone');
  });

  test("when A dies, B ends A's sessions", async (t) => {
    await connectTo(t, a, (builder) => builder);
    await until(sessionsOf(b), (list) => list.length === 1, 'the session listed through B');
    await a.stop('SIGKILL');

  });
});
