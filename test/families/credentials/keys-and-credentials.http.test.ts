import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestInstance, type TestInstance } from '../../helpers.ts';

const ID = (prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{27}$`);
const TOKEN = /^[0-9A-Za-z]{27}_[0-9A-Za-z]+$/;

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

/** Three resources with the same owner rules and token/secret behaviour. */
const FAMILIES = [
  { path: '/api_keys', prefix: 'ak', listKey: 'keys', hasToken: true, create: {} },
  { path: '/credentials', prefix: 'cr', listKey: 'credentials', hasToken: true, create: {} },
] as const;

for (const family of FAMILIES) {
  describe(`${family.path}`, () => {
    test('create returns 201 with every field and the token once', async () => {
      const res = await api.request('POST', family.path, { description: 'ci key', metadata: '{"team":"infra"}' });
      assert.equal(res.status, 201);
      assert.match(res.body.id, ID(family.prefix));
      assert.equal(res.body.uri, `http://burrow.test${family.path}/${res.body.id}`);
      assert.equal(res.body.created_at, '2026-03-01T12:00:00Z');
      assert.equal(res.body.description, 'ci key');
      assert.equal(res.body.metadata, '{"team":"infra"}');
      assert.equal(res.body.owner_id, api.userId);
      assert.match(res.body.token, TOKEN);
      assert.equal(res.body.token.split('_')[0], res.body.id.split('_')[1], 'the token starts with the KSUID of the id');
    });

    test('get and list return the token as null', async () => {
      const created = await api.request('POST', family.path, {});
      const got = await api.request('GET', `${family.path}/${created.body.id}`);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, { ...created.body, token: null });
      const list = await api.request('GET', family.path);
      assert.ok(list.body[family.listKey].every((item: any) => item.token === null));
    });

    test('description and metadata default to empty strings', async () => {
      const res = await api.request('POST', family.path, {});
      assert.equal(res.body.description, '');
      assert.equal(res.body.metadata, '');
    });

    test('update changes only the fields sent', async () => {
      const created = await api.request('POST', family.path, { description: 'a', metadata: 'm' });
      const res = await api.request('PATCH', `${family.path}/${created.body.id}`, { description: 'b' });
      assert.equal(res.status, 200);
      assert.equal(res.body.description, 'b');
      assert.equal(res.body.metadata, 'm');
      assert.equal(res.body.token, null);
    });

    test('update tolerates the path id in the body, refuses another id', async () => {
      const created = await api.request('POST', family.path, {});
      const same = await api.request('PATCH', `${family.path}/${created.body.id}`, { id: created.body.id, metadata: 'x' });
      assert.equal(same.status, 200);
      const other = await api.request('PATCH', `${family.path}/${created.body.id}`, { id: `${family.prefix}_other`, metadata: 'x' });
      assert.equal(other.status, 400);
      assert.match(other.body.msg, /^id: must equal the id in the path/);
    });

    test('update refuses owner_id and other create-only fields', async () => {
      const created = await api.request('POST', family.path, {});
      const res = await api.request('PATCH', `${family.path}/${created.body.id}`, { owner_id: api.userId });
      assert.equal(res.status, 400);
      assert.equal(res.body.error_code, 'ERR_BURROW_214');
    });

    test('delete is 204, then the id is a 404', async () => {
      const created = await api.request('POST', family.path, {});
      assert.equal((await api.request('DELETE', `${family.path}/${created.body.id}`)).status, 204);
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const res = await api.request(method, `${family.path}/${created.body.id}`, method === 'PATCH' ? {} : undefined);
        assert.equal(res.status, 404, method);
        assert.equal(res.body.error_code, 'ERR_BURROW_9001');
      }
    });

    test('another account never sees, changes or deletes the resource', async () => {
      const created = await api.request('POST', family.path, {});
      const other = await api.burrow.createAccount();
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const res = await api.request(method, `${family.path}/${created.body.id}`, method === 'PATCH' ? { description: 'x' } : undefined, { token: other.token });
        assert.equal(res.status, 404, method);
      }
      const list = await api.request('GET', family.path, undefined, { token: other.token });
      assert.ok(!list.body[family.listKey].some((item: any) => item.id === created.body.id));
      assert.equal((await api.request('GET', `${family.path}/${created.body.id}`)).body.description, '');
    });

    describe('owner_id', () => {
      test('an admin may name another user or bot of the account', async () => {
        const bot = await api.burrow.createOwner(api.accountId, { kind: 'bot' });
        const res = await api.request('POST', family.path, { owner_id: bot.id });
        assert.equal(res.status, 201);
        assert.equal(res.body.owner_id, bot.id);
      });

      test('a non-admin may not name another owner (403)', async () => {
        const user = await api.burrow.createOwner(api.accountId, { admin: false });
        const key = await api.burrow.issueApiKey(api.accountId, user.id);
        const own = await api.request('POST', family.path, { owner_id: user.id }, { token: key.token });
        assert.equal(own.status, 201);
        const res = await api.request('POST', family.path, { owner_id: api.userId }, { token: key.token });
        assert.equal(res.status, 403);
        assert.equal(res.body.error_code, 'ERR_BURROW_628');
      });

      test('an unknown owner, or one of another account, is a 400', async () => {
        const other = await api.burrow.createAccount();
        for (const owner of ['usr_nobody', other.userId, 'someone']) {
          const res = await api.request('POST', family.path, { owner_id: owner });
          assert.equal(res.status, 400, owner);
          assert.equal(res.body.error_code, 'ERR_BURROW_630');
        }
      });
    });
  });
}

describe('/credentials acl', () => {
  test('stores valid bind rules and returns them', async () => {
    const acl = ['bind:*.example.com', 'bind:example.net', 'bind:1.2.3.4:443', 'bind:region=eu', 'bind:*=*'];
    const res = await api.request('POST', '/credentials', { acl });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.acl, acl);
  });

  test('no acl means an empty list', async () => {
    assert.deepEqual((await api.request('POST', '/credentials', {})).body.acl, []);
  });

  test('a bad rule is a 400 naming it', async () => {
    const res = await api.request('POST', '/credentials', { acl: ['bind:ok.example.com', 'connect:x'] });
    assert.equal(res.status, 400);
    assert.equal(res.body.error_code, 'ERR_BURROW_600');
    assert.match(res.body.msg, /connect:x/);
  });

  test('update replaces the acl and validates it', async () => {
    const created = await api.request('POST', '/credentials', { acl: ['*'] });
    const bad = await api.request('PATCH', `/credentials/${created.body.id}`, { acl: ['bind:'] });
    assert.equal(bad.status, 400);
    assert.deepEqual((await api.request('GET', `/credentials/${created.body.id}`)).body.acl, ['*']);
    const res = await api.request('PATCH', `/credentials/${created.body.id}`, { acl: ['bind:a.example.com'] });
    assert.deepEqual(res.body.acl, ['bind:a.example.com']);
  });

  test('acl must be a list of strings', async () => {
    const res = await api.request('POST', '/credentials', { acl: 'bind:x.com' });
    assert.equal(res.status, 400);
    assert.match(res.body.msg, /^acl: must be a list/);
  });
});

describe('/ssh_credentials', () => {
  let dir: string;
  const keys: Record<string, string> = {};
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'burrow-sshcr-'));
    for (const [type, args] of [['ed25519', ['-t', 'ed25519']], ['rsa', ['-t', 'rsa', '-b', '2048']], ['ecdsa', ['-t', 'ecdsa', '-b', '256']]] as const) {
      const file = join(dir, type);
      execFileSync('ssh-keygen', ['-q', ...args, '-N', '', '-C', `${type}@test`, '-f', file]);
      keys[type] = readFileSync(`${file}.pub`, 'utf8').trim();
      if (type !== 'ed25519') keys[`${type}-pem`] = execFileSync('ssh-keygen', ['-e', '-m', 'PKCS8', '-f', `${file}.pub`], { encoding: 'utf8' });
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('create accepts authorized-keys lines of every key type', async () => {
    for (const type of ['ed25519', 'rsa', 'ecdsa']) {
      const res = await api.request('POST', '/ssh_credentials', { public_key: keys[type], acl: ['bind:x.example.com'], description: type });
      assert.equal(res.status, 201, type);
      assert.match(res.body.id, ID('sshcr'));
      assert.equal(res.body.public_key.split(' ').slice(0, 2).join(' '), keys[type]!.split(' ').slice(0, 2).join(' '));
      assert.deepEqual(res.body.acl, ['bind:x.example.com']);
      assert.equal(res.body.owner_id, api.userId);
      assert.equal('token' in res.body, false);
    }
  });

  test('create accepts a PEM public key', async () => {
    const res = await api.request('POST', '/ssh_credentials', { public_key: keys['rsa-pem'] });
    assert.equal(res.status, 201);
    assert.match(res.body.public_key, /^ssh-rsa AAAA/);
  });

  test('a missing or unparseable key is a 400', async () => {
    const missing = await api.request('POST', '/ssh_credentials', {});
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error_code, 'ERR_BURROW_611');
    const bad = await api.request('POST', '/ssh_credentials', { public_key: 'ssh-ed25519 not-base64!' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error_code, 'ERR_BURROW_612');
    assert.match(bad.body.msg, /^public_key: /);
  });

  test('the same key twice in one account is a 409', async () => {
    assert.equal((await api.request('POST', '/ssh_credentials', { public_key: keys.ed25519 })).status, 201);
    const res = await api.request('POST', '/ssh_credentials', { public_key: keys.ed25519 });
    assert.equal(res.status, 409);
    assert.equal(res.body.error_code, 'ERR_BURROW_609');
  });

  test('update changes description, metadata and acl but never the key', async () => {
    const created = await api.request('POST', '/ssh_credentials', { public_key: keys.ed25519 });
    const res = await api.request('PATCH', `/ssh_credentials/${created.body.id}`, { metadata: 'm', acl: ['*'] });
    assert.equal(res.status, 200);
    assert.equal(res.body.metadata, 'm');
    assert.deepEqual(res.body.acl, ['*']);
    const refused = await api.request('PATCH', `/ssh_credentials/${created.body.id}`, { public_key: keys.rsa });
    assert.equal(refused.status, 400);
  });

  test('list and delete', async () => {
    const created = await api.request('POST', '/ssh_credentials', { public_key: keys.ecdsa });
    const list = await api.request('GET', '/ssh_credentials');
    assert.deepEqual(list.body.ssh_credentials.map((c: any) => c.id), [created.body.id]);
    assert.equal(list.body.next_page_uri, null);
    assert.equal((await api.request('DELETE', `/ssh_credentials/${created.body.id}`)).status, 204);
    assert.deepEqual((await api.request('GET', '/ssh_credentials')).body.ssh_credentials, []);
  });
});
