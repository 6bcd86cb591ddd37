import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { ApiError, createBurrow, type ResourceClient } from '../../lib/index.ts';
import { LIMITS } from '../../lib/limits.ts';
import { FILTER_RECORD_COST, SCAN_BATCH } from '../../lib/engine/list-filter.ts';
import { compileFilter } from '../../lib/conventions/cel.ts';
import { IdFactory, seededRandom } from '../../lib/conventions/ids.ts';

/**
 * The cost budget of a filtered page (`filter_page_cost`): each record scanned costs the filter's
 * evaluation cost (its syntax nodes) plus FILTER_RECORD_COST. Thousands of records are needed to reach it, so this runs
 * once, in-process over a MemoryStore (test/engine/list-filter.http.test.ts covers the paging itself).
 */

/** 51 comparisons that never match: 254 syntax nodes, near the most a filter may have. */
const RARE = Array.from({ length: 51 }, (_, i) => `obj.description == "never ${i}"`).join(' || ');
const NODES = 254;
/** The records one page may scan with RARE. */
const FITS = Math.floor(LIMITS.filter_page_cost.value / (NODES + FILTER_RECORD_COST));

let policies: ResourceClient;
const ids: string[] = [];
before(async () => {
  const burrow = createBurrow({ store: new MemoryStore(), baseUrl: 'http://burrow.test' });
  const { token } = await burrow.createAccount();
  policies = burrow.client(token).resource('ip_policies');
  for (let i = 0; i <= FITS; i++) ids.push(String((await policies.create({ description: i === FITS ? 'wanted' : `p${i}` })).id));
});

describe('filter_page_cost', () => {
  test('a page scans up to the budget: FITS records without a match give an empty last page', async () => {
    const page = await policies.list({ filter: RARE, before_id: ids.at(-1)! });
    assert.deepEqual([page.ip_policies, page.next_page_uri], [[], null]);
  });

  test('one record more, with no match, is an empty page whose next_page_uri goes on below the last record scanned', async () => {
    const first = await policies.list({ filter: RARE });
    assert.deepEqual(first.ip_policies, []);
    assert.equal(first.next_page_uri, `http://burrow.test/ip_policies?limit=100&before_id=${ids[1]}&filter=${encodeURIComponent(RARE)}`);
    const next = await policies.list({ filter: RARE, before_id: ids[1]! });
    assert.deepEqual([next.ip_policies, next.next_page_uri], [[], null]);
  });

  test('a page that runs out answers its matches, and its next page finds the match past the budget, each once', async () => {
    const filter = ['obj.description == "wanted"', 'obj.description == "p0"', ...RARE.split(' || ').slice(2)].join(' || ');
    const first = await policies.list({ filter, limit: '1' });
    assert.deepEqual(first.ip_policies.map((p: { id: string }) => p.id), [ids.at(-1)]);
    assert.match(String(first.next_page_uri), new RegExp(`before_id=${ids[1]}&`));
    const next = await policies.list({ filter, limit: '1', before_id: ids[1]! });
    assert.deepEqual(next.ip_policies.map((p: { id: string }) => p.id), [ids[0]]);
    assert.equal(next.next_page_uri, null);
  });
});

describe('a rare match among 100,000 API keys (issue 43)', () => {
  const RECORDS = 100_000;
  /** Where the old keys are, counted from the oldest: both ends, one batch apart, and five in a row. */
  const OLD = new Set([0, 1, SCAN_BATCH + 1, 50_000, 50_001, 50_002, 50_003, 50_004, 77_777, RECORDS - 1]);
  const FILTER = 'obj.created_at < timestamp("2000-01-01T00:00:00Z")';
  let keys: ResourceClient;
  let expected: string[];

  before(async () => {
    const store = new MemoryStore();
    const burrow = createBurrow({ store, baseUrl: 'http://burrow.test' });
    const { token, accountId, apiKeyId } = await burrow.createAccount();
    keys = burrow.client(token).resource('api_keys');
    const scope = { account: accountId, kind: 'api_key' };
    const admin = (await store.get(scope, apiKeyId))!;
    // Straight into the store (100,000 creates through the API would take minutes), older than the admin key.
    const made = new IdFactory(seededRandom(43), () => new Date('2026-01-01T00:00:00Z'));
    const ids = Array.from({ length: RECORDS }, () => `ak_${made.ksuid()}`);
    await store.transaction(async (tx) => {
      for (const [n, id] of ids.entries()) {
        await tx.put(scope, { ...admin, id, created_at: OLD.has(n) ? '1999-12-31T00:00:00Z' : '2026-01-01T00:00:00Z', description: `key ${n}`, token_hash: `hash ${n}` });
      }
    });
    expected = ids.filter((_, n) => OLD.has(n)).reverse();
  });

  test('limit=5 is never refused: following next_page_uri finds every old key exactly once, within the page budget', async () => {
    const perPage = Math.floor(LIMITS.filter_page_cost.value / (compileFilter(FILTER, () => new Date()).cost + FILTER_RECORD_COST));
    const found: string[] = [];
    let pages = 0;
    for (let beforeId: string | undefined; ; ) {
      const page = await keys.list({ filter: FILTER, limit: '5', ...(beforeId === undefined ? {} : { before_id: beforeId }) });
      pages++;
      assert.ok(page.keys.length <= 5);
      found.push(...page.keys.map((key: { id: string }) => key.id));
      if (page.next_page_uri === null) break;
      const next = new URL(String(page.next_page_uri));
      assert.deepEqual([next.searchParams.get('limit'), next.searchParams.get('filter')], ['5', FILTER]);
      beforeId = next.searchParams.get('before_id')!;
    }
    assert.deepEqual(found, expected);
    // Each page scans at most perPage records, and only a page holding 5 matches stops before its budget.
    assert.ok(pages >= Math.ceil((RECORDS + 1) / perPage), `${pages} pages of up to ${perPage} records`);
    assert.ok(pages <= Math.ceil((RECORDS + 1) / perPage) + Math.ceil(expected.length / 5), `${pages} pages of up to ${perPage} records`);
  });
});
