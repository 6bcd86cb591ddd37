import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { callIngress } from '../fixtures/live-ingress.ts';
import { listenLocally, startIngressServer } from '../adapters/ingress/fixtures.ts';
import { createServerLog } from '../../bin/server-log.ts';
import type { Traffic } from '../../lib/index.ts';

/**
 * The log tells the story: `burrow serve` with the agent gateway and the HTTP ingress, the vendor's
 * agent connecting, carrying two requests (one its policy denies), and the server stopping, which
 * ends the session. The lines are read as they come and picked by what they say, never by where
 * they fall among others.
 */

/** Runs the story on a server with `args`; answers its stdout lines once the session's close was logged, and the session's id. */
async function story(t: { after(end: () => unknown): void }, args: string[], closed: (line: string) => boolean) {
  const ingress = await startIngressServer(['--http-ingress-addr', '127.0.0.1:0', ...args], {}, false);
  t.after(() => ingress.stop());
  const app = await listenLocally(createServer((req, res) => res.end(`hello from ${req.url}`)));
  t.after(() => app.close());
  const session = await ingress.agent(t);
  const policy = JSON.stringify({ on_http_request: [{ name: 'no admin', expressions: ["req.url.path.startsWith('/admin')"], actions: [{ type: 'deny', config: { status_code: 403 } }] }] });
  const listener = await session.httpEndpoint().trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${app.port}`);
  const host = new URL(listener.url()!).host;
  // The ingress is plain HTTP: the request's URL is http:// where the endpoint's is https://.
  assert.equal((await callIngress(ingress.port('http_ingress'), host, '/hello?token=s3cret')).status, 200);
  assert.equal((await callIngress(ingress.port('http_ingress'), host, '/admin')).status, 403);
  ingress.server.process.kill('SIGTERM');
  const lines = await ingress.server.outputUntil((lines) => lines.some(closed));
  await session.lost;
  return { lines, url: listener.url()!, requested: `http://${host}` };
}

test('--log-format json: an agent session opened and closed, and one line per ingress request with its endpoint, status, duration and the rule that decided', async (t) => {
  const { lines, url, requested } = await story(t, ['--log-format', 'json'], (line) => line.includes('"event":"agent_session_closed"'));
  const events = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, any>);
  const [opened, ...moreOpened] = events.filter((e) => e.event === 'agent_session_opened');
  assert.deepEqual(moreOpened, []);
  assert.match(opened!.session_id, /^ts_/);
  assert.equal(opened!.transport, 'agent');
  assert.match(opened!.agent_version, /^\d+\.\d+\.\d+/);
  assert.match(opened!.client, /^127\.0\.0\.1:\d+$/);
  assert.match(opened!.account_id, /^ac_/);
  assert.match(opened!.msg, new RegExp(`^agent session ${opened!.session_id} opened: agent `));

  const traffic = events.filter((e) => e.event === 'ingress');
  assert.equal(traffic.length, 2, JSON.stringify(traffic));
  const hello = traffic.find((e) => e.url.includes('/hello'))!;
  assert.equal(hello.url, `${requested}/hello?token=***`, 'a secret-looking query value is never logged');
  assert.deepEqual([hello.method, hello.status, hello.endpoint_url, hello.answered_by, hello.rule], ['GET', 200, url, 'upstream', null]);
  assert.match(hello.endpoint_id, /^tn_/, 'an agent endpoint is its tunnel');
  assert.equal(typeof hello.ms, 'number');
  const admin = traffic.find((e) => e.url.endsWith('/admin'))!;
  assert.deepEqual([admin.status, admin.answered_by, admin.rule], [403, 'policy', 'agent:traffic_policy on_http_request[0] (no admin): deny']);
  assert.ok(!lines.some((line) => line.includes('s3cret')));

  const closed = events.find((e) => e.event === 'agent_session_closed')!;
  assert.equal(closed.session_id, opened!.session_id);
  assert.equal(closed.transport, 'agent');
  assert.equal(closed.reason, 'gateway-closed');
  assert.match(closed.msg, new RegExp(`^agent session ${opened!.session_id} closed: ${closed.reason}`));
  // The API lines keep their fields (the agent's credential was made through the API).
  assert.ok(events.some((e) => e.method === 'POST' && e.path === '/credentials' && e.status === 201 && e.operation === 'credentials.create'));
});

test('--log-format text: the same story, a line each', async (t) => {
  const { lines, url, requested } = await story(t, [], (line) => / agent session ts_\w+ closed: /.test(line));
  const id = /agent session (ts_\w+) opened: agent \d+\.\d+\.\d+\S* from 127\.0\.0\.1:\d+, account ac_\w+$/.exec(lines.find((line) => line.includes(' opened: ')) ?? '')?.[1];
  assert.ok(id, lines.join('\n'));
  const [escaped, at] = [url, requested].map((text) => text.replace(/[.]/g, '\\.'));
  assert.ok(lines.some((line) => new RegExp(`^\\S+Z GET ${at}/hello\\?token=\\*\\*\\* 200 [\\d.]+ms tn_\\w+ ${escaped}$`).test(line)), lines.join('\n'));
  assert.ok(lines.some((line) => new RegExp(`^\\S+Z GET ${at}/admin 403 [\\d.]+ms tn_\\w+ ${escaped} rule agent:traffic_policy on_http_request\\[0\\] \\(no admin\\): deny`).test(line)), lines.join('\n'));
  assert.ok(lines.some((line) => new RegExp(`^\\S+Z agent session ${id} closed: gateway-closed`).test(line)));
});

test('the log line of a TCP connection gives its bytes, and a rule that failed decides when no action ended the exchange; --quiet writes neither', () => {
  const written: string[] = [];
  const out = { write: (text: string) => void written.push(text) } as unknown as NodeJS.WritableStream;
  const conn = { clientIp: '127.0.0.1', clientPort: 50000, serverIp: '127.0.0.1', serverPort: 20001, startedAt: new Date() };
  const tcp: Traffic = {
    protocol: 'tcp',
    account: 'ac_1',
    endpoints: [{ id: 'ep_1', url: 'tcp://1.tcp.burrow.internal:20001' }],
    conn,
    rules: [{ phase: 'on_tcp_connect', index: 0, source: 'traffic_policy', matched: true, actions: [{ type: 'restrict-ips', ended: false }], error: 'restrict-ips: bad CIDR' }],
    logs: [],
    answeredBy: 'policy',
    startedAt: new Date(),
    durationMs: 12.34,
    bytesIn: 5,
    bytesOut: 7,
    serverName: '',
  };
  const log = createServerLog({ format: 'json', quiet: false, out });
  log.traffic(tcp);
  log.flush();
  const line = JSON.parse(written.join('')) as Record<string, unknown>;
  assert.deepEqual(
    [line.event, line.protocol, line.bytes_in, line.bytes_out, line.ms, line.endpoint_url, line.client, line.rule],
    ['ingress', 'tcp', 5, 7, 12.3, 'tcp://1.tcp.burrow.internal:20001', '127.0.0.1:50000', 'traffic_policy on_tcp_connect[0]: failed'],
  );
  assert.equal(line.msg, 'TCP tcp://1.tcp.burrow.internal:20001 5B in 7B out 12.3ms ep_1 tcp://1.tcp.burrow.internal:20001 rule traffic_policy on_tcp_connect[0]: failed');

  written.length = 0;
  const quiet = createServerLog({ format: 'text', quiet: true, out });
  quiet.traffic(tcp);
  assert.equal(quiet.request, undefined);
  quiet.store(false, 'PostgreSQL at db is unreachable');
  quiet.flush();
  assert.equal(written.length, 1, 'only the store line');
  assert.match(written[0]!, /^\S+Z store lost: PostgreSQL at db is unreachable\n$/);
});
