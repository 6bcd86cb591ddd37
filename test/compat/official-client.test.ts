import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { useOfficialClient } from './official-client.ts';

const official = useOfficialClient();

describe('official client: API keys', () => {
  test('create, get, update, list and a 404 error body it can read', async () => {
    const created = await official.client.apiKeys.create({ description: 'from the official client', metadata: 'm' });
    assert.match(created.id, /^ak_/);
    assert.match(created.token, /_/);
    assert.equal(created.description, 'from the official client');
    const got = await official.client.apiKeys.get(created.id);
    assert.equal(got.id, created.id);
    assert.equal(got.token, null);
    assert.equal(got.createdAt, created.createdAt);
    const updated = await official.client.apiKeys.update({ id: created.id, description: 'renamed' });
    assert.equal(updated.description, 'renamed');
    assert.equal(updated.metadata, 'm');
    assert.ok((await official.client.apiKeys.list()).some((k: any) => k.id === created.id));
    assert.equal(await official.deleteWithFetch(`/api_keys/${created.id}`), 204);
    await assert.rejects(official.client.apiKeys.get(created.id), (error: any) => {
      assert.equal(error.statusCode, 404);
      assert.equal(error.errorCode, 'ERR_BURROW_9001');
      assert.match(error.details.get('operationId'), /^op_/);
      return true;
    });
  });

  test('lists more than 100 items across pages with beforeId', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 120; i++) ids.add((await official.client.apiKeys.create({ description: `bulk ${i}` })).id);
    const listed = await official.client.apiKeys.list();
    const listedIds = listed.map((k: any) => k.id);
    assert.equal(new Set(listedIds).size, listedIds.length, 'no item twice');
    for (const id of ids) assert.ok(listedIds.includes(id), id);
    const sorted = [...listedIds].sort().reverse();
    assert.deepEqual(listedIds, sorted, 'newest first');
  });
});

describe('official client: tunnel credentials', () => {
  test('create with acl, get, update, list', async () => {
    const created = await official.client.credentials.create({ description: 'agent', acl: ['bind:*.example.com'] });
    assert.match(created.id, /^cr_/);
    assert.ok(created.token);
    assert.deepEqual(created.acl, ['bind:*.example.com']);
    const got = await official.client.credentials.get(created.id);
    assert.equal(got.token, null);
    const updated = await official.client.credentials.update({ id: created.id, acl: ['bind:a.example.com'] });
    assert.deepEqual(updated.acl, ['bind:a.example.com']);
    assert.ok((await official.client.credentials.list()).some((c: any) => c.id === created.id));
    assert.equal(await official.deleteWithFetch(`/credentials/${created.id}`), 204);
  });

  test('a bad acl rule surfaces as a 400 with its code', async () => {
    await assert.rejects(official.client.credentials.create({ acl: ['nope'] }), (error: any) => {
      assert.equal(error.statusCode, 400);
      assert.equal(error.errorCode, 'ERR_BURROW_600');
      return true;
    });
  });
});

describe('official client: SSH credentials', () => {
  let dir: string;
  let publicKey: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'burrow-compat-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'key')]);
    publicKey = readFileSync(join(dir, 'key.pub'), 'utf8').trim();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('create, get, update, list', async () => {
    const created = await official.client.sshCredentials.create({ publicKey, acl: ['bind:ssh.example.com'] });
    assert.match(created.id, /^sshcr_/);
    assert.equal(created.publicKey.split(' ')[1], publicKey.split(' ')[1]);
    const got = await official.client.sshCredentials.get(created.id);
    assert.deepEqual(got.acl, ['bind:ssh.example.com']);
    const updated = await official.client.sshCredentials.update({ id: created.id, description: 'laptop' });
    assert.equal(updated.description, 'laptop');
    assert.ok((await official.client.sshCredentials.list()).some((c: any) => c.id === created.id));
    assert.equal(await official.deleteWithFetch(`/ssh_credentials/${created.id}`), 204);
  });
});
