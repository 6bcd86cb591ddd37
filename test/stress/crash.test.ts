import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crashCycles } from '../fixtures/crash-cycles.ts';

test('20 SIGKILL cycles under 200 concurrent writes lose nothing acknowledged', { timeout: 15 * 60_000 }, async () => {
  const figures = await crashCycles(20, 200);
  assert.ok(figures.acknowledged > 0);
  console.log(`# crash stress: ${JSON.stringify(figures)}`);
});

test('20 kill -9 cycles of the whole `npm start` process group, each restarted at once: no restart refused, nothing acknowledged lost', { timeout: 15 * 60_000 }, async () => {
  const figures = await crashCycles(20, 200, { npmGroup: true });
  assert.ok(figures.acknowledged > 0);
  assert.equal(figures.refusedRestarts, 0);
  console.log(`# crash stress (npm start group): ${JSON.stringify(figures)}`);
});
