import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { callIngress } from '../ingress/helpers.ts';
import type { IngressServer } from '../ingress/fixtures.ts';
import { cliAgentBinary, cliAgentMissing, CliAgents, startServerAndApp, writeAgentConfig } from '../../fixtures/cli-agent.ts';
import { freePort } from '../../fixtures/free-port.ts';

/**
 * Expo's `expo start --tunnel` (expo/expo packages/@expo/cli/src/start/server/AsyncNgrok.ts) calls
 * `@expo/ngrok`'s `connect({ hostname: '<randomness>-<user>-<port>.<domain>', authtoken,
 * configPath, onStatusChange, port })`, `<domain>` and the token from EXPO_TUNNEL_NGROK_DOMAIN and
 * EXPO_TUNNEL_NGROK_AUTHTOKEN. `connect()` (@expo/ngrok 4.1.3) runs the v2 agent twice: `ngrok
 * authtoken <token> --config=<configPath>` (written into that ngrok.yml), then `ngrok start
 * --none --log=stdout --config=<configPath>`; once the log says `starting web service … addr=…` it
 * posts its options to the agent's local API, `POST /api/tunnels`, and answers the `public_url`.
 *
 * Against Burrow: the ngrok.yml at `configPath` holds `server_addr`, `root_cas`, `update_check:
 * false` and a `web_addr` (the local API connect() needs), the token is a Burrow credential's, and
 * the domain Burrow's zone (a one-label name under it needs no reservation) or a reserved wildcard.
 *
 * The first test drives the binary exactly so, by hand; the second calls `@expo/ngrok` itself,
 * when it is installed (`@expo/ngrok` 4.1.3, a dev dependency).
 */

const missing = cliAgentMissing();

function expoNgrok(): { connect(options: Record<string, unknown>): Promise<string>; kill(): Promise<void> } | undefined {
  try {
    return createRequire(import.meta.url)('@expo/ngrok');
  } catch {
    return undefined;
  }
}
const expoMissing = missing ?? (expoNgrok() ? undefined : '@expo/ngrok is not installed: add the dev dependency "@expo/ngrok": "4.1.3" to run this test');
if (expoMissing && !missing) process.stderr.write(`SKIPPED: ${expoMissing}\n`);

/** Burrow with an HTTP ingress, an app behind it, and Expo's ngrok.yml (its web service on a free port). */
async function setUp(t: TestContext) {
  const { ingress, app } = await startServerAndApp(t);
  const webPort = await freePort();
  const { config, dir, token } = await writeAgentConfig(t, ingress, app.port, { tunnels: {}, webAddr: `127.0.0.1:${webPort}` });
  return { ingress, app, webPort, config, dir, token };
}

/** The hostname Expo asks for: `<randomness>-<user>-<port>` under the domain (here Burrow's zone). */
const expoHostname = (port: number) => `${randomUUID().slice(0, 7)}-tester-${port}.burrow.internal`;

async function assertReaches(ingress: IngressServer, url: string, path: string): Promise<void> {
  const answer = await callIngress(ingress.port('http_ingress'), { host: new URL(url).hostname, path });
  assert.equal(answer.status, 200, answer.body.toString());
  assert.equal((JSON.parse(answer.body.toString()) as { url: string }).url, path);
}

describe("Expo's tunnel (`@expo/ngrok`'s connect) against Burrow", () => {
  test('the binary driven as connect() drives it: `authtoken`, `start --none`, then POST /api/tunnels on its local API', { skip: missing, timeout: 60_000 }, async (t) => {
    const { ingress, app, webPort, config, dir, token } = await setUp(t);
    const binary = cliAgentBinary()!;
    await promisify(execFile)(binary, ['authtoken', token, `--config=${config}`], { env: { HOME: dir } });
    const run = await new CliAgents(t, binary).start(config, dir, 0, 10_000, ['start', '--none', '--log=stdout', `--config=${config}`]);
    t.after(() => run.stop());
    assert.equal(run.sessions, 1, run.lines.join('\n'));
    const hostname = expoHostname(app.port);
    // The body connect() posts: its options, with a generated name and the addr taken from port.
    const options = { hostname, authtoken: token, configPath: config, port: app.port, proto: 'http', addr: app.port, name: randomUUID() };
    const started = await fetch(`http://127.0.0.1:${webPort}/api/tunnels`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(options) });
    const body = (await started.json()) as { public_url: string };
    assert.equal(started.status, 201, JSON.stringify(body));
    assert.equal(body.public_url, `https://${hostname}`);
    await assertReaches(ingress, body.public_url, '/expo-by-hand');
    // `--log=stdout` makes it write its first line before it read log_format from the config.
    const problems = run.problems.filter((line) => !line.includes('msg="open config file"'));
    assert.deepEqual(problems, [], run.lines.join('\n'));
  });

  test("@expo/ngrok's connect(), as `expo start --tunnel` calls it", { skip: expoMissing, timeout: 60_000 }, async (t) => {
    const { ingress, app, config } = await setUp(t);
    const ngrok = expoNgrok()!;
    t.after(() => ngrok.kill());
    const statuses: string[] = [];
    const hostname = expoHostname(app.port);
    const url = await ngrok.connect({ hostname, authtoken: (await ingress.server.request('POST', '/credentials', { description: 'expo' })).body.token, configPath: config, onStatusChange: (status: string) => statuses.push(status), port: app.port });
    assert.equal(url, `https://${hostname}`);
    await assertReaches(ingress, url, '/expo');
    assert.ok(!statuses.includes('closed'), `statuses: ${statuses.join(', ')}`);
  });
});
