import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { allOperations, type Store } from '../../lib/index.ts';
import { createTestInstance, sendRequest, BASE } from '../helpers.ts';
import { bodyFieldNames, sweepRecords } from '../sweep.ts';

/**
 * Fuzzing every API endpoint with fast-check: random JSON and non-JSON bodies (often with real
 * field names), query strings, headers and path ids. Whatever comes in: never a 5xx, every error
 * in the envelope, and a refused request stores nothing. FUZZ_RUNS sets the cases per endpoint
 * (`npm run test:stress` uses more).
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 12);

// Field names of every body schema, and `id`, which clients repeat in PATCH bodies.
const FIELDS = [...bodyFieldNames(allOperations()), 'id'];

const body = fc.oneof(
  fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string()), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }).map((o) => ({ raw: JSON.stringify(o) })),
  fc.jsonValue({ maxDepth: 4 }).map((v) => ({ raw: JSON.stringify(v) ?? 'null' })),
  fc.string({ maxLength: 60 }).map((s) => ({ raw: s })),
  fc.constant({ raw: undefined as string | undefined }),
);

const headers = fc.record(
  {
    'content-type': fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8', ''),
    'Service-Version': fc.constantFrom('2', '2', '2', '1', 'x'),
  },
  { requiredKeys: [] },
);

const query = fc.dictionary(fc.constantFrom('limit', 'before_id', 'beforeId', 'x', 'limit[]', 'id', 'url'), fc.string({ maxLength: 12 }), { maxKeys: 3 });

/** A digest of everything in the store, to prove that refused requests change nothing. */
async function stateDigest(store: Store): Promise<string> {
  const hash = createHash('sha256');
  for (const scope of await store.scopes()) {
    hash.update(`${scope.account}/${scope.kind}`);
    let beforeId: string | undefined;
    for (;;) {
      const page = await store.page(scope, beforeId === undefined ? { limit: 500 } : { beforeId, limit: 500 });
      for (const record of page) hash.update(JSON.stringify(record));
      if (page.length < 500) break;
      beforeId = page[page.length - 1]!.id;
    }
  }
  return hash.digest('hex');
}

describe('fuzzing every endpoint', () => {
  test(`${RUNS} random requests per endpoint: no 5xx, always the envelope, refused requests store nothing`, async () => {
    const api = await createTestInstance();
    const realIds = [...(await sweepRecords(api)).values()].map((record) => String(record.id));
    let cases = 0;
    const statuses = new Map<number, number>();
    for (const op of api.burrow.operations) {
      const pathId = fc.oneof(fc.constantFrom(...realIds), fc.string({ maxLength: 30 }), fc.constant('ts_0'), fc.constant('..'));
      await fc.assert(
        fc.asyncProperty(body, headers, query, pathId, async (b, h, q, id) => {
          const path = op.path.replace(/:([A-Za-z_]+)/g, () => encodeURIComponent(id) || 'x');
          const search = new URLSearchParams(q).toString();
          const before = await stateDigest(api.burrow.store);
          const res = await sendRequest(api.fetch, `${BASE}${path}${search ? `?${search}` : ''}`, op.method, undefined, {
            token: api.token,
            headers: h,
            ...(b.raw !== undefined && op.method !== 'GET' ? { rawBody: b.raw } : {}),
          });
          cases++;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          assert.ok(res.status < 500, `${op.method} ${path} answered ${res.status}: ${res.text}`);
          if (res.status >= 400) {
            assert.match(res.body?.error_code ?? '', /^ERR_BURROW_\d+$/, `${op.method} ${path}: ${res.text}`);
            assert.equal(res.body.status_code, res.status);
            assert.ok(typeof res.body.msg === 'string' && res.body.msg.length > 0);
            assert.match(res.body.details.operation_id, /^op_/);
            assert.equal(await stateDigest(api.burrow.store), before, `${op.method} ${path} was refused but changed the state`);
          }
        }),
        { numRuns: RUNS, seed: 20261122 },
      );
    }
    console.log(`# fuzz: ${cases} cases over ${api.burrow.operations.length} endpoints; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  });
});
