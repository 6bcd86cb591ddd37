import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { Agent, request, type IncomingMessage } from 'node:http';
import { createFetchHandler } from '../../../adapters/http/index.ts';
import { MemoryStore } from '../../../adapters/stores/memory-store.ts';
import { createBurrow, type Delivery, type Traffic } from '../../../lib/index.ts';
import { callIngress, startLiveIngress } from '../../fixtures/live-ingress.ts';
import { next } from './helpers.ts';

/**
 * Seen, not guessed: every exchange through the ingress lands in the traffic journal with the
 * endpoint, the rules its policy evaluated and the actions taken, readable at /_burrow/traffic,
 * and reaches the event subscriptions that ask for http_request_complete.v0. The real parts: the
 * vendor's agent (@ngrok/ngrok) on Burrow's agent gateway with a tunnel credential, a local app,
 * node's HTTP client (test/fixtures/live-ingress.ts).
 */

const OPERATOR = 'traffic-test-operator';
const HOST = 'app.example.com';

async function setUp(t: TestContext) {
  const deliveries = new Set<(delivery: Delivery) => void>();
  const burrow = createBurrow({ store: new MemoryStore(), eventSinks: [{ deliver: (delivery) => deliveries.forEach((listener) => listener(delivery)) }] });
  const live = await startLiveIngress(t, burrow, { domain: HOST });
  const control = createFetchHandler(burrow, { operatorToken: OPERATOR });
  /** A control-plane call with the operator token. */
  const controlCall = async (method: string, path: string, body?: unknown) => {
    const res = await control(new Request(`http://burrow.test/_burrow${path}`, { method, headers: { Authorization: `Bearer ${OPERATOR}`, ...(body ? { 'Content-Type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) }));
    return { status: res.status, body: (await res.json()) as any };
  };
  /** The next exchange the journal records (subscribe before the request is sent). */
  const recorded = (take?: (traffic: Traffic) => boolean) => next<Traffic>((listener) => burrow.traffic.watch(listener), take);
  const delivered = (type: string) => next<Delivery>((listener) => (deliveries.add(listener), () => void deliveries.delete(listener)), (d) => d.event.event_type === type);
  return { ...live, burrow, client: burrow.client(live.account.token), controlCall, recorded, delivered };
}

const call = (port: number, path: string, options: Parameters<typeof callIngress>[3] & { host?: string } = {}) => callIngress(port, options.host ?? HOST, path, options);

const POLICY = JSON.stringify({
  on_http_request: [
    { name: 'no admin', expressions: ["req.url.path.startsWith('/admin')"], actions: [{ type: 'deny', config: { status_code: 403 } }] },
    { name: 'broken', expressions: ["req.url.path == '/broken' && req.headers['x-missing'][0] == 'x'"], actions: [{ type: 'deny' }] },
    { name: 'tag', actions: [{ type: 'add-headers', config: { headers: { 'x-seen': 'yes' } } }, { type: 'log', config: { metadata: { path: '${req.url.path}' } } }] },
  ],
  on_http_response: [{ name: 'served by', actions: [{ type: 'add-headers', config: { headers: { 'x-served-by': 'burrow' } } }] }],
});

describe('the traffic journal', () => {
  test('journals each exchange with its endpoint, the rules evaluated and the actions taken; /_burrow/traffic reads it', async (t) => {
    const { agent, appUrl, port, account, recorded, controlCall, errors } = await setUp(t);
    const session = await agent();
    const listener = await session.httpEndpoint().domain(HOST).trafficPolicy(POLICY).listenAndForward(appUrl);

    const passing = recorded();
    const passed = await call(port, '/items?token=s3cret&page=2', { method: 'POST', body: Buffer.alloc(1000, 1) });
    assert.equal(passed.status, 200);
    const traffic = await passing;
    assert.equal(traffic.protocol, 'http');
    assert.equal(traffic.account, account.accountId);
    assert.deepEqual(traffic.endpoints.map((endpoint) => endpoint.url), [listener.url()]);

    const { body } = await controlCall('GET', `/traffic?account_id=${account.accountId}`);
    assert.equal(body.size, 1000);
    const [entry] = body.traffic;
    assert.equal(entry.account_id, account.accountId);
    assert.equal(entry.protocol, 'http');
    assert.deepEqual(entry.endpoint, traffic.endpoints[0]);
    assert.equal(entry.endpoint.url, `https://${HOST}`);
    assert.equal(entry.method, 'POST');
    assert.equal(entry.url, `http://${HOST}/items?token=REDACTED&page=2`, 'secret-looking query values are redacted');
    assert.equal(entry.status, 200);
    assert.equal(entry.answered_by, 'upstream');
    assert.equal(entry.error_code, null);
    assert.equal(entry.client_ip, '127.0.0.1');
    assert.equal(entry.bytes_in, 1000);
    assert.equal(entry.bytes_out, Buffer.byteLength(passed.text));
    assert.deepEqual(
      entry.rules.map((rule: any) => [rule.phase, rule.name, rule.matched, rule.actions.map((action: any) => action.type), rule.error]),
      [
        ['on_http_request', 'no admin', false, [], null],
        ['on_http_request', 'broken', false, [], null],
        ['on_http_request', 'tag', true, ['add-headers', 'log'], null],
        ['on_http_response', 'served by', true, ['add-headers'], null],
      ],
    );
    assert.deepEqual(entry.logs, [{ phase: 'on_http_request', metadata: { path: '/items' } }]);
    assert.deepEqual(entry.errors, []);
    assert.equal(entry.decided_by, null, 'no action ended it: the upstream answered');

    const denying = recorded();
    assert.equal((await call(port, '/admin')).status, 403);
    await denying;
    const denied = (await controlCall('GET', `/traffic?account_id=${account.accountId}&limit=1`)).body.traffic[0];
    assert.equal(denied.answered_by, 'policy');
    assert.deepEqual(denied.rules.map((rule: any) => [rule.name, rule.matched, rule.actions]), [['no admin', true, [{ type: 'deny', ended: true, note: null }]]]);
    assert.deepEqual(denied.decided_by, { phase: 'on_http_request', source: 'agent:traffic_policy', index: 0, name: 'no admin', action: 'deny' });
    assert.deepEqual(errors, []);
  });

  test('a rule that fails shows its error; errors=true and status filters find it', async (t) => {
    const { agent, appUrl, port, account, recorded, controlCall } = await setUp(t);
    const session = await agent();
    await session.httpEndpoint().domain(HOST).trafficPolicy(POLICY).listenAndForward(appUrl);

    const failing = recorded();
    const answer = await call(port, '/broken');
    assert.equal(answer.status, 500);
    await failing;
    const passing = recorded();
    await call(port, '/fine');
    await passing;

    const { body } = await controlCall('GET', `/traffic?account_id=${account.accountId}&errors=true`);
    assert.equal(body.traffic.length, 1);
    const [entry] = body.traffic;
    assert.equal(entry.url, `http://${HOST}/broken`);
    assert.equal(entry.status, 500);
    assert.equal(entry.answered_by, 'policy');
    const broken = entry.rules.find((rule: any) => rule.name === 'broken');
    assert.match(broken.error, /rule "broken".*x-missing/s);
    assert.deepEqual(entry.errors, [broken.error]);
    assert.deepEqual(entry.decided_by, { phase: 'on_http_request', source: 'agent:traffic_policy', index: broken.index, name: 'broken', action: null }, 'no action ended it: the rule that failed');
    assert.deepEqual((await controlCall('GET', `/traffic?account_id=${account.accountId}&status=5xx`)).body.traffic.map((e: any) => e.url), [`http://${HOST}/broken`]);
    assert.deepEqual((await controlCall('GET', `/traffic?account_id=${account.accountId}&status=2xx`)).body.traffic.map((e: any) => e.url), [`http://${HOST}/fine`]);
  });

  test('a request no endpoint takes is journaled without an account, with the offline page\'s code', async (t) => {
    const { port, recorded, controlCall } = await setUp(t);
    const seen = recorded();
    assert.equal((await call(port, '/x', { host: 'nobody.example.com' })).status, 404);
    assert.equal((await seen).account, undefined);
    const [entry] = (await controlCall('GET', '/traffic?account_id=none')).body.traffic;
    assert.equal(entry.account_id, null);
    assert.equal(entry.endpoint, null);
    assert.equal(entry.url, 'http://nobody.example.com/x');
    assert.equal(entry.error_code, 'ERR_BURROW_3200');
    assert.equal(entry.answered_by, 'ingress');

    assert.deepEqual(await controlCall('DELETE', '/traffic?account_id=none'), { status: 200, body: { removed: 1 } });
    assert.deepEqual((await controlCall('GET', '/traffic')).body.traffic, []);
  });

  test('GET /_burrow/traffic/{seq} answers the detail (headers masked, bodies, the upstream\'s answer, the message); a replay goes through the policy again', async (t) => {
    const { agent, appUrl, port, account, recorded, controlCall, errors } = await setUp(t);
    const session = await agent();
    await session.httpEndpoint().domain(HOST).trafficPolicy(POLICY).listenAndForward(appUrl);

    const passing = recorded();
    await call(port, '/items?page=2', { method: 'POST', body: Buffer.from('{"name":"n","password":"hunter2"}'), headers: { 'Content-Type': 'application/json', Cookie: 'sid=s3cret', Authorization: 'Basic dXNlcjpwdw==' } });
    await passing;
    const [listed] = (await controlCall('GET', `/traffic?account_id=${account.accountId}&limit=1`)).body.traffic;
    const { status, body: entry } = await controlCall('GET', `/traffic/${listed.seq}`);
    assert.equal(status, 200);
    const text = JSON.stringify(entry);
    for (const secret of ['hunter2', 's3cret', 'dXNlcjpwdw==']) assert.ok(!text.includes(secret), `${secret} is not kept`);
    const header = (headers: [string, string][], name: string) => headers.find(([n]) => n.toLowerCase() === name)?.[1];
    assert.equal(header(entry.request.headers, 'authorization'), 'Basic REDACTED');
    assert.equal(header(entry.request.headers, 'cookie'), 'REDACTED');
    assert.deepEqual(JSON.parse(entry.request.body.data), { name: 'n', password: 'REDACTED' });
    assert.deepEqual(JSON.parse(entry.response.body.data), { url: '/items?page=2', length: 33 });
    assert.equal(entry.response.status, 200);
    assert.equal(header(entry.response.headers, 'x-served-by'), 'burrow', 'the answer as the client got it');
    assert.equal(entry.upstream.status, 200);
    assert.equal(header(entry.upstream.headers, 'x-served-by'), undefined, "the upstream's answer, before the response phase");
    assert.ok(entry.upstream.after_ms >= 0 && entry.upstream.after_ms <= entry.duration_ms);
    assert.equal(entry.message, null);
    assert.match(entry.curl, new RegExp(`^curl -X POST 'http://127\\.0\\.0\\.1:${port}/items\\?page=2' `));
    assert.match(entry.curl, /-H "Authorization: Basic \$BURROW_KEY"/);

    // Replayed with edits: the path now hits the deny rule, and the new exchange says so.
    const replayed = recorded();
    const replay = await controlCall('POST', `/traffic/${listed.seq}/replay`, { path: '/admin/x', body: '{}' });
    assert.equal(replay.status, 200, JSON.stringify(replay.body));
    assert.equal((await replayed).protocol, 'http');
    assert.ok(replay.body.seq > listed.seq);
    assert.equal(replay.body.url, `http://${HOST}/admin/x`);
    assert.equal(replay.body.status, 403);
    assert.equal(replay.body.answered_by, 'policy');
    assert.equal(header(replay.body.request.headers, 'authorization'), undefined, 'a masked header is not replayed');

    const offline = recorded();
    await call(port, '/x', { host: 'nobody.example.com' });
    await offline;
    const [gone] = (await controlCall('GET', '/traffic?account_id=none')).body.traffic;
    assert.match(gone.message, /The endpoint http:\/\/nobody\.example\.com is offline/);
    const missing = await controlCall('GET', '/traffic/999999');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error_code, 'ERR_BURROW_9001');
    assert.deepEqual(errors, []);
  });

  test('bad filters are refused naming the parameter', async (t) => {
    const { controlCall } = await setUp(t);
    const refused = async (query: string, pattern: RegExp) => {
      const answer = await controlCall('GET', `/traffic?${query}`);
      assert.equal(answer.status, 400, query);
      assert.match(answer.body.msg, pattern);
    };
    await refused('status=teapot', /^status: must be a status such as 404/);
    await refused('errors=yes', /^errors: must be true or false \(got "yes"\)$/);
    await refused('limit=0', /^limit: must be a whole number between 1 and 1000/);
    await refused('path=/x', /unknown query parameter 'path'; supported: account_id, status, endpoint_id, errors, limit/);
  });
});

describe('traffic events', () => {
  test('http_request_complete.v0 reaches the destinations of subscriptions that ask for it, with the vendor\'s fields', async (t) => {
    const { client, agent, appUrl, port, account, delivered, burrow } = await setUp(t);
    const destination = (await client.resource('event_destinations').create({ format: 'json', target: { logs: { auth: { role: { role_ref: 'r' } }, log_group_ref: 'g' } } })) as { id: string };
    await client.resource('event_subscriptions').create({ sources: [{ type: 'http_request_complete.v0' }], destination_ids: [destination.id] });
    const session = await agent();
    await session.httpEndpoint().domain(HOST).trafficPolicy(POLICY).basicAuth('user', 'password12').listenAndForward(appUrl);

    const arriving = delivered('http_request_complete.v0');
    const answer = await call(port, '/items?q=1', { headers: { Authorization: `Basic ${Buffer.from('user:password12').toString('base64')}`, 'User-Agent': 'Traffic-Test/1.0' } });
    assert.equal(answer.status, 200);
    const { event, destinationId } = await arriving;
    assert.equal(destinationId, destination.id);
    assert.equal(event.account_id, account.accountId);
    assert.equal(event.principal, null, 'traffic events have no principal');
    const object = event.object as any;
    assert.equal(object.conn.client_ip, '127.0.0.1');
    assert.equal(object.conn.server_name, HOST);
    assert.equal(object.conn.server_port, port);
    assert.match(object.conn.start_ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(object.http.request.method, 'get');
    assert.deepEqual(object.http.request.url, { raw: `http://${HOST}/items?q=1`, scheme: 'http', host: HOST, path: '/items', query: 'q=1' });
    assert.deepEqual(object.http.request.headers.Authorization, ['REDACTED'], 'credentials are not kept in outboxes');
    assert.deepEqual(object.http.request.headers['User-Agent'], ['traffic-test/1.0']);
    assert.equal(object.http.request.user_agent, 'Traffic-Test/1.0');
    assert.equal(object.http.request.body_length, 0);
    assert.equal(object.http.response.status_code, 200);
    assert.equal(object.http.response.body_length, Buffer.byteLength(answer.text));
    assert.deepEqual(object.basic_auth, { decision: 'allow', username: 'user' });
    assert.deepEqual(object.backend, { connection_reused: false });
    assert.deepEqual(object.traffic_policy, { logs: [{ metadata: { path: '/items' } }] });

    const outbox = await burrow.outbox(account.accountId, destination.id);
    assert.deepEqual(outbox.events.map((e) => e.event_type), ['http_request_complete.v0']);

    // Two requests on one client connection: the second goes down the first one's proxy stream.
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => keepAlive.destroy());
    for (const reused of [false, true]) {
      const next = delivered('http_request_complete.v0');
      const headers = { host: HOST, authorization: `Basic ${Buffer.from('user:password12').toString('base64')}` };
      const res = await new Promise<IncomingMessage>((resolve, reject) => request({ host: '127.0.0.1', port, path: '/again', agent: keepAlive, headers }, resolve).on('error', reject).end());
      assert.equal(res.statusCode, 200);
      res.resume();
      assert.deepEqual(((await next).event.object as any).backend, { connection_reused: reused });
    }
  });
});
