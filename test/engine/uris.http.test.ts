import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { populateEveryKind } from '../fixtures/rich-state.ts';
import { BASE, createTestInstance, type TestInstance } from '../helpers.ts';

/**
 * Every `uri` Burrow answers names a route that answers: a client that follows one (the vendor's
 * clients do, for `next_page_uri` and a reference's `uri`) never meets a 404. The state holds a
 * record of every kind, so every response shape is walked.
 */

/** Every string under a key ending in `uri` (`uri`, `next_page_uri`, …), with where it was found. */
function urisIn(value: unknown, at: string, out: Map<string, string>): void {
  if (Array.isArray(value)) value.forEach((item, index) => urisIn(item, `${at}[${index}]`, out));
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (/(^|_)uri$/.test(key) && typeof inner === 'string' && inner !== '') out.set(inner, `${at}.${key}`);
      else urisIn(inner, `${at}.${key}`, out);
    }
  }
}

describe('uris', () => {
  let api: TestInstance;
  const found = new Map<string, string>();
  before(async () => {
    api = await createTestInstance();
    await populateEveryKind(api);
    const kinds = await api.request('GET', `/_burrow/accounts/${api.accountId}/resources`, undefined, { token: 'test-operator-token' });
    assert.equal(kinds.status, 200, kinds.text);
    for (const kind of kinds.body.resources as { name: string; path: string }[]) {
      const list = await api.request('GET', `${kind.path}?limit=2`);
      if (list.status !== 200) continue; // kinds without a list operation
      urisIn(list.body, `GET ${kind.path}`, found);
    }
  });

  test('are absolute, under the base URL (an agent ingress keeps the relative uri of the vendor\'s example)', () => {
    assert.ok(found.size > 40, `walked ${found.size} uris`);
    for (const [uri, where] of found) {
      if (where.startsWith('GET /agent_ingresses.ingresses')) assert.match(uri, /^\/agent_ingresses\/agin_/);
      else assert.ok(uri.startsWith(`${BASE}/`), `${where}: ${uri} is not an absolute URL under ${BASE}`);
    }
  });

  test('each answers 200 to the admin key (a user\'s too, though the vendor publishes no users API)', async () => {
    const missing: string[] = [];
    for (const [uri, where] of found) {
      const res = await api.request('GET', uri.startsWith(BASE) ? uri.slice(BASE.length) : uri);
      if (res.status !== 200) missing.push(`${where}: GET ${uri} → ${res.status} ${res.body?.msg ?? ''}`);
    }
    assert.deepEqual(missing, []);
  });
});
