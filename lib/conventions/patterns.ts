import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import * as v from 'valibot';
import { LIMITS, limitNote } from '../limits.ts';
import { onFirstUse } from './on-first-use.ts';

/**
 * Regular expressions in the vendor's dialect. The vendor service is written in Go and compiles
 * patterns with RE2 (Go's regexp syntax): `(?i)bot` and `(?P<name>…)` are valid, lookaround and
 * backreferences are not, and every pattern matches in linear time. Burrow checks patterns with
 * re2js, a pure-JavaScript port of RE2 (this is the only module that imports it, on the first pattern:
 * lib/conventions/on-first-use.ts), so a pattern is
 * accepted exactly when the vendor's RE2 accepts it; JavaScript's own RegExp would refuse valid
 * ones (`(?i)`, `(?P<…>`) and accept invalid ones (lookahead).
 *
 * Matching is linear, compiling is not: RE2 expands `x{1000}` into a thousand instructions and
 * `(?:x{1000}){1000}` into a million, and re2js spends about a microsecond on each. So before
 * compiling, Burrow estimates a pattern's cost from its text (`re2Cost`) and refuses a pattern over
 * `re2_pattern_cost`, and patterns that together pass `re2_total_cost` in one request body or
 * traffic policy (lib/limits.ts): compiling what is accepted stays a few milliseconds.
 */

const re2js = onFirstUse(() => (createRequire(import.meta.url)('re2js') as typeof import('re2js')).RE2JS);

/**
 * What one Unicode class (`\pL`, `\p{Greek}`, `\PN`) costs on top of its instruction: re2js builds
 * (and under `(?i)`, folds) the class's range table, at worst (`(?i)[^\pL\pN]`) about as long as
 * compiling 200 instructions.
 */
const UNICODE_CLASS_COST = 200;
/** Instructions every program has: the unanchored prefix, the match and the whole-match capture. */
const PROGRAM_OVERHEAD = 8;
/** RE2 refuses larger repeat counts while parsing, before it expands anything. */
const MAX_REPEAT = 1000;
const REPEAT = /^\{(\d+)(,(\d*))?\}/;

/** A group being read: the finished alternatives' size, the current one's, and its last atom's. */
interface Group {
  done: number;
  branch: number;
  last: number;
  alternatives: number;
  capture: boolean;
}

/** The size of `sub` repeated `min`..`max` times (max -1: no upper bound), as RE2 estimates it. */
function repeated(sub: number, min: number, max: number): number {
  if (max === -1) return min === 0 ? 2 + sub : 1 + min * sub;
  return Math.max(1, max * sub + (max - min));
}

/** The index after the `close` that ends a `{…}`, `<…>` or `:]` starting at `from`, or the end. */
function after(pattern: string, close: string, from: number): number {
  const at = pattern.indexOf(close, from);
  return at < 0 ? pattern.length : at + close.length;
}

/**
 * An upper estimate of the work of compiling `pattern` with re2js, in cost units of about a
 * microsecond: the instructions of its program as RE2 sizes them (a literal character or a class
 * is one, a capture adds two, `*` two, `+` and `?` one, `x{n,m}` m copies plus m−n; repetition
 * counts multiply when repetitions nest), plus one per character of the pattern (parsing), plus
 * UNICODE_CLASS_COST per Unicode class. It reads the text once and never compiles; a pattern RE2
 * would refuse gets some estimate, and RE2's own error when it is compiled.
 */
export function re2Cost(pattern: string): number {
  let unicodeClasses = 0;
  const open: Group[] = [];
  let group: Group = { done: 0, branch: 0, last: 0, alternatives: 1, capture: false };
  const atom = (size: number) => {
    group.branch += size;
    group.last = size;
  };
  const repeat = (size: number) => {
    group.branch += size - group.last;
    group.last = size;
  };
  // An empty alternative or group is still an instruction (RE2 sizes every part at least 1).
  const close = (): number => group.done + Math.max(1, group.branch) + (group.alternatives - 1) + (group.capture ? 2 : 0);
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '\\') {
      const escaped = pattern[i + 1];
      if (escaped === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        const stop = end < 0 ? pattern.length : end;
        for (let k = i + 2; k < stop; k++) atom(1);
        i = end < 0 ? pattern.length : end + 2;
        continue;
      }
      const unicode = escaped === 'p' || escaped === 'P';
      if (unicode) unicodeClasses++;
      // `\p{Greek}`, `\x{41}` and `\pL` (one letter) are one atom each.
      if ((unicode || escaped === 'x') && pattern[i + 2] === '{') i = after(pattern, '}', i + 3);
      else i += unicode ? 3 : 2;
      atom(1);
    } else if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++;
      while (j < pattern.length && pattern[j] !== ']') {
        if (pattern[j] === '\\') {
          if (pattern[j + 1] === 'p' || pattern[j + 1] === 'P') unicodeClasses++;
          j += 2;
        } else if (pattern[j] === '[' && pattern[j + 1] === ':') j = after(pattern, ':]', j + 2);
        else j++;
      }
      i = j + 1;
      atom(1);
    } else if (c === '(') {
      let capture = true;
      i++;
      if (pattern[i] === '?') {
        if (pattern[i + 1] === 'P' || (pattern[i + 1] === '<' && pattern[i + 2] !== '=' && pattern[i + 2] !== '!')) {
          i = after(pattern, '>', i + 1);
        } else {
          // Flags: `(?i)` sets them for the rest of the group, `(?i:…)` opens a group.
          let j = i + 1;
          while (j < pattern.length && pattern[j] !== ')' && pattern[j] !== ':') j++;
          i = j + 1;
          if (pattern[j] !== ':') continue;
          capture = false;
        }
      }
      open.push(group);
      group = { done: 0, branch: 0, last: 0, alternatives: 1, capture };
    } else if (c === ')' && open.length > 0) {
      const size = close();
      group = open.pop()!;
      atom(size);
      i++;
    } else if (c === '|') {
      group.done += Math.max(1, group.branch);
      group.branch = 0;
      group.last = 0;
      group.alternatives++;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      repeat(c === '*' ? 2 + group.last : 1 + group.last);
      i += pattern[i + 1] === '?' ? 2 : 1;
    } else {
      const counts = c === '{' ? REPEAT.exec(pattern.slice(i, i + 16)) : null;
      if (counts) {
        const min = Number(counts[1]);
        const max = counts[2] === undefined ? min : counts[3] === '' ? -1 : Number(counts[3]);
        if (min <= MAX_REPEAT && max <= MAX_REPEAT) repeat(repeated(group.last, min, max));
        i += counts[0].length;
        if (pattern[i] === '?') i++;
      } else {
        atom(1);
        i++;
      }
    }
  }
  while (open.length > 0) {
    const size = close();
    group = open.pop()!;
    atom(size);
  }
  return close() + PROGRAM_OVERHEAD + pattern.length + unicodeClasses * UNICODE_CLASS_COST;
}

/** The budget of the patterns being checked together (one request body or policy), while they are. */
let budget: { spent: number; refused: boolean } | undefined;

/**
 * Runs `check` with one budget for every pattern it checks (`re2_total_cost`): the patterns of one
 * request body, or of one traffic policy. Checks are synchronous (valibot), so the budget is the
 * extent of this call; inside another such call, the outer budget counts.
 */
export function withRe2Budget<T>(check: () => T): T {
  if (budget) return check();
  budget = { spent: 0, refused: false };
  try {
    return check();
  } finally {
    budget = undefined;
  }
}

/**
 * Why `pattern` may not be used, or undefined when it may: RE2 refuses it, or it costs too much.
 * Its cost is checked (alone, and against the budget of `withRe2Budget`) before it is compiled;
 * once the budget is spent, later patterns of the same check are refused without compiling.
 */
export function re2Problem(pattern: string): string | undefined {
  const cost = re2Cost(pattern);
  const limit = LIMITS.re2_pattern_cost.value;
  if (cost > limit) return `costs about ${cost} cost units to compile, more than ${limit} ${limitNote('re2_pattern_cost')}; use smaller repetition counts`;
  if (budget) {
    if (budget.refused) return `not compiled: the patterns before it spent the budget ${limitNote('re2_total_cost')}`;
    budget.spent += cost;
    if (budget.spent > LIMITS.re2_total_cost.value) {
      budget.refused = true;
      return `the patterns up to this one cost about ${budget.spent} cost units to compile, more than ${LIMITS.re2_total_cost.value} together ${limitNote('re2_total_cost')}`;
    }
  }
  try {
    re2js().compile(pattern);
    return undefined;
  } catch (error) {
    return `must be an RE2 regular expression (the vendor's Go syntax): ${(error as Error).message.replace(/^error parsing regexp: /, '')}`;
  }
}

/** `pattern` quoted for a message, its first 100 characters when longer. */
export function quotedPattern(pattern: string): string {
  return pattern.length <= 100 ? JSON.stringify(pattern) : `${JSON.stringify(pattern.slice(0, 100))}… (${pattern.length} characters)`;
}

/** A request field holding an RE2 pattern; the 400 names the field and what is wrong with the pattern. */
export const re2Pattern = v.pipe(
  v.string(),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = re2Problem(dataset.value);
    if (problem) addIssue({ message: `${problem} (got ${quotedPattern(dataset.value)})` });
  }),
);

/** The most compiled patterns kept for reuse; past it the cache starts over (stored policies repeat a few patterns). */
const MAX_CACHED_PATTERNS = 10_000;
const COMPILED = new Map<string, RE2JS>();

/** `pattern` compiled (and cached); throws when RE2 refuses it or it costs more than `re2_pattern_cost` to compile. */
function compiled(pattern: string): RE2JS {
  let re = COMPILED.get(pattern);
  if (!re) {
    const cost = re2Cost(pattern);
    const limit = LIMITS.re2_pattern_cost.value;
    if (cost > limit) throw new Error(`costs about ${cost} cost units to compile, more than ${limit} ${limitNote('re2_pattern_cost')}`);
    re = re2js().compile(pattern);
    if (COMPILED.size >= MAX_CACHED_PATTERNS) COMPILED.clear();
    COMPILED.set(pattern, re);
  }
  return re;
}

/** Whether `pattern` (RE2) matches anywhere in `text`; throws with RE2's reason when it does not compile. */
export function re2Test(pattern: string, text: string): boolean {
  return compiled(pattern).test(text);
}

/**
 * Replaces every match of `pattern` (RE2) in `text` by `template`, as Go's
 * `Regexp.ReplaceAllString` does: `$1`, `${1}`, `$name` and `${name}` expand to groups (the
 * longest run of letters, digits and `_` after `$` is the name, so `$1x` names group "1x"); an
 * unknown group expands to nothing; `$$` is a `$`. Matching runs in linear time (RE2).
 */
export function re2ReplaceAll(pattern: string, text: string, template: string, matched?: string[]): string {
  const re = compiled(pattern);
  const names = re.namedGroups();
  let out = '';
  let last = 0;
  for (const groups of (re.re2Input.findAllSubmatchIndex(text, -1) as number[][] | null) ?? []) {
    // Each match and its groups, as Go's FindAllStringSubmatch lists them (an unmatched group: "").
    for (let g = 0; matched && g < groups.length; g += 2) matched.push(groups[g]! < 0 ? '' : text.slice(groups[g], groups[g + 1]));
    out += text.slice(last, groups[0]) + expandTemplate(template, (name) => {
      const index = /^\d+$/.test(name) ? Number(name) : names[name];
      const start = index === undefined ? -1 : (groups[2 * index] ?? -1);
      return start < 0 ? '' : text.slice(start, groups[2 * index! + 1]);
    });
    last = groups[1]!;
  }
  return out + text.slice(last);
}

function expandTemplate(template: string, group: (name: string) => string): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const char = template[i]!;
    if (char !== '$') {
      out += char;
      continue;
    }
    if (template[i + 1] === '$') {
      out += '$';
      i++;
      continue;
    }
    const braced = template[i + 1] === '{';
    const match = braced ? /^\{(\w+)\}/.exec(template.slice(i + 1)) : /^\w+/.exec(template.slice(i + 1));
    if (!match) {
      out += '$';
      continue;
    }
    out += group(braced ? match[1]! : match[0]);
    i += match[0].length;
  }
  return out;
}
