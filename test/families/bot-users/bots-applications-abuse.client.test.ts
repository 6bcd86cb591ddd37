import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useOfficialClient } from '../../compat/official-client.ts';

const official = useOfficialClient();

/** The id of the server's default account (the one its printed admin key belongs to). */
async function defaultAccount(): Promise<string> {
  const accounts = await official.server.request('GET', '/_burrow/accounts', undefined, { token: official.server.operatorToken! });
  return accounts.body.accounts.find((account: any) => account.default).id;
}

describe('official client: bot users', () => {
  test('create, get, update, list; keys and credentials owned by the bot', async () => {
    const { client } = official;
    const bot = await client.botUsers.create({ name: 'deploy' });
    assert.match(bot.id, /^bot_/);
    assert.equal(bot.name, 'deploy');
    assert.equal(bot.active, true);
    assert.ok(bot.createdAt);
    assert.equal((await client.botUsers.get(bot.id)).name, 'deploy');
    const updated = await client.botUsers.update({ id: bot.id, name: 'release' });
    assert.equal(updated.name, 'release');
    assert.ok((await client.botUsers.list()).some((b: any) => b.id === bot.id));

    const key = await client.apiKeys.create({ description: 'bot key', ownerId: bot.id });
    assert.equal(key.ownerId, bot.id);
    const credential = await client.credentials.create({ ownerId: bot.id });
    assert.equal(credential.ownerId, bot.id);

    await assert.rejects(client.apiKeys.create({ ownerId: 'bot_nobody' }), (error: any) => {
      assert.equal(error.statusCode, 400);
      assert.equal(error.errorCode, 'ERR_BURROW_630');
      assert.match(error.msg, /owner_id/);
      return true;
    });

    // The bot's own key works until the bot is deactivated.
    const asBot = official.clientWith(key.token);
    assert.ok(Array.isArray(await asBot.apiKeys.list()));
    assert.equal((await client.botUsers.update({ id: bot.id, active: false })).active, false);
    await assert.rejects(asBot.apiKeys.list(), (error: any) => error.statusCode === 403 && error.errorCode === 'ERR_BURROW_636');

    assert.equal(await official.deleteWithFetch(`/bot_users/${bot.id}`), 409, 'still owns a key and a credential');
    assert.equal(await official.deleteWithFetch(`/api_keys/${key.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/credentials/${credential.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/bot_users/${bot.id}`), 204);
    await assert.rejects(client.botUsers.get(bot.id), (error: any) => error.statusCode === 404);
  });
});

describe('official client: application users and sessions', () => {
  test('get and list what the control plane signed in; delete removes the sessions too', async () => {
    const { client, server } = official;
    const account = await defaultAccount();
    const asOperator = { token: server.operatorToken! };
    const user = await server.request('POST', `/_burrow/accounts/${account}/application_users`, { identity_provider: { name: 'GitHub', url: 'https://github.com' }, provider_user_id: '42', email: 'octo@example.com' }, asOperator);
    assert.equal(user.status, 201, user.text);
    const session = await server.request('POST', `/_burrow/accounts/${account}/application_sessions`, { application_user_id: user.body.id, public_url: 'https://app.example.com', user_agent: { raw: 'Mozilla/5.0', browser_name: 'Firefox' }, location: { country_code: 'FR' } }, asOperator);
    assert.equal(session.status, 201, session.text);

    const got = await client.applicationUsers.get(user.body.id);
    assert.equal(got.providerUserId, '42');
    assert.deepEqual(got.identityProvider, { name: 'GitHub', url: 'https://github.com' });
    assert.ok((await client.applicationUsers.list()).some((u: any) => u.id === user.body.id));
    const read = await client.applicationSessions.get(session.body.id);
    assert.equal(read.publicUrl, 'https://app.example.com');
    assert.equal(read.browserSession.userAgent.browserName, 'Firefox');
    assert.equal(read.browserSession.location.countryCode, 'FR');
    assert.equal(read.applicationUser.id, user.body.id);
    assert.deepEqual((await client.applicationSessions.list()).map((s: any) => s.id), [session.body.id]);

    assert.equal(await official.deleteWithFetch(`/app/users/${user.body.id}`), 204);
    await assert.rejects(client.applicationSessions.get(session.body.id), (error: any) => error.statusCode === 404);
    assert.deepEqual(await client.applicationSessions.list(), []);
  });
});

describe('official client: abuse reports', () => {
  test('create and get; the status follows the hostnames', async () => {
    const { client, server } = official;
    const report = await client.abuseReports.create({ urls: ['https://bad.example.com/a', 'https://worse.example.com/b'], metadata: 'ticket 7' });
    assert.match(report.id, /^abrp_/);
    assert.equal(report.status, 'PENDING');
    assert.deepEqual(report.hostnames, [
      { hostname: 'bad.example.com', status: 'PENDING' },
      { hostname: 'worse.example.com', status: 'PENDING' },
    ]);
    const account = await defaultAccount();
    const decided = await server.request('POST', `/_burrow/accounts/${account}/abuse_reports/${report.id}/hostnames`, { hostnames: { 'bad.example.com': 'BANNED' } }, { token: server.operatorToken! });
    assert.equal(decided.status, 200, decided.text);
    const got = await client.abuseReports.get(report.id);
    assert.equal(got.status, 'PARTIALLY_PROCESSED');
    assert.equal(got.metadata, 'ticket 7');
    await assert.rejects(client.abuseReports.create({ urls: [] }), (error: any) => error.statusCode === 400 && /urls/.test(error.msg));
  });
});
