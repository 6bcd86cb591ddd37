import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const asOperator = { token: OPERATOR_TOKEN };
const signIn = (body: unknown = {}) => api.request('POST', `/_burrow/accounts/${api.accountId}/application_users`, body, asOperator);
const openSession = (body: unknown) => api.request('POST', `/_burrow/accounts/${api.accountId}/application_sessions`, body, asOperator);

async function user(body: unknown = {}): Promise<string> {
  const res = await signIn(body);
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

describe('/app/users', () => {
  test('empty until the control plane signs someone in', async () => {
    assert.deepEqual((await api.request('GET', '/app/users')).body, { application_users: [], uri: 'http://burrow.test/app/users', next_page_uri: null });
    assert.deepEqual((await api.request('GET', '/app/sessions')).body, { application_sessions: [], uri: 'http://burrow.test/app/sessions', next_page_uri: null });
  });

  test('a user has the vendor shape, with the identity the test gave', async () => {
    const res = await signIn({ identity_provider: { name: 'GitHub', url: 'https://github.com' }, provider_user_id: '4242', username: 'octo', email: 'octo@example.com', name: 'Octo Cat' });
    assert.equal(res.status, 201);
    const expected = {
      id: res.body.id,
      uri: `http://burrow.test/app/users/${res.body.id}`,
      identity_provider: { name: 'GitHub', url: 'https://github.com' },
      provider_user_id: '4242',
      username: 'octo',
      email: 'octo@example.com',
      name: 'Octo Cat',
      created_at: '2026-03-01T12:00:00Z',
      last_active: '2026-03-01T12:00:00Z',
      last_login: '2026-03-01T12:00:00Z',
    };
    assert.match(res.body.id, /^apu_[0-9A-Za-z]{27}$/);
    assert.deepEqual(res.body, expected);
    assert.deepEqual((await api.request('GET', `/app/users/${res.body.id}`)).body, expected);
    assert.deepEqual((await api.request('GET', '/app/users')).body.application_users, [expected]);
  });

  test('one identity is one user: the same provider and provider_user_id again is a 409', async () => {
    const first = await user({ provider_user_id: 'same' });
    assertError(await signIn({ provider_user_id: 'same' }), 409, 9007, new RegExp(`already this identity.*'${first}'|'${first}' is already this identity`));
    assert.equal((await signIn({ provider_user_id: 'same', identity_provider: { name: 'Okta', url: 'https://example.okta.com' } })).status, 201);
  });

  test('the API has no create or update', async () => {
    assert.equal((await api.request('POST', '/app/users', {})).status, 405);
    const id = await user();
    assert.equal((await api.request('PATCH', `/app/users/${id}`, {})).status, 405);
  });

  test('the control plane needs the operator token and a known account, and checks the body', async () => {
    assert.equal((await api.request('POST', `/_burrow/accounts/${api.accountId}/application_users`, {})).status, 403);
    assert.equal((await api.request('POST', '/_burrow/accounts/ac_nope/application_users', {}, asOperator)).status, 404);
    assertError(await signIn({ identity_provider: { name: 'x', url: 'not a url' } }), 400, 215, /^identity_provider\.url: must be an absolute URL/);
    assertError(await signIn({ nickname: 'x' }), 400, 214, /^nickname: unknown field/);
  });

  test("deleting a user deletes its sessions, and no one else's", async () => {
    const alice = await user({ email: 'alice@example.com' });
    const bob = await user({ email: 'bob@example.com' });
    const a1 = (await openSession({ application_user_id: alice, public_url: 'https://app.example.com' })).body.id;
    const a2 = (await openSession({ application_user_id: alice, public_url: 'https://app.example.com' })).body.id;
    const b1 = (await openSession({ application_user_id: bob, public_url: 'https://app.example.com' })).body.id;
    assert.equal((await api.request('DELETE', `/app/users/${alice}`)).status, 204);
    assertError(await api.request('GET', `/app/users/${alice}`), 404, 9001, /application user 'apu_\w+' was not found/);
    for (const id of [a1, a2]) assert.equal((await api.request('GET', `/app/sessions/${id}`)).status, 404);
    assert.deepEqual((await api.request('GET', '/app/sessions')).body.application_sessions.map((s: any) => s.id), [b1]);
  });

  test('another account never sees or deletes them', async () => {
    const id = await user();
    const other = await api.burrow.createAccount();
    assert.equal((await api.request('GET', `/app/users/${id}`, undefined, { token: other.token })).status, 404);
    assert.equal((await api.request('DELETE', `/app/users/${id}`, undefined, { token: other.token })).status, 404);
    assert.deepEqual((await api.request('GET', '/app/users', undefined, { token: other.token })).body.application_users, []);
  });
});

describe('/app/sessions', () => {
  test('a session has the vendor shape and marks its user active', async () => {
    const owner = await user();
    api.clock.advance(90);
    const edge = await api.request('POST', '/edges/https', {});
    const route = await api.request('POST', `/edges/https/${edge.body.id}/routes`, { match_type: 'path_prefix', match: '/' });
    const res = await openSession({
      application_user_id: owner,
      public_url: 'https://app.example.com',
      user_agent: { raw: 'Mozilla/5.0 (Macintosh)', browser_name: 'Chrome', browser_version: '120', device_type: 'Desktop', os_name: 'MacOS', os_version: '14.1' },
      ip_address: '203.0.113.9',
      location: { country_code: 'DE', latitude: 52.5, longitude: 13.4, lat_long_radius_km: 20 },
      endpoint_id: 'ep_2ZFRD7Lr0lXoHr6UMCWO3KABwQ7',
      edge_id: edge.body.id,
      route_id: route.body.id,
    });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.id, /^aps_[0-9A-Za-z]{27}$/);
    const expected = {
      id: res.body.id,
      uri: `http://burrow.test/app/sessions/${res.body.id}`,
      public_url: 'https://app.example.com',
      browser_session: {
        user_agent: { raw: 'Mozilla/5.0 (Macintosh)', browser_name: 'Chrome', browser_version: '120', device_type: 'Desktop', os_name: 'MacOS', os_version: '14.1' },
        ip_address: '203.0.113.9',
        location: { country_code: 'DE', latitude: 52.5, longitude: 13.4, lat_long_radius_km: 20 },
      },
      application_user: { id: owner, uri: `http://burrow.test/app/users/${owner}` },
      created_at: '2026-03-01T12:01:30Z',
      last_active: '2026-03-01T12:01:30Z',
      expires_at: '2026-03-02T12:01:30Z',
      endpoint: { id: 'ep_2ZFRD7Lr0lXoHr6UMCWO3KABwQ7', uri: 'http://burrow.test/endpoints/ep_2ZFRD7Lr0lXoHr6UMCWO3KABwQ7' },
      edge: { id: edge.body.id, uri: `http://burrow.test/edges/https/${edge.body.id}` },
      route: { id: route.body.id, uri: `http://burrow.test/edges/https/${edge.body.id}/routes/${route.body.id}` },
    };
    assert.deepEqual(res.body, expected);
    assert.deepEqual((await api.request('GET', `/app/sessions/${res.body.id}`)).body, expected);
    const signedIn = (await api.request('GET', `/app/users/${owner}`)).body;
    assert.equal(signedIn.created_at, '2026-03-01T12:00:00Z');
    assert.equal(signedIn.last_active, '2026-03-01T12:01:30Z');
    assert.equal(signedIn.last_login, '2026-03-01T12:01:30Z');
  });

  test('defaults: no location, no edge or route, a day to live', async () => {
    const res = await openSession({ application_user_id: await user(), public_url: 'https://x.example.com' });
    assert.equal(res.body.browser_session.location, null);
    assert.equal(res.body.browser_session.ip_address, '127.0.0.1');
    assert.equal(res.body.edge, null);
    assert.equal(res.body.route, null);
    assert.equal(res.body.endpoint, null);
    assert.equal(res.body.expires_at, '2026-03-02T12:00:00Z');
  });

  test('refuses unknown users, edges and routes, and bad values', async () => {
    const owner = await user();
    assertError(await openSession({ application_user_id: 'apu_nope', public_url: 'https://x.example.com' }), 404, 9001, /^application_user_id: application user 'apu_nope' was not found/);
    assertError(await openSession({ application_user_id: owner, public_url: 'https://x.example.com', edge_id: 'edghts_nope' }), 404, 7000, /edghts_nope/);
    const edge = await api.request('POST', '/edges/https', {});
    assertError(await openSession({ application_user_id: owner, public_url: 'https://x.example.com', edge_id: edge.body.id, route_id: 'edghtsrt_nope' }), 404, 7124, /^route_id: HTTPS edge '\w+' has no route 'edghtsrt_nope'/);
    assertError(await openSession({ application_user_id: owner, public_url: 'https://x.example.com', route_id: 'edghtsrt_x' }), 400, 215, /^route_id: needs edge_id/);
    assertError(await openSession({ application_user_id: owner, public_url: '/relative' }), 400, 215, /^public_url: must be an absolute URL/);
    assertError(await openSession({ application_user_id: owner, public_url: 'https://x.example.com', ip_address: '999.1.1.1' }), 400, 215, /^ip_address: must be an IPv4 or IPv6 address/);
    assertError(await openSession({ application_user_id: owner, public_url: 'https://x.example.com', expires_at: '2026-03-01T11:00:00Z' }), 400, 215, /^expires_at: must be after the session starts/);
    assert.equal((await api.request('GET', '/app/sessions')).body.application_sessions.length, 0, 'refused sessions store nothing');
  });

  test('deleting a session leaves its user; list pages newest first', async () => {
    const owner = await user();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await openSession({ application_user_id: owner, public_url: 'https://x.example.com' })).body.id);
    const page = await api.request('GET', '/app/sessions?limit=2');
    assert.deepEqual(page.body.application_sessions.map((s: any) => s.id), [ids[2], ids[1]]);
    assert.equal(page.body.next_page_uri, `http://burrow.test/app/sessions?limit=2&before_id=${ids[1]}`);
    assert.equal((await api.request('DELETE', `/app/sessions/${ids[1]}`)).status, 204);
    assert.equal((await api.request('GET', `/app/sessions/${ids[1]}`)).status, 404);
    assert.equal((await api.request('GET', `/app/users/${owner}`)).status, 200);
    assert.equal((await api.request('DELETE', `/app/users/${owner}`)).status, 204);
    assert.deepEqual((await api.request('GET', '/app/sessions')).body.application_sessions, []);
  });

  test('the in-process client reads and deletes them', async () => {
    const owner = await user();
    const client = api.burrow.client(api.token, 'http://burrow.test');
    assert.equal((await client.resource('application_users').get(owner)).id, owner);
    await client.resource('application_users').delete(owner);
    assert.deepEqual((await client.resource('application_users').list()).application_users, []);
  });
});
