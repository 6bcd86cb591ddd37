import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { crashCycles } from '../fixtures/crash-cycles.ts';

/** A short crash run for every `npm test`; `npm run test:stress` runs 20 cycles of 200 writers. */
describe('crash safety (short run)', () => {
  test('SIGKILLs during concurrent writes lose no acknowledged write, and the file always opens', async () => {
    const figures = await crashCycles(3, 60);
    assert.ok(figures.acknowledged > 0);
    console.log(`# crash: ${JSON.stringify(figures)}`);
  });
});
