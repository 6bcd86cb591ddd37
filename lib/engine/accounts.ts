import { authenticate } from './auth.ts';
import { operatorIn, type Instance, type OperationContext } from './context.ts';
import { formatTime } from '../conventions/clock.ts';
import * as v from 'valibot';
import { fail } from '../conventions/errors.ts';
import { parseInput } from '../conventions/fields.ts';
import { INSTANCE_SCOPE, type StoreReader } from '../store.ts';

/**
 * Accounts and their owners: creating an isolated account (an admin user and an admin API key),
 * adding users and bots, issuing keys for them, and the CLI's default account. Every write goes
 * through `Instance.perform`, and keys are made by the API's own `api_keys.create` operation, found
 * in the registry, exactly as `POST /api_keys` makes them.
 */

const ACCOUNTS = { account: INSTANCE_SCOPE, kind: 'account' };
const SETTINGS = { account: INSTANCE_SCOPE, kind: 'setting' };
const DEFAULT_ACCOUNT_SETTING = 'default_account';

/**
 * The one rule for an API key token chosen by its creator (`--api-key`, `POST /_burrow/accounts`
 * `{token}`, `createAccount({ token })`): what an HTTP client can send as one bearer token
 * (RFC 6750 §2.1's b64token: letters, digits, `-._~+/`, then `=` padding), at most 256
 * characters. No minimum length: a chosen token is for reproducible tests and scripts, and its
 * strength is the operator's call, as the operator token's is; the keys Burrow generates are
 * always long and random.
 */
export const CHOSEN_TOKEN = v.pipe(
  v.string(),
  v.maxLength(256, 'must be at most 256 characters'),
  v.regex(/^[A-Za-z0-9\-._~+/]+=*$/, "must be a bearer token: letters, digits and - . _ ~ + / (then = padding), at least 1 character"),
);

/** Throws the 400 naming `where` when `token` breaks the chosen-token rule. */
export function checkChosenToken(token: string, where = 'token'): void {
  parseInput(CHOSEN_TOKEN, token, where);
}

/** A new account as `createAccount` answers it; the token is shown only here. */
export interface CreatedAccount {
  accountId: string;
  userId: string;
  apiKeyId: string;
  token: string;
}

/**
 * Issues an API key of `ownerId` in the context's account with the `api_keys.create` operation;
 * `token` when the caller chose one (the operation's `prepared` input carries it).
 */
async function issueKey(instance: Instance, ctx: OperationContext, ownerId: string, description: string, token?: string): Promise<{ id: string; token: string }> {
  const create = instance.operation('api_keys.create');
  if (!create?.parse) throw new Error('burrow: this instance serves no API keys (api_keys.create)');
  const raw = { params: {}, query: {}, body: { description, owner_id: ownerId } };
  const key = (await create.run(ctx, { ...raw, body: create.parse(raw), prepared: token === undefined ? {} : { token } })) as { id: string; token: string };
  return { id: String(key.id), token: String(key.token) };
}

/**
 * Creates an account with its admin user and key in one transaction. `claim`, when given, runs
 * first in that transaction; when it answers false nothing is created and the answer is undefined.
 */
async function bootstrap(instance: Instance, options: { name?: string; token?: string }, description: string): Promise<CreatedAccount>;
async function bootstrap(instance: Instance, options: { name?: string; token?: string }, description: string, claim: (ctx: OperationContext, accountId: string) => Promise<boolean>): Promise<CreatedAccount | undefined>;
async function bootstrap(instance: Instance, options: { name?: string; token?: string }, description: string, claim?: (ctx: OperationContext, accountId: string) => Promise<boolean>): Promise<CreatedAccount | undefined> {
  const accountId = instance.ids.id('ac');
  const userId = instance.ids.id('usr');
  return instance.perform({ account: accountId, ownerId: userId, admin: true }, async (ctx) => {
    if (claim && !(await claim(ctx, accountId))) return undefined;
    const created_at = formatTime(ctx.clock.now());
    await ctx.tx.put(ACCOUNTS, { id: accountId, created_at, name: options.name ?? '' });
    await ctx.tx.put({ account: accountId, kind: 'user' }, { id: userId, created_at, name: 'admin', admin: true });
    const key = await issueKey(instance, ctx, userId, description, options.token);
    return { accountId, userId, apiKeyId: key.id, token: key.token };
  });
}

/** Creates an isolated account with an admin user and an admin API key (`token`, or a generated one). */
export async function createAccount(instance: Instance, options: { name?: string; token?: string } = {}): Promise<CreatedAccount> {
  if (options.token !== undefined) checkChosenToken(options.token);
  const account = await bootstrap(instance, options, 'admin key created with the account');
  await instance.checkpoints.captureAccountStart(account.accountId);
  return account;
}

/** Adds a user or bot to an account (the control plane and tests use it for non-admin callers). */
export function createOwner(instance: Instance, accountId: string, options: { kind?: 'user' | 'bot'; name?: string; admin?: boolean } = {}) {
  const kind = options.kind ?? 'user';
  return instance.perform(operatorIn(accountId), async (ctx) => {
    if (!(await ctx.tx.get(ACCOUNTS, accountId))) fail('NOT_FOUND', `account '${accountId}' was not found`);
    const owner = { id: ctx.ids.id(kind === 'bot' ? 'bot' : 'usr'), created_at: formatTime(ctx.clock.now()), name: options.name ?? kind, admin: options.admin ?? false };
    await ctx.tx.put({ account: accountId, kind }, owner);
    return owner;
  });
}

/** Issues an API key for an owner of an account, without an API caller (control plane, tests). */
export function issueApiKey(instance: Instance, accountId: string, ownerId: string): Promise<{ id: string; token: string }> {
  return instance.perform(operatorIn(accountId), (ctx) => issueKey(instance, ctx, ownerId, ''));
}

/**
 * The default account (what the CLI serves): created on first start, kept in the store. With
 * `token`, that token becomes an admin key of it (kept across restarts on the same file).
 * Returns a generated token only when it created one.
 */
export async function ensureDefaultAccount(instance: Instance, token?: string): Promise<{ accountId: string; token?: string; created: boolean }> {
  if (token) checkChosenToken(token, '--api-key');
  const setting = await instance.reader.get(SETTINGS, DEFAULT_ACCOUNT_SETTING);
  if (!setting) {
    // The setting is claimed before anything else is written, so of servers sharing a store that
    // start at once exactly one creates the account (and its key, with `token`): the claims of the
    // others find it taken (or conflict, and their re-run finds it), and they use that account.
    const claim = (ctx: OperationContext, accountId: string) => ctx.tx.insert(SETTINGS, { id: DEFAULT_ACCOUNT_SETTING, value: accountId });
    const account = await bootstrap(instance, { name: 'default', ...(token ? { token } : {}) }, 'admin key created with the account', claim);
    if (!account) return ensureDefaultAccount(instance, token);
    await instance.checkpoints.captureAccountStart(account.accountId);
    return { accountId: account.accountId, created: true, ...(token ? {} : { token: account.token }) };
  }
  const accountId = String(setting.value);
  if (token) {
    const admin = async (reader: StoreReader) => {
      const user = (await reader.page({ account: accountId, kind: 'user' }, { limit: 100 })).find((u) => u.admin === true);
      if (!user) fail('INTERNAL', `default account '${accountId}' has no admin user`);
      return { account: accountId, ownerId: user.id, admin: true };
    };
    await instance.perform(admin, async (ctx) => {
      const known = await authenticate(ctx.tx, `Bearer ${token}`).catch(() => undefined);
      if (!known) await issueKey(instance, ctx, ctx.principal.ownerId, 'admin key given on the command line', token);
    });
  }
  await instance.checkpoints.captureAccountStart(accountId);
  return { accountId, created: false };
}

/** Answers `accountId` when that account exists, or throws the 404. */
export async function knownAccount(instance: Instance, accountId: string): Promise<string> {
  if (!(await instance.reader.get({ account: INSTANCE_SCOPE, kind: 'account' }, accountId))) fail('NOT_FOUND', `account '${accountId}' was not found`, { id: accountId });
  return accountId;
}
