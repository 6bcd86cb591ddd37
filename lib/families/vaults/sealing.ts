import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { OperationContext, Services } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { INSTANCE_SCOPE, type StoreReader, type StoreTransaction } from '../../store.ts';
import { VAULTS_ERRORS } from './errors.ts';

/**
 * Secret values at rest: sealed with AES-256-GCM, never hashed, because a secret exists to be read
 * back by whoever evaluates the traffic policies that name it (the vendor's `secrets.get`); a hash
 * would rule that out for good. Burrow itself never answers a value: only `openSecretValue` (for an
 * embedder) unseals one.
 *
 * The key, 32 bytes, is one per state (not per process), so a restarted server and every server
 * sharing one PostgreSQL database seal and unseal alike:
 * - By default Burrow generates it on the first secret write and keeps it in the store as an
 *   instance-wide setting (`_instance/setting/secrets_key`), written in that write's transaction:
 *   two servers racing on an empty database both end up with the committed one (the loser's
 *   transaction is re-run and reads it). The key then lives beside the values it seals (in the JSON
 *   file, the database and snapshots): this keeps values out of responses, events, logs and plain
 *   reads of the data, but not from someone who holds the whole store.
 * - With an operator key (`createBurrow({ secretsKey })`, `BURROW_SECRETS_KEY` for the CLI) the
 *   store keeps only a check value of it, so the data alone cannot be unsealed; every server of one
 *   state must be given the same key, and a server started with another one (or none, or one after
 *   values were sealed with a stored key) refuses secret writes with a 500 that says so, instead of
 *   sealing values nobody could open.
 *
 * Each sealed value is bound to its account and secret id (GCM additional data), so a sealed value
 * copied onto another record does not open. The IV is 12 fresh random bytes from the system's
 * generator even in deterministic mode: GCM must never see one IV twice under a key, and a reset
 * state would replay a seeded sequence. Responses stay deterministic; only the stored ciphertext
 * differs from run to run.
 */

/** A secret value as stored: AES-256-GCM, base64 parts. */
export interface SealedValue {
  readonly alg: 'A256GCM';
  readonly iv: string;
  readonly data: string;
  readonly tag: string;
}

const KEY_SETTING = { scope: { account: INSTANCE_SCOPE, kind: 'setting' }, id: 'secrets_key' };
const KEY_BYTES = 32;

/** What the store keeps about the key: the key itself (generated) or a check value (operator key). */
type KeySetting = {
  readonly id: string;
  readonly key?: string;
  readonly check?: string;
};

/**
 * Reads an operator key: 32 bytes, as bytes, 64 hex digits or base64. Throws a startup error
 * naming the problem (never the key).
 */
export function parseSecretsKey(key: Uint8Array | string): Uint8Array {
  let bytes: Uint8Array;
  if (typeof key !== 'string') bytes = key;
  else if (/^[0-9a-fA-F]{64}$/.test(key.trim())) bytes = Buffer.from(key.trim(), 'hex');
  else bytes = Buffer.from(key.trim(), 'base64');
  if (bytes.length !== KEY_BYTES) {
    throw new Error(`burrow: secretsKey must be ${KEY_BYTES} bytes (64 hex digits or 44 base64 characters); it decodes to ${bytes.length} bytes`);
  }
  return Uint8Array.from(bytes);
}

const keyCheck = (key: Uint8Array) => createHmac('sha256', key).update('burrow secrets key check v1').digest('hex');

function mismatch(message: string): never {
  throw new ApiError(VAULTS_ERRORS.SECRETS_KEY_MISMATCH, `secrets key: ${message}; secret values cannot be sealed or opened until the servers of this state share one key`);
}

/** The key of this state, given what the store keeps about it; undefined while none was made. Throws on a mismatch. */
function keyOf(stored: KeySetting | undefined, operatorKey: Uint8Array | undefined): Uint8Array | undefined {
  if (!stored) return operatorKey;
  if (operatorKey) {
    if (stored.check === undefined) mismatch('this server was given a secretsKey, but the values of this state are sealed with the key kept in the store');
    if (!timingSafeEqual(Buffer.from(stored.check, 'hex'), Buffer.from(keyCheck(operatorKey), 'hex'))) mismatch('this server was given a different secretsKey than the one this state was sealed with');
    return operatorKey;
  }
  if (stored.key === undefined) mismatch('this state is sealed with an operator key (secretsKey / BURROW_SECRETS_KEY), and this server was given none');
  return Buffer.from(stored.key, 'base64');
}

const readSetting = async (reader: StoreReader) => (await reader.get(KEY_SETTING.scope, KEY_SETTING.id)) as KeySetting | undefined;

/** The key to seal with inside a write, made (and kept) by the first write that needs one. */
async function sealingKey(tx: StoreTransaction, operatorKey: Uint8Array | undefined): Promise<Uint8Array> {
  const stored = await readSetting(tx);
  const existing = keyOf(stored, operatorKey);
  if (existing && stored) return existing;
  const key = existing ?? randomBytes(KEY_BYTES);
  const setting: KeySetting = operatorKey ? { id: KEY_SETTING.id, check: keyCheck(key) } : { id: KEY_SETTING.id, key: Buffer.from(key).toString('base64') };
  await tx.put(KEY_SETTING.scope, setting);
  return key;
}

const boundTo = (account: string, secretId: string) => Buffer.from(`${account}\u0000${secretId}`, 'utf8');

/** The vaults family's options of `createBurrow`. */
export interface VaultOptions {
  /**
   * The key that seals secret values at rest: 32 bytes (or 64 hex digits, or base64). Without it the
   * state keeps a key of its own beside the values; with it the store holds only a check value, and
   * every server of one state needs the same key (docs/families/vaults.md).
   */
  secretsKey?: Uint8Array | string;
}

/** The operator's key of an instance (parsed once by the family's setup), or undefined. */
export function operatorKeyOf(services: Pick<Services, 'state'>): Uint8Array | undefined {
  return (services.state('vaults') as { secretsKey?: Uint8Array } | undefined)?.secretsKey;
}

/** Seals `value` for the secret `secretId` of the caller's account (inside its write). */
export async function sealSecretValue(ctx: OperationContext, secretId: string, value: string): Promise<SealedValue> {
  const key = await sealingKey(ctx.tx, operatorKeyOf(ctx.services));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(boundTo(ctx.account, secretId));
  const data = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return { alg: 'A256GCM', iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
}

/**
 * Unseals the value of a stored secret. For embedders only (a traffic-policy evaluator); no API
 * operation calls it. Throws when the key is not this state's or the sealed value was altered.
 */
export async function unsealSecretValue(reader: StoreReader, operatorKey: Uint8Array | undefined, account: string, secretId: string, sealed: SealedValue): Promise<string> {
  return (await secretOpener(reader, operatorKey, account))(secretId, sealed);
}

/** Unseals values of `account`'s stored secrets without reading the store again (the key is read once). */
export async function secretOpener(reader: StoreReader, operatorKey: Uint8Array | undefined, account: string): Promise<(secretId: string, sealed: SealedValue) => string> {
  const key = keyOf(await readSetting(reader), operatorKey);
  if (!key) mismatch('this state holds no secrets key');
  return (secretId, sealed) => {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(boundTo(account, secretId));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
  };
}
