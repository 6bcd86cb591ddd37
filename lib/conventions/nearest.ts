/**
 * "Did you mean …?": the nearest of some known names to a mistyped one, for messages that name
 * what was meant (a CLI option, an API route). Near means within a third of the known name's
 * length in edits, and at least 2, so short names still forgive one slip of each kind.
 */

/** The most edits by which a mistyped name may differ from a known one of `length` characters. */
export function editReach(length: number): number {
  return Math.max(2, Math.floor(length / 3));
}

/**
 * Levenshtein distance (insertions, deletions and substitutions), or Infinity once it exceeds
 * `limit`: strings whose lengths differ by more are not compared at all, which bounds the work by
 * the shorter string's length times (its length + limit), whatever a request sent.
 */
export function editDistance(a: string, b: string, limit = Infinity): number {
  if (Math.abs(a.length - b.length) > limit) return Infinity;
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]! > limit ? Infinity : row[b.length]!;
}

/** The candidate nearest to `name` within its reach, if one is. */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate, editReach(candidate.length));
    if (distance !== Infinity && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}
