import ngrok from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { callIngress } from '../ingress/helpers.ts';
import { cliAgentBinary, cliAgentMissing, CliAgents, startServerAndApp, writeAgentConfig, type CliTunnel } from '../../fixtures/cli-agent.ts';
import { exchange, parseResponses } from '../../fixtures/raw-http.ts';
import { startRelay, until } from './helpers.ts';

/**
 * The vendor's v2 CLI agent losing its connection (issue 41 B.2). It reconnects with `ClientId` =
 * its old session id and rebinds each tunnel with its old bind `Id`, the `Opts` of the earlier
 * reply (`Addr: "localhost:PORT"` for TCP) and the bind token that reply carried (`Extra.Token`,
 * ngrok-go internal/tunnel/client/reconnecting.go): it must get its URLs back, the TCP port it
 * held included, and no other credential may take that port. A relay between the agent and the
 * gateway cuts the connection.
 */

const missing = cliAgentMissing();

/** The agent, behind a relay, with the tunnels `tunnels(appPort)`; answers once `count` tunnels started cleanly. */
async function startBehindRelay(t: TestContext, tunnels: (appPort: number) => Readonly<Record<string, CliTunnel>>, count: number) {
  const { ingress, app } = await startServerAndApp(t);
  const relay = await startRelay(t, ingress.port('agent'));
  const { config, dir } = await writeAgentConfig(t, ingress, app.port, { serverPort: relay.port, tunnels: tunnels(app.port) });
  const run = await new CliAgents(t, cliAgentBinary()!).start(config, dir, count);
  t.after(() => run.stop());
  assert.deepEqual(run.problems, [], run.lines.join('\n'));
  return { ingress, relay, run };
}

describe('the v2 CLI agent losing its connection', () => {
  test('`start --all` brings several tunnels up; after a cut the agent is back on the same URLs (HTTP and the TCP port) within seconds, and only it', { skip: missing, timeout: 60_000 }, async (t) => {
    const tunnels = (port: number) => ({ web: { proto: 'http', addr: port }, api: { proto: 'http', addr: port, subdomain: 'cli-api', bind_tls: 'true' }, raw: { proto: 'tcp', addr: port } });
    const { ingress, relay, run } = await startBehindRelay(t, tunnels, 4);
    assert.deepEqual(Object.keys(run.urls).sort(), ['api', 'raw', 'web', 'web (http)'], run.lines.join('\n'));
    const urls = { ...run.urls };
    assert.equal(urls.api, 'https://cli-api.burrow.internal');
    const tcpPort = Number(new URL(urls.raw!).port);
    assert.equal(urls.raw, `tcp://localhost:${tcpPort}`);

    const reach = async (round: string) => {
      for (const name of ['web', 'web (http)', 'api']) {
        const answer = await callIngress(ingress.port('http_ingress'), { host: new URL(urls[name]!).hostname, path: `/${round}` });
        assert.equal(answer.status, 200, `${name} (${round}): ${answer.body.toString()}`);
        assert.equal((JSON.parse(answer.body.toString()) as { url: string }).url, `/${round}`);
      }
      const [response] = parseResponses(await exchange(tcpPort, [`GET /${round}-tcp HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n`], { halfClose: false }));
      assert.equal(response?.status, 200, `tcp (${round})`);
      assert.equal((JSON.parse(response!.body.toString()) as { url: string }).url, `/${round}-tcp`);
    };
    await reach('before');
    const sessions = (await ingress.server.request('GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[];
    assert.equal(sessions.length, 1);

    const established = run.next('the session established again', (entry) => entry.msg === 'client session established');
    relay.cut();
    await established;
    await reach('after');
    const after = (await ingress.server.request('GET', '/tunnels')).body.tunnels as { public_url: string; tunnel_session: { id: string } }[];
    assert.deepEqual(after.map((tunnel) => tunnel.public_url).sort(), Object.values(urls).sort(), 'the same URLs, each bound once');
    const [resumed, ...others] = (await ingress.server.request('GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[];
    assert.deepEqual(others, [], 'one session: the one it had ended');
    assert.notEqual(resumed!.id, sessions[0]!.id);
    const problems: string[] = run.problems;
    assert.deepEqual(problems.filter((line) => !line.includes('session closed, starting reconnect loop')), [], 'no refused rebind');

    // Only it: once the agent is gone, another credential asking for its port is refused as for any address it has not reserved.
    await run.stop();
    const other = await ingress.agent(t);
    await assert.rejects(other.tcpEndpoint().remoteAddr(`localhost:${tcpPort}`).listen(false), (error: Error) => {
      assert.match(error.message, new RegExp(`localhost:${tcpPort} is not a reserved address of this account`));
      assert.match(error.message, /ERR_BURROW_9016/);
      return true;
    });
  });
});

describe('the URLs of an agent whose connection was lost', () => {
  test('stay held for its credential until it is back: another credential is refused them (9017), the agent gets them', { skip: missing, timeout: 90_000 }, async (t) => {
    const tunnels = (port: number) => ({ api: { proto: 'http', addr: port, subdomain: 'cli-held', bind_tls: 'true' }, raw: { proto: 'tcp', addr: port } });
    const { ingress, relay, run } = await startBehindRelay(t, tunnels, 2);
    const urls = { ...run.urls };
    relay.refuseNew(true);
    relay.cut();
    await until(async () => (await ingress.server.request('GET', '/tunnel_sessions')).body.tunnel_sessions as unknown[], (list) => list.length === 0, 'the session ended');

    const other = await ingress.agent(t);
    for (const bind of [() => other.httpEndpoint().domain('cli-held.burrow.internal').listen(false), () => other.tcpEndpoint().remoteAddr(new URL(urls.raw!).host).listen(false)]) {
      await assert.rejects(bind(), (error: Error) => {
        assert.match(error.message, /is held for the agent that bound it, which lost its connection, until .* \(limit agent_reconnect_hold_ms|is not a reserved address/);
        return true;
      });
    }
    // A free name of its own the other agent binds as ever.
    assert.equal((await other.httpEndpoint().domain('cli-other.burrow.internal').listen(false)).url(), 'https://cli-other.burrow.internal');

    const established = run.next('the session established again', (entry) => entry.msg === 'client session established', 60_000);
    relay.refuseNew(false);
    await established;
    const after = (await ingress.server.request('GET', '/tunnels')).body.tunnels as { public_url: string }[];
    assert.deepEqual(after.map((tunnel) => tunnel.public_url).sort(), [urls.api, urls.raw, 'https://cli-other.burrow.internal'].sort());
  });
});

describe('the v2 CLI agent reconnecting while the gateway still holds its old session', () => {
  test('its Auth naming that session (ClientId) ends it at once, so the rebinds get the same URLs', { skip: missing, timeout: 60_000 }, async (t) => {
    const { ingress, relay, run } = await startBehindRelay(t, (port) => ({ web: { proto: 'http', addr: port, bind_tls: 'true' }, raw: { proto: 'tcp', addr: port } }), 2);
    const [before] = (await ingress.server.request('GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[];

    // The gateway's connection stays open and silent: it would notice only when its heartbeat times out (25 s).
    const established = run.next('the session established again', (entry) => entry.msg === 'client session established');
    relay.dropAgentSide();
    await established;
    const [resumed, ...others] = (await ingress.server.request('GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[];
    assert.deepEqual(others, [], 'the old session ended');
    assert.notEqual(resumed!.id, before!.id);
    const after = (await ingress.server.request('GET', '/tunnels')).body.tunnels as { public_url: string; tunnel_session: { id: string } }[];
    assert.deepEqual(after.map((tunnel) => tunnel.public_url).sort(), [run.urls.raw, run.urls.web].sort());
    assert.ok(after.every((tunnel) => tunnel.tunnel_session.id === resumed!.id));
    const answer = await callIngress(ingress.port('http_ingress'), { host: new URL(run.urls.web!).hostname, path: '/again' });
    assert.equal(answer.status, 200, answer.body.toString());
  });
});

describe('the SDK losing its connection', () => {
  test('it rebinds its TCP address with the bind token it was told and is back on the same port', { timeout: 60_000 }, async (t) => {
    const { ingress, app } = await startServerAndApp(t);
    const relay = await startRelay(t, ingress.port('agent'));
    const credential = await ingress.server.request('POST', '/credentials', { description: 'reconnecting SDK' });
    let done = false;
    t.after(() => void (done = true));
    const session = await new ngrok.SessionBuilder().authtoken(credential.body.token).serverAddr(`localhost:${relay.port}`).caCert(Buffer.from(ingress.ca)).handleDisconnection(() => !done).connect();
    t.after(() => session.close().catch(() => undefined));
    const listener = await session.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${app.port}`);
    const port = Number(new URL(listener.url()!).port);
    const [before] = (await ingress.server.request('GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[];

    relay.cut();
    const tunnelsOf = async () => (await ingress.server.request('GET', '/tunnels')).body.tunnels as { public_url: string; tunnel_session: { id: string } }[];
    const [again] = await until(tunnelsOf, (list) => list.length === 1 && list[0]!.tunnel_session.id !== before!.id, 'the tunnel bound again on a new session');
    assert.equal(again!.public_url, listener.url());
    const [response] = parseResponses(await exchange(port, ['GET /sdk-again HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n'], { halfClose: false }));
    assert.equal(response?.status, 200);
  });
});
