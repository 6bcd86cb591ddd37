import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { SCAN_BATCH } from '../../lib/engine/list-filter.ts';
import { assertError, BASE, createTestInstance, type TestInstance } from '../helpers.ts';

/**
 * The `filter` list parameter (a CEL expression over `obj`) as the vendor's Go client sends it:
 * `ngrok.FilteredPaging{BeforeID, Limit, Filter}` becomes `url.Values.Encode()`, keys sorted
 * (`before_id`, `filter`, `limit`), and the client then follows `next_page_uri` verbatim until it
 * is null. Its header is `ngrok-version: 2`.
 */

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const NEWER_CLIENT = { 'Service-Version': null, 'ngrok-version': '2' };
const get = (pathAndQuery: string) => api.request('GET', pathAndQuery, undefined, { headers: NEWER_CLIENT });

/** The query string of the Go client's FilteredPaging. */
function goQuery(paging: { before_id?: string; limit?: string; filter?: string }): string {
  const query = new URLSearchParams();
  for (const key of ['before_id', 'filter', 'limit'] as const) if (paging[key] !== undefined) query.set(key, paging[key]!);
  const text = query.toString();
  return text ? `?${text}` : '';
}

async function createPolicies(descriptions: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const description of descriptions) {
    const res = await api.request('POST', '/ip_policies', { description });
    assert.equal(res.status, 201);
    ids.push(res.body.id);
  }
  return ids;
}

/** Every item of a filtered list, following next_page_uri as the Go and Python clients do. */
async function walk(first: string): Promise<{ pages: string[][]; uris: (string | null)[] }> {
  const pages: string[][] = [];
  const uris: (string | null)[] = [];
  for (let next: string | null = first; next !== null; ) {
    const res = await get(next.startsWith(BASE) ? next.slice(BASE.length) : next);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    pages.push(res.body.ip_policies.map((p: { id: string }) => p.id));
    uris.push(res.body.next_page_uri);
    next = res.body.next_page_uri;
    assert.ok(pages.length < 50, 'paging ends');
  }
  return { pages, uris };
}

describe('GET /<list>?filter=… (CEL over obj)', () => {
  test('ip_policies.List(&FilteredPaging{Filter}) answers the matching items, newest first', async () => {
    const ids = await createPolicies(['prod eu', 'staging', 'prod us', 'dev']);
    const res = await get(`/ip_policies${goQuery({ filter: 'obj.description.startsWith("prod")' })}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.ip_policies.map((p: { id: string }) => p.id), [ids[2], ids[0]]);
    assert.equal(res.body.uri, `${BASE}/ip_policies`);
    assert.equal(res.body.next_page_uri, null);
  });

  test('pages fill up to limit with matches; next_page_uri keeps the filter; the walk sees each match once', async () => {
    const descriptions = Array.from({ length: 20 }, (_, i) => (i % 3 === 0 ? `match ${i}` : `other ${i}`));
    const ids = await createPolicies(descriptions);
    const matching = ids.filter((_, i) => i % 3 === 0).reverse();
    const filter = 'obj.description.contains("match")';
    const { pages, uris } = await walk(`/ip_policies${goQuery({ filter, limit: '3' })}`);
    assert.deepEqual(pages, [matching.slice(0, 3), matching.slice(3, 6), matching.slice(6)]);
    assert.equal(uris[0], `${BASE}/ip_policies?limit=3&before_id=${matching[2]}&filter=${encodeURIComponent(filter)}`);
    assert.equal(uris.at(-1), null);
  });

  test('a page that ends exactly on the last match has no next page', async () => {
    const ids = await createPolicies(['match', 'other', 'match', 'other']);
    const res = await get(`/ip_policies${goQuery({ filter: 'obj.description == "match"', limit: '2' })}`);
    assert.deepEqual(res.body.ip_policies.map((p: { id: string }) => p.id), [ids[2], ids[0]]);
    assert.equal(res.body.next_page_uri, null);
  });

  test('before_id (and the TS client\'s beforeId) start below an id; no match is an empty page', async () => {
    const ids = await createPolicies(['a', 'b', 'a', 'b', 'a']);
    const below = await get(`/ip_policies${goQuery({ before_id: ids[4], filter: 'obj.description == "a"' })}`);
    assert.deepEqual(below.body.ip_policies.map((p: { id: string }) => p.id), [ids[2], ids[0]]);
    const alias = await get(`/ip_policies?beforeId=${ids[2]}&filter=${encodeURIComponent('obj.description == "a"')}`);
    assert.deepEqual(alias.body.ip_policies.map((p: { id: string }) => p.id), [ids[0]]);
    const none = await get(`/ip_policies${goQuery({ filter: 'obj.description == "zzz"' })}`);
    assert.deepEqual([none.body.ip_policies, none.body.next_page_uri], [[], null]);
  });

  test(`rare matches across several store batches (${SCAN_BATCH} records each) page correctly`, async () => {
    const total = SCAN_BATCH * 2 + 10;
    const descriptions = Array.from({ length: total }, (_, i) => (i === 1 || i === SCAN_BATCH + 5 || i === total - 2 ? 'needle' : 'hay'));
    const ids: string[] = [];
    for (let start = 0; start < total; start += 50) ids.push(...(await Promise.all(descriptions.slice(start, start + 50).map(async (description) => (await api.request('POST', '/ip_policies', { description })).body.id as string))));
    const sorted = [...ids].sort().reverse();
    const byId = new Map(ids.map((id, i) => [id, descriptions[i]]));
    const needles = sorted.filter((id) => byId.get(id) === 'needle');
    const { pages } = await walk(`/ip_policies${goQuery({ filter: 'obj.description == "needle"', limit: '2' })}`);
    assert.deepEqual(pages, [needles.slice(0, 2), needles.slice(2)]);
  });

  test('times are timestamps: created_at against timestamp(), now() and daysAgo() on the instance clock', async () => {
    const [old] = await createPolicies(['old']);
    api.clock.advance(10 * 86_400);
    const [fresh] = await createPolicies(['fresh']);
    const ids = async (filter: string) => (await get(`/ip_policies${goQuery({ filter })}`)).body.ip_policies.map((p: { id: string }) => p.id);
    assert.deepEqual(await ids('obj.created_at >= daysAgo(7)'), [fresh]);
    assert.deepEqual(await ids('obj.created_at < timestamp("2026-03-05T00:00:00+01:00")'), [old]);
    assert.deepEqual(await ids('obj.created_at <= now()'), [fresh, old]);
  });

  test('the vendor guide\'s examples on other lists: rules by cidr and action, credentials by owner', async () => {
    const [policy] = await createPolicies(['p']);
    const rule = (await api.request('POST', '/ip_policy_rules', { ip_policy_id: policy, cidr: '1.1.0.0/16', action: 'deny' })).body;
    await api.request('POST', '/ip_policy_rules', { ip_policy_id: policy, cidr: '10.0.0.0/8', action: 'deny' });
    const rules = await get(`/ip_policy_rules${goQuery({ filter: 'obj.cidr.contains("1.1.0.0/16") && obj.action == "deny"' })}`);
    assert.deepEqual(rules.body.ip_policy_rules.map((r: { id: string }) => r.id), [rule.id]);
    const byPolicy = await get(`/ip_policy_rules${goQuery({ filter: `obj.ip_policy.id == "${policy}"` })}`);
    assert.equal(byPolicy.body.ip_policy_rules.length, 2);
    const credential = (await api.request('POST', '/credentials', { acl: [] })).body;
    const creds = await get(`/credentials${goQuery({ filter: `obj.owner_id == "${api.userId}" && size(obj.acl) == 0` })}`);
    assert.deepEqual(creds.body.credentials.map((c: { id: string }) => c.id), [credential.id]);
  });

  test('reserved domains by prefix (the guide\'s example), with the domain as answered', async () => {
    for (const domain of ['myapi.example.com', 'myapi-eu.example.com', 'web.example.com']) assert.equal((await api.request('POST', '/reserved_domains', { domain })).status, 201);
    const res = await get(`/reserved_domains${goQuery({ filter: 'obj.domain.startsWith("myapi")' })}`);
    assert.deepEqual(res.body.reserved_domains.map((d: { domain: string }) => d.domain), ['myapi-eu.example.com', 'myapi.example.com']);
  });

  test('vaults and secrets by name; a secret\'s value is not in obj, so no filter reads it', async () => {
    const vault = (await api.request('POST', '/vaults', { name: 'prod' })).body;
    await api.request('POST', '/vaults', { name: 'dev' });
    const vaults = await get(`/vaults${goQuery({ filter: 'obj.name == "prod"' })}`);
    assert.deepEqual(vaults.body.vaults.map((x: { id: string }) => x.id), [vault.id]);
    assert.equal((await api.request('POST', '/vault_secrets', { name: 'DB', value: 'hunter2', vault_id: vault.id })).status, 201);
    const secrets = await get(`/vault_secrets${goQuery({ filter: 'obj.name == "DB"' })}`);
    assert.equal(secrets.body.secrets.length, 1);
    assertError(await get(`/vault_secrets${goQuery({ filter: 'obj.value == "hunter2"' })}`), 400, 250, /No such key: value/);
  });

  test('a bad filter is a 400 250 naming filter', async () => {
    await createPolicies(['x']);
    const refused = async (filter: string, message: RegExp) => assertError(await get(`/ip_policies${goQuery({ filter })}`), 400, 250, message);
    await refused('obj.description ==', /^filter: invalid CEL query: Unexpected token/);
    await refused('obj.nope == "x"', /^filter: invalid CEL query: No such key: nope/);
    await refused('obj.description', /^filter: invalid CEL query: must be a condition/);
    await refused('obj.id.startsWith("ipp_")', /^filter: invalid CEL query: startsWith\(\) is not allowed on the id field obj\.id/);
    await refused('obj.description.matches(".*")', /^filter: invalid CEL query: matches\(\) is not supported in filters/);
    await refused('x'.repeat(5000), /^filter: invalid CEL query: must be at most 2048 characters/);
    assertError(await get('/ip_policies?filter=a&filter=b'), 400, 232, /given more than once/);
  });

  test('lists the vendor does not filter refuse the parameter (231)', async () => {
    assertError(await get(`/backends/static${goQuery({ filter: 'obj.description == ""' })}`), 400, 231, /^unknown query parameter 'filter'; supported: before_id, limit$/);
    assertError(await get(`/edges/tcp${goQuery({ filter: 'true' })}`), 400, 231, /unknown query parameter 'filter'/);
  });
});
