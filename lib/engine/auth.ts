import type { Principal } from './context.ts';
import { fail } from '../conventions/errors.ts';
import { hashToken } from '../conventions/ids.ts';
import { Prefetched } from './prefetch.ts';
import { inactiveOwnerError, isInactive, OWNER_KINDS, ownerKind } from './owners.ts';
import { INSTANCE_SCOPE, readMany, type Read, type ReadResult, type StoredRecord, type StoreReader, type StoreTransaction } from '../store.ts';

/**
 * Bearer tokens and owners.
 *
 * Tokens exist at rest only as SHA-256 hashes. An instance-wide index maps a token's hash to the
 * record it belongs to (an API key, or a tunnel credential for agents), so authentication is one
 * lookup; the stored hash is then compared in constant time. Deleting the record deletes its index
 * entry in the same transaction, so a deleted key stops working at once.
 */

const TOKEN_INDEX = { account: INSTANCE_SCOPE, kind: 'token' };

/** The kinds of record a token belongs to. */
export const TOKEN_KINDS = ['api_key', 'credential'] as const;

/** What a token index entry points at. */
export interface TokenEntry {
  readonly id: string;
  readonly account: string;
  readonly kind: (typeof TOKEN_KINDS)[number];
  readonly record_id: string;
}

/** Records `token` (as its hash) for the record `recordId`; returns the hash to store on it. */
export async function indexToken(tx: StoreTransaction, token: string, entry: Omit<TokenEntry, 'id'>): Promise<string> {
  const id = hashToken(token);
  await indexTokenHash(tx, id, entry);
  return id;
}

/** Records a token by its hash (a snapshot import rebuilds the index from the hashes on records). */
export async function indexTokenHash(tx: StoreTransaction, tokenHash: string, entry: Omit<TokenEntry, 'id'>): Promise<void> {
  if (!(await tx.insert(TOKEN_INDEX, { id: tokenHash, ...entry }))) fail('CONFLICT', 'this token is already in use; choose another');
}

/** Removes a token's index entry (by the hash stored on its record). */
export async function unindexToken(tx: StoreTransaction, tokenHash: string): Promise<void> {
  await tx.delete(TOKEN_INDEX, tokenHash);
}

/** The index entry of a token, if any, after a constant-time comparison of the hashes. */
export async function lookupToken(reader: StoreReader, token: string): Promise<TokenEntry | undefined> {
  return (await resolveToken(reader, hashToken(token)))?.entry;
}

/** The index entry of a token and the record it belongs to, when the record still carries the token's hash. */
async function resolveToken(reader: StoreReader, hash: string): Promise<{ entry: TokenEntry; record: StoredRecord } | undefined> {
  const entry = (await reader.get(TOKEN_INDEX, hash)) as TokenEntry | undefined;
  if (!entry) return undefined;
  const record = await reader.get({ account: entry.account, kind: entry.kind }, entry.record_id);
  return record && holdsToken(record, hash) ? { entry, record } : undefined;
}

const holdsToken = (record: StoredRecord, hash: string) => typeof record.token_hash === 'string' && equalInConstantTime(record.token_hash, hash);

const ownerScope = (account: string, ownerId: string) => ({ account, kind: OWNER_KINDS[ownerKind(ownerId)].kind });

/** Where a token's records were: its index entry (fixed for a hash) and its key's owner when last read. */
interface TokenAddress {
  readonly entry: TokenEntry;
  readonly ownerId: string;
}

/** A map of recent things that starts over once it holds `limit` entries: a memory, never a verdict. */
class BoundedMemory<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  set(key: K, value: V): void {
    if (this.#entries.size >= this.#limit) this.#entries.clear();
    this.#entries.set(key, value);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }
}

/** Token addresses kept at most; past it the memory starts over. */
const MAX_TOKEN_ADDRESSES = 10_000;

/**
 * Where the records of recently seen API keys are, so that authenticating a key seen before reads
 * its index entry, the key and its owner in one round trip (`readMany`: one statement on
 * PostgreSQL) instead of three in a row. Only addresses are kept, never a verdict: every request
 * reads the three records afresh and checks them as on a first sight, so a deleted key or an
 * owner made inactive fails at once, on every server sharing the store.
 */
export class TokenAddresses extends BoundedMemory<string, TokenAddress> {
  constructor() {
    super(MAX_TOKEN_ADDRESSES);
  }
}

/**
 * An API key's index entry, the key and its owner, read together when their addresses are known,
 * with the reads `also` asks for in the key's account (answered only when the key checks out).
 */
async function resolveKnownKey(
  reader: StoreReader,
  hash: string,
  addresses: TokenAddresses,
  also: ((account: string) => readonly Read[]) | undefined,
): Promise<{ entry: TokenEntry; key: StoredRecord; owner: StoredRecord | undefined; prefetched?: Prefetched } | undefined> {
  const known = addresses.get(hash);
  if (!known) return undefined;
  const { entry } = known;
  const extra = also?.(entry.account) ?? [];
  const [current, key, owner, ...answers] = (await readMany(reader, [
    { scope: TOKEN_INDEX, id: hash },
    { scope: { account: entry.account, kind: entry.kind }, id: entry.record_id },
    { scope: ownerScope(entry.account, known.ownerId), id: known.ownerId },
    ...extra,
  ])) as [StoredRecord | undefined, StoredRecord | undefined, StoredRecord | undefined, ...ReadResult[]];
  const same = current !== undefined && current.account === entry.account && current.kind === entry.kind && current.record_id === entry.record_id;
  if (same && key && holdsToken(key, hash) && key.owner_id === known.ownerId) {
    return { entry, key, owner, ...(extra.length > 0 ? { prefetched: new Prefetched(extra, answers) } : {}) };
  }
  addresses.delete(hash);
  return undefined;
}

/** Hashes of tokens remembered at most; past it the memory starts over. */
const MAX_KNOWN_HASHES = 10_000;

/**
 * The token hash of Authorization values that authenticated lately, so that a key sent again is
 * neither parsed nor hashed again (the hash was a sixth of authentication's time). It only stands
 * in for those pure functions of the header: the index entry, the key and its owner are still read
 * and checked on every request, so a deleted key still fails at once. Only values that named a key
 * are remembered, so unknown tokens cannot push known ones out.
 */
const knownHashes = new BoundedMemory<string, string>(MAX_KNOWN_HASHES);

/** The token hash of an Authorization value, or the 401 of a value that names no token. */
function tokenHashOf(authorization: string): string {
  const match = /^(\S+)\s+(.*)$/.exec(authorization.trim());
  if (!match || match[1]!.toLowerCase() !== 'bearer') {
    fail('AUTH_NOT_BEARER', 'the Authorization header must have the form "Bearer <API key>"');
  }
  const token = match[2]!.trim();
  if (!TOKEN_SHAPE.test(token)) fail('AUTH_MALFORMED', 'the bearer token is not a well-formed API key');
  if (/^ak_[0-9A-Za-z]{27}$/.test(token)) {
    fail('AUTH_KEY_ID', 'an API key id was sent instead of the API key token; use the token returned when the key was created');
  }
  return hashToken(token);
}

/** Compares two hex digests without an early exit (no Buffers: this runs on every request). */
function equalInConstantTime(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const TOKEN_SHAPE = /^[\x21-\x7e]{1,512}$/;

/**
 * Resolves an `Authorization` header to the caller, or throws the matching 401. With `addresses`,
 * a key seen before is read in one round trip (TokenAddresses).
 */
export async function authenticate(reader: StoreReader, authorization: string | null | undefined, addresses?: TokenAddresses): Promise<Principal> {
  return (await authenticateAndRead(reader, authorization, addresses)).principal;
}

/**
 * `authenticate`, and for a key seen before the reads `also` names in the caller's account, in the
 * same round trip (one statement on PostgreSQL): a read operation's first reads (Operation.reads).
 */
export async function authenticateAndRead(
  reader: StoreReader,
  authorization: string | null | undefined,
  addresses?: TokenAddresses,
  also?: (account: string) => readonly Read[],
): Promise<{ principal: Principal; prefetched?: Prefetched }> {
  if (!authorization) fail('AUTH_MISSING', 'the Authorization header is missing; send "Authorization: Bearer <API key>"');
  // Taken out while this request checks it and put back once it authenticated, so a value whose key
  // was deleted is forgotten at its first refusal.
  const remembered = knownHashes.get(authorization);
  if (remembered !== undefined) knownHashes.delete(authorization);
  const hash = remembered ?? tokenHashOf(authorization);
  const known = addresses && (await resolveKnownKey(reader, hash, addresses, also));
  let entry: TokenEntry, key: StoredRecord, owner: StoredRecord | undefined;
  if (known) ({ entry, key, owner } = known);
  else {
    const found = await resolveToken(reader, hash);
    if (!found) fail('AUTH_UNKNOWN', 'the API key is not valid: it is unknown or was deleted');
    ({ entry, record: key } = found);
    if (entry.kind === 'credential') {
      fail('AUTH_AGENT_TOKEN', 'a tunnel credential (agent authtoken) was sent instead of an API key');
    }
    const ownerId = String(key.owner_id ?? '');
    owner = await reader.get(ownerScope(entry.account, ownerId), ownerId);
    addresses?.set(hash, { entry, ownerId });
  }
  const ownerId = String(key.owner_id ?? '');
  if (isInactive(owner)) throw inactiveOwnerError(ownerId, `API key '${entry.record_id}'`);
  const principal = { account: entry.account, ownerId, admin: owner?.admin === true, apiKeyId: entry.record_id };
  knownHashes.set(authorization, hash);
  return known?.prefetched ? { principal, prefetched: known.prefetched } : { principal };
}
