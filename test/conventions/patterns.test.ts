import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import * as v from 'valibot';
import { ApiError } from '../../lib/conventions/errors.ts';
import { parseInput } from '../../lib/conventions/fields.ts';
import { re2Cost, re2Pattern, re2Problem, withRe2Budget } from '../../lib/conventions/patterns.ts';
import { LIMITS } from '../../lib/limits.ts';

/** The instructions of the program re2js compiles (its internals: the test measures what the estimate bounds). */
const instructions = (pattern: string): number | undefined => {
  try {
    return (RE2JS.compile(pattern) as unknown as { re2Input: { prog: { numInst(): number } } }).re2Input.prog.numInst();
  } catch {
    return undefined;
  }
};

const atom = fc.constantFrom('a', 'é', '.', '\\d', '\\pL', '\\p{Greek}', '[a-z]', '[^x]', '[]a]', '[[:alpha:]]', '\\b', '^', '$', '\\Qa|b\\E', '(?i)', '\\x{41}', '\\z', '{', 'x{,3}');
const pattern: fc.Memo<string> = fc.memo((n) =>
  n <= 1
    ? atom
    : fc.oneof(
        atom,
        fc.tuple(pattern(n - 1), pattern(n - 1)).map(([a, b]) => a + b),
        fc.tuple(pattern(n - 1), pattern(n - 1)).map(([a, b]) => `${a}|${b}`),
        pattern(n - 1).map((a) => `(${a})`),
        pattern(n - 1).map((a) => `(?:${a})`),
        pattern(n - 1).map((a) => `(?P<g${a.length}>${a})`),
        fc.tuple(pattern(n - 1), fc.constantFrom('*', '+', '?', '*?', '{3}', '{2,5}', '{0,4}', '{2,}', '{0}', '{0,}', '{2}?')).map(([a, op]) => `(?:${a})${op}`),
        fc.tuple(atom, fc.constantFrom('*', '+', '?', '{3}', '{2,5}', '{10}', '{0,7}')).map(([a, op]) => `${a}${op}`),
      ),
);

describe('re2Cost: the estimate checked before compiling', () => {
  test('is at least the instructions re2js compiles, for every pattern it compiles', () => {
    fc.assert(
      fc.property(pattern(7), (text) => {
        const compiled = instructions(text);
        return compiled === undefined || re2Cost(text) >= compiled;
      }),
      { seed: 26, numRuns: 3000 },
    );
  });

  test('repetition counts multiply; characters and Unicode classes add', () => {
    assert.equal(re2Cost('x{1000}'), 1000 + 8 + 7);
    assert.equal(re2Cost('(?:x{10}){10}'), 100 + 8 + 13);
    assert.equal(re2Cost('\\pL'), 1 + 8 + 3 + 200);
    assert.ok(re2Cost('(?:(?:x{1000}){1000}){1000}') > 1e9);
    // RE2 refuses counts over 1,000 while parsing, before expanding anything: no estimate needed.
    assert.equal(re2Cost('x{1001}'), 1 + 8 + 7);
  });
});

describe('RE2 pattern bounds', () => {
  test('a pattern over re2_pattern_cost is refused without compiling, naming the limit', () => {
    const limit = LIMITS.re2_pattern_cost.value;
    assert.match(re2Problem('[a-z]{1000}'.repeat(300))!, new RegExp(`^costs about 303308 cost units to compile, more than ${limit} \\(limit re2_pattern_cost\\)`));
    assert.equal(re2Problem('[a-z]{100}'), undefined);
    assert.match(re2Problem('(?=x)')!, /^must be an RE2 regular expression \(the vendor's Go syntax\): /);
  });

  test('the patterns of one parse share re2_total_cost; past it, later patterns are refused uncompiled', () => {
    const schema = v.strictObject({ allow: v.array(re2Pattern), deny: v.array(re2Pattern) });
    const each = re2Cost('x{1000}');
    const fits = Math.floor(LIMITS.re2_total_cost.value / each);
    assert.deepEqual(parseInput(schema, { allow: Array(fits).fill('x{1000}'), deny: [] }).allow.length, fits);
    assert.throws(
      () => parseInput(schema, { allow: Array(fits).fill('x{1000}'), deny: Array(3).fill('x{1000}') }),
      (error: ApiError) => {
        assert.equal(error.status, 400);
        assert.match(error.message, new RegExp(`^deny\\[0\\]: the patterns up to this one cost about ${(fits + 1) * each} cost units to compile, more than ${LIMITS.re2_total_cost.value} together \\(limit re2_total_cost\\)`));
        assert.match(error.message, /; deny\[1\]: not compiled: the patterns before it spent the budget \(limit re2_total_cost\)/);
        return true;
      },
    );
  });

  test('a body of 100,000 bad patterns answers a short 400: ten problems, then how many more', () => {
    const schema = v.strictObject({ allow: v.array(re2Pattern) });
    assert.throws(
      () => parseInput(schema, { allow: Array(100_000).fill('(') }),
      (error: ApiError) => {
        assert.match(error.message, /; and 99990 more$/);
        assert.ok(error.message.length < 2000);
        return true;
      },
    );
  });

  test('an inner budget scope counts against the outer one', () => {
    const each = re2Cost('x{1000}');
    const fits = Math.floor(LIMITS.re2_total_cost.value / each);
    const problems = withRe2Budget(() => Array.from({ length: fits + 1 }, () => withRe2Budget(() => re2Problem('x{1000}'))));
    assert.deepEqual(problems.slice(0, fits), Array(fits).fill(undefined));
    assert.match(problems[fits]!, /\(limit re2_total_cost\)$/);
    assert.equal(re2Problem('x{1000}'), undefined, 'outside a scope, a pattern is checked alone');
  });
});
