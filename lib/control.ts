import * as v from 'valibot';
import { unindexToken } from './auth.ts';
import { createAccount } from './accounts.ts';
import { operatorIn, type ControlOperation, type Instance } from './context.ts';
import { ManualClock, formatTime } from './conventions/clock.ts';
import { ApiError, ERRORS, fail } from './conventions/errors.ts';
import { description, parseInput, rfc3339 } from './conventions/fields.ts';
import { openApiDocument } from './openapi.ts';
import { exportSnapshot, importSnapshot, SNAPSHOT_BODY } from './snapshot.ts';
import { REFERRER_KIND } from './references.ts';
import { INSTANCE_SCOPE, readAll, StoreUnavailableError } from './store.ts';
import { VERSION } from './version.ts';

/**
 * The control plane: instance operations for operators and test harnesses, served under
 * `/_burrow/` with the operator token (health and the OpenAPI document are open). The vendor API's
 * paths never change shape for it. Families add their own control operations (agent simulator,
 * event outboxes) to CONTROL_OPERATIONS in lib/registry.ts.
 */

/** Kinds that a reset keeps, so that the account's users, bots and API keys keep working. */
const KEPT_ON_RESET = new Set(['user', 'bot', 'api_key']);
/** Reference records whose referrer is of a kept kind (an API key's owner) stay too. */
const KEPT_REFERRER = /^(ak|usr|bot)_/;

const ResetBody = v.strictObject({ account_id: v.optional(v.string()) });
const AccountBody = v.strictObject({ name: v.optional(description), token: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'))) });
const ClockBody = v.strictObject({
  now: v.optional(rfc3339),
  advance_seconds: v.optional(v.pipe(v.number(), v.finite(), v.minValue(0, 'must not be negative'))),
});
/** Answers `accountId` when that account exists, or throws the 404. */
export async function knownAccount(instance: Instance, accountId: string): Promise<string> {
  if (!(await instance.reader.get({ account: INSTANCE_SCOPE, kind: 'account' }, accountId))) fail('NOT_FOUND', `account '${accountId}' was not found`, { id: accountId });
  return accountId;
}

/** Removes every resource of the account except its owners and API keys, in one transaction. */
async function resetAccount(instance: Instance, accountId: string): Promise<number> {
  const scopes = (await instance.reader.scopes()).filter((s) => s.account === accountId && !KEPT_ON_RESET.has(s.kind));
  return instance.perform(operatorIn(accountId), async ({ tx }) => {
    let removed = 0;
    for (const scope of scopes) {
      let beforeId: string | undefined;
      for (;;) {
        const page = await tx.page(scope, beforeId === undefined ? { limit: 500 } : { beforeId, limit: 500 });
        if (page.length === 0) break;
        beforeId = page[page.length - 1]!.id;
        for (const record of page) {
          // A kept API key still references the bot that owns it, so that bot stays undeletable.
          if (scope.kind === REFERRER_KIND && KEPT_REFERRER.test(String(record.member))) continue;
          // Credential tokens are indexed instance-wide; drop those of this account's credentials.
          if (typeof record.token_hash === 'string') await unindexToken(tx, record.token_hash);
          removed += (await tx.delete(scope, record.id)) ? 1 : 0;
        }
      }
    }
    return removed;
  });
}

async function accountIds(instance: Instance): Promise<string[]> {
  return (await readAll(instance.reader, { account: INSTANCE_SCOPE, kind: 'account' })).map((a) => a.id);
}

/** The addresses the instance listens on: the API's, the agent gateway's and the SSH gateway's (null when off), then any other. */
function listenersOf(instance: Instance): Record<string, string | null> {
  const listeners = instance.services.listeners;
  return { api: listeners.get('api') ?? null, agent: listeners.get('agent') ?? null, ssh: listeners.get('ssh') ?? null, ...Object.fromEntries(listeners) };
}

function manualClock(instance: Instance): ManualClock {
  if (!(instance.clock instanceof ManualClock)) fail('INVALID_FIELD', 'the clock is the system clock; start Burrow with a manual clock (CLI --clock TIME) to control it');
  return instance.clock;
}

export const CORE_CONTROL_OPERATIONS: readonly ControlOperation[] = [
  {
    id: 'control.health',
    method: 'GET',
    path: '/health',
    status: 200,
    open: true,
    summary: 'Liveness, version, store and uptime (503 when the store does not answer; why, to the operator token)',
    run: async (instance, _input, meta) => {
      // A read proves the store answers (a database store that is down makes this a 503).
      await instance.reader.get({ account: INSTANCE_SCOPE, kind: 'setting' }, 'default_account').catch((error: unknown) => {
        if (!(error instanceof StoreUnavailableError)) throw error;
        const why = meta.operator ? `: ${error.message}` : '';
        throw new ApiError(ERRORS.STORE_UNAVAILABLE, `the store (${instance.reader.name}) is unavailable${why}`, {}, { 'Retry-After': '1' });
      });
      return {
        status: 'ok',
        version: VERSION,
        store: instance.reader.name,
        uptime_seconds: Math.round((Date.now() - instance.startedAt) / 1000),
        time: formatTime(instance.clock.now()),
        listeners: listenersOf(instance),
      };
    },
  },
  {
    id: 'control.ca',
    method: 'GET',
    path: '/ca.pem',
    status: 200,
    open: true,
    contentType: 'application/x-pem-file',
    summary: "Burrow's CA certificate (PEM): agents trust the agent gateway through it (SDK caCert / session_ca_cert, CLI root_cas)",
    run: async (instance) => (await instance.services.ca()).certificatePem,
  },
  {
    id: 'control.openapi',
    method: 'GET',
    path: '/openapi.json',
    status: 200,
    open: true,
    summary: 'The OpenAPI 3.1 document of the API and the control plane (also at /openapi.json)',
    run: async (instance, _input, meta) => openApiDocument(instance.operations, instance.controlOperations, instance.baseUrl ?? meta.baseUrl, VERSION),
  },
  {
    id: 'control.accounts.create',
    method: 'POST',
    path: '/accounts',
    status: 201,
    body: AccountBody,
    summary: 'Create an isolated account with an admin user and an admin API key (token shown once)',
    async run(instance, input, meta) {
      const body = parseInput(AccountBody, input.body ?? {});
      // An account's admin key must never open the control plane: refuse the operator token as one.
      if (body.token !== undefined && meta.isOperatorToken(body.token)) fail('INVALID_FIELD', "token: must not be the operator token; the operator token is no account's key");
      const account = await createAccount(instance, { ...(body.name ? { name: body.name } : {}), ...(body.token ? { token: body.token } : {}) });
      return { account_id: account.accountId, user_id: account.userId, api_key_id: account.apiKeyId, token: account.token };
    },
  },
  {
    id: 'control.reset',
    method: 'POST',
    path: '/reset',
    status: 200,
    body: ResetBody,
    summary: "Delete every resource of one account (account_id) or of all accounts; users, bots and API keys stay",
    async run(instance, input) {
      const body = parseInput(ResetBody, input.body ?? {});
      if (body.account_id) await knownAccount(instance, body.account_id);
      const targets = body.account_id ? [body.account_id] : await accountIds(instance);
      let removed = 0;
      for (const account of targets) removed += await resetAccount(instance, account);
      // A reset starts a test afresh, so the requests that came before it go too.
      if (body.account_id) instance.requests.clear(body.account_id);
      else instance.requests.clear();
      return { accounts: targets, removed };
    },
  },
  {
    id: 'control.clock.get',
    method: 'GET',
    path: '/clock',
    status: 200,
    summary: "The instance clock's time and whether it can be moved",
    run: async (instance) => ({ now: formatTime(instance.clock.now()), manual: instance.clock instanceof ManualClock }),
  },
  {
    id: 'control.clock.set',
    method: 'POST',
    path: '/clock',
    status: 200,
    body: ClockBody,
    summary: 'Set (`now`) or advance (`advance_seconds`) a manual clock; time never goes backwards',
    async run(instance, input) {
      const body = parseInput(ClockBody, input.body ?? {});
      const clock = manualClock(instance);
      if (body.now !== undefined) {
        const next = new Date(body.now);
        if (next.getTime() < clock.now().getTime()) fail('INVALID_FIELD', `now: ${body.now} is before the current time ${formatTime(clock.now())}; time never goes backwards`);
        clock.set(next);
      }
      if (body.advance_seconds !== undefined) clock.advance(body.advance_seconds);
      return { now: formatTime(clock.now()), manual: true };
    },
  },
  {
    id: 'control.snapshot.export',
    method: 'GET',
    path: '/snapshot',
    status: 200,
    summary: 'Every record of the instance (secrets are hashes already), for import into another instance',
    run: (instance) => exportSnapshot(instance),
  },
  {
    id: 'control.snapshot.import',
    method: 'PUT',
    path: '/snapshot',
    status: 200,
    body: SNAPSHOT_BODY,
    bodyLimit: 'snapshot_body_bytes',
    summary: 'Replace the whole state with a snapshot, checked whole first (400 naming the first bad record), in one transaction',
    run: (instance, input) => importSnapshot(instance, input.body ?? {}),
  },
];
