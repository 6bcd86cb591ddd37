import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkFreshStarts, cliAgentBinary, cliAgentMissing, CliAgents, startServerAndApp, writeAgentConfig } from '../../fixtures/cli-agent.ts';

/**
 * The vendor's v2 CLI agent (Go, agent 2.3.41) against `burrow serve`. Its muxado sends stream ids
 * out of order and its Binds before the Auth reply; a gateway stricter than that lost about one
 * fresh start in ten. 200 starts: test/stress/cli-agent-starts.test.ts.
 */

const missing = cliAgentMissing();

describe('the v2 CLI agent', () => {
  test('20 fresh starts each hold their first connection, bring the tunnel up and carry a request to the app', { skip: missing, timeout: 60_000 }, async (t) => {
    await checkFreshStarts(t, cliAgentBinary()!, 20);
  });
});

describe('what the API says of the v2 CLI agent', () => {
  test('its tunnels and endpoints show no invented upstream; its "updates disabled" is unsupported (806), not failed', { skip: missing, timeout: 30_000 }, async (t) => {
    const { ingress, app } = await startServerAndApp(t);
    const { config, dir } = await writeAgentConfig(t, ingress, app.port);
    const run = await new CliAgents(t, cliAgentBinary()!).start(config, dir, 2);
    t.after(() => run.stop());
    assert.deepEqual(run.problems, [], run.lines.join('\n'));
    // The v2 agent's Bind carries no ForwardsTo: the API says nothing rather than http://localhost:80.
    const tunnels = (await ingress.server.request('GET', '/tunnels')).body.tunnels as { forwards_to: string }[];
    assert.deepEqual(tunnels.map((tunnel) => tunnel.forwards_to), ['', '']);
    const endpoints = (await ingress.server.request('GET', '/endpoints')).body.endpoints as { upstream_url: string }[];
    assert.deepEqual(endpoints.map((endpoint) => endpoint.upstream_url), ['', '']);
    const [session] = (await ingress.server.request('GET', '/tunnel_sessions')).body.tunnel_sessions as { id: string }[];
    const update = await ingress.server.request('POST', `/tunnel_sessions/${session!.id}/update`, {});
    assert.equal(update.status, 400, update.text);
    assert.equal(update.body.error_code, 'ERR_BURROW_806');
    assert.match(update.body.msg, /does not support remote update: updates disabled/);
  });
});
