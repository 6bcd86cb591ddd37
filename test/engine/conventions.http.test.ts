import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { createTestInstance, type TestInstance } from '../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

function assertEnvelope(body: any, status: number, code: number) {
  assert.equal(body.error_code, `ERR_BURROW_${code}`);
  assert.equal(body.status_code, status);
  assert.equal(typeof body.msg, 'string');
  assert.match(body.details.operation_id, /^op_[0-9A-Za-z]{27}$/);
}

describe('authentication', () => {
  test('refuses a request without Authorization with 401 and WWW-Authenticate', async () => {
    const res = await api.request('GET', '/api_keys', undefined, { token: null });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
    assertEnvelope(res.body, 401, 200);
  });

  test('refuses a non-Bearer scheme', async () => {
    const res = await api.request('GET', '/api_keys', undefined, { token: null, headers: { Authorization: 'Basic dXNlcjpwYXNz' } });
    assert.equal(res.status, 401);
    assertEnvelope(res.body, 401, 201);
  });

  test('refuses a malformed token', async () => {
    const res = await api.request('GET', '/api_keys', undefined, { token: null, headers: { Authorization: 'Bearer a b\u0001' } });
    assertEnvelope(res.body, 401, 202);
  });

  test('refuses an unknown token', async () => {
    const res = await api.request('GET', '/api_keys', undefined, { token: '2abcdefghijklmnopqrstuvwxyz_nope' });
    assertEnvelope(res.body, 401, 203);
  });

  test('explains when an API key id is sent instead of its token', async () => {
    const created = await api.request('POST', '/api_keys', {});
    const res = await api.request('GET', '/api_keys', undefined, { token: created.body.id });
    assertEnvelope(res.body, 401, 208);
  });

  test('explains when an agent authtoken is sent instead of an API key', async () => {
    const credential = await api.request('POST', '/credentials', {});
    const res = await api.request('GET', '/api_keys', undefined, { token: credential.body.token });
    assertEnvelope(res.body, 401, 206);
  });

  test('a deleted key stops authenticating at once', async () => {
    const created = await api.request('POST', '/api_keys', {});
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: created.body.token })).status, 200);
    assert.equal((await api.request('DELETE', `/api_keys/${created.body.id}`)).status, 204);
    const res = await api.request('GET', '/api_keys', undefined, { token: created.body.token });
    assertEnvelope(res.body, 401, 203);
  });
});

describe('Service-Version header', () => {
  test('a missing header is treated as version 2', async () => {
    const res = await api.request('GET', '/api_keys', undefined, { headers: { 'Service-Version': null } });
    assert.equal(res.status, 200);
  });

  test('another version is a 400 listing the supported ones', async () => {
    const res = await api.request('GET', '/api_keys', undefined, { headers: { 'Service-Version': '1' } });
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 400, 217);
    assert.match(res.body.msg, /supported versions: 2/);
  });

  test("the vendor clients' header name is read too", async () => {
    const res = await api.request('GET', '/api_keys', undefined, { headers: { 'Service-Version': null, 'Ngrok-Version': '3' } });
    assertEnvelope(res.body, 400, 217);
    assert.equal(res.body.msg, 'Ngrok-Version "3" is not supported; supported versions: 2');
  });

  test('an unsupported version is named as the header it came in', async () => {
    const res = await api.request('GET', '/api_keys', undefined, { headers: { 'Service-Version': '1' } });
    assert.equal(res.body.msg, 'Service-Version "1" is not supported; supported versions: 2');
  });

  test('requireVersionHeader makes a missing header a 400', async () => {
    const strict = await createTestInstance({ requireVersionHeader: true });
    const res = await strict.fetch(new Request('http://burrow.test/api_keys', { headers: { Authorization: `Bearer ${strict.token}` } }));
    assert.equal(res.status, 400);
    assertEnvelope(await res.json(), 400, 218);
  });
});

describe('routing', () => {
  test('an unknown route is a 404 envelope naming the path', async () => {
    const res = await api.request('GET', '/no_such_thing');
    assert.equal(res.status, 404);
    assertEnvelope(res.body, 404, 9002);
    assert.equal(res.body.details.path, '/no_such_thing');
  });

  test('an unknown path near a known route suggests it, with the path\'s own ids in place', async () => {
    const res = await api.request('GET', '/api_key');
    assert.equal(res.status, 404);
    assert.equal(res.body.msg, 'no API route GET /api_key; did you mean /api_keys?');
    assert.equal((await api.request('DELETE', '/ip_policy/ipp_123')).body.msg, 'no API route DELETE /ip_policy/ipp_123; did you mean /ip_policies/ipp_123?');
    assert.equal((await api.request('GET', '/api_keys/ak_1/rule')).body.msg, 'no API route GET /api_keys/ak_1/rule');
  });

  test('a path near no route suggests nothing, however long', async () => {
    assert.equal((await api.request('GET', '/no_such_thing')).body.msg, 'no API route GET /no_such_thing');
    const long = `/${'a'.repeat(8000)}/${'b'.repeat(8000)}`;
    assert.equal((await api.request('GET', long)).body.msg, `no API route GET ${long}`);
  });

  test('an unknown control-plane path suggests the nearest control route', async () => {
    const res = await api.request('GET', '/_burrow/helth', undefined, { token: null });
    assert.equal(res.status, 404);
    assert.equal(res.body.msg, 'no control-plane route GET /_burrow/helth; did you mean /_burrow/health?');
  });

  test('a known path with the wrong method is a 405 with Allow', async () => {
    const res = await api.request('PUT', '/api_keys', {});
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST, GET');
    assertEnvelope(res.body, 405, 9003);
  });

  test('every answer carries its operation id in a header, matching the envelope', async () => {
    const res = await api.request('GET', '/api_keys/ak_missing');
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('burrow-operation-id'), res.body.details.operation_id);
  });

  test('DELETE answers 204 with an empty body', async () => {
    const created = await api.request('POST', '/api_keys', {});
    const res = await api.request('DELETE', `/api_keys/${created.body.id}`);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
  });
});

describe('request bodies', () => {
  test('invalid JSON is a 400 envelope', async () => {
    const res = await api.request('POST', '/api_keys', undefined, { rawBody: '{"description":' });
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 400, 213);
  });

  test('a JSON value that is not an object is a 400', async () => {
    for (const raw of ['[]', '"text"', '42', 'null']) {
      const res = await api.request('POST', '/api_keys', undefined, { rawBody: raw });
      assert.equal(res.status, 400, raw);
      assertEnvelope(res.body, 400, 215);
    }
  });

  test('a body that is not JSON is a 415', async () => {
    const res = await api.request('POST', '/api_keys', undefined, { rawBody: 'description=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    assert.equal(res.status, 415);
    assertEnvelope(res.body, 415, 210);
  });

  test('a body over 1 MiB is a 413', async () => {
    const res = await api.request('POST', '/api_keys', { description: 'x'.repeat(1024 * 1024 + 10) });
    assert.equal(res.status, 413);
    assertEnvelope(res.body, 413, 812);
  });

  test('deeply nested JSON is refused before parsing', async () => {
    const res = await api.request('POST', '/api_keys', undefined, { rawBody: '['.repeat(10_000) + ']'.repeat(10_000) });
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 400, 213);
  });

  test('an empty body on create is an empty object', async () => {
    const res = await api.request('POST', '/api_keys', undefined, { rawBody: '' });
    assert.equal(res.status, 201);
  });

  test('an unknown field is a 400 naming it and the supported fields', async () => {
    const res = await api.request('POST', '/api_keys', { descripton: 'typo' });
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 400, 214);
    assert.equal(res.body.msg, 'descripton: unknown field; supported fields: description, metadata, owner_id');
  });

  test('a wrong type names the field', async () => {
    const res = await api.request('POST', '/api_keys', { metadata: 7 });
    assertEnvelope(res.body, 400, 215);
    assert.equal(res.body.msg, 'metadata: must be a string (got 7)');
  });

  test('limits are UTF-8 bytes, not characters', async () => {
    const ok = await api.request('POST', '/api_keys', { description: 'é'.repeat(127) + 'x' });
    assert.equal(ok.status, 201);
    const res = await api.request('POST', '/api_keys', { description: 'é'.repeat(128) });
    assert.equal(res.status, 400);
    assert.equal(res.body.msg, 'description: must be at most 255 bytes (got 256)');
    const meta = await api.request('POST', '/api_keys', { metadata: 'x'.repeat(4097) });
    assert.equal(meta.body.msg, 'metadata: must be at most 4096 bytes (got 4097)');
  });
});

describe('paging', () => {
  async function createKeys(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await api.request('POST', '/api_keys', { description: `k${i}` })).body.id);
    return ids;
  }

  test('lists newest first with absolute next_page_uri links until null', async () => {
    const created = await createKeys(4);
    const all = [...created].reverse().concat(); // newest first, the account's own admin key is last
    const first = await api.request('GET', '/api_keys?limit=2');
    assert.equal(first.body.uri, 'http://burrow.test/api_keys');
    assert.deepEqual(first.body.keys.map((k: any) => k.id), all.slice(0, 2));
    assert.equal(first.body.next_page_uri, `http://burrow.test/api_keys?limit=2&before_id=${all[1]}`);
    const second = await api.request('GET', first.body.next_page_uri.replace('http://burrow.test', ''));
    assert.deepEqual(second.body.keys.map((k: any) => k.id), all.slice(2, 4));
    const third = await api.request('GET', second.body.next_page_uri.replace('http://burrow.test', ''));
    assert.equal(third.body.keys.length, 1);
    assert.equal(third.body.next_page_uri, null);
  });

  test('accepts beforeId as an alias of before_id', async () => {
    const created = await createKeys(3);
    const res = await api.request('GET', `/api_keys?beforeId=${created[2]}&limit=100`);
    assert.deepEqual(res.body.keys.slice(0, 2).map((k: any) => k.id), [created[1], created[0]]);
  });

  test('ids created within one second still page in creation order', async () => {
    const created = await createKeys(30);
    const ids = [...created].sort();
    assert.deepEqual(ids, created);
  });

  test('rejects a bad limit, unknown and repeated parameters', async () => {
    for (const limit of ['0', '101', 'ten', '-1', '1.5']) {
      const res = await api.request('GET', `/api_keys?limit=${limit}`);
      assert.equal(res.status, 400, limit);
      assertEnvelope(res.body, 400, 233);
    }
    const unknown = await api.request('GET', '/api_keys?page=2');
    assertEnvelope(unknown.body, 400, 231);
    assert.match(unknown.body.msg, /unknown query parameter 'page'; supported: before_id, limit/);
    const repeated = await api.request('GET', '/api_keys?limit=1&limit=2');
    assertEnvelope(repeated.body, 400, 232);
  });
});
