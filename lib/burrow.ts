import { createAccount, createOwner, ensureDefaultAccount, issueApiKey, type CreatedAccount } from './accounts.ts';
import { authenticate } from './auth.ts';
import { operatorIn, type Actor, type ControlOperation, type EmittedEvent, type Instance, type Operation, type OperationContext, type OperationInput, type Principal, type RequestGuard, type RequestMeta, type ResourceKind, type Services } from './context.ts';
import { systemClock, type Clock } from './conventions/clock.ts';
import { ApiError, ERRORS } from './conventions/errors.ts';
import { cryptoRandom, IdFactory, seededRandom } from './conventions/ids.ts';
import { openAccountIds } from './id-sequence.ts';
import { guardKeys } from './key-guard.ts';
import type { QueryParams } from './conventions/paging.ts';
import { rateLimitGuard, type RateLimit } from './rate-limit.ts';
import { allOperations, CONTROL_OPERATIONS, GUARDS, RESOURCES, type REGISTRY, type ResourceName } from './registry.ts';
import type { BaseResponse, ResourceDefinition } from './resource.ts';
import type { Schema } from './conventions/fields.ts';
import type * as v from 'valibot';
import { eventCatalogue } from './families/events/catalogue.ts';
import { DEFAULT_SIMULATION, type SimulationSettings } from './simulation.ts';
import { clearOutbox, readOutbox, type Delivery, type EventSink, type OutboxContents } from './families/events/outbox.ts';
import { recordEvents } from './families/events/recorder.ts';
import { DEFAULT_JOURNAL_SIZE, RequestJournal } from './request-journal.ts';
import { readSecretValue } from './families/vaults/secrets.ts';
import { parseSecretsKey } from './families/vaults/sealing.ts';
import type { Store, StoreReader, StoreTransaction } from './store.ts';

/** Options of `createBurrow`. Only `store` is required. */
export interface BurrowOptions {
  /** Where state lives: `new MemoryStore()` or `await openJsonFileStore(path)` from adapters/. */
  store: Store;
  /** Base URL for `uri` fields; when absent, the origin of each request is used. */
  baseUrl?: string;
  /** Source of "now" (a ManualClock makes times deterministic). */
  clock?: Clock;
  /** Seed for ids and tokens: the same calls then give the same ids and tokens. */
  seed?: number | string;
  /** Prefix of `error_code` values (default `ERR_BURROW_`). */
  errorPrefix?: string;
  /** Refuse requests without a Service-Version header (default: treat a missing header as 2). */
  requireVersionHeader?: boolean;
  /** Per-account request limit, e.g. `{ requests: 120, windowSeconds: 60 }` (off by default). */
  rateLimit?: RateLimit;
  /** What the simulated service looks like: agent versions, regions, name servers, CA. */
  simulation?: Partial<SimulationSettings>;
  /** Events kept per event destination's outbox before the oldest are dropped (default 1000). */
  outboxLimit?: number;
  /** Receive every delivered event after its operation committed (forward events anywhere). */
  eventSinks?: readonly EventSink[];
  /** Reports a sink that threw (default: console.error); the operation has succeeded regardless. */
  onSinkError?: (error: unknown, delivery: Delivery) => void;
  /** API requests kept per account in the request journal (default 1000; 0 turns it off). */
  requestJournalSize?: number;
  /**
   * The key that seals secret values at rest: 32 bytes (or 64 hex digits, or base64). Without it the
   * state keeps a key of its own beside the values; with it the store holds only a check value, and
   * every server of one state needs the same key (README, "Vaults and secrets").
   */
  secretsKey?: Uint8Array | string;
}


/** Result of an operation: the body (undefined for 204) and headers added by guards. */
export interface OperationResult {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** One Burrow instance: many isolated accounts over one store. */
export class Burrow implements Instance {
  readonly store: Store;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly #operationIds: IdFactory;
  readonly options: Readonly<BurrowOptions>;
  readonly errorPrefix: string;
  readonly operations: readonly Operation[];
  /** The resource kinds the API serves (the registry's definitions). */
  readonly resources: readonly ResourceKind[] = RESOURCES;
  /** The control plane's operations (served under `/_burrow` by the HTTP adapter). */
  readonly controlOperations: readonly ControlOperation[] = CONTROL_OPERATIONS;
  readonly guards: RequestGuard[] = [...GUARDS];
  readonly services: Services;
  /** The last API requests of each account, as the HTTP adapter recorded them. */
  readonly requests: RequestJournal;
  /** Wall-clock start time (ms), for the health report's uptime. */
  readonly startedAt = Date.now();
  readonly #byId: Map<string, Operation>;
  /** The store as lib/ uses it: only storable keys reach it (key-guard.ts). */
  readonly #store: Store;
  /** The store as the `tx` of read operations. */
  readonly #reader: StoreTransaction;

  constructor(options: BurrowOptions) {
    if (!options?.store) throw new Error('burrow: createBurrow needs a store (MemoryStore or openJsonFileStore)');
    if (options.outboxLimit !== undefined && !(Number.isInteger(options.outboxLimit) && options.outboxLimit >= 1)) {
      throw new Error(`burrow: outboxLimit must be a whole number of at least 1 (got ${options.outboxLimit})`);
    }
    this.options = options;
    this.store = options.store;
    this.#store = guardKeys(options.store);
    this.#reader = readOnly(this.#store);
    this.clock = options.clock ?? systemClock;
    const now = () => this.clock.now();
    // Seeded: accounts from the instance's stream, operation ids from a stream of their own (every
    // request draws one), and each account's writes from its own sequence (lib/id-sequence.ts).
    this.ids = options.seed === undefined ? new IdFactory(cryptoRandom, now) : new IdFactory(seededRandom(options.seed), now, { deterministic: true });
    this.#operationIds = options.seed === undefined ? this.ids : new IdFactory(seededRandom(`${options.seed}\u0000operations`), now);
    this.errorPrefix = options.errorPrefix ?? 'ERR_BURROW_';
    this.operations = allOperations();
    if (options.rateLimit) this.guards.unshift(rateLimitGuard(options.rateLimit, this.clock));
    this.#byId = new Map(this.operations.map((op) => [op.id, op]));
    const clock = this.clock;
    // The system clock's time without a Date per request.
    this.requests = new RequestJournal(options.requestJournalSize ?? DEFAULT_JOURNAL_SIZE, clock === systemClock ? Date.now : () => clock.now().getTime());
    this.services = {
      now: () => this.clock.now(),
      simulation: { ...DEFAULT_SIMULATION, ...options.simulation },
      eventTypes: new Set(eventCatalogue(RESOURCES)),
      outboxLimit: options.outboxLimit ?? 1000,
      ...(options.secretsKey !== undefined ? { secretsKey: parseSecretsKey(options.secretsKey) } : {}),
    };
  }

  /** The store, as the reads of `Instance` see it. */
  get reader(): Store {
    return this.#store;
  }

  /** The configured base URL for `uri` fields, if any. */
  get baseUrl(): string | undefined {
    return this.options.baseUrl;
  }

  /** The operation with this id (`api_keys.create`), or undefined. */
  operation(id: string): Operation | undefined {
    return this.#byId.get(id);
  }

  /** A new per-request operation id (`op_…`), time-ordered like every id. */
  newOperationId(): string {
    return this.#operationIds.id('op');
  }

  /** Resolves an Authorization header value to its caller, or throws a 401 ApiError. */
  authenticate(authorization: string | null | undefined): Promise<Principal> {
    return authenticate(this.#store, authorization);
  }

  /** Runs guards, then the operation: a write through `perform`, a read on committed state. */
  async execute(principal: Principal, operation: Operation, input: OperationInput, meta: RequestMeta): Promise<OperationResult> {
    const headers: Record<string, string> = {};
    for (const guard of this.guards) {
      const added = await guard(this.#store, principal, meta);
      if (added) Object.assign(headers, added);
    }
    const prepared = operation.prepare ? { ...input, prepared: await operation.prepare(input) } : input;
    const body = operation.mutates
      ? await this.perform(principal, (ctx) => operation.run(ctx, prepared), meta.baseUrl)
      : await operation.run(this.#context(this.#reader, principal, meta.baseUrl, refuseEmit), prepared);
    return { status: operation.status, body, headers };
  }

  async perform<T>(actor: Actor, work: (ctx: OperationContext) => Promise<T>, baseUrl = this.options.baseUrl ?? 'http://burrow.local'): Promise<T> {
    const { body, deliveries } = await this.#store.transaction(async (tx) => {
      const principal = typeof actor === 'function' ? await actor(tx) : actor;
      const emitted: EmittedEvent[] = [];
      const sequence = this.options.seed === undefined ? undefined : await openAccountIds(tx, principal.account, this.options.seed, () => this.clock.now());
      const ctx = this.#context(tx, principal, baseUrl, (type, object) => emitted.push({ type, object }), sequence?.ids);
      const body = await work(ctx);
      const deliveries = emitted.length > 0 ? await recordEvents(ctx, emitted, this.services.outboxLimit) : [];
      await sequence?.save();
      return { body, deliveries };
    });
    if (deliveries.length > 0) await this.#deliver(deliveries);
    return body;
  }

  #context(tx: StoreTransaction, principal: Principal, baseUrl: string, emit: OperationContext['emit'], ids = this.ids): OperationContext {
    return { account: principal.account, principal, tx, clock: this.clock, ids, baseUrl, emit, services: this.services };
  }

  /** Hands committed events to the embedding application's sinks; a failing sink is reported, not raised. */
  async #deliver(deliveries: readonly Delivery[]): Promise<void> {
    for (const sink of this.options.eventSinks ?? []) {
      for (const delivery of deliveries) {
        try {
          await sink.deliver(delivery);
        } catch (error) {
          (this.options.onSinkError ?? ((e) => console.error('burrow: event sink failed', e)))(error, delivery);
        }
      }
    }
  }

  /** The events in an event destination's outbox (oldest first) and how many were dropped. */
  outbox(accountId: string, destinationId: string): Promise<OutboxContents> {
    return readOutbox(this.#store, accountId, destinationId, this.services.outboxLimit);
  }

  /** Empties an event destination's outbox; answers how many events it held. */
  clearOutbox(accountId: string, destinationId: string): Promise<number> {
    return this.perform(operatorIn(accountId), (ctx) => clearOutbox(ctx.tx, accountId, destinationId));
  }

  get outboxLimit(): number {
    return this.services.outboxLimit;
  }

  /** An in-process client acting with the API key `token`: same checks as HTTP. */
  client(token: string, baseUrl = this.options.baseUrl ?? 'http://burrow.local'): BurrowClient {
    return new BurrowClient(this, token, baseUrl);
  }

  /**
   * Creates an isolated account with an admin user and an admin API key. `token` sets the key's
   * token (the CLI's `--api-key`); otherwise one is generated. The token is returned only here.
   */
  createAccount(options: { name?: string; token?: string } = {}): Promise<CreatedAccount> {
    return createAccount(this, options);
  }

  /** Adds a user or bot to an account (the control plane and tests use it for non-admin callers). */
  createOwner(accountId: string, options: { kind?: 'user' | 'bot'; name?: string; admin?: boolean } = {}) {
    return createOwner(this, accountId, options);
  }

  /** Issues an API key for an owner of an account, bypassing auth (control plane, tests). */
  issueApiKey(accountId: string, ownerId: string): Promise<{ id: string; token: string }> {
    return issueApiKey(this, accountId, ownerId);
  }

  /**
   * The default account (what the CLI serves): created on first start, kept in the store. With
   * `token`, that token becomes an admin key of it (kept across restarts on the same file).
   * Returns a generated token only when it created one.
   */
  ensureDefaultAccount(token?: string): Promise<{ accountId: string; token?: string; created: boolean }> {
    return ensureDefaultAccount(this, token);
  }

  /**
   * The value of a secret of an account, unsealed, for an embedder that acts on secrets (a
   * traffic-policy evaluator). No API operation answers a value; this in-process call is the only
   * way to read one back. Throws the secret's 404 for an unknown id.
   */
  revealSecretValue(accountId: string, secretId: string): Promise<string> {
    return readSecretValue(this.#store, this.services.secretsKey, accountId, secretId);
  }

  /** Flushes and closes the store. */
  close(): Promise<void> {
    return this.store.close();
  }
}

const refuseEmit = (): never => {
  throw new ApiError(ERRORS.INTERNAL, 'a read operation tried to emit an event');
};

/** Makes a store usable as the `tx` of a read operation: reads pass through, writes throw. */
function readOnly(reader: StoreReader): StoreTransaction {
  const refuse = () => Promise.reject(new ApiError(ERRORS.INTERNAL, 'a read operation tried to write'));
  return {
    get: (scope, id) => reader.get(scope, id),
    page: (scope, query) => reader.page(scope, query),
    put: refuse,
    insert: refuse,
    delete: refuse,
    deleteAccount: refuse,
  };
}

type DefinitionOf<N extends ResourceName> = (typeof REGISTRY)[N];
/** What a body schema accepts; a kind whose schema is built at run time (edges) takes any object. */
type Accepts<S> = Schema extends S ? Record<string, unknown> : S extends Schema ? v.InferInput<S> : never;

/** The body `POST` on resource kind `N` accepts, from its valibot schema. */
export type CreateBody<N extends ResourceName> = DefinitionOf<N> extends ResourceDefinition<any, infer C, any> ? Accepts<C> : never;
/** The body `PATCH` on resource kind `N` accepts, from its valibot schema. */
export type UpdateBody<N extends ResourceName> = DefinitionOf<N> extends ResourceDefinition<any, any, infer U> ? Accepts<U> : never;

/** A resource as the API answers it: the common fields, typed, and the kind's own fields. */
export type ResourceResponse = BaseResponse & { readonly [field: string]: any };
/** One page of a list: the kind's list key holds the resources; `next_page_uri` is null on the last page. */
export interface ListResponse {
  readonly uri: string;
  readonly next_page_uri: string | null;
  readonly [listKey: string]: any;
}

/** CRUD calls on one resource collection of an in-process client, typed for kind `N`. */
export interface ResourceClient<N extends ResourceName = ResourceName> {
  create(body?: CreateBody<N>): Promise<ResourceResponse>;
  get(id: string): Promise<ResourceResponse>;
  list(query?: QueryParams): Promise<ListResponse>;
  update(id: string, body: UpdateBody<N>): Promise<ResourceResponse>;
  delete(id: string): Promise<void>;
}

/** Calls operations in-process as the owner of one API key, with the same checks as HTTP. */
export class BurrowClient {
  readonly #burrow: Burrow;
  readonly #token: string;
  readonly #baseUrl: string;

  constructor(burrow: Burrow, token: string, baseUrl: string) {
    this.#burrow = burrow;
    this.#token = token;
    this.#baseUrl = baseUrl;
  }

  /** Runs the operation `operationId` (e.g. `api_keys.update`) and returns its response body. */
  async call(operationId: string, input: Partial<OperationInput> = {}): Promise<any> {
    const operation = this.#burrow.operation(operationId);
    if (!operation) throw new Error(`burrow: unknown operation ${operationId}`);
    const principal = await this.#burrow.authenticate(`Bearer ${this.#token}`);
    const result = await this.#burrow.execute(principal, operation, { params: input.params ?? {}, query: input.query ?? {}, body: input.body }, { baseUrl: this.#baseUrl });
    return result.body;
  }

  /**
   * CRUD shortcuts for one resource kind by its name (`api_keys`, `credentials`, …; the README lists
   * them all). An unknown name or a body its schema would refuse is a compile error.
   */
  resource<N extends ResourceName>(name: N): ResourceClient<N> {
    return {
      create: (body = {} as CreateBody<N>) => this.call(`${name}.create`, { body }),
      get: (id) => this.call(`${name}.get`, { params: { id } }),
      list: (query = {}) => this.call(`${name}.list`, { query }),
      update: (id, body) => this.call(`${name}.update`, { params: { id }, body }),
      delete: async (id) => {
        await this.call(`${name}.delete`, { params: { id } });
      },
    };
  }
}

/** Creates a Burrow instance over a store. */
export function createBurrow(options: BurrowOptions): Burrow {
  return new Burrow(options);
}
