import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { beforeEach, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createFetchHandler } from '../../adapters/http/fetch-handler.ts';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { createBurrow, ManualClock } from '../../lib/index.ts';
import { VERSION } from '../../lib/version.ts';
import { DOCS_URL } from '../../lib/control/operations.ts';
import { createTestInstance, createTestStore, OPERATOR_TOKEN, sendRequest, type TestInstance } from '../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const asOperator = { token: OPERATOR_TOKEN };

describe('GET /_burrow/health', () => {
  test('answers without a token with version, store and uptime', async () => {
    const res = await api.request('GET', '/_burrow/health', undefined, { token: null });
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'ok');
    assert.equal(res.body.version, VERSION);
    assert.equal(res.body.store, api.burrow.store.name);
    assert.match(res.body.store, /^(memory|postgres)$/);
    assert.equal(typeof res.body.uptime_seconds, 'number');
  });

  test('VERSION matches package.json', () => {
    assert.equal(VERSION, JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  });
});

describe('operator token', () => {
  test('is required for everything but health and the OpenAPI document', async () => {
    const missing = await api.request('POST', '/_burrow/accounts', {}, { token: null });
    assert.equal(missing.status, 401);
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer/);
    const apiKey = await api.request('POST', '/_burrow/accounts', {});
    assert.equal(apiKey.status, 403, 'an API key is not the operator token');
    assert.equal(apiKey.body.error_code, 'ERR_BURROW_9006');
  });

  test('is never an account\'s key: an account cannot be created with the operator token as its key', async () => {
    const res = await api.request('POST', '/_burrow/accounts', { token: OPERATOR_TOKEN }, asOperator);
    assert.equal(res.status, 400);
    assert.equal(res.body.error_code, 'ERR_BURROW_215');
    assert.match(res.body.msg, /^token: must not be the operator token/);
    assert.equal((await api.request('GET', '/api_keys', undefined, asOperator)).status, 401);
  });

  test('without a configured token the control plane refuses with a hint', async () => {
    const burrow = createBurrow({ store: new MemoryStore() });
    const res = await sendRequest(createFetchHandler(burrow), 'http://x.test/_burrow/reset', 'POST', {}, { token: 'anything' });
    assert.equal(res.status, 403);
    assert.match(res.body.msg, /--operator-token/);
  });

  test('unknown control routes are 404 and wrong methods 405, in the envelope', async () => {
    assert.equal((await api.request('GET', '/_burrow/nope', undefined, asOperator)).body.error_code, 'ERR_BURROW_9002');
    const wrong = await api.request('DELETE', '/_burrow/health', undefined, asOperator);
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'GET');
  });
});

describe('POST /_burrow/accounts', () => {
  test('creates an isolated account whose admin key works at once', async () => {
    const res = await api.request('POST', '/_burrow/accounts', { name: 'team-b' }, asOperator);
    assert.equal(res.status, 201);
    assert.match(res.body.account_id, /^ac_/);
    assert.match(res.body.token, /_/);
    const created = await api.request('POST', '/credentials', {}, { token: res.body.token });
    assert.equal(created.status, 201);
    assert.equal((await api.request('GET', `/credentials/${created.body.id}`)).status, 404, 'other accounts cannot see it');
  });

  test('accepts a chosen token under the one rule for chosen tokens (as --api-key): a bearer token of at most 256 characters', async () => {
    const res = await api.request('POST', '/_burrow/accounts', { token: 't1-key' }, asOperator);
    assert.equal(res.body.token, 't1-key');
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: 't1-key' })).status, 200);
    for (const token of ['', 'with space', 'ключ', 'a=b', 'x'.repeat(257)]) {
      const refused = await api.request('POST', '/_burrow/accounts', { token }, asOperator);
      assert.equal(refused.status, 400, token);
      assert.match(refused.body.msg, /^token: must (be a bearer token: letters, digits and - \. _ ~ \+ \/ \(then = padding\), at least 1 character|be at most 256 characters)/);
    }
  });
});

describe('POST /_burrow/reset', () => {
  test('undoes an enforced deny-all api restriction', async () => {
    const policy = await api.request('POST', '/ip_policies', {});
    await api.request('POST', '/ip_restrictions', { type: 'api', enforced: true, ip_policy_ids: [policy.body.id] });
    const from = { headers: { 'x-test-source-ip': '10.0.0.1' } };
    assert.equal((await api.request('GET', '/api_keys', undefined, from)).status, 403);
    await api.request('POST', '/_burrow/reset', { account_id: api.accountId }, asOperator);
    assert.equal((await api.request('GET', '/api_keys', undefined, from)).status, 200);
  });
});

describe('/_burrow/clock', () => {
  test('reads, sets and advances a manual clock; creation times follow it', async () => {
    assert.deepEqual((await api.request('GET', '/_burrow/clock', undefined, asOperator)).body, { now: '2026-03-01T12:00:00Z', manual: true });
    assert.equal((await api.request('POST', '/_burrow/clock', { advance_seconds: 90 }, asOperator)).body.now, '2026-03-01T12:01:30Z');
    assert.equal((await api.request('POST', '/_burrow/clock', { now: '2026-04-01T00:00:00+02:00' }, asOperator)).body.now, '2026-03-31T22:00:00Z');
    assert.equal((await api.request('POST', '/api_keys', {})).body.created_at, '2026-03-31T22:00:00Z');
  });

  test('refuses to go backwards, bad times and a system clock', async () => {
    assert.equal((await api.request('POST', '/_burrow/clock', { now: '2020-01-01T00:00:00Z' }, asOperator)).status, 400);
    assert.equal((await api.request('POST', '/_burrow/clock', { now: 'tomorrow' }, asOperator)).body.error_code, 'ERR_BURROW_241');
    assert.equal((await api.request('POST', '/_burrow/clock', { advance_seconds: -1 }, asOperator)).status, 400);
    const live = await createTestInstance({ clock: { now: () => new Date() } });
    const res = await live.request('POST', '/_burrow/clock', { advance_seconds: 1 }, asOperator);
    assert.equal(res.status, 400);
    assert.match(res.body.msg, /--clock/);
  });
});

describe('/_burrow/snapshot', () => {
  test('export then import into a fresh instance restores every resource and key', async () => {
    const policy = await api.request('POST', '/ip_policies', { description: 'kept' });
    await api.request('POST', '/ip_policy_rules', { ip_policy_id: policy.body.id, cidr: '10.0.0.0/8', action: 'allow' });
    const snapshot = await api.request('GET', '/_burrow/snapshot', undefined, asOperator);
    assert.equal(snapshot.status, 200);
    assert.equal(snapshot.body.format, 'burrow-snapshot');
    assert.ok(!snapshot.text.includes(api.token), 'tokens are stored only as hashes');

    const fresh = await createTestInstance({ seed: 2 });
    const imported = await fresh.request('PUT', '/_burrow/snapshot', snapshot.body, asOperator);
    assert.equal(imported.status, 200);
    const got = await fresh.request('GET', `/ip_policies/${policy.body.id}`, undefined, { token: api.token });
    assert.equal(got.status, 200, 'the old API key works on the new instance');
    assert.equal(got.body.description, 'kept');
    assert.equal((await fresh.request('GET', '/api_keys', undefined, { token: fresh.token })).status, 401, 'the state was replaced');
  });

  test('a malformed snapshot is refused and changes nothing', async () => {
    const res = await api.request('PUT', '/_burrow/snapshot', { format: 'burrow-snapshot', version: 2, scopes: [] }, asOperator);
    assert.equal(res.status, 400);
    assert.match(res.body.msg, /^version: /);
    const badRecord = await api.request('PUT', '/_burrow/snapshot', { format: 'burrow-snapshot', version: 1, scopes: [{ account: 'a', kind: 'k', records: [{ name: 'no id' }] }] }, asOperator);
    assert.equal(badRecord.status, 400);
    assert.match(badRecord.body.msg, /^scopes\[0\]: account "a" is not among the snapshot's accounts/);
    assert.equal((await api.request('GET', '/api_keys')).status, 200);
  });
});

describe('GET / (the API root)', () => {
  test('answers without a token where the inspector, the OpenAPI document, health and the docs are', async () => {
    const res = await api.request('GET', '/', undefined, { token: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(res.body, {
      name: 'burrow',
      version: VERSION,
      hint: 'API requests take Authorization: Bearer <API key>; openapi_uri lists every route; the inspector signs in with the operator token',
      inspector_uri: 'http://burrow.test/_burrow/',
      openapi_uri: 'http://burrow.test/openapi.json',
      health_uri: 'http://burrow.test/_burrow/health',
      docs_uri: 'https://github.com/burrow-tunnels/burrow/tree/main/docs',
    });
    assert.deepEqual((await api.request('GET', '/_burrow/about', undefined, { token: null })).body, res.body);
  });

  test('the docs address is in the repository package.json names', () => {
    const { homepage } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    assert.ok(DOCS_URL.startsWith(homepage.replace(/#readme$/, '')), `${DOCS_URL} is not under ${homepage}`);
  });

  test('other methods on / stay an API 404', async () => {
    const res = await api.request('POST', '/', {});
    assert.equal(res.status, 404);
    assert.match(res.body.msg, /^no API route POST \//);
  });
});

describe('GET /openapi.json', () => {
  test('is a valid OpenAPI 3.1 document that lists every route of the router', async () => {
    const res = await api.request('GET', '/openapi.json', undefined, { token: null });
    assert.equal(res.status, 200);
    const result = await new Validator().validate(res.body);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    for (const op of api.burrow.operations) {
      const path = op.path.replace(/:([A-Za-z_]+)/g, '{$1}');
      assert.ok(res.body.paths[path]?.[op.method.toLowerCase()], `${op.method} ${path} is missing`);
      assert.equal(res.body.paths[path][op.method.toLowerCase()].operationId, op.id);
    }
    for (const op of api.burrow.controlOperations) {
      assert.ok(res.body.paths[`/_burrow${op.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`]?.[op.method.toLowerCase()], `${op.method} /_burrow${op.path} is missing`);
    }
    assert.deepEqual((await api.request('GET', '/_burrow/openapi.json', undefined, { token: null })).body, res.body);
  });

  test('request bodies come from the validating schemas', async () => {
    const doc = (await api.request('GET', '/openapi.json', undefined, { token: null })).body;
    const rule = doc.paths['/ip_policy_rules'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(rule.required.sort(), ['action', 'cidr', 'ip_policy_id']);
    assert.deepEqual(rule.properties.action.enum, ['allow', 'deny']);
    assert.equal(rule.additionalProperties, false);
    assert.equal(doc.components.schemas.Error.required.includes('error_code'), true);
  });
});

describe('deterministic mode', () => {
  async function run() {
    const burrow = createBurrow({ store: await createTestStore(), clock: new ManualClock('2026-01-01T00:00:00Z'), seed: 42, baseUrl: 'http://det.test' });
    const account = await burrow.createAccount();
    const client = burrow.client(account.token);
    const key = await client.resource('api_keys').create({ description: 'a' });
    const credential = await client.resource('credentials').create({});
    const policy = await client.resource('ip_policies').create({});
    return { account, key, credential, policy };
  }

  test('the same calls give the same ids, tokens and times', async () => {
    assert.deepEqual(await run(), await run());
    const { key } = await run();
    assert.equal(key.created_at, '2026-01-01T00:00:00Z');
  });
});
