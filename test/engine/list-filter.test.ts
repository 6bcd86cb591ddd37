import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { ApiError, createBurrow, type ResourceClient } from '../../lib/index.ts';
import { LIMITS } from '../../lib/limits.ts';
import { FILTER_RECORD_COST } from '../../lib/engine/list-filter.ts';

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

  test('one record more, with no match, is a 400 naming the limit and the last record scanned', async () => {
    await assert.rejects(policies.list({ filter: RARE }), (error: ApiError) => {
      assert.equal(error.status, 400);
      assert.equal(error.code, 250);
      assert.equal(
        error.message,
        `filter: no match among the ${FITS} records scanned for this page, and scanning one more would spend more than ${LIMITS.filter_page_cost.value} cost units ` +
          `at ${NODES + FILTER_RECORD_COST} a record (the filter's ${NODES} + ${FILTER_RECORD_COST}) (limit filter_page_cost); narrow the filter, or continue the scan with before_id=${ids[1]}`,
      );
      assert.equal(error.details.last_scanned_id, ids[1]);
      return true;
    });
  });

  test('a page that runs out with matches in hand answers them, and its next page goes on from there', async () => {
    const filter = `obj.description == "wanted" || ${RARE.split(' || ').slice(1).join(' || ')}`;
    const first = await policies.list({ filter });
    assert.deepEqual(first.ip_policies.map((p: { id: string }) => p.id), [ids.at(-1)]);
    assert.match(String(first.next_page_uri), new RegExp(`before_id=${ids.at(-1)}`));
    const next = await policies.list({ filter, before_id: ids.at(-1)! });
    assert.deepEqual([next.ip_policies, next.next_page_uri], [[], null]);
  });
});
