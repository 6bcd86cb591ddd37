import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, BASE, createTestInstance, type TestInstance } from '../../helpers.ts';
import { GO_CLIENT_HEADERS as GO, PYTHON_CLIENT_HEADERS as PYTHON } from '../../fixtures/client-dialects.ts';

/**
 * Cloud endpoints as the vendor's newer typed clients send them, byte for byte (0.13–0.17 line).
 * Python (ngrok-api-python, services.py `EndpointsClient`): create sends url, type, traffic_policy
 * and `pooling_enabled: false` (its keyword default) and drops the None-defaulted description,
 * metadata and bindings; update sends `pooling_enabled: false` on every call; list sends `id`/`url`
 * as repeated query parameters (requests' encoding of a list) and follows `next_page_uri`. Go
 * (ngrok-api-go, datatypes.go `EndpointCreate`/`EndpointUpdate`, all `omitempty`): never sends a
 * zero field, strips the id from PATCH bodies, and pages by fetching `next_page_uri` verbatim.
 */

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
  assert.equal((await api.request('POST', '/reserved_domains', { domain: '*.example.com' })).status, 201);
});

const POLICY_YAML = 'on_http_request:\n  - actions:\n      - type: custom-response\n        config:\n          status_code: 200\n';

const send = (headers: Record<string, string | null>, method: string, path: string, body?: unknown) => api.request(method, path, body, { headers });

describe('Python client: endpoints.create / update / list / delete', () => {
  test('create(url, type, traffic_policy): the default pooling_enabled=False is sent and means off', async () => {
    const res = await send(PYTHON, 'POST', '/endpoints', { url: 'https://py.example.com', type: 'cloud', traffic_policy: POLICY_YAML, pooling_enabled: false });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.type, 'cloud');
    assert.equal(res.body.pooling_enabled, false);
    assert.equal(res.body.description, '');
    assert.deepEqual(res.body.bindings, ['public']);
    for (const key of ['id', 'region', 'created_at', 'updated_at', 'public_url', 'proto', 'scheme', 'hostport', 'host', 'port', 'type', 'metadata', 'description', 'domain', 'tcp_addr', 'tunnel', 'edge', 'upstream_url', 'upstream_protocol', 'url', 'principal', 'traffic_policy', 'bindings', 'tunnel_session', 'uri', 'name', 'pooling_enabled']) {
      assert.ok(key in res.body, `the Python client reads ${key} with []`);
    }
  });

  test('create with description, metadata, bindings and pooling', async () => {
    const res = await send(PYTHON, 'POST', '/endpoints', { url: 'tcp://db.internal:5432', type: 'cloud', traffic_policy: '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}', description: 'db', metadata: 'm', bindings: ['internal'], pooling_enabled: true });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual([res.body.url, res.body.bindings, res.body.pooling_enabled, res.body.description, res.body.metadata], ['tcp://db.internal:5432', ['internal'], true, 'db', 'm']);
  });

  test('update(id, description=…) leaves pooling as it was; url and traffic_policy change when given', async () => {
    const made = (await send(PYTHON, 'POST', '/endpoints', { url: 'https://pool.example.com', type: 'cloud', traffic_policy: POLICY_YAML, pooling_enabled: true })).body;
    const res = await send(PYTHON, 'PATCH', `/endpoints/${made.id}`, { description: 'renamed', pooling_enabled: false });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.description, 'renamed');
    assert.equal(res.body.pooling_enabled, true);
    const moved = await send(PYTHON, 'PATCH', `/endpoints/${made.id}`, { url: 'https://pool2.example.com', traffic_policy: '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}', pooling_enabled: false });
    assert.deepEqual([moved.body.url, moved.body.traffic_policy], ['https://pool2.example.com', '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}']);
  });

  test('list(id=[…]) and list(url=[…]) as repeated parameters, paged through next_page_uri', async () => {
    const made: string[] = [];
    for (const name of ['a', 'b', 'c']) made.push((await send(PYTHON, 'POST', '/endpoints', { url: `https://${name}.example.com`, type: 'cloud', traffic_policy: POLICY_YAML, pooling_enabled: false })).body.id);
    const first = await send(PYTHON, 'GET', `/endpoints?limit=2&id=${made[0]}&id=${made[1]}&id=${made[2]}`);
    assert.deepEqual(first.body.endpoints.map((e: any) => e.id), [made[2], made[1]]);
    const second = await send(PYTHON, 'GET', first.body.next_page_uri.slice(BASE.length));
    assert.deepEqual(second.body.endpoints.map((e: any) => e.id), [made[0]]);
    assert.equal(second.body.next_page_uri, null);
    const byUrl = await send(PYTHON, 'GET', `/endpoints?url=${encodeURIComponent('https://b.example.com')}&url=${encodeURIComponent('https://c.example.com')}`);
    assert.deepEqual(byUrl.body.endpoints.map((e: any) => e.id), [made[2], made[1]]);
  });

  test('delete(id) sends no body and gets an empty 204', async () => {
    const made = (await send(PYTHON, 'POST', '/endpoints', { url: 'https://del.example.com', type: 'cloud', traffic_policy: POLICY_YAML, pooling_enabled: false })).body;
    const res = await send(PYTHON, 'DELETE', `/endpoints/${made.id}`);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
  });
});

describe('Go client: Endpoints.Create / Update', () => {
  test('Create with only the fields set (omitempty): type may be left out and defaults to cloud', async () => {
    const res = await send(GO, 'POST', '/endpoints', { url: 'https://go.example.com', traffic_policy: POLICY_YAML });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.type, 'cloud');
    const typed = await send(GO, 'POST', '/endpoints', { url: 'https://go2.example.com', type: 'cloud', traffic_policy: POLICY_YAML, bindings: ['public'], pooling_enabled: true });
    assert.equal(typed.status, 201, typed.text);
  });

  test('Update strips the id and sends only what was set; an explicit PoolingEnabled false is read as not given', async () => {
    const made = (await send(GO, 'POST', '/endpoints', { url: 'https://go3.example.com', traffic_policy: POLICY_YAML, pooling_enabled: true })).body;
    const res = await send(GO, 'PATCH', `/endpoints/${made.id}`, { description: 'from go', bindings: ['public'], pooling_enabled: false });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.description, res.body.pooling_enabled], ['from go', true]);
  });

  test('the vendor error envelope that Go and Python parse', async () => {
    const res = await send(GO, 'POST', '/endpoints', { url: 'https://go.example.com/x', traffic_policy: POLICY_YAML });
    assertError(res, 400, 18001, /^url: must be scheme:\/\/host\[:port\]/);
    assert.match(res.body.details.operation_id, /^op_/);
  });
});
