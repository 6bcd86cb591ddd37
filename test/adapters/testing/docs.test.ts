import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

/**
 * docs/testing.md shows the testing examples verbatim; test/package/tarball.test.ts runs each of
 * them from an installed tarball, so what a newcomer copies is what the suite runs.
 */

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

for (const example of ['test/examples/quick-start.test.mjs', 'test/examples/vendor-client.mjs', 'test/examples/pytest/conftest.py', 'test/examples/pytest/test_tooling.py']) {
  test(`${example} appears in docs/testing.md verbatim`, () => {
    assert.ok(read('docs/testing.md').includes(read(example).trim()), `docs/testing.md lacks the current text of ${example}`);
  });
}

test('test/examples/traffic-policy.test.mjs appears in the README and docs/testing.md verbatim', () => {
  for (const doc of ['README.md', 'docs/testing.md']) assert.ok(read(doc).includes(read('test/examples/traffic-policy.test.mjs').trim()), `${doc} lacks the current text of the traffic-policy example`);
});

test('the quick start has at most ten lines of set-up before its first test', () => {
  const lines = read('test/examples/quick-start.test.mjs').split('\n');
  const setUp = lines.slice(0, lines.findIndex((line) => line.startsWith('test('))).filter((line) => line.trim() !== '' && !line.startsWith('//'));
  assert.ok(setUp.length <= 10, `${setUp.length} lines:\n${setUp.join('\n')}`);
});
