import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { routeEdgeTraffic, type UpstreamChoice } from '../../../lib/index.ts';
import { createTestInstance, type TestInstance } from '../../helpers.ts';

/**
 * Where traffic to an edge goes (lib/families/edges/traffic.ts), over edges made through the API:
 * the edge of a hostport in any account, the route of a path, the modules that apply and the
 * backend's upstream.
 */

let api: TestInstance;

beforeEach(async () => {
  api = await createTestInstance();
});

async function ok(method: string, path: string, body?: unknown, token?: string): Promise<any> {
  const res = await api.request(method, path, body, token ? { token } : {});
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

const NOTHING_ONLINE: UpstreamChoice = { isOnline: () => false, random: () => 0 };
const route = (hostport: string, path = '/') => routeEdgeTraffic(api.burrow.reader, hostport, path, NOTHING_ONLINE);
const bodyOf = (traffic: Awaited<ReturnType<typeof route>>) => (traffic?.upstream as { body?: string } | undefined)?.body;

describe('routeEdgeTraffic', () => {
  test('finds the edge of a hostport in whichever account holds it; nothing for a hostport no edge holds', async () => {
    const other = await api.burrow.createAccount({ name: 'other' });
    const backend = await ok('POST', '/backends/http_response', { body: 'tcp answer' }, other.token);
    const edge = await ok('POST', '/edges/tcp', { hostports: ['1.tcp.example.com:20001'], backend: { backend_id: backend.id } }, other.token);
    const traffic = await route('1.tcp.example.com:20001');
    assert.equal(traffic?.account, other.accountId);
    assert.equal(traffic?.edgeId, edge.id);
    assert.equal(traffic?.holder, 'tcp_edge');
    assert.equal(traffic?.routeId, undefined);
    assert.deepEqual(traffic?.modules.map((m) => [m.holder, m.id]), [['tcp_edge', edge.id]]);
    assert.equal(bodyOf(traffic), 'tcp answer');
    assert.equal(await route('1.tcp.example.com:20002'), undefined);
    await ok('DELETE', `/edges/tcp/${edge.id}`, undefined, other.token);
    assert.equal(await route('1.tcp.example.com:20001'), undefined);
  });

  test("an HTTPS edge's route by path: exact_path, else the longest path_prefix; its modules after the edge's", async () => {
    const edge = await ok('POST', '/edges/https', { hostports: ['shop.example.com:443'] });
    const routeFor = async (match_type: string, match: string) => {
      const backend = await ok('POST', '/backends/http_response', { body: `${match_type} ${match}` });
      return (await ok('POST', `/edges/https/${edge.id}/routes`, { match_type, match, backend: { backend_id: backend.id } })).id as string;
    };
    const root = await routeFor('path_prefix', '/');
    await routeFor('path_prefix', '/api');
    await routeFor('exact_path', '/api');
    const selected = await route('shop.example.com:443', '/anything');
    assert.equal(selected?.routeId, root);
    assert.deepEqual(selected?.modules.map((m) => [m.holder, m.id]), [['https_edge', edge.id], ['https_route', root]]);
    assert.equal(bodyOf(await route('shop.example.com:443', '/api')), 'exact_path /api');
    assert.equal(bodyOf(await route('shop.example.com:443', '/api/x')), 'path_prefix /api');
    assert.equal(bodyOf(await route('shop.example.com:443', '/apix')), 'path_prefix /api');
    assert.equal(bodyOf(await route('shop.example.com:443', '/')), 'path_prefix /');
  });

  test('no route, a route without a backend, and a disabled backend module are offline, naming why', async () => {
    const edge = await ok('POST', '/edges/https', { hostports: ['shop.example.com:443'] });
    assert.deepEqual((await route('shop.example.com:443', '/a'))?.upstream, { kind: 'offline', reason: `no route of HTTPS edge '${edge.id}' selects the path /a` });
    const bare = await ok('POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/' });
    assert.deepEqual((await route('shop.example.com:443', '/a'))?.upstream, { kind: 'offline', reason: `route '${bare.id}' of HTTPS edge '${edge.id}' has no backend` });
    const backend = await ok('POST', '/backends/http_response', { body: 'on' });
    await ok('PUT', `/edges/https/${edge.id}/routes/${bare.id}/backend`, { enabled: false, backend_id: backend.id });
    assert.equal((await route('shop.example.com:443', '/a'))?.upstream.kind, 'offline');
    await ok('PUT', `/edges/https/${edge.id}/routes/${bare.id}/backend`, { enabled: true, backend_id: backend.id });
    assert.equal(bodyOf(await route('shop.example.com:443', '/a')), 'on');
  });
});
