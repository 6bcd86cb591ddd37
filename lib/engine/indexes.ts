import type { StoreReader, StoreTransaction } from '../store.ts';

/**
 * Secondary indexes, kept as ordinary records through the Store contract, so every store has them
 * without code of its own and a SQL store sees only rows keyed by (account, kind, id).
 *
 * - A unique index maps one value of a field to the record holding it: one record per value, id
 *   `<kind>.<field>:<value>`, in the account's `_unique` kind. Claiming a value another record
 *   holds is a conflict the caller turns into its own error. Because the index record's id is the
 *   value, two concurrent claims of one value write the same key: a SQL store's primary key (or its
 *   serialisable isolation) refuses the second, and the engine re-runs it.
 * - A pair index relates keys to members, one record per (key, member), id `<key> <member>`. Two
 *   writers of different pairs of one key never touch the same record (no hot row), and the members
 *   of one key are one range of ids: `page` below `<key>!` while ids start with `<key> `. Keys are
 *   URI-encoded, so they never hold a space.
 */

const UNIQUE = '_unique';
const uniqueId = (kind: string, field: string, value: string) => `${kind}.${field}:${value}`;

/** The id of the record of `kind` whose `field` is `value`, or undefined (one read). */
export async function findUnique(reader: StoreReader, account: string, kind: string, field: string, value: string): Promise<string | undefined> {
  const entry = await reader.get({ account, kind: UNIQUE }, uniqueId(kind, field, value));
  return entry ? String(entry.record_id) : undefined;
}

/** The record of `kind` whose `field` is `value`, or undefined (two reads). */
export async function findByUnique(reader: StoreReader, account: string, kind: string, field: string, value: string) {
  const entry = await reader.get({ account, kind: UNIQUE }, uniqueId(kind, field, value));
  return entry ? reader.get({ account, kind }, String(entry.record_id)) : undefined;
}

/**
 * The values of `field` of `kind` (a range of the `_unique` ids) and the ids of the records holding
 * them, by value descending; at most `atMost`.
 */
export async function uniqueEntries(reader: StoreReader, account: string, kind: string, field: string, atMost: number, valuePrefix = ''): Promise<{ readonly value: string; readonly recordId: string }[]> {
  const prefix = uniqueId(kind, field, '');
  const out: { value: string; recordId: string }[] = [];
  // ':' + 1 is ';': every id of the range sorts below it (with a value prefix: below the prefix and U+FFFF).
  for (let before = valuePrefix ? `${uniqueId(kind, field, valuePrefix)}\uffff` : `${kind}.${field};`; ; ) {
    const page = await reader.page({ account, kind: UNIQUE }, { beforeId: before, limit: PAGE });
    for (const entry of page) {
      if (!entry.id.startsWith(prefix + valuePrefix) || out.length >= atMost) return out;
      out.push({ value: entry.id.slice(prefix.length), recordId: String(entry.record_id) });
    }
    if (page.length < PAGE) return out;
    before = page[page.length - 1]!.id;
  }
}

/**
 * Claims `value` of `field` for record `recordId`. Answers the id of another record that holds it
 * already (and claims nothing then), or undefined once claimed.
 */
export async function claimUnique(tx: StoreTransaction, account: string, kind: string, field: string, value: string, recordId: string): Promise<string | undefined> {
  // Insert first, read only when taken: no read of a free value's key (see StoreTransaction.insert).
  if (await tx.insert({ account, kind: UNIQUE }, { id: uniqueId(kind, field, value), record_id: recordId })) return undefined;
  const holder = await findUnique(tx, account, kind, field, value);
  return holder === recordId ? undefined : holder;
}

/** Releases `value` of `field` when `recordId` holds it. */
export async function releaseUnique(tx: StoreTransaction, account: string, kind: string, field: string, value: string, recordId: string): Promise<void> {
  if ((await findUnique(tx, account, kind, field, value)) === recordId) await tx.delete({ account, kind: UNIQUE }, uniqueId(kind, field, value));
}

/** One pair index: its name is the store kind its records live in (`_referrer`, …). */
export interface PairIndex {
  readonly account: string;
  readonly kind: string;
}

const pairPrefix = (key: string) => `${encodeURIComponent(key)} `;
const PAGE = 200;

/** Relates `member` to `key`, with optional data kept on the pair. */
export async function addPair(tx: StoreTransaction, index: PairIndex, key: string, member: string, data: Record<string, unknown> = {}): Promise<void> {
  await tx.put(index, { ...data, id: `${pairPrefix(key)}${member}`, member });
}

/** Removes the pair (key, member); true when it existed. */
export function removePair(tx: StoreTransaction, index: PairIndex, key: string, member: string): Promise<boolean> {
  return tx.delete(index, `${pairPrefix(key)}${member}`);
}

/**
 * The pairs of `key`, by member id ascending (oldest member first for time-ordered ids); with
 * `atMost`, only whether there are that many matters, and the newest `atMost` are returned.
 */
export async function pairsOf(reader: StoreReader, index: PairIndex, key: string, atMost = Infinity): Promise<Array<{ readonly member: string } & Readonly<Record<string, unknown>>>> {
  const prefix = pairPrefix(key);
  const out: Array<{ readonly member: string } & Readonly<Record<string, unknown>>> = [];
  let before = `${encodeURIComponent(key)}!`;
  for (;;) {
    const page = await reader.page(index, { beforeId: before, limit: PAGE });
    for (const entry of page) {
      if (!entry.id.startsWith(prefix)) return out.reverse();
      out.push(entry as unknown as { member: string });
      if (out.length >= atMost) return out.reverse();
    }
    if (page.length < PAGE) return out.reverse();
    before = page[page.length - 1]!.id;
  }
}

/** Up to `limit` member ids of `key`, highest first, below `beforeMember` when given (one page read). */
export async function pageOfPairs(reader: StoreReader, index: PairIndex, key: string, query: { readonly beforeMember?: string; readonly limit: number }): Promise<string[]> {
  const prefix = pairPrefix(key);
  const beforeId = query.beforeMember === undefined ? `${encodeURIComponent(key)}!` : `${prefix}${query.beforeMember}`;
  const page = await reader.page(index, { beforeId, limit: query.limit });
  const out: string[] = [];
  for (const entry of page) {
    if (!entry.id.startsWith(prefix)) break;
    out.push(String(entry.member));
  }
  return out;
}

/** The member ids of `key`, ascending (see `pairsOf` for `atMost`). */
export async function membersOf(reader: StoreReader, index: PairIndex, key: string, atMost?: number): Promise<string[]> {
  return (await pairsOf(reader, index, key, atMost)).map((pair) => pair.member);
}
