import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { LIMITS } from '../../../lib/limits.ts';
import { re2PolicyOfCost, yamlKeyLines } from '../../fixtures/bounded-inputs.ts';
import { assertError, createTestInstance, type TestInstance } from '../../helpers.ts';

/**
 * The traffic_policy module of the vendor's newer API (clients 0.12–0.17), spoken as those clients
 * speak it over HTTP: the Python client (ngrok-api-python services.py) sends its keyword defaults
 * (`description: ""`, `metadata: ""`, route updates also `match_type: ""`, `match: ""`) and drops
 * None; the Go client (ngrok-api-go) PUTs the bare module and omits an empty `value` and a nil
 * `enabled`. Both send `ngrok-version: 2`.
 */

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const NEWER_CLIENT = { 'Service-Version': null, 'ngrok-version': '2' };
const send = (method: string, path: string, body?: unknown) => api.request(method, path, body, { headers: NEWER_CLIENT });

async function ok(method: string, path: string, body?: unknown): Promise<any> {
  const res = await send(method, path, body);
  assert.equal(res.status, method === 'POST' ? 201 : 200, `${method} ${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A connection-phase policy (TCP and TLS edges), as JSON. */
const CONNECT_POLICY = JSON.stringify({ on_tcp_connect: [{ name: 'office only', actions: [{ type: 'restrict-ips', config: { allow: ['203.0.113.0/24'] } }] }] });

/** A request-phase policy (routes), as YAML with a comment, answered byte for byte. */
const REQUEST_POLICY = `# keep bots out
on_http_request:
  - name: bots
    expressions:
      - "req.headers['user-agent'].exists(h, h.contains('bot'))"
    actions:
      - type: custom-response
        config:
          status_code: 403
          content: no bots
on_http_response:
  - actions:
      - type: add-headers
        config:
          headers:
            x-served-by: burrow
`;

const OLD_POLICY = { inbound: [{ name: 'deny all', expressions: [], actions: [{ type: 'deny', config: null }] }], outbound: [] };

async function route(body: Record<string, unknown> = {}) {
  const edge = await ok('POST', '/edges/https', { description: '', metadata: '' });
  const created = await ok('POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/', description: '', metadata: '', ...body });
  return { edge, route: created, path: `/edges/https/${edge.id}/routes/${created.id}` };
}

describe('traffic_policy in edge and route bodies', () => {
  test('edges_tcp.create(…, traffic_policy=…) (Python): stored, echoed as given, policy null', async () => {
    const edge = await ok('POST', '/edges/tcp', { description: '', metadata: '', traffic_policy: { enabled: true, value: CONNECT_POLICY } });
    assert.deepEqual(edge.traffic_policy, { enabled: true, value: CONNECT_POLICY });
    assert.equal(edge.policy, null);
    assert.deepEqual((await ok('GET', `/edges/tcp/${edge.id}`)).traffic_policy, { enabled: true, value: CONNECT_POLICY });
  });

  test('edges_tls.update (Go: only traffic_policy, enabled nil): enabled defaults to true', async () => {
    const edge = await ok('POST', '/edges/tls', {});
    assert.deepEqual([edge.policy, edge.traffic_policy], [null, null]);
    const updated = await ok('PATCH', `/edges/tls/${edge.id}`, { traffic_policy: { value: CONNECT_POLICY } });
    assert.deepEqual(updated.traffic_policy, { enabled: true, value: CONNECT_POLICY });
  });

  test('edges_https_routes.create and .update (Python, with its "" defaults); YAML echoed byte for byte', async () => {
    const { route: created, path } = await route({ traffic_policy: { enabled: false, value: REQUEST_POLICY } });
    assert.deepEqual(created.traffic_policy, { enabled: false, value: REQUEST_POLICY });
    assert.equal(created.policy, null);
    const updated = await ok('PATCH', path, { match_type: '', match: '', description: '', metadata: '', traffic_policy: { enabled: true, value: REQUEST_POLICY } });
    assert.deepEqual(updated.traffic_policy, { enabled: true, value: REQUEST_POLICY });
    assert.equal(updated.match, '/');
  });

  test('a bad value is a 400 naming traffic_policy.value and the path inside it, with the vendor\'s number where it has one', async () => {
    const edge = await ok('POST', '/edges/https', {});
    const value = JSON.stringify({ on_http_request: [{ actions: [{ type: 'deny' }, { type: 'x' }] }] });
    assertError(
      await send('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/', traffic_policy: { value } }),
      400,
      2201,
      /^traffic_policy\.value: on_http_request\[0\]\.actions\[1\]\.type: unknown action "x"$/,
    );
    assertError(await send('POST', '/edges/tcp', { traffic_policy: { value: 'on_http_request: []' } }), 400, 2230, /^traffic_policy\.value: on_http_request: not a phase of this traffic \(it has on_tcp_connect\)$/);
    assertError(await send('POST', '/edges/tls', { traffic_policy: { value: 'on_tcp_connect: [{actions: [{type: url-rewrite, config: {to: /}}]}]' } }), 400, 2202, /url-rewrite does not run in on_tcp_connect/);
    assertError(await send('POST', '/edges/tcp', { traffic_policy: { enabled: true } }), 400, 215, /^traffic_policy\.value: is required$/);
    assertError(await send('POST', '/edges/tcp', { traffic_policy: { value: '{' } }), 400, 215, /^traffic_policy\.value: is neither JSON nor YAML/);
    assertError(await send('POST', '/edges/tcp', { traffic_policy: { value: CONNECT_POLICY, type: 'yaml' } }), 400, 214, /^traffic_policy\.type: unknown field/);
  });

  test('HTTPS edges hold no traffic policy (their routes do), as in the vendor API', async () => {
    assertError(await send('POST', '/edges/https', { traffic_policy: { value: '{}' } }), 400, 214, /^traffic_policy: unknown field/);
    assert.equal((await send('PUT', `/edges/https/${(await ok('POST', '/edges/https', {})).id}/traffic_policy`, { value: '{}' })).status, 404);
  });

  test('a PATCH without traffic_policy leaves it; null is refused (DELETE removes modules)', async () => {
    const edge = await ok('POST', '/edges/tcp', { traffic_policy: { value: CONNECT_POLICY } });
    assert.deepEqual((await ok('PATCH', `/edges/tcp/${edge.id}`, { description: 'db' })).traffic_policy, { enabled: true, value: CONNECT_POLICY });
    assertError(await send('PATCH', `/edges/tcp/${edge.id}`, { traffic_policy: null }), 400, 215, /^traffic_policy: a module cannot be removed by an update; use DELETE .*\/traffic_policy$/);
  });
});

describe('the traffic_policy module endpoints', () => {
  test('TCPEdgeTrafficPolicyModule.Replace/Get/Delete (Go: the bare module)', async () => {
    const edge = await ok('POST', '/edges/tcp', {});
    const path = `/edges/tcp/${edge.id}/traffic_policy`;
    assert.deepEqual(await ok('PUT', path, { enabled: true, value: CONNECT_POLICY }), { enabled: true, value: CONNECT_POLICY });
    assert.deepEqual(await ok('GET', path), { enabled: true, value: CONNECT_POLICY });
    assert.deepEqual((await ok('GET', `/edges/tcp/${edge.id}`)).traffic_policy, { enabled: true, value: CONNECT_POLICY });
    assert.equal((await send('DELETE', path)).status, 204);
    assert.equal((await ok('GET', `/edges/tcp/${edge.id}`)).traffic_policy, null);
    assertError(await send('GET', path), 404, 9001, /traffic policy module of TCP edge .* was not found/);
  });

  test('the TypeScript client\'s { id, module } wrapper and the route\'s { edge_id, id, module }', async () => {
    const tls = await ok('POST', '/edges/tls', {});
    assert.deepEqual(await ok('PUT', `/edges/tls/${tls.id}/traffic_policy`, { id: tls.id, module: { value: CONNECT_POLICY } }), { enabled: true, value: CONNECT_POLICY });
    const { edge, route: r, path } = await route();
    assert.deepEqual(await ok('PUT', `${path}/traffic_policy`, { edge_id: edge.id, id: r.id, module: { enabled: false, value: REQUEST_POLICY } }), { enabled: false, value: REQUEST_POLICY });
  });

  test('a bad value in a module PUT names value and the path inside it', async () => {
    const { path } = await route();
    assertError(await send('PUT', `${path}/traffic_policy`, { value: 'on_http_request: [{actions: [{type: redirect, config: {from: "(?=a)", to: /}}]}]' }), 400, 2204, /^value: on_http_request\[0\]\.actions\[0\]\.config\.from: must be an RE2 regular expression/);
  });
});

describe('policy (0.11.0) and traffic_policy are one policy in two dialects', () => {
  test('setting traffic_policy unsets policy, and the other way round (module PUT)', async () => {
    const { path } = await route({ policy: OLD_POLICY });
    assert.deepEqual((await ok('GET', path)).policy, { enabled: true, ...OLD_POLICY });
    await ok('PUT', `${path}/traffic_policy`, { value: REQUEST_POLICY });
    let now = await ok('GET', path);
    assert.deepEqual([now.policy, now.traffic_policy], [null, { enabled: true, value: REQUEST_POLICY }]);
    await ok('PUT', `${path}/policy`, OLD_POLICY);
    now = await ok('GET', path);
    assert.deepEqual([now.policy, now.traffic_policy], [{ enabled: true, ...OLD_POLICY }, null]);
  });

  test('a PATCH that sends one unsets the other (edge PATCH)', async () => {
    const edge = await ok('POST', '/edges/tcp', { policy: OLD_POLICY });
    const updated = await ok('PATCH', `/edges/tcp/${edge.id}`, { traffic_policy: { value: CONNECT_POLICY } });
    assert.deepEqual([updated.policy, updated.traffic_policy], [null, { enabled: true, value: CONNECT_POLICY }]);
  });

  test('one body may not send both', async () => {
    assertError(await send('POST', '/edges/tcp', { policy: OLD_POLICY, traffic_policy: { value: CONNECT_POLICY } }), 400, 215, /^traffic_policy: send either policy .* or traffic_policy, not both/);
    const { path } = await route();
    assertError(await send('PATCH', path, { policy: OLD_POLICY, traffic_policy: { value: REQUEST_POLICY } }), 400, 215, /not both/);
  });

  test('deleting the unset one is a no-op that leaves the other', async () => {
    const edge = await ok('POST', '/edges/tcp', { traffic_policy: { value: CONNECT_POLICY } });
    assert.equal((await send('DELETE', `/edges/tcp/${edge.id}/policy`)).status, 204);
    assert.deepEqual((await ok('GET', `/edges/tcp/${edge.id}`)).traffic_policy, { enabled: true, value: CONNECT_POLICY });
  });
});

/**
 * The hostile policies (60,000 YAML keys; 60 rules of 3,300-character RE2 patterns; 3,000
 * rules of `x{1000}y{1000}`) on every path that takes a policy: each is a 400 naming its limit,
 * and nothing is stored.
 */
describe('bounded work on every path that takes a traffic policy', () => {
  const rewrites = (count: number, from: string) => JSON.stringify({ on_http_request: Array.from({ length: count }, () => ({ actions: [{ type: 'url-rewrite', config: { from, to: '/' } }] })) });
  const HOSTILE: [string, string, RegExp][] = [
    ['60,000 YAML keys (650 KB)', yamlKeyLines(60_000), /\(limit traffic_policy_yaml_bytes\)$/],
    ['6,000 YAML keys', yamlKeyLines(6_000), /\(limit traffic_policy_yaml_tokens\)$/],
    ['60 patterns of [a-z]{1000}×300', rewrites(60, '[a-z]{1000}'.repeat(300)), /\(limit re2_pattern_cost\)/],
    ['3,000 patterns of x{1000}y{1000}', rewrites(3000, 'x{1000}y{1000}'), /\(limit (traffic_policy_nodes|re2_total_cost)\)/],
    ['RE2 patterns one unit over the total', re2PolicyOfCost(LIMITS.re2_total_cost.value + 1, 'x{1000}'), /\(limit re2_total_cost\)/],
  ];

  test('POST and PATCH /endpoints: a 400 (18002) naming the limit; nothing stored or changed', async () => {
    for (const [what, policy, limit] of HOSTILE) {
      assertError(await send('POST', '/endpoints', { type: 'cloud', url: 'https://a.example.com', traffic_policy: policy }), 400, 18002, limit);
      assert.deepEqual((await ok('GET', '/endpoints')).endpoints, [], what);
    }
    await ok('POST', '/reserved_domains', { domain: 'a.example.com' });
    // A cloud endpoint's policy answers every request itself (ERR_NGROK_2235).
    const answering = `${REQUEST_POLICY.replace('on_http_response:', '  - actions: [{type: deny}]\non_http_response:')}`;
    const endpoint = await ok('POST', '/endpoints', { type: 'cloud', url: 'https://a.example.com', traffic_policy: answering });
    for (const [what, policy, limit] of HOSTILE) {
      assertError(await send('PATCH', `/endpoints/${endpoint.id}`, { traffic_policy: policy }), 400, 18002, limit);
      assert.equal((await ok('GET', `/endpoints/${endpoint.id}`)).traffic_policy, answering, what);
    }
  });

  test('the traffic_policy module PUTs of TCP edges and routes, and edge and route bodies', async () => {
    const tcp = await ok('POST', '/edges/tcp', {});
    const { path } = await route();
    for (const [what, policy, limit] of HOSTILE.slice(0, 2)) {
      assertError(await send('PUT', `/edges/tcp/${tcp.id}/traffic_policy`, { value: policy }), 400, 215, limit);
      assertError(await send('POST', '/edges/tcp', { traffic_policy: { value: policy } }), 400, 215, limit);
      assert.equal((await ok('GET', `/edges/tcp/${tcp.id}`)).traffic_policy, null, what);
    }
    for (const [what, policy, limit] of HOSTILE) {
      assertError(await send('PUT', `${path}/traffic_policy`, { value: policy }), 400, 215, new RegExp(`^value: .*${limit.source}`));
      assertError(await send('PATCH', path, { traffic_policy: { value: policy } }), 400, 215, new RegExp(`^traffic_policy\\.value: .*${limit.source}`));
      assert.equal((await ok('GET', path)).traffic_policy, null, what);
    }
  });
});
