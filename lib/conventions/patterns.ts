import { RE2JS } from 're2js';
import * as v from 'valibot';

/**
 * Regular expressions in the vendor's dialect. The vendor service is written in Go and compiles
 * patterns with RE2 (Go's regexp syntax): `(?i)bot` and `(?P<name>…)` are valid, lookaround and
 * backreferences are not, and every pattern matches in linear time. Burrow checks patterns with
 * re2js, a pure-JavaScript port of RE2 (this is the only module that imports it), so a pattern is
 * accepted exactly when the vendor's RE2 accepts it; JavaScript's own RegExp would refuse valid
 * ones (`(?i)`, `(?P<…>`) and accept invalid ones (lookahead).
 */

/** Why `pattern` is not a valid RE2 pattern, or undefined when it is. */
export function re2Problem(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern);
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/^error parsing regexp: /, '');
  }
}

/** A request field holding an RE2 pattern; the 400 names the field and RE2's reason. */
export const re2Pattern = v.pipe(
  v.string(),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = re2Problem(dataset.value);
    if (problem) addIssue({ message: `must be an RE2 regular expression (the vendor's Go syntax): ${problem} (got ${JSON.stringify(dataset.value)})` });
  }),
);
