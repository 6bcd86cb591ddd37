import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { createBurrow, type Store } from '../../../lib/index.ts';
import type { Delivery } from '../../../lib/families/events/outbox.ts';
import { assertError, BASE, createTestInstance, OPERATOR_TOKEN, type TestInstance, type TestResponse } from '../../helpers.ts';

/**
 * Vaults and secrets as the vendor's newer clients (0.15+) use them, over raw HTTP with the exact
 * bodies they send: the Python client (ngrok-api-python services.py) always sends its keyword
 * defaults (`metadata: ""`, `description: ""`, and for secrets `name`/`value` "" when not given)
 * and drops only None on update; the Go client (datatypes.go, `omitempty`) leaves zero fields out
 * and may name the vault by `vault_name` instead of `vault_id`. Both send `ngrok-version: 2`.
 */

let api: TestInstance;
let delivered: Delivery[];
beforeEach(async () => {
  delivered = [];
  api = await createTestInstance({ eventSinks: [{ deliver: (d) => void delivered.push(d) }] });
});

const NEWER_CLIENT = { 'Service-Version': null, 'ngrok-version': '2' };
const send = (method: string, path: string, body?: unknown, init: { token?: string } = {}) => api.request(method, path, body, { headers: NEWER_CLIENT, ...init });

async function created(path: string, body: unknown): Promise<any> {
  const res = await send('POST', path, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** vaults.create(name=…) as the Python client sends it. */
const pythonVault = (name: string) => created('/vaults', { name, metadata: '', description: '' });
/** secrets.create(vault_id, name=…, value=…) as the Python client sends it. */
const pythonSecret = (vaultId: string, name: string, value: string) => created('/vault_secrets', { name, value, metadata: '', description: '', vault_id: vaultId });

const PLAINTEXT = 'hunter2-correct-horse-battery-staple';

describe('vaults: create, get, list, update, delete', () => {
  test('create answers the vendor shape: updated_at, name, created_by/last_updated_by as owner ids', async () => {
    const vault = await created('/vaults', { name: 'prod/app.keys', metadata: '{"team":"ops"}', description: 'production' });
    assert.match(vault.id, /^vault_[0-9A-Za-z]{27}$/);
    assert.deepEqual(vault, {
      id: vault.id,
      uri: `${BASE}/vaults/${vault.id}`,
      created_at: '2026-03-01T12:00:00Z',
      updated_at: '2026-03-01T12:00:00Z',
      name: 'prod/app.keys',
      description: 'production',
      metadata: '{"team":"ops"}',
      created_by: api.userId,
      last_updated_by: api.userId,
    });
    assert.deepEqual((await send('GET', `/vaults/${vault.id}`)).body, vault);
  });

  test('list pages newest first under the key `vaults`', async () => {
    const a = await pythonVault('a');
    const b = await pythonVault('b');
    const page = await send('GET', '/vaults?limit=1');
    assert.deepEqual(page.body.vaults.map((x: any) => x.id), [b.id]);
    assert.equal(page.body.next_page_uri, `${BASE}/vaults?limit=1&before_id=${b.id}`);
    assert.deepEqual((await send('GET', `/vaults?limit=1&before_id=${b.id}`)).body.vaults.map((x: any) => x.id), [a.id]);
  });

  test('update (only the fields sent) moves updated_at and last_updated_by', async () => {
    const vault = await pythonVault('before');
    api.clock.advance(60);
    const bot = await api.burrow.createOwner(api.accountId, { kind: 'bot', admin: true });
    const botKey = await api.burrow.issueApiKey(api.accountId, bot.id);
    const res = await send('PATCH', `/vaults/${vault.id}`, { name: 'after' }, { token: botKey.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { ...vault, name: 'after', updated_at: '2026-03-01T12:01:00Z', last_updated_by: bot.id });
    assert.equal((await send('PATCH', `/vaults/${vault.id}`, { description: 'd' })).body.name, 'after');
  });

  test('a vault name is required, unique in the account and made of a-zA-Z0-9_/.', async () => {
    assertError(await send('POST', '/vaults', { name: '', metadata: '', description: '' }), 400, 23001, /^name: must not be empty/);
    assertError(await send('POST', '/vaults', {}), 400, 23001, /^name: must not be empty/);
    assertError(await send('POST', '/vaults', { name: 'has space' }), 400, 23000, /^name: "has space" is not a vault name/);
    assertError(await send('POST', '/vaults', { name: 'x'.repeat(256) }), 400, 215, /^name: must be at most 255 characters/);
    const first = await pythonVault('shared');
    assertError(await send('POST', '/vaults', { name: 'shared' }), 409, 23004, /^name: vault 'vault_\w+' is already named "shared"/);
    const other = await pythonVault('other');
    assertError(await send('PATCH', `/vaults/${other.id}`, { name: 'shared' }), 409, 23004, /unique in an account/);
    assertError(await send('PATCH', `/vaults/${other.id}`, { name: '' }), 400, 23001, /^name: must not be empty/);
    assertError(await send('POST', '/vaults', { name: 'v', value: 'x' }), 400, 214, /^value: unknown field/);
    // Another account may use the same name.
    const b = await api.burrow.createAccount({ name: 'B' });
    assert.equal((await send('POST', '/vaults', { name: 'shared' }, { token: b.token })).status, 201);
    assert.equal((await send('GET', `/vaults/${first.id}`)).body.name, 'shared');
  });

  test('a renamed vault frees its old name', async () => {
    const vault = await pythonVault('old');
    await send('PATCH', `/vaults/${vault.id}`, { name: 'new' });
    assert.equal((await send('POST', '/vaults', { name: 'old' })).status, 201);
  });

  test('delete: 204, then 404; a vault that holds secrets is refused with 23003 until it is empty', async () => {
    const vault = await pythonVault('v');
    const secret = await pythonSecret(vault.id, 'S', PLAINTEXT);
    const refused = await send('DELETE', `/vaults/${vault.id}`);
    assertError(refused, 409, 23003, new RegExp(`^vault '${vault.id}' is still used by secret '${secret.id}'`));
    assert.equal((await send('DELETE', `/vault_secrets/${secret.id}`)).status, 204);
    assert.equal((await send('DELETE', `/vaults/${vault.id}`)).status, 204);
    assert.equal((await send('GET', `/vaults/${vault.id}`)).status, 404);
  });
});

describe('secrets: create, get, list, update, delete', () => {
  test('the Python body (vault_id, zero defaults) creates a secret; the response never holds the value', async () => {
    const vault = await pythonVault('prod');
    const secret = await pythonSecret(vault.id, 'DB_PASSWORD', PLAINTEXT);
    assert.match(secret.id, /^secret_[0-9A-Za-z]{27}$/);
    assert.deepEqual(secret, {
      id: secret.id,
      uri: `${BASE}/vault_secrets/${secret.id}`,
      created_at: '2026-03-01T12:00:00Z',
      updated_at: '2026-03-01T12:00:00Z',
      name: 'DB_PASSWORD',
      description: '',
      metadata: '',
      created_by: { id: api.userId, uri: `${BASE}/users/${api.userId}` },
      last_updated_by: { id: api.userId, uri: `${BASE}/users/${api.userId}` },
      vault: { id: vault.id, uri: `${BASE}/vaults/${vault.id}` },
      vault_name: 'prod',
    });
    assert.deepEqual((await send('GET', `/vault_secrets/${secret.id}`)).body, secret);
    assert.deepEqual((await send('GET', '/vault_secrets')).body, { secrets: [secret], uri: `${BASE}/vault_secrets`, next_page_uri: null });
    assert.equal(await api.burrow.revealSecretValue(api.accountId, secret.id), PLAINTEXT);
  });

  test('the Go body names the vault by vault_name and leaves zero fields out', async () => {
    const vault = await pythonVault('by/name');
    const secret = await created('/vault_secrets', { name: 'TOKEN', value: 'v', vault_name: 'by/name' });
    assert.deepEqual(secret.vault, { id: vault.id, uri: `${BASE}/vaults/${vault.id}` });
    assert.equal((await created('/vault_secrets', { name: 'BOTH', value: 'v', vault_id: vault.id, vault_name: 'by/name' })).vault.id, vault.id);
  });

  test('the vault: 24008 when neither is sent, 24006 for an unknown or foreign id, 24009 for an unknown name', async () => {
    const vault = await pythonVault('mine');
    assertError(await send('POST', '/vault_secrets', { name: 'N', value: 'v', metadata: '', description: '', vault_id: '' }), 400, 24008, /^vault_id: is required/);
    assertError(await send('POST', '/vault_secrets', { name: 'N', value: 'v', vault_id: 'vault_2mZ8q3Ck6wFf3NQ6lWq0DQ3xJ8o' }), 404, 24006, /^vault_id: vault 'vault_2mZ8q3Ck6wFf3NQ6lWq0DQ3xJ8o' was not found/);
    assertError(await send('POST', '/vault_secrets', { name: 'N', value: 'v', vault_name: 'nope' }), 404, 24009, /^vault_name: no vault is named "nope"/);
    const b = await api.burrow.createAccount({ name: 'B' });
    assertError(await send('POST', '/vault_secrets', { name: 'N', value: 'v', vault_id: vault.id }, { token: b.token }), 404, 24006, /was not found/);
    assertError(await send('POST', '/vault_secrets', { name: 'N', value: 'v', vault_name: 'mine' }, { token: b.token }), 404, 24009, /no vault is named/);
    const other = await pythonVault('other');
    assertError(await send('POST', '/vault_secrets', { name: 'N', value: 'v', vault_id: vault.id, vault_name: 'other' }), 400, 215, new RegExp(`^vault_name: names vault '${other.id}', but vault_id is '${vault.id}'`));
  });

  test('names: required (24001), a-zA-Z0-9_/. (24000), at most 255 characters (24002), unique within a vault (24005)', async () => {
    const vault = await pythonVault('v');
    const other = await pythonVault('w');
    assertError(await send('POST', '/vault_secrets', { name: '', value: 'v', metadata: '', description: '', vault_id: vault.id }), 400, 24001, /^name: must not be empty/);
    assertError(await send('POST', '/vault_secrets', { name: 'a-b', value: 'v', vault_id: vault.id }), 400, 24000, /^name: "a-b" is not a secret name/);
    assertError(await send('POST', '/vault_secrets', { name: 'n'.repeat(256), value: 'v', vault_id: vault.id }), 400, 24002, /^name: must be at most 255 characters \(got 256\)/);
    const first = await pythonSecret(vault.id, 'KEY', 'one');
    assertError(await send('POST', '/vault_secrets', { name: 'KEY', value: 'two', vault_id: vault.id }), 409, 24005, new RegExp(`^name: secret '${first.id}' already has the name "KEY" in this vault`));
    assert.equal((await pythonSecret(other.id, 'KEY', 'two')).name, 'KEY', 'the same name in another vault');
    const second = await pythonSecret(vault.id, 'KEY2', 'two');
    assertError(await send('PATCH', `/vault_secrets/${second.id}`, { name: 'KEY' }), 409, 24005, /unique within a vault/);
    assert.equal((await send('PATCH', `/vault_secrets/${second.id}`, { name: 'KEY3' })).status, 200);
    assert.equal((await pythonSecret(vault.id, 'KEY2', 'three')).name, 'KEY2', 'the old name is free again');
  });

  test('values: required (24003), at most 64 KiB (24004); the messages never quote a value', async () => {
    const vault = await pythonVault('v');
    assertError(await send('POST', '/vault_secrets', { name: 'N', value: '', metadata: '', description: '', vault_id: vault.id }), 400, 24003, /^value: must not be empty/);
    assertError(await send('POST', '/vault_secrets', { name: 'N', vault_id: vault.id }), 400, 24003, /^value: must not be empty/);
    const big = await send('POST', '/vault_secrets', { name: 'N', value: `${PLAINTEXT}${'x'.repeat(65_536)}`, vault_id: vault.id });
    assertError(big, 400, 24004, /^value: must be at most 65536 bytes \(got 65572\)/);
    assert.ok(!big.text.includes(PLAINTEXT));
    const typed = await send('POST', '/vault_secrets', { name: 'N', value: { nested: PLAINTEXT }, vault_id: vault.id });
    assert.equal(typed.status, 400);
    assert.ok(!typed.text.includes(PLAINTEXT), typed.text);
    assert.equal((await created('/vault_secrets', { name: 'MAX', value: 'é'.repeat(32_768), vault_id: vault.id })).name, 'MAX');
  });

  test('update: the Python body (only what was given) changes the value, name, description, metadata; never the vault', async () => {
    const vault = await pythonVault('v');
    const secret = await pythonSecret(vault.id, 'S', PLAINTEXT);
    api.clock.advance(5);
    const res = await send('PATCH', `/vault_secrets/${secret.id}`, { value: 'rotated' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { ...secret, updated_at: '2026-03-01T12:00:05Z' });
    assert.equal(await api.burrow.revealSecretValue(api.accountId, secret.id), 'rotated');
    const renamed = await send('PATCH', `/vault_secrets/${secret.id}`, { name: 'S2', description: 'd', metadata: 'm' });
    assert.deepEqual([renamed.body.name, renamed.body.description, renamed.body.metadata], ['S2', 'd', 'm']);
    assert.equal(await api.burrow.revealSecretValue(api.accountId, secret.id), 'rotated', 'a PATCH without value keeps it');
    assertError(await send('PATCH', `/vault_secrets/${secret.id}`, { value: '' }), 400, 24003, /^value: must not be empty/);
    assertError(await send('PATCH', `/vault_secrets/${secret.id}`, { vault_id: vault.id }), 400, 214, /^vault_id: unknown field; supported fields: name, value, description, metadata/);
    assert.equal((await send('PATCH', `/vault_secrets/${secret.id}`, { id: secret.id })).status, 200, 'the id of the path may be repeated');
  });

  test('renaming a vault renames it in its secrets', async () => {
    const vault = await pythonVault('before');
    const secret = await pythonSecret(vault.id, 'S', 'v');
    await send('PATCH', `/vaults/${vault.id}`, { name: 'after' });
    assert.equal((await send('GET', `/vault_secrets/${secret.id}`)).body.vault_name, 'after');
    assert.equal((await send('GET', `/vault_secrets/${secret.id}`)).body.updated_at, secret.updated_at);
  });

  test('delete: 204, then 404 everywhere', async () => {
    const vault = await pythonVault('v');
    const secret = await pythonSecret(vault.id, 'S', 'v');
    assert.equal((await send('DELETE', `/vault_secrets/${secret.id}`)).status, 204);
    assert.equal((await send('GET', `/vault_secrets/${secret.id}`)).status, 404);
    assert.equal((await send('DELETE', `/vault_secrets/${secret.id}`)).status, 404);
    await assert.rejects(api.burrow.revealSecretValue(api.accountId, secret.id), /was not found/);
  });
});

describe('GET /vaults/{id}/secrets (vaults.get_secrets_by_vault)', () => {
  test("pages one vault's secrets newest first, with next_page_uri under the vault", async () => {
    const vault = await pythonVault('v');
    const other = await pythonVault('w');
    const mine = [];
    for (let i = 0; i < 5; i++) {
      mine.push((await pythonSecret(vault.id, `S${i}`, `value-${i}`)).id);
      await pythonSecret(other.id, `S${i}`, `other-${i}`);
    }
    const first = await send('GET', `/vaults/${vault.id}/secrets?limit=2`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.secrets.map((s: any) => s.id), [mine[4], mine[3]]);
    assert.equal(first.body.uri, `${BASE}/vaults/${vault.id}/secrets`);
    assert.equal(first.body.next_page_uri, `${BASE}/vaults/${vault.id}/secrets?limit=2&before_id=${mine[3]}`);
    const second = await send('GET', new URL(first.body.next_page_uri).pathname + new URL(first.body.next_page_uri).search);
    assert.deepEqual(second.body.secrets.map((s: any) => s.id), [mine[2], mine[1]]);
    const last = await send('GET', `/vaults/${vault.id}/secrets?limit=2&before_id=${mine[1]}`);
    assert.deepEqual(last.body.secrets.map((s: any) => s.id), [mine[0]]);
    assert.equal(last.body.next_page_uri, null);
    assert.deepEqual((await send('GET', `/vaults/${vault.id}/secrets`)).body.secrets[0], (await send('GET', `/vault_secrets/${mine[4]}`)).body);
  });

  test('an empty vault lists []; an unknown or foreign vault is a 404; unknown parameters are refused', async () => {
    const vault = await pythonVault('v');
    assert.deepEqual((await send('GET', `/vaults/${vault.id}/secrets`)).body, { secrets: [], uri: `${BASE}/vaults/${vault.id}/secrets`, next_page_uri: null });
    const b = await api.burrow.createAccount({ name: 'B' });
    assert.equal((await send('GET', `/vaults/${vault.id}/secrets`, undefined, { token: b.token })).status, 404);
    assert.equal((await send('GET', '/vaults/vault_unknown/secrets')).status, 404);
    assertError(await send('GET', `/vaults/${vault.id}/secrets?filter=true`), 400, 231, /unknown query parameter 'filter'/);
  });
});

describe('secret values are write-only', () => {
  test('no response, audit event, journal entry, store record or snapshot holds the plaintext', async () => {
    const destination = await created('/event_destinations', { format: 'json', target: { stream: { auth: { role: { role_ref: 'r' } }, stream_ref: 's' } } });
    const types = ['created', 'updated', 'deleted'].flatMap((action) => [`vault_${action}.v0`, `secret_${action}.v0`]);
    await created('/event_subscriptions', { sources: types.map((type) => ({ type })), destination_ids: [destination.id] });
    const seen: TestResponse[] = [];
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await send(method, path, body);
      seen.push(res);
      return res;
    };
    const vault = (await call('POST', '/vaults', { name: 'v', metadata: '', description: '' })).body;
    const secret = (await call('POST', '/vault_secrets', { name: 'S', value: PLAINTEXT, metadata: '', description: '', vault_id: vault.id })).body;
    await call('GET', `/vault_secrets/${secret.id}`);
    await call('GET', '/vault_secrets');
    await call('GET', `/vaults/${vault.id}/secrets`);
    await call('PATCH', `/vault_secrets/${secret.id}`, { value: `${PLAINTEXT}-2` });
    await call('POST', '/vault_secrets', { name: 'S', value: PLAINTEXT, vault_id: vault.id });
    await call('POST', '/vault_secrets', { name: 'bad name', value: PLAINTEXT, vault_id: vault.id });
    await call('POST', '/vault_secrets', { name: 'T', value: PLAINTEXT, vault_id: vault.id, extra: PLAINTEXT.length });
    for (const res of seen) assert.ok(!res.text.includes(PLAINTEXT), `${res.status}: ${res.text}`);

    const events = (await api.burrow.outbox(api.accountId, destination.id)).events;
    assert.deepEqual(events.map((e) => e.event_type), ['vault_created.v0', 'secret_created.v0', 'secret_updated.v0']);
    assert.deepEqual(events[1]!.object, secret);
    assert.ok(!JSON.stringify(events).includes(PLAINTEXT));
    assert.ok(!JSON.stringify(delivered).includes(PLAINTEXT));

    const journal = await api.request('GET', '/_burrow/requests?limit=1000', undefined, { token: OPERATOR_TOKEN });
    assert.ok(journal.body.requests.length >= seen.length, journal.text.slice(0, 200));
    assert.ok(!journal.text.includes(PLAINTEXT));

    for (const path of [`/_burrow/accounts/${api.accountId}/resources/secrets`, `/_burrow/accounts/${api.accountId}/records/${secret.id}`]) {
      const inspected = await api.request('GET', path, undefined, { token: OPERATOR_TOKEN });
      assert.equal(inspected.status, 200, inspected.text);
      assert.match(inspected.text, new RegExp(secret.id));
      assert.ok(!inspected.text.includes(PLAINTEXT), `the inspector's ${path}`);
    }

    const snapshot = await api.request('GET', '/_burrow/snapshot', undefined, { token: OPERATOR_TOKEN });
    assert.equal(snapshot.status, 200);
    assert.ok(!snapshot.text.includes(PLAINTEXT));
    assert.ok(!snapshot.text.includes(Buffer.from(PLAINTEXT).toString('base64').slice(0, 20)));
    assert.ok(!(await everyStoredRecord(api.burrow.store)).includes(PLAINTEXT));
    assert.match(await everyStoredRecord(api.burrow.store), /"alg":"A256GCM"/);
  });

  test('the OpenAPI document names the operations and marks no example value', async () => {
    const doc = (await api.request('GET', '/_burrow/openapi.json', undefined, { token: OPERATOR_TOKEN })).body;
    assert.deepEqual(Object.keys(doc.paths['/vaults/{id}/secrets']), ['get']);
    assert.equal(doc.paths['/vaults/{id}/secrets'].get.operationId, 'vaults.get_secrets_by_vault');
    const create = doc.paths['/vault_secrets'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(Object.keys(create.properties).sort(), ['description', 'metadata', 'name', 'value', 'vault_id', 'vault_name']);
    assert.equal(create.properties.value.examples, undefined);
    assert.equal(create.properties.value.writeOnly, true);
    assert.ok(!Object.keys(doc.paths['/vault_secrets/{id}'].patch.requestBody.content['application/json'].schema.properties).includes('vault_id'));
  });
});

describe('the sealing key', () => {
  test('a second server over the same state unseals with the key the state keeps', async () => {
    const vault = await pythonVault('v');
    const secret = await pythonSecret(vault.id, 'S', PLAINTEXT);
    const again = createBurrow({ store: api.burrow.store });
    assert.equal(await again.revealSecretValue(api.accountId, secret.id), PLAINTEXT);
  });

  test('a sealed value copied onto another secret does not open', async () => {
    const vault = await pythonVault('v');
    const one = await pythonSecret(vault.id, 'ONE', PLAINTEXT);
    const two = await pythonSecret(vault.id, 'TWO', 'other');
    const scope = { account: api.accountId, kind: 'secret' };
    const stolen = (await api.burrow.store.get(scope, one.id))!.sealed;
    await api.burrow.store.transaction(async (tx) => tx.put(scope, { ...(await tx.get(scope, two.id))!, sealed: stolen }));
    await assert.rejects(api.burrow.revealSecretValue(api.accountId, two.id), /unable to authenticate|Unsupported state/);
  });

  test('with an operator key the store keeps only a check value; servers with another key or none refuse (500, 9008)', async () => {
    const key = Buffer.alloc(32, 7);
    const keyed = await createTestInstance({ secretsKey: key.toString('base64') });
    const vault = (await keyed.request('POST', '/vaults', { name: 'v' })).body;
    const secret = (await keyed.request('POST', '/vault_secrets', { name: 'S', value: PLAINTEXT, vault_id: vault.id })).body;
    const stored = await everyStoredRecord(keyed.burrow.store);
    assert.ok(!stored.includes(key.toString('base64')) && !stored.includes(key.toString('hex')));
    assert.match(stored, /"check":"[0-9a-f]{64}"/);
    assert.equal(await createBurrow({ store: keyed.burrow.store, secretsKey: key.toString('hex') }).revealSecretValue(keyed.accountId, secret.id), PLAINTEXT);

    const wrongKey = createBurrow({ store: keyed.burrow.store, secretsKey: Buffer.alloc(32, 8) });
    await assert.rejects(wrongKey.revealSecretValue(keyed.accountId, secret.id), /different secretsKey/);
    const wrong = await wrongKey.client(keyed.token).call('secrets.update', { params: { id: secret.id }, body: { value: 'x' } }).catch((error) => error);
    assert.equal(wrong.status, 500);
    assert.equal(wrong.code, 9008);
    assert.match(wrong.message, /different secretsKey/);
    assert.ok(!wrong.message.includes('x'.repeat(2)));
    const none = await createBurrow({ store: keyed.burrow.store }).client(keyed.token).call('secrets.create', { body: { name: 'T', value: 'v', vault_id: vault.id } }).catch((error) => error);
    assert.equal(none.code, 9008);
    assert.match(none.message, /sealed with an operator key/);
    const late = await createBurrow({ store: api.burrow.store, secretsKey: key }).client(api.token).call('secrets.create', { body: { name: 'T', value: 'v', vault_id: (await pythonVault('w')).id } });
    assert.equal(late.name, 'T', 'a state without secrets takes the first key it is given');
  });

  test('a key that is not 32 bytes stops createBurrow with a message that does not echo it', () => {
    assert.throws(() => createBurrow({ store: api.burrow.store, secretsKey: 'c2hvcnQ=' }), (error: Error) => /must be 32 bytes/.test(error.message) && !error.message.includes('c2hvcnQ='));
  });
});

describe('the typed in-process client', () => {
  test('resource("vaults") and resource("secrets") do what HTTP does', async () => {
    const client = api.burrow.client(api.token);
    const vault = await client.resource('vaults').create({ name: 'in_process' });
    const secret = await client.resource('secrets').create({ name: 'S', value: PLAINTEXT, vault_id: vault.id });
    assert.equal(secret.vault_name, 'in_process');
    assert.deepEqual((await client.call('vaults.get_secrets_by_vault', { params: { id: vault.id } })).secrets, [secret]);
    assert.equal((await client.resource('secrets').update(secret.id, { description: 'd' })).description, 'd');
    await client.resource('secrets').delete(secret.id);
    await client.resource('vaults').delete(vault.id);
    assert.deepEqual((await client.resource('vaults').list()).vaults, []);
  });
});

async function everyStoredRecord(store: Store): Promise<string> {
  const out: string[] = [];
  for (const scope of await store.scopes()) {
    for (let page = await store.page(scope, { limit: 500 }); ; ) {
      out.push(...page.map((record) => JSON.stringify(record)));
      if (page.length < 500) break;
      page = await store.page(scope, { beforeId: page[page.length - 1]!.id, limit: 500 });
    }
  }
  return out.join('\n');
}
