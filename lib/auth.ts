import type { Principal } from './context.ts';
import { fail } from './conventions/errors.ts';
import { hashToken } from './conventions/ids.ts';
import { inactiveOwnerError, isInactive, OWNER_KINDS, ownerKind } from './owners.ts';
import { INSTANCE_SCOPE, type StoredRecord, type StoreReader, type StoreTransaction } from './store.ts';

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
  return (await resolveToken(reader, token))?.entry;
}

/** The index entry of a token and the record it belongs to, when the record still carries the token's hash. */
async function resolveToken(reader: StoreReader, token: string): Promise<{ entry: TokenEntry; record: StoredRecord } | undefined> {
  const hash = hashToken(token);
  const entry = (await reader.get(TOKEN_INDEX, hash)) as TokenEntry | undefined;
  if (!entry) return undefined;
  const record = await reader.get({ account: entry.account, kind: entry.kind }, entry.record_id);
  return record && typeof record.token_hash === 'string' && equalInConstantTime(record.token_hash, hash) ? { entry, record } : undefined;
}

/** Compares two hex digests without an early exit (no Buffers: this runs on every request). */
function equalInConstantTime(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const TOKEN_SHAPE = /^[\x21-\x7e]{1,512}$/;

/** Resolves an `Authorization` header to the caller, or throws the matching 401. */
export async function authenticate(reader: StoreReader, authorization: string | null | undefined): Promise<Principal> {
  if (!authorization) fail('AUTH_MISSING', 'the Authorization header is missing; send "Authorization: Bearer <API key>"');
  const match = /^(\S+)\s+(.*)$/.exec(authorization.trim());
  if (!match || match[1]!.toLowerCase() !== 'bearer') {
    fail('AUTH_NOT_BEARER', 'the Authorization header must have the form "Bearer <API key>"');
  }
  const token = match[2]!.trim();
  if (!TOKEN_SHAPE.test(token)) fail('AUTH_MALFORMED', 'the bearer token is not a well-formed API key');
  if (/^ak_[0-9A-Za-z]{27}$/.test(token)) {
    fail('AUTH_KEY_ID', 'an API key id was sent instead of the API key token; use the token returned when the key was created');
  }
  const found = await resolveToken(reader, token);
  if (!found) fail('AUTH_UNKNOWN', 'the API key is not valid: it is unknown or was deleted');
  const { entry, record: key } = found;
  if (entry.kind === 'credential') {
    fail('AUTH_AGENT_TOKEN', 'a tunnel credential (agent authtoken) was sent instead of an API key');
  }
  const ownerId = String(key.owner_id ?? '');
  const owner = await reader.get({ account: entry.account, kind: OWNER_KINDS[ownerKind(ownerId)].kind }, ownerId);
  if (isInactive(owner)) throw inactiveOwnerError(ownerId, `API key '${entry.record_id}'`);
  return { account: entry.account, ownerId, admin: owner?.admin === true, apiKeyId: entry.record_id };
}
