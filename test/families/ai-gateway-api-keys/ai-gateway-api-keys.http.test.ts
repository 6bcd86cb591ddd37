import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { beforeEach, describe, test } from 'node:test';
import { GO_CLIENT_HEADERS, PYTHON_CLIENT_HEADERS } from '../../fixtures/client-dialects.ts';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
let endpoint: string;
beforeEach(async () => {
  api = await createTestInstance();
  endpoint = (await api.request('POST', '/endpoints', { url: 'https://llm.internal', type: 'cloud', traffic_policy: '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}' })).body.id;
});

/** As the Go client v8 sends: `omitempty` drops zero strings; an update carries the id. */
const asGo = (method: string, path: string, body?: unknown) => api.request(method, path, body, { headers: GO_CLIENT_HEADERS });
/** As the vendor's generated Python client sends: every keyword, `""` by default, None dropped. */
const asPython = (method: string, path: string, body?: unknown) => api.request(method, path, body, { headers: PYTHON_CLIENT_HEADERS });

describe('/ai_gateway_api_keys', () => {
  test('create answers the token once, scoped to its endpoint, with Refs to who made it', async () => {
    const res = await asGo('POST', '/ai_gateway_api_keys', { description: 'chat bot', metadata: '{"team":"ml"}', endpoint_id: endpoint });
    assert.equal(res.status, 201, res.text);
    const { id, token } = res.body;
    assert.match(id, /^aigk_[0-9A-Za-z]{27}$/);
    assert.match(token, /^ng_[0-9A-Za-z]{27}_[0-9A-Za-z]+$/);
    const user = { id: api.userId, uri: `http://burrow.test/users/${api.userId}` };
    assert.deepEqual(res.body, {
      id,
      uri: `http://burrow.test/ai_gateway_api_keys/${id}`,
      created_at: '2026-03-01T12:00:00Z',
      updated_at: '2026-03-01T12:00:00Z',
      description: 'chat bot',
      metadata: '{"team":"ml"}',
      created_by: user,
      last_updated_by: user,
      endpoint: { id: endpoint, uri: `http://burrow.test/endpoints/${endpoint}` },
      token,
      display_name: `ng_…${token.slice(-4)}`,
      last_used: null,
    });
    assert.deepEqual((await asGo('GET', `/ai_gateway_api_keys/${id}`)).body, { ...res.body, token: '' });
    const exported = JSON.stringify((await api.request('GET', '/_burrow/snapshot', undefined, { token: OPERATOR_TOKEN })).body);
    assert.ok(!exported.includes(token), 'the token is not stored');
    assert.ok(exported.includes(createHash('sha256').update(token).digest('hex')), 'its hash is');
  });

  test("endpoint_id is required (27006) and must be one of the account's endpoints (27002)", async () => {
    assertError(await asGo('POST', '/ai_gateway_api_keys', {}), 400, 27006, /^endpoint_id: is required/);
    assertError(await asPython('POST', '/ai_gateway_api_keys', { description: '', metadata: '', endpoint_id: '' }), 400, 27006, /^endpoint_id: is required/);
    assertError(await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: 'ep_2ft0OJTh21NetHp1AlCMJNAcsEo' }), 404, 27002, /^endpoint_id: the specified endpoint, 'ep_2ft0OJTh21NetHp1AlCMJNAcsEo', was not found/);
    const other = await api.burrow.createAccount();
    assertError(await api.request('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint }, { token: other.token }), 404, 27002, /was not found in this account/);
    assertError(await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: 7 }), 400, 215, /^endpoint_id:/);
    assertError(await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint, owner_id: api.userId }), 400, 214, /^owner_id: unknown field; supported fields: description, metadata, endpoint_id/);
  });

  test('description over 255 bytes is 27004, metadata over 4096 is 27005', async () => {
    assertError(await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint, description: 'd'.repeat(256) }), 400, 27004, /^description: must be at most 255 bytes \(got 256\)/);
    assertError(await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint, metadata: 'm'.repeat(4097) }), 400, 27005, /^metadata: must be at most 4096 bytes \(got 4097\)/);
    const key = (await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint })).body;
    assertError(await asGo('PATCH', `/ai_gateway_api_keys/${key.id}`, { id: key.id, description: 'é'.repeat(128) }), 400, 27004, /got 256/);
  });

  test('the Python body with its zero defaults makes a key with empty description and metadata', async () => {
    const res = await asPython('POST', '/ai_gateway_api_keys', { description: '', metadata: '', endpoint_id: endpoint });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual([res.body.description, res.body.metadata], ['', '']);
  });

  test('update changes only what is sent, moves the key to another endpoint and stamps updated_at and last_updated_by', async () => {
    const key = (await asGo('POST', '/ai_gateway_api_keys', { description: 'first', endpoint_id: endpoint })).body;
    const bot = (await api.request('POST', '/bot_users', { name: 'rotator' })).body;
    const botKey = (await api.request('POST', '/api_keys', { owner_id: bot.id })).body.token;
    await api.request('POST', '/_burrow/clock', { advance_seconds: 90 }, { token: OPERATOR_TOKEN });
    const second = (await api.request('POST', '/endpoints', { url: 'https://llm2.internal', type: 'cloud', traffic_policy: '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}' })).body.id;
    const moved = await api.request('PATCH', `/ai_gateway_api_keys/${key.id}`, { id: key.id, endpoint_id: second }, { token: botKey, headers: GO_CLIENT_HEADERS });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.description, 'first');
    assert.equal(moved.body.endpoint.id, second);
    assert.equal(moved.body.updated_at, '2026-03-01T12:01:30Z');
    assert.equal(moved.body.created_by.id, api.userId);
    assert.deepEqual(moved.body.last_updated_by, { id: bot.id, uri: `http://burrow.test/bot_users/${bot.id}` });
    assert.equal(moved.body.token, '');
    assertError(await asGo('PATCH', `/ai_gateway_api_keys/${key.id}`, { endpoint_id: '' }), 400, 27006, /^endpoint_id: is required/);
    assertError(await asGo('PATCH', `/ai_gateway_api_keys/${key.id}`, { endpoint_id: 'ep_gone' }), 404, 27002, /'ep_gone'/);
    const python = await asPython('PATCH', `/ai_gateway_api_keys/${key.id}`, { id: key.id, metadata: 'm' });
    assert.deepEqual([python.body.metadata, python.body.endpoint.id], ['m', second]);
  });

  test('list pages newest first under ai_gateway_api_keys; unknown ids are 27509; delete', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint })).body.id);
    const page = await asGo('GET', '/ai_gateway_api_keys?limit=2');
    assert.deepEqual(page.body.ai_gateway_api_keys.map((key: any) => key.id), [ids[2], ids[1]]);
    assert.ok(page.body.ai_gateway_api_keys.every((key: any) => key.token === ''));
    assert.equal(page.body.next_page_uri, `http://burrow.test/ai_gateway_api_keys?limit=2&before_id=${ids[1]}`);
    assertError(await asGo('GET', '/ai_gateway_api_keys?filter=true'), 400, 231, /filter/);
    assert.equal((await asGo('DELETE', `/ai_gateway_api_keys/${ids[0]}`)).status, 204);
    assertError(await asGo('GET', `/ai_gateway_api_keys/${ids[0]}`), 404, 27509, /^AI gateway API key 'aigk_\w+' was not found/);
    const other = await api.burrow.createAccount();
    assertError(await api.request('GET', `/ai_gateway_api_keys/${ids[1]}`, undefined, { token: other.token }), 404, 27509, /was not found/);
  });

  test('a key keeps its endpoint Ref when the endpoint is deleted', async () => {
    const key = (await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint })).body;
    assert.equal((await api.request('DELETE', `/endpoints/${endpoint}`)).status, 204);
    assert.equal((await asGo('GET', `/ai_gateway_api_keys/${key.id}`)).body.endpoint.id, endpoint);
  });

  test('the token is not an API key: it does not authenticate', async () => {
    const { token } = (await asGo('POST', '/ai_gateway_api_keys', { endpoint_id: endpoint })).body;
    assert.equal((await api.request('GET', '/api_keys', undefined, { token })).status, 401);
  });

  test('through the typed in-process client', async () => {
    const keys = api.burrow.client(api.token, 'http://burrow.test').resource('ai_gateway_api_keys');
    const key = await keys.create({ endpoint_id: endpoint, description: 'typed' });
    assert.match(key.token, /^ng_/);
    assert.equal((await keys.update(key.id, { metadata: 'x' })).metadata, 'x');
    assert.equal((await keys.list()).ai_gateway_api_keys[0].id, key.id);
    await keys.delete(key.id);
    await assert.rejects(keys.get(key.id), (error: any) => error.status === 404 && error.code === 27509);
  });
});
