import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { exchange, harness, interpolate, onRequest } from './helpers.ts';

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
