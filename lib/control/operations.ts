import * as v from 'valibot';
import { CHOSEN_TOKEN, createAccount, knownAccount } from '../engine/accounts.ts';
import type { CheckpointInfo, ControlOperationSpec, Instance } from '../engine/context.ts';
import { ManualClock, formatTime } from '../conventions/clock.ts';
import { ApiError, ERRORS, fail } from '../conventions/errors.ts';
import { description, parseInput, rfc3339 } from '../conventions/fields.ts';
import { exportSnapshot, importSnapshot, SNAPSHOT_BODY } from './snapshot.ts';
import { FAULT_BODY } from '../simulation/faults.ts';
import { INSTANCE_SCOPE, StoreUnavailableError } from '../store.ts';
import { VERSION } from '../version.ts';

/**
 * The control plane: instance operations for operators and test harnesses, served under
 * `/_burrow/` with the operator token (health and the OpenAPI document are open). The vendor API's
 * paths never change shape for it. Families add their own control operations (agent simulator,
 * event outboxes) to CONTROL_OPERATIONS in lib/engine/registry.ts.
 */

const ResetBody = v.strictObject({ account_id: v.optional(v.string()) });
const AccountBody = v.strictObject({ name: v.optional(description), token: v.optional(CHOSEN_TOKEN) });
const CheckpointBody = v.strictObject({ name: v.string() });
const ClockBody = v.strictObject({
  now: v.optional(rfc3339),
  advance_seconds: v.optional(v.pipe(v.number(), v.finite(), v.minValue(0, 'must not be negative'))),
});
/** Replaces the whole state with the checkpoint `name`; the request and traffic journals start afresh too. */
export async function restoreCheckpoint(instance: Instance, name: string): Promise<CheckpointInfo> {
  const restored = await instance.checkpoints.restore(name);
  instance.requests.clear();
  instance.traffic.clear();
  return restored;
}

/**
 * Returns one account (or every account) to its starting state (lib/control/checkpoints.ts); the fault
 * rules scoped to it (every rule, for all) and its request and traffic journals go too, so that nothing of one
 * test reaches the next.
 */
export async function resetAccounts(instance: Instance, accountId?: string): Promise<{ accounts: string[]; removed: number }> {
  if (accountId !== undefined) await knownAccount(instance, accountId);
  const result = await instance.checkpoints.reset(accountId);
  await instance.faults.clear(accountId);
  if (accountId !== undefined) instance.requests.clear(accountId);
  else instance.requests.clear();
  instance.traffic.clear(accountId);
  return result;
}

/** Replaces the whole state with a snapshot (lib/control/snapshot.ts), which becomes every account's starting state. */
export async function loadSnapshot(instance: Instance, snapshot: unknown): Promise<{ scopes: number; records: number }> {
  const imported = await importSnapshot(instance, snapshot);
  await instance.checkpoints.captureStart();
  return imported;
}

/** Listeners every report names, null when off. */
const NAMED_LISTENERS = ['api', 'agent', 'ssh', 'http_ingress', 'tls_ingress'] as const;

/** The addresses the instance listens on: the API's, the gateways' and the ingress's (null when off), then any other. */
export function listenersOf(instance: Instance): Record<string, string | null> {
  const listeners = instance.services.listeners;
  return { ...Object.fromEntries(NAMED_LISTENERS.map((name) => [name, listeners.get(name) ?? null])), ...Object.fromEntries(listeners) };
}

/** Where the documentation is read online (the package also ships it as docs/*.md); under package.json's homepage, as a test checks. */
export const DOCS_URL = 'https://github.com/burrow-tunnels/burrow/tree/main/docs';

function manualClock(instance: Instance): ManualClock {
  if (!(instance.clock instanceof ManualClock)) fail('INVALID_FIELD', 'the clock is the system clock; start Burrow with a manual clock (CLI --clock TIME) to control it');
  return instance.clock;
}

/** What `POST /_burrow/clock` takes: an RFC 3339 time to set (`now`), seconds to advance, or both. */
export type ClockMove = v.InferInput<typeof ClockBody>;

/** Sets and/or advances a manual clock (400 for the system clock, or a time before the current one); answers the time. */
export function moveClock(instance: Instance, move: ClockMove): { now: string; manual: true } {
  const body = parseInput(ClockBody, move);
  const clock = manualClock(instance);
  if (body.now !== undefined) {
    const next = new Date(body.now);
    if (next.getTime() < clock.now().getTime()) fail('INVALID_FIELD', `now: ${body.now} is before the current time ${formatTime(clock.now())}; time never goes backwards`);
    clock.set(next);
  }
  if (body.advance_seconds !== undefined) clock.advance(body.advance_seconds);
  return { now: formatTime(clock.now()), manual: true };
}

export const CORE_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  {
    id: 'control.health',
    route: 'GET /health',
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
    id: 'control.about',
    route: 'GET /about',
    open: true,
    summary: 'Where the inspector, the OpenAPI document, health and the docs are (also at GET /, the API root, which has no API route)',
    run: async (instance, _input, meta) => {
      const base = instance.baseUrl ?? meta.baseUrl;
      return {
        name: 'burrow',
        version: VERSION,
        hint: 'API requests take Authorization: Bearer <API key>; openapi_uri lists every route; the inspector signs in with the operator token',
        inspector_uri: `${base}/_burrow/`,
        openapi_uri: `${base}/openapi.json`,
        health_uri: `${base}/_burrow/health`,
        docs_uri: DOCS_URL,
      };
    },
  },
  {
    id: 'control.ca',
    route: 'GET /ca.pem',
    open: true,
    contentType: 'application/x-pem-file',
    summary: "Burrow's CA certificate (PEM): agents trust the agent gateway through it (SDK caCert / session_ca_cert, CLI root_cas)",
    run: async (instance) => (await instance.services.ca()).certificatePem,
  },
  {
    id: 'control.openapi',
    route: 'GET /openapi.json',
    open: true,
    summary: 'The OpenAPI 3.1 document of the API and the control plane (also at /openapi.json)',
    // Imported when first asked for: its JSON Schema library is not needed to serve the API.
    run: async (instance, _input, meta) => (await import('../engine/openapi.ts')).openApiDocument(instance.operations, instance.controlOperations, instance.baseUrl ?? meta.baseUrl, VERSION),
  },
  {
    id: 'control.accounts.create',
    route: 'POST /accounts',
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
    route: 'POST /reset',
    body: ResetBody,
    summary: 'Return one account (account_id) or every account to its starting state: the records it started with (the --api-key key, its admin user) back as they were, everything else gone; its fault rules and request journal too',
    async run(instance, input) {
      const body = parseInput(ResetBody, input.body ?? {});
      return resetAccounts(instance, body.account_id);
    },
  },
  {
    id: 'control.checkpoints.create',
    route: 'POST /checkpoints',
    status: 201,
    body: CheckpointBody,
    summary: 'Keep the whole state under a name (replacing a checkpoint of that name), to restore it later',
    run: (instance, input) => instance.checkpoints.create(parseInput(CheckpointBody, input.body ?? {}).name),
  },
  {
    id: 'control.checkpoints.list',
    route: 'GET /checkpoints',
    summary: 'The named checkpoints, oldest first',
    run: async (instance) => ({ checkpoints: await instance.checkpoints.list() }),
  },
  {
    id: 'control.checkpoints.restore',
    route: 'POST /checkpoints/:name/restore',
    summary: 'Replace the whole state with a named checkpoint, in one transaction; the request journal is emptied',
    run: (instance, input) => restoreCheckpoint(instance, input.params.name!),
  },
  {
    id: 'control.checkpoints.delete',
    route: 'DELETE /checkpoints/:name',
    status: 204,
    summary: 'Forget a named checkpoint',
    async run(instance, input) {
      if (!(await instance.checkpoints.delete(input.params.name!))) fail('NOT_FOUND', `checkpoint '${input.params.name}' was not found`, { name: input.params.name! });
    },
  },
  {
    id: 'control.faults.create',
    route: 'POST /faults',
    status: 201,
    body: FAULT_BODY,
    summary: 'Add a fault rule: matching API requests (method, path pattern, operation, account_id) get an error, a 429 with Retry-After, added latency or a dropped connection; every Nth, N times or with a probability',
    run: async (instance, input) => instance.faults.add((input.body ?? {}) as never),
  },
  {
    id: 'control.faults.list',
    route: 'GET /faults',
    summary: 'The fault rules, oldest first, with how many requests each matched and applied to',
    run: async (instance) => ({ faults: await instance.faults.list() }),
  },
  {
    id: 'control.faults.get',
    route: 'GET /faults/:id',
    summary: 'One fault rule',
    run: async (instance, input) => instance.faults.get(input.params.id!),
  },
  {
    id: 'control.faults.delete',
    route: 'DELETE /faults/:id',
    status: 204,
    summary: 'Remove a fault rule',
    run: async (instance, input) => instance.faults.remove(input.params.id!),
  },
  {
    id: 'control.faults.clear',
    route: 'DELETE /faults',
    summary: 'Remove every fault rule',
    run: async (instance) => ({ removed: await instance.faults.clear() }),
  },
  {
    id: 'control.clock.get',
    route: 'GET /clock',
    summary: "The instance clock's time and whether it can be moved",
    run: async (instance) => ({ now: formatTime(instance.clock.now()), manual: instance.clock instanceof ManualClock }),
  },
  {
    id: 'control.clock.set',
    route: 'POST /clock',
    body: ClockBody,
    summary: 'Set (`now`) or advance (`advance_seconds`) a manual clock; time never goes backwards',
    run: async (instance, input) => moveClock(instance, input.body ?? {}),
  },
  {
    id: 'control.snapshot.export',
    route: 'GET /snapshot',
    summary: 'Every record of the instance (secrets are hashes already), for import into another instance',
    run: (instance) => exportSnapshot(instance),
  },
  {
    id: 'control.snapshot.import',
    route: 'PUT /snapshot',
    body: SNAPSHOT_BODY,
    bodyLimit: 'snapshot_body_bytes',
    summary: 'Replace the whole state with a snapshot, checked whole first (400 naming the first bad record), in one transaction; it becomes every account\'s starting state',
    run: (instance, input) => loadSnapshot(instance, input.body ?? {}),
  },
];
