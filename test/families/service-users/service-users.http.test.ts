import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { GO_CLIENT_HEADERS, PYTHON_CLIENT_HEADERS } from '../../fixtures/client-dialects.ts';
import { assertError, createTestInstance, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

/** As the Go client v8 sends: `omitempty` drops the zero name and a nil `active`. */
const asGo = (method: string, path: string, body?: unknown) => api.request(method, path, body, { headers: GO_CLIENT_HEADERS });
/** As the vendor's generated Python client sends: `name=""` by default, `active=None` dropped. */
const asPython = (method: string, path: string, body?: unknown) => api.request(method, path, body, { headers: PYTHON_CLIENT_HEADERS });

describe('/service_users: the bot users under their new name', () => {
  test('create answers id (bot_), uri under /service_users, name, active and created_at', async () => {
    const res = await asGo('POST', '/service_users', { name: 'deploy' });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.id, /^bot_[0-9A-Za-z]{27}$/);
    assert.deepEqual(res.body, { id: res.body.id, uri: `http://burrow.test/service_users/${res.body.id}`, name: 'deploy', active: true, created_at: '2026-03-01T12:00:00Z' });
    assert.deepEqual((await asGo('GET', `/service_users/${res.body.id}`)).body, res.body);
  });

  test('one set of records: a service user is a bot user and a bot user a service user', async () => {
    const service = (await asGo('POST', '/service_users', { name: 'new-style' })).body;
    const bot = (await api.request('POST', '/bot_users', { name: 'old-style' })).body;
    const viaBots = await api.request('GET', `/bot_users/${service.id}`);
    assert.deepEqual(viaBots.body, { ...service, uri: `http://burrow.test/bot_users/${service.id}` });
    assert.equal((await asGo('GET', `/service_users/${bot.id}`)).body.name, 'old-style');
    assert.deepEqual((await asGo('GET', '/service_users')).body.service_users.map((user: any) => user.id), [bot.id, service.id]);
    assert.equal((await asGo('PATCH', `/service_users/${bot.id}`, { active: false })).body.active, false);
    assert.equal((await api.request('GET', `/bot_users/${bot.id}`)).body.active, false);
    assert.equal((await asGo('DELETE', `/service_users/${bot.id}`)).status, 204);
    assert.equal((await api.request('GET', `/bot_users/${bot.id}`)).status, 404);
    assertError(await asGo('GET', `/service_users/${bot.id}`), 404, 9001, /^service user 'bot_\w+' was not found/);
  });

  test('the list pages newest first and takes the CEL filter the Go client v8 sends', async () => {
    const ids = [];
    for (const [name, active] of [['a', true], ['b', false], ['c', true]] as const) ids.push((await asGo('POST', '/service_users', { name, active })).body.id);
    const page = await asGo('GET', '/service_users?limit=2');
    assert.deepEqual(page.body.service_users.map((user: any) => user.id), [ids[2], ids[1]]);
    assert.equal(page.body.uri, 'http://burrow.test/service_users');
    assert.equal(page.body.next_page_uri, `http://burrow.test/service_users?limit=2&before_id=${ids[1]}`);
    const inactive = await asGo('GET', `/service_users?filter=${encodeURIComponent('obj.active == false')}`);
    assert.deepEqual(inactive.body.service_users.map((user: any) => user.name), ['b']);
    assertError(await asGo('GET', `/service_users?filter=${encodeURIComponent('obj.nope == 1')}`), 400, 250, /^filter: invalid CEL query/);
  });

  test("the vendor's name rules as each client sends them: Go leaves an empty name out, Python sends \"\" (4109)", async () => {
    assertError(await asGo('POST', '/service_users', {}), 400, 4109, /^name: must not be empty: a service user needs a name/);
    assertError(await asPython('POST', '/service_users', { name: '' }), 400, 4109, /^name: must not be empty/);
    assertError(await asGo('POST', '/service_users', { name: 'n'.repeat(256) }), 400, 4110, /^name: must be at most 255 bytes \(got 256\)/);
    assertError(await asGo('POST', '/service_users', { name: 'a', roles: [] }), 400, 214, /^roles: unknown field; supported fields: name, active/);
    const python = await asPython('POST', '/service_users', { name: 'py' });
    assert.equal(python.status, 201, python.text);
    assert.equal(python.body.active, true);
    // Python's update sends what the caller passed and drops None; Go's sends the id and the set pointers.
    assert.equal((await asPython('PATCH', `/service_users/${python.body.id}`, { name: 'renamed' })).body.name, 'renamed');
    const go = await asGo('PATCH', `/service_users/${python.body.id}`, { id: python.body.id, active: false });
    assert.deepEqual([go.body.name, go.body.active], ['renamed', false]);
  });

  test('only admins create, change or delete service users (403, 4111)', async () => {
    const user = (await asGo('POST', '/service_users', { name: 'ci' })).body;
    const member = await api.burrow.createOwner(api.accountId, { name: 'member' });
    const asMember = { token: (await api.burrow.issueApiKey(api.accountId, member.id)).token, headers: GO_CLIENT_HEADERS };
    assertError(await api.request('POST', '/service_users', { name: 'mine' }, asMember), 403, 4111, /^only admins may create service users/);
    assertError(await api.request('PATCH', `/service_users/${user.id}`, { active: false }, asMember), 403, 4111, /^only admins may change service users/);
    assertError(await api.request('DELETE', `/service_users/${user.id}`, undefined, asMember), 403, 4111, /^only admins may delete service users/);
    assert.equal((await api.request('GET', `/service_users/${user.id}`, undefined, asMember)).body.active, true);
  });

  test('a service user owns API keys and credentials; while it owns any it is not deleted (409)', async () => {
    const user = (await asGo('POST', '/service_users', { name: 'agent fleet' })).body;
    const key = await asGo('POST', '/api_keys', { owner_id: user.id });
    assert.equal(key.body.owner_id, user.id);
    const credential = await asGo('POST', '/credentials', { owner_id: user.id });
    assert.equal(credential.body.owner_id, user.id);
    const made = await api.request('POST', '/credentials', {}, { token: key.body.token });
    assert.equal(made.body.owner_id, user.id, "the service user's key acts as the service user");
    assertError(await asGo('DELETE', `/service_users/${user.id}`), 409, 9007, new RegExp(`^service user '${user.id}' is still used by API key '${key.body.id}'`));
    await asGo('PATCH', `/service_users/${user.id}`, { active: false });
    assertError(await api.request('GET', '/api_keys', undefined, { token: key.body.token }), 403, 636, /which is inactive/);
  });

  test('another account sees a 404', async () => {
    const user = (await asGo('POST', '/service_users', { name: 'mine' })).body;
    const other = await api.burrow.createAccount();
    assert.equal((await api.request('GET', `/service_users/${user.id}`, undefined, { token: other.token })).status, 404);
    assert.deepEqual((await api.request('GET', '/service_users', undefined, { token: other.token })).body.service_users, []);
  });

  test('through the typed in-process client', async () => {
    const users = api.burrow.client(api.token, 'http://burrow.test').resource('service_users');
    const user = await users.create({ name: 'typed' });
    assert.equal((await users.update(user.id, { active: false })).active, false);
    assert.equal((await users.list({ filter: 'obj.name == "typed"' })).service_users[0].id, user.id);
    await users.delete(user.id);
    await assert.rejects(users.get(user.id), (error: any) => error.status === 404 && error.code === 9001);
  });
});
