import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore } from '../../../adapters/stores/memory-store.ts';
import { runStoreConformance } from './conformance.ts';

runStoreConformance('memory', { create: async () => new MemoryStore() });

test('memory: pages stay exact after many deletes among 100k records', async () => {
  const store = new MemoryStore();
  const scope = { account: 'ac_1', kind: 'api_key' };
  const id = (n: number) => `ak_${String(n).padStart(6, '0')}`;
  await store.transaction(async (tx) => {
    for (let n = 0; n < 100_000; n++) await tx.put(scope, { id: id(n) });
  });
  await store.transaction(async (tx) => {
    for (let n = 99_999; n >= 50_000; n -= 1) if (n % 3 !== 0) await tx.delete(scope, id(n));
  });
  const page = await store.page(scope, { limit: 5 });
  assert.deepEqual(page.map((r) => r.id), [99_999, 99_996, 99_993, 99_990, 99_987].map(id));
  const older = await store.page(scope, { beforeId: id(50_001), limit: 3 });
  assert.deepEqual(older.map((r) => r.id), [49_999, 49_998, 49_997].map(id), 'ak_050000 was deleted');
});
