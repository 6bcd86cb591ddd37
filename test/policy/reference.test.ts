import { networkInterfaces } from 'node:os';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { policyHttpRequest } from '../../adapters/ingress/local-documents.ts';
import { body, CONN, ENDPOINT, exchange, harness, interpolate, onRequest, policyOf, requestFacts } from './helpers.ts';

/**
 * The vendor's documented examples (ngrok-docs snippets/traffic-policy/actions/*\/examples,
 * traffic-policy/macros/index.mdx) for the parts of the language Burrow added last: each with the
 * documented request and the documented answer, upstream request or value.
 */

const h = harness();

describe('url-rewrite and redirect: the reference examples, and their result variables', () => {
  test("url-rewrite whose from consumes the host (from: ${req.url.authority}/products/?([.*]+)?): the upstream gets /products.php?query=123 on the same host", async () => {
    const policy = 'on_http_request: [{actions: [{type: url-rewrite, config: {from: "${req.url.authority}/products/?([.*]+)?", to: "/products.php?query=$1"}}]}]';
    const outcome = await onRequest(h, policy, { url: 'https://example.ngrok.app/products/123' });
    assert.equal(outcome.request.url, 'https://example.ngrok.app/products.php?query=123');
  });

  test('actions.ngrok.url_rewrite.url and .matches are there for the next action', async () => {
    const policy = JSON.stringify({
      on_http_request: [
        { actions: [{ type: 'url-rewrite', config: { from: '/products/?([.*]+)?', to: '/products.php?query=$1' } }] },
        { actions: [{ type: 'custom-response', config: { body: '${actions.ngrok.url_rewrite.url} ${actions.ngrok.url_rewrite.matches.join(",")} [${actions.ngrok.url_rewrite.error.code}]' } }] },
      ],
    });
    const outcome = await onRequest(h, policy, { url: 'https://example.ngrok.app/products' });
    assert.equal(outcome.terminal?.kind === 'respond' && outcome.terminal.response.body, 'https://example.ngrok.app/products.php?query= /products, []');
  });

  // The reference writes from: /api/v1/users?id=([0-9]+), where `?` makes the `s` optional and the
  // pattern cannot match /api/v1/users?id=123 in RE2 (nor Go's regexp); with the `?` escaped it does.
  test('redirect (the regex example, its ? escaped): 301 to /api/v2/users/123/ with x-redirected, and actions.ngrok.redirect.url', async () => {
    const policy = JSON.stringify({
      on_http_request: [
        { expressions: ["req.url.path.startsWith('/api/')"], actions: [{ type: 'redirect', config: { from: '/api/v1/users\\?id=([0-9]+)', to: '/api/v2/users/$1/', status_code: 301, headers: { 'x-redirected': 'true' } } }] },
      ],
    });
    const outcome = await onRequest(h, policy, { url: 'https://example.ngrok.app/api/v1/users?id=123' });
    assert.deepEqual(outcome.terminal, { kind: 'respond', response: { status: 301, headers: [['location', 'https://example.ngrok.app/api/v2/users/123/'], ['x-redirected', 'true']], body: '' } });
    const unchanged = JSON.stringify({ on_http_request: [{ actions: [{ type: 'redirect', config: { from: '/nothing', to: '/x' } }] }, { actions: [{ type: 'custom-response', config: { body: '${actions.ngrok.redirect.url}' } }] }] });
    const passed = await onRequest(h, unchanged, { url: 'https://example.ngrok.app/a' });
    assert.equal(passed.terminal?.kind === 'respond' && passed.terminal.response.body, 'https://example.ngrok.app/a');
  });
});

describe('add-headers and remove-headers: result variables', () => {
  test('actions.ngrok.add_headers.headers_added maps the names added to their values; remove_headers.headers_removed lists the names removed', async () => {
    const policy = JSON.stringify({
      on_http_request: [
        { actions: [{ type: 'add-headers', config: { headers: { 'X-Client': '${conn.client_ip}' } } }, { type: 'remove-headers', config: { headers: ['accept', 'x-absent'] } }] },
        { actions: [{ type: 'custom-response', config: { body: "${actions.ngrok.add_headers.headers_added['x-client']} ${actions.ngrok.remove_headers.headers_removed}" } }] },
      ],
    });
    const outcome = await onRequest(h, policy);
    assert.equal(outcome.terminal?.kind === 'respond' && outcome.terminal.response.body, '203.0.113.7 ["accept"]');
  });
});

describe('cookies: the variable reference examples', () => {
  test("res.cookies['sessionId'][0].max_age > duration('24h') (a duration), .expires a timestamp; a request cookie has the attributes' zero values", async () => {
    const policy = JSON.stringify({
      on_http_response: [
        { expressions: ["res.cookies['sessionId'][0].max_age > duration('24h')", "res.cookies['sessionId'][0].expires > timestamp('2026-01-01T00:00:00Z')"], actions: [{ type: 'add-headers', config: { headers: { 'x-long': '${res.cookies.sessionId[0].max_age}' } } }] },
      ],
      on_http_request: [
        { expressions: ["req.cookies['a'][0].value == 'b' && !req.cookies['a'][0].secure && req.cookies['a'][0].max_age == duration('0s') && req.cookies['a'][0].path == ''"], actions: [{ type: 'add-headers', config: { headers: { 'x-cookie': 'plain' } } }] },
      ],
    });
    const { request, response } = await exchange(h, policy, { status: 200, headers: [['Set-Cookie', 'sessionId=x; Max-Age=172800; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Secure']] }, { headers: [['Cookie', 'a=b']] });
    assert.deepEqual(request.request.headers.at(-1), ['x-cookie', 'plain']);
    assert.deepEqual(response.response.headers.at(-1), ['x-long', '172800s']);
  });
});

describe('functions: the reference examples', () => {
  test("secrets.get('vault-name', 'secret-name') reads the host's vault before the phase; without vaults it answers 501 naming the call", async () => {
    const asked: string[] = [];
    const vaulted = harness({ secret: async (vault, name, endpoint) => (asked.push(`${endpoint.id} ${vault}/${name}`), vault === 'vault-name' && name === 'secret-name' ? 'hunter2' : undefined) });
    assert.equal(await interpolate(vaulted, "secrets.get('vault-name', 'secret-name')"), 'hunter2');
    assert.deepEqual(asked, ['ep_2tEpN0yrxDI4j8jVnhVRoTNN2Tx vault-name/secret-name']);
    await assert.rejects(interpolate(h, "secrets.get('vault-name', 'secret-name')"), /"status":501.*secrets\.get\(\\"vault-name\\", \\"secret-name\\"\) is not available: no vaults are given to this policy engine/);
  });

  test('secrets.get with computed arguments reads the account\'s secrets once per request (both phases); only a missing secret fails, with 501 naming the call', async () => {
    const book: Record<string, string> = { 'prod\u0000api_key': 'hunter2', 'staging\u0000api_key': 'test-key' };
    let reads = 0;
    const vaulted = harness({ accountSecrets: async (endpoint) => (reads++, assert.equal(endpoint.id, ENDPOINT.id), (vault, name) => book[`${vault}\u0000${name}`]) });
    const policy = JSON.stringify({
      on_http_request: [
        { actions: [{ type: 'set-vars', config: { vars: [{ vault: "${req.headers['x-vault'][0]}" }] } }] },
        { expressions: ["secrets.get(vars.vault, req.url.path.substring(1)) == 'hunter2'"], actions: [{ type: 'add-headers', config: { headers: { 'x-key': "${secrets.get(vars.vault, 'api' + '_key')}" } } }] },
      ],
      on_http_response: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-staging': "${secrets.get(['staging'][0], 'api_key')}" } } }] }],
    });
    const flow = vaulted.engine.http(policyOf(vaulted, policy), ENDPOINT, CONN, requestFacts({ url: 'https://app.example/api_key', headers: [['Host', 'app.example'], ['X-Vault', 'prod']] }));
    const request = await flow.request();
    assert.equal(request.terminal, undefined);
    assert.deepEqual(request.request.headers.at(-1), ['x-key', 'hunter2']);
    const response = await flow.response({ status: 200, headers: [] });
    assert.deepEqual(response.response.headers, [['x-staging', 'test-key']]);
    assert.equal(reads, 1, 'one read for the request, both phases');

    const missing = await onRequest(vaulted, policy, { url: 'https://app.example/api_key', headers: [['Host', 'app.example'], ['X-Vault', 'nope']] });
    assert.equal(reads, 2);
    assert.equal(missing.terminal?.kind === 'error' && missing.terminal.error.status, 501);
    assert.match(JSON.stringify(missing.terminal), /secrets\.get\(\\"nope\\", \\"api_key\\"\) is not available: the account has no such vault or secret/);
    const unread = harness({ accountSecrets: async () => { throw new Error('the account holds more than 500 secrets (limit policy_secrets_read)'); } });
    assert.match(JSON.stringify((await onRequest(unread, policy, { headers: [['Host', 'app.example'], ['X-Vault', 'prod']] })).terminal), /"status":501.*is not available: the vaults could not be read: the account holds more than 500 secrets/);
  });

  test('list.sortBy(e, key): the players by score, then their names; keys of mixed types fail, as documented', async () => {
    const players = "[{'name': 'foo', 'score': 0}, {'name': 'bar', 'score': -10}, {'name': 'baz', 'score': 1000}]";
    assert.equal(await interpolate(h, `${players}.sortBy(e, e.score).map(e, e.name)`), '["bar","foo","baz"]');
    assert.equal(await interpolate(h, "req.url.query_params.map(k, k).sortBy(k, k.size()).join(',')", { url: 'https://a.example/?ccc=1&a=2&bb=3' }), 'a,bb,ccc');
    await assert.rejects(interpolate(h, "[1, 'a'].sortBy(x, x)"), /sortBy: the keys must be of one comparable type/);
  });

  test("duration('1.234s').getMilliseconds() is 234 (the milliseconds portion); a timestamp's stays its milliseconds", async () => {
    assert.equal(await interpolate(h, "duration('1.234s').getMilliseconds()"), '234');
    assert.equal(await interpolate(h, "timestamp('2023-12-25T12:00:00.500Z').getMilliseconds()"), '500');
  });
});

describe('req.trailers and res.trailers: the reference examples', () => {
  /** A body the host has read to its end, with the trailers that followed it. */
  const withTrailers = (text: string, trailers: [string, string][]) => ({ ...body(text), trailers: () => trailers });

  test("'Fizz' in req.trailers['baz']: the trailers after the request body, names lower-cased; the engine reads the body first", async () => {
    const policy = JSON.stringify({ on_http_request: [{ expressions: ["'Fizz' in req.trailers['baz']"], actions: [{ type: 'custom-response', config: { body: '${req.trailers}' } }] }] });
    const outcome = await onRequest(h, policy, { method: 'POST', body: withTrailers('a=1', [['Baz', 'Fizz'], ['Baz', 'Buzz'], ['X-Checksum', 'abc']]) });
    assert.equal(outcome.terminal?.kind === 'respond' && outcome.terminal.response.body, '{"baz":["Fizz","Buzz"],"x-checksum":["abc"]}');
    // Without trailers the map is empty: the example's lookup fails as a missing header's does (No such key).
    const none = JSON.stringify({ on_http_request: [{ expressions: ['req.trailers.size() == 0'], actions: [{ type: 'deny' }] }] });
    assert.equal((await onRequest(h, none, { method: 'POST', body: withTrailers('a=1', []) })).terminal?.kind, 'respond', 'a body without trailers');
    assert.equal((await onRequest(h, none)).terminal?.kind, 'respond', 'no body: no trailers');
    const compiled = policyOf(h, policy);
    assert.deepEqual([compiled.readsTrailers, h.engine.http(compiled, ENDPOINT, CONN, requestFacts()).readsTrailers], [{ request: true, response: false }, { request: true, response: false }]);
    assert.deepEqual(policyOf(h, 'on_http_request: [{actions: [{type: deny}]}]').readsTrailers, { request: false, response: false });
  });

  test("'fizz' in res.trailers['baz']: the trailers the host read after the response body; without them, 501 naming why", async () => {
    const policy = JSON.stringify({ on_http_response: [{ expressions: ["'fizz' in res.trailers['baz']"], actions: [{ type: 'add-headers', config: { headers: { 'x-trailed': '${res.trailers.baz.join(",")}' } } }] }] });
    assert.deepEqual(policyOf(h, policy).readsTrailers, { request: false, response: true });
    const { response } = await exchange(h, policy, { status: 200, headers: [], trailers: [['Baz', 'fizz'], ['baz', 'buzz']] });
    assert.deepEqual(response.response.headers, [['x-trailed', 'fizz,buzz']]);
    const unread = await exchange(h, policy, { status: 200, headers: [] });
    assert.equal(unread.response.terminal?.kind === 'error' && unread.response.terminal.error.status, 501);
    assert.match(JSON.stringify(unread.response.terminal), /res\.trailers is not available: the host did not read the response body to its end/);
  });

  test('a request body past policy_inspected_body_bytes: its trailers are unknown, and reading them answers 501', async () => {
    const policy = JSON.stringify({ on_http_request: [{ expressions: ["has(req.trailers.baz)"], actions: [{ type: 'deny' }] }] });
    const outcome = await onRequest(h, policy, { method: 'POST', body: withTrailers('x'.repeat(1024 * 1024 + 1), [['baz', 'fizz']]) });
    assert.match(JSON.stringify(outcome.terminal), /"status":501.*req\.trailers is not available: the request body was not read to its end \(longer than 1048576 bytes/);
  });
});

describe('http-request: the reference examples against a service on this machine', () => {
  /** A local service: /post echoes method, headers and body as JSON; /hop redirects to /post. */
  async function service(t: import('node:test').TestContext) {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url === '/hop') return void res.writeHead(302, { location: '/post' }).end();
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'x-served': 'local' }).end(JSON.stringify({ method: req.method, url: req.url, custom: req.headers['x-custom-header'], body })));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => server.close());
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  const local = harness({ httpRequest: policyHttpRequest });
  const answer = (outcome: Awaited<ReturnType<typeof onRequest>>) => (outcome.terminal?.kind === 'respond' ? outcome.terminal.response : outcome.terminal);

  test('POST with body and headers (2-post-with-body): the service gets them; actions.ngrok.http_request.res has its answer for the next action', async (t) => {
    const base = await service(t);
    const policy = JSON.stringify({
      on_http_request: [
        { name: 'PostWithBody', actions: [{ type: 'http-request', config: { url: `${base}/post`, method: 'POST', headers: { 'content-type': 'application/json', 'x-custom-header': 'abc123' }, body: '{ "user": "${req.headers[\'x-user-id\'][0]}" }', query_params: [{ key: 'q', value: '${req.method}' }] } }] },
        { actions: [{ type: 'custom-response', config: { body: '${actions.ngrok.http_request.res.status_code} ${actions.ngrok.http_request.res.header[\'x-served\'][0]} ${actions.ngrok.http_request.res.body}' } }] },
      ],
    });
    const outcome = await onRequest(local, policy, { headers: [['Host', 'app.example'], ['X-User-Id', 'u7']] });
    assert.equal((answer(outcome) as { body: string }).body, `200 local ${JSON.stringify({ method: 'POST', url: '/post?q=GET', custom: 'abc123', body: '{ "user": "u7" }' })}`);
  });

  test('redirects: not followed by default (max_redirects 0), so the request fails and goes on (on_error continue); followed with max_redirects; halt answers 502', async (t) => {
    const base = await service(t);
    const report = { type: 'custom-response', config: { body: '[${actions.ngrok.http_request.error.message}] ${actions.ngrok.http_request.res.status_code}' } };
    const unfollowed = await onRequest(local, JSON.stringify({ on_http_request: [{ actions: [{ type: 'http-request', config: { url: `${base}/hop` } }, report] }] }));
    assert.equal((answer(unfollowed) as { body: string }).body, '[redirected more than 0 times (max_redirects)] 0');
    const followed = await onRequest(local, JSON.stringify({ on_http_request: [{ actions: [{ type: 'http-request', config: { url: `${base}/hop`, max_redirects: 1 } }, report] }] }));
    assert.equal((answer(followed) as { body: string }).body, '[] 200');
    const halted = await onRequest(local, JSON.stringify({ on_http_request: [{ actions: [{ type: 'http-request', config: { url: 'https://upstream-service.internal/ping', on_error: 'halt' } }, report] }] }));
    assert.equal(halted.terminal?.kind, 'error');
    assert.match(JSON.stringify(halted.terminal), /"status":502.*upstream-service\.internal\/ping failed: .*internal endpoints \(\*\.internal\) are reached only from the ingress/);
  });

  /** A service that answers 500 to its first `failures` requests, then 200 with the count. */
  async function flaky(t: import('node:test').TestContext, failures: number) {
    let seen = 0;
    const server = createServer((_req, res) => (++seen <= failures ? res.writeHead(500).end('down') : res.end(`up after ${seen}`)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => server.close());
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen: () => seen };
  }
  const report = { type: 'custom-response', config: { body: '${actions.ngrok.http_request.res.status_code} ${actions.ngrok.http_request.attempts.size()} ${actions.ngrok.http_request.res.body}' } };
  const retrying = (url: string, condition?: string) => JSON.stringify({ on_http_request: [{ actions: [{ type: 'http-request', config: { url, ...(condition === undefined ? {} : { retry_condition: condition }) } }, report] }] });

  test('retry_condition (the reference\'s example, last_attempt.res.statusCode == 500): a 500 is retried until it passes; without one, or when it is false, no retry', async (t) => {
    const twice = await flaky(t, 2);
    assert.equal((answer(await onRequest(local, retrying(twice.url, 'last_attempt.res.statusCode == 500'))) as { body: string }).body, '200 3 up after 3');
    const once_ = await flaky(t, 1);
    assert.equal((answer(await onRequest(local, retrying(once_.url))) as { body: string }).body, '500 1 down', 'the default is false');
    assert.equal((answer(await onRequest(local, retrying(once_.url, 'last_attempt.res.status_code == 503'))) as { body: string }).body, '200 1 up after 2', 'false for the 500: no retry; the next request passes');
  });

  test('retried at most 3 times ("up to 3 times"); attempts counts them; a success is not retried', async (t) => {
    const down = await flaky(t, 100);
    assert.equal((answer(await onRequest(local, retrying(down.url, 'true'))) as { body: string }).body, '500 4 down');
    assert.equal(down.seen(), 4);
    const counted = await flaky(t, 100);
    assert.equal((answer(await onRequest(local, retrying(counted.url, 'attempts < 2'))) as { body: string }).body, '500 2 down');
    const up = await flaky(t, 0);
    assert.equal((answer(await onRequest(local, retrying(up.url, 'true'))) as { body: string }).body, '200 1 up after 1');
  });

  test("last_attempt.error holds a failed attempt's error, and last_attempt.req the request; a retry_condition is checked on write", async (t) => {
    const closed = createServer((req) => req.socket.destroy());
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    t.after(() => closed.close());
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/gone`;
    const policy = JSON.stringify({ on_http_request: [{ actions: [
      { type: 'http-request', config: { url, retry_condition: "last_attempt.error != '' && last_attempt.req.url.endsWith('/gone') && attempts < 3" } },
      { type: 'custom-response', config: { body: '${actions.ngrok.http_request.res.status_code} [${actions.ngrok.http_request.error.code}]' } },
    ] }] });
    const outcome = await onRequest(local, policy);
    assert.equal((answer(outcome) as { body: string }).body, '0 [request_failed]');
    assert.match(outcome.rules[0]!.actions[0]!.note!, /failed: .* \(3 attempts\)$/);
    for (const [condition, problem] of [['attempts', /config\.retry_condition: must be a condition \(a bool\), not int/], ['nope == 1', /config\.retry_condition: Unknown variable: nope at column 1/], ['attempts == "1"', /no such overload/]] as const) {
      const compiled = local.engine.compile([{ source: 'traffic_policy', rules: { on_http_request: [{ actions: [{ type: 'http-request', config: { url, retry_condition: condition } }] }] } }]);
      assert.match(compiled.issues.map((issue) => issue.message).join('\n'), problem, condition);
    }
  });

  test('reaches any address this machine reaches, not only loopback; res.resolved_ip is the address called', async (t) => {
    const external = Object.values(networkInterfaces()).flat().find((address) => address && address.family === 'IPv4' && !address.internal);
    if (!external) return t.skip('!!! this machine has no non-loopback IPv4 address to call');
    const server = createServer((_req, res) => res.end('reached'));
    server.listen(0, external.address);
    await once(server, 'listening');
    t.after(() => server.close());
    const url = `http://${external.address}:${(server.address() as AddressInfo).port}/`;
    const outcome = await onRequest(local, JSON.stringify({ on_http_request: [{ actions: [{ type: 'http-request', config: { url, on_error: 'halt' } }, { type: 'custom-response', config: { body: '${actions.ngrok.http_request.res.body} ${actions.ngrok.http_request.res.resolved_ip}' } }] }] }));
    assert.equal((answer(outcome) as { body: string }).body, `reached ${external.address}`);
  });
});
