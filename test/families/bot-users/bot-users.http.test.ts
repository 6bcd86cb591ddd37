import assert from 'node:assert/strict';
import { after, beforeEach, describe, test } from 'node:test';
import { sshKeygen, tempDir } from '../../fixtures/openssh.ts';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const dir = tempDir('burrow-bots-');
after(() => dir.remove());

const createBot = async (body: unknown = { name: 'deploy' }) => {
  const res = await api.request('POST', '/bot_users', body);
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string; token?: string };
};

describe('/bot_users', () => {
  test('create answers exactly id, uri, name, active and created_at', async () => {
    const res = await api.request('POST', '/bot_users', { name: 'deploy' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^bot_[0-9A-Za-z]{27}$/);
    assert.deepEqual(res.body, { id: res.body.id, uri: `http://burrow.test/bot_users/${res.body.id}`, name: 'deploy', active: true, created_at: '2026-03-01T12:00:00Z' });
    assert.deepEqual((await api.request('GET', `/bot_users/${res.body.id}`)).body, res.body);
    assert.equal((await api.request('POST', '/bot_users', { name: 'paused', active: false })).body.active, false);
  });

  test('list pages newest first under bot_users', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await createBot({ name: `bot ${i}` })).id);
    const page = await api.request('GET', '/bot_users?limit=2');
    assert.deepEqual(page.body.bot_users.map((b: any) => b.id), [ids[2], ids[1]]);
    assert.equal(page.body.next_page_uri, `http://burrow.test/bot_users?limit=2&before_id=${ids[1]}`);
    assert.deepEqual((await api.request('GET', `/bot_users?limit=2&before_id=${ids[1]}`)).body.bot_users.map((b: any) => b.id), [ids[0]]);
  });

  test('a control-plane bot is listed too (one kind of owner)', async () => {
    const bot = await api.burrow.createOwner(api.accountId, { kind: 'bot', name: 'legacy' });
    const got = await api.request('GET', `/bot_users/${bot.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.name, 'legacy');
    assert.equal(got.body.active, true);
  });

  test('update changes only the fields sent', async () => {
    const bot = await createBot();
    const renamed = await api.request('PATCH', `/bot_users/${bot.id}`, { id: bot.id, name: 'release' });
    assert.equal(renamed.body.name, 'release');
    assert.equal(renamed.body.active, true);
    const paused = await api.request('PATCH', `/bot_users/${bot.id}`, { active: false });
    assert.equal(paused.body.name, 'release');
    assert.equal(paused.body.active, false);
  });

  test('refuses a missing, empty or oversized name, unknown fields and wrong types', async () => {
    assertError(await api.request('POST', '/bot_users', {}), 400, 215, /^name: is required/);
    assertError(await api.request('POST', '/bot_users', { name: '' }), 400, 215, /^name: must not be empty/);
    assertError(await api.request('POST', '/bot_users', { name: 'x'.repeat(256) }), 400, 215, /^name: must be at most 255 bytes \(got 256\)/);
    assertError(await api.request('POST', '/bot_users', { name: 'a', description: 'd' }), 400, 214, /^description: unknown field; supported fields: name, active/);
    assertError(await api.request('POST', '/bot_users', { name: 'a', active: 'yes' }), 400, 215, /^active:/);
  });

  test('only admins create, change or delete bots (403)', async () => {
    const bot = await createBot();
    const member = await api.burrow.createOwner(api.accountId, { name: 'member' });
    const key = await api.burrow.issueApiKey(api.accountId, member.id);
    const asMember = { token: key.token };
    assertError(await api.request('POST', '/bot_users', { name: 'mine' }, asMember), 403, 628, /only admins may create bot users/);
    assertError(await api.request('PATCH', `/bot_users/${bot.id}`, { active: false }, asMember), 403, 628, /only admins may change bot users/);
    assertError(await api.request('DELETE', `/bot_users/${bot.id}`, undefined, asMember), 403, 628, /only admins may delete bot users/);
    assert.equal((await api.request('GET', `/bot_users/${bot.id}`, undefined, asMember)).body.active, true);
  });

  test('delete removes an unused bot; another account sees a 404', async () => {
    const bot = await createBot();
    const other = await api.burrow.createAccount();
    assert.equal((await api.request('GET', `/bot_users/${bot.id}`, undefined, { token: other.token })).status, 404);
    assert.equal((await api.request('DELETE', `/bot_users/${bot.id}`, undefined, { token: other.token })).status, 404);
    assert.equal((await api.request('DELETE', `/bot_users/${bot.id}`)).status, 204);
    assertError(await api.request('GET', `/bot_users/${bot.id}`), 404, 9001, /bot user 'bot_\w+' was not found/);
  });
});

describe('keys and credentials owned by a bot', () => {
  test('API keys, tunnel credentials and SSH credentials take owner_id and answer it', async () => {
    const bot = await createBot();
    const key = sshKeygen(dir.path, `owned-${Date.now()}`, 'ed25519');
    for (const [path, body] of [['/api_keys', {}], ['/credentials', {}], ['/ssh_credentials', { public_key: key.publicKey }]] as const) {
      const created = await api.request('POST', path, { ...body, owner_id: bot.id });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.owner_id, bot.id);
      assert.equal((await api.request('GET', `${path}/${created.body.id}`)).body.owner_id, bot.id);
    }
  });

  test('without owner_id the owner is the calling user, a stable usr_ id of the account', async () => {
    const a = await api.request('POST', '/api_keys', {});
    const b = await api.request('POST', '/credentials', {});
    assert.match(api.userId, /^usr_[0-9A-Za-z]{27}$/);
    assert.equal(a.body.owner_id, api.userId);
    assert.equal(b.body.owner_id, api.userId);
  });

  test('an unknown bot, or one of another account, is a 400 naming owner_id', async () => {
    const other = await api.burrow.createAccount();
    const foreign = (await api.request('POST', '/bot_users', { name: 'theirs' }, { token: other.token })).body.id;
    for (const owner of ['bot_unknown', foreign]) {
      const res = await api.request('POST', '/credentials', { owner_id: owner });
      assertError(res, 400, 630, /^owner_id: no user or bot 'bot_\w+' in this account/);
      assert.equal(res.body.details.field, 'owner_id');
    }
  });

  test("a bot's API key authenticates as the bot: what it creates is the bot's", async () => {
    const bot = await createBot();
    const key = await api.request('POST', '/api_keys', { owner_id: bot.id });
    const made = await api.request('POST', '/credentials', {}, { token: key.body.token });
    assert.equal(made.status, 201);
    assert.equal(made.body.owner_id, bot.id);
  });

  test('a bot that owns keys or credentials is not deleted: 409 naming them, then 204 once they are gone', async () => {
    const bot = await createBot();
    const key = (await api.request('POST', '/api_keys', { owner_id: bot.id })).body.id;
    const credential = (await api.request('POST', '/credentials', { owner_id: bot.id })).body.id;
    const refused = await api.request('DELETE', `/bot_users/${bot.id}`);
    assertError(refused, 409, 9007, new RegExp(`^bot user '${bot.id}' is still used by API key '${key}', tunnel credential '${credential}'`));
    assert.equal(refused.body.details.used_by, `${key},${credential}`);
    assert.equal((await api.request('DELETE', `/api_keys/${key}`)).status, 204);
    assertError(await api.request('DELETE', `/bot_users/${bot.id}`), 409, 9007, new RegExp(`still used by tunnel credential '${credential}'$|still used by tunnel credential '${credential}';`));
    assert.equal((await api.request('DELETE', `/credentials/${credential}`)).status, 204);
    assert.equal((await api.request('DELETE', `/bot_users/${bot.id}`)).status, 204);
  });

  test('a bot the account started with keeps its API key through a reset, and the key still holds it', async () => {
    const bot = await createBot();
    const key = await api.request('POST', '/api_keys', { owner_id: bot.id });
    await api.burrow.captureStart();
    await api.request('POST', '/credentials', { owner_id: bot.id });
    const reset = await api.request('POST', '/_burrow/reset', { account_id: api.accountId }, { token: OPERATOR_TOKEN });
    assert.equal(reset.status, 200);
    assert.equal((await api.request('GET', '/credentials')).body.credentials.length, 0);
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: key.body.token })).status, 200);
    assertError(await api.request('DELETE', `/bot_users/${bot.id}`), 409, 9007, new RegExp(`still used by API key '${key.body.id}'; remove`));
  });
});

describe('an inactive bot', () => {
  test('its API keys are refused at authentication (403, 636) until it is active again', async () => {
    const bot = await createBot();
    const key = await api.request('POST', '/api_keys', { owner_id: bot.id });
    const asBot = { token: key.body.token as string };
    assert.equal((await api.request('GET', '/api_keys', undefined, asBot)).status, 200);
    await api.request('PATCH', `/bot_users/${bot.id}`, { active: false });
    const refused = await api.request('GET', '/api_keys', undefined, asBot);
    assertError(refused, 403, 636, new RegExp(`^API key '${key.body.id}' belongs to bot user '${bot.id}', which is inactive`));
    assert.equal(refused.body.details.owner_id, bot.id);
    await api.request('PATCH', `/bot_users/${bot.id}`, { active: true });
    assert.equal((await api.request('GET', '/api_keys', undefined, asBot)).status, 200);
  });

  test('no new key or credential may name it (400, 636)', async () => {
    const bot = await createBot({ name: 'paused', active: false });
    for (const path of ['/api_keys', '/credentials']) {
      const res = await api.request('POST', path, { owner_id: bot.id });
      assertError(res, 400, 636, new RegExp(`^owner_id: bot user '${bot.id}' is inactive`));
    }
  });

  test('its tunnel credentials cannot start agent sessions (403, 636)', async () => {
    const bot = await createBot();
    const credential = await api.request('POST', '/credentials', { owner_id: bot.id });
    const connect = () => api.request('POST', '/_burrow/agents', { token: credential.body.token }, { token: OPERATOR_TOKEN });
    assert.equal((await connect()).status, 201);
    await api.request('PATCH', `/bot_users/${bot.id}`, { active: false });
    assertError(await connect(), 403, 636, new RegExp(`^tunnel credential '${credential.body.id}' belongs to bot user '${bot.id}', which is inactive`));
  });
});

describe('in-process client', () => {
  test('bot_users through the typed client', async () => {
    const client = api.burrow.client(api.token, 'http://burrow.test');
    const bots = client.resource('bot_users');
    const bot = await bots.create({ name: 'typed' });
    assert.equal((await bots.update(bot.id, { active: false })).active, false);
    assert.equal((await bots.list()).bot_users[0].id, bot.id);
    await bots.delete(bot.id);
    await assert.rejects(bots.get(bot.id), (error: any) => error.status === 404);
  });
});
