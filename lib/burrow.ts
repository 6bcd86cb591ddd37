import { createAccount, createOwner, ensureDefaultAccount, issueApiKey, type CreatedAccount } from './engine/accounts.ts';
import { authenticate, authenticateAndRead, TokenAddresses } from './engine/auth.ts';
import type { Prefetched } from './engine/prefetch.ts';
import { CORE_CONTROL_OPERATIONS, loadSnapshot, moveClock, resetAccounts, restoreCheckpoint, type ClockMove } from './control/operations.ts';
import { operatorIn, type Actor, type CheckpointInfo, type Checkpoints, type ControlOperation, type ControlOperationSpec, type Instance, type Operation, type OperationContext, type OperationInput, type Principal, type RequestGuard, type RequestMeta, type ResourceKind, type Services } from './engine/context.ts';
import { systemClock, type Clock } from './conventions/clock.ts';
import { ApiError, errorPrefixProblem, ERRORS } from './conventions/errors.ts';
import { cryptoRandom, IdFactory, seededRandom } from './conventions/ids.ts';
import type { CertificateAuthority } from './ca/certificate-authority.ts';
import { instanceCertificateAuthority } from './ca/instance-ca.ts';
import { guardKeys } from './engine/key-guard.ts';
import { LiveAgents } from './traffic/live-agents.ts';
import type { QueryParams } from './conventions/paging.ts';
import type { Schema } from './conventions/fields.ts';
import type { Family, FamilyKinds } from './engine/family.ts';
import { openAccountIds } from './simulation/id-sequence.ts';
import { INSPECTION_CONTROL_OPERATIONS } from './control/inspection.ts';
import { StateCheckpoints } from './control/checkpoints.ts';
import { ConnectionDroppedError, Faults } from './simulation/faults.ts';
import { Pipeline, type OperationResult } from './engine/pipeline.ts';
import { rateLimitGuard, type RateLimit } from './engine/rate-limit.ts';
import { Registry } from './engine/registry.ts';
import { JOURNAL_CONTROL_OPERATIONS } from './control/journals.ts';
import { DEFAULT_JOURNAL_SIZE, RequestJournal } from './journal/request-journal.ts';
import { DEFAULT_TRAFFIC_JOURNAL_SIZE, TrafficJournal } from './journal/traffic-journal.ts';
import type { BaseResponse, ResourceDefinition } from './engine/resource.ts';
import { DEFAULT_SIMULATION, type SimulationSettings } from './simulation/settings.ts';
import { TcpPorts } from './traffic/tcp-ports.ts';
import { createTrafficPolicyChecker } from './policy/checker.ts';
import { isShared, type Read, type Store, type StoreReader, type StoreTransaction } from './store.ts';
import type * as v from 'valibot';

/** Options of every Burrow instance. Only `store` is required; families add their own (lib/index.ts). */
export interface CoreOptions {
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
  /**
   * Burrow's certificate authority, brought by the embedder (the CLI's `--ca-cert/--ca-key`);
   * without it the instance keeps one of its own in the store (lib/ca/instance-ca.ts).
   */
  certificateAuthority?: CertificateAuthority;
  /** Per-account request limit, e.g. `{ requests: 120, windowSeconds: 60 }` (off by default). */
  rateLimit?: RateLimit;
  /** What the simulated service looks like: agent versions, regions, name servers, CA. */
  simulation?: Partial<SimulationSettings>;
  /** API requests kept per account in the request journal (default 1000; 0 turns it off). */
  requestJournalSize?: number;
  /** Ingress exchanges kept per account in the traffic journal (default 1000; 0 turns it off). */
  trafficJournalSize?: number;
}

/** The control operations of the core: health, accounts, reset, clock, snapshots, the journal, inspection. */
const CORE_CONTROL: readonly ControlOperationSpec[] = [...CORE_CONTROL_OPERATIONS, ...JOURNAL_CONTROL_OPERATIONS, ...INSPECTION_CONTROL_OPERATIONS];

/**
 * One Burrow instance over the families it is given: many isolated accounts over one store. `K`
 * types the resource kinds of those families (the in-process client's bodies). lib/index.ts makes
 * the public `Burrow` from it with every family.
 */
export class BurrowCore<K extends FamilyKinds = FamilyKinds> implements Instance {
  readonly store: Store;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly #operationIds: IdFactory;
  readonly options: Readonly<CoreOptions & Record<string, unknown>>;
  readonly errorPrefix: string;
  /** Everything the instance serves, derived from its families. */
  readonly registry: Registry;
  readonly guards: readonly RequestGuard[];
  readonly services: Services;
  /** The last API requests of each account, as the request pipeline recorded them. */
  readonly requests: RequestJournal;
  /** What the ingress carried, exchange by exchange, and the traffic events it gives (lib/journal/traffic-journal.ts). */
  readonly traffic: TrafficJournal;
  /** The request pipeline every API request takes (lib/engine/pipeline.ts). */
  readonly pipeline: Pipeline;
  /** Fault rules: make matching API requests fail, wait or lose their connection (lib/simulation/faults.ts). */
  readonly faults: Faults;
  /** Each account's starting state (what a reset returns to) and named checkpoints (lib/control/checkpoints.ts). */
  readonly checkpoints: Checkpoints;
  /** Wall-clock start time (ms), for the health report's uptime. */
  readonly startedAt = Date.now();
  readonly #byId: Map<string, Operation>;
  /** The store as lib/ uses it: only storable keys reach it (engine/key-guard.ts). */
  readonly #store: Store;
  /** The store as the `tx` of read operations. */
  readonly #reader: StoreTransaction;
  /** Where known keys' records are, for a store that reads several in one round trip (lib/engine/auth.ts). */
  readonly #tokenAddresses: TokenAddresses | undefined;
  declare readonly kindsType?: K;

  constructor(options: CoreOptions & Record<string, unknown>, families: readonly Family[]) {
    if (!options?.store) throw new Error('burrow: createBurrow needs a store (MemoryStore or openJsonFileStore)');
    this.options = options;
    this.store = options.store;
    this.#store = guardKeys(options.store);
    this.#reader = readOnly(this.#store);
    this.#tokenAddresses = this.#store.readMany ? new TokenAddresses() : undefined;
    this.clock = options.clock ?? systemClock;
    const now = () => this.clock.now();
    // Seeded: accounts from the instance's stream, operation ids from a stream of their own (every
    // request draws one), and each account's writes from its own sequence (lib/simulation/id-sequence.ts).
    this.ids = options.seed === undefined ? new IdFactory(cryptoRandom, now) : new IdFactory(seededRandom(options.seed), now, { deterministic: true });
    this.#operationIds = options.seed === undefined ? this.ids : new IdFactory(seededRandom(`${options.seed}\u0000operations`), now);
    this.errorPrefix = options.errorPrefix ?? 'ERR_BURROW_';
    const prefixProblem = errorPrefixProblem(this.errorPrefix);
    if (prefixProblem) throw new Error(`burrow: errorPrefix ${prefixProblem}`);
    this.registry = new Registry(families, CORE_CONTROL);
    this.guards = options.rateLimit ? [rateLimitGuard(options.rateLimit, this.clock, isShared(this.#store) ? this.#store : undefined), ...this.registry.guards] : this.registry.guards;
    this.#byId = new Map(this.registry.operations.map((op) => [op.id, op]));
    const clock = this.clock;
    // The system clock's time without a Date per request.
    const nowMs = clock === systemClock ? Date.now : () => clock.now().getTime();
    this.requests = new RequestJournal(options.requestJournalSize ?? DEFAULT_JOURNAL_SIZE, nowMs);
    this.traffic = new TrafficJournal(options.trafficJournalSize ?? DEFAULT_TRAFFIC_JOURNAL_SIZE, nowMs, {
      listens: async (account, type) => {
        for (const hook of this.registry.writeHooks) if (!hook.listens || (await hook.listens(this.#reader, account, type))) return true;
        return false;
      },
      publish: (account, type, object) => this.perform(operatorIn(account), async (ctx) => ctx.emit(type, object)),
    });
    const states = new Map(families.map((family) => [family.name, family.setup?.(options, this.registry)]));
    this.services = {
      now: () => this.clock.now(),
      simulation: { ...DEFAULT_SIMULATION, ...options.simulation },
      kinds: this.registry,
      state: (family) => states.get(family),
      // Made valid from the earlier of real time (real TLS peers check the gateway's certificates)
      // and the instance clock (certificates the API signs carry the instance's time).
      ca: instanceCertificateAuthority(this.#store, () => new Date(Math.min(Date.now(), this.clock.now().getTime())), options.certificateAuthority),
      liveAgents: new LiveAgents(this.#store),
      listeners: new Map(),
      tcpPorts: new TcpPorts(),
      trafficPolicies: createTrafficPolicyChecker(),
    };
    const seeded = (stream: string) => (options.seed === undefined ? undefined : seededRandom(`${options.seed}\u0000${stream}`));
    const faultDraws = seeded('faults');
    const faultIds = seeded('fault ids');
    this.faults = new Faults({ ids: faultIds ? new IdFactory(faultIds, now) : this.ids, clock: this.clock, errorPrefix: this.errorPrefix, ...(faultDraws ? { random: faultDraws } : {}), ...(isShared(this.#store) ? { shared: this.#store } : {}) });
    this.checkpoints = new StateCheckpoints(this);
    this.pipeline = new Pipeline(this);
  }

  /** The store, as the reads of `Instance` see it. */
  get reader(): Store {
    return this.#store;
  }

  /** The configured base URL for `uri` fields, if any. */
  get baseUrl(): string | undefined {
    return this.options.baseUrl;
  }

  /** The resource kinds the API serves (the registry's definitions). */
  get resources(): readonly ResourceKind[] {
    return this.registry.kinds;
  }

  /** Every API operation, in routing order. */
  get operations(): readonly Operation[] {
    return this.registry.operations;
  }

  /** The control plane's operations (served under `/_burrow` by the HTTP adapter). */
  get controlOperations(): readonly ControlOperation[] {
    return this.registry.controlOperations;
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
    return authenticate(this.#store, authorization, this.#tokenAddresses);
  }

  /**
   * `authenticate` for a request to `operation`: a read operation's first reads (Operation.reads),
   * and `also` with them, go in the round trip that checks the key, where the store reads several
   * at once (`prefetches` says whether they will).
   */
  authenticateFor(authorization: string | null | undefined, operation: Operation, input: Pick<OperationInput, 'params' | 'query'>, also?: Read): Promise<{ principal: Principal; prefetched?: Prefetched }> {
    const reads = this.prefetches(operation) ? operation.reads! : undefined;
    return authenticateAndRead(this.#store, authorization, this.#tokenAddresses, reads && ((account) => (also ? [...reads(account, input), also] : reads(account, input))));
  }

  /** Whether a request to `operation` reads its first reads with its key check (authenticateFor). */
  prefetches(operation: Operation): boolean {
    return !operation.mutates && operation.reads !== undefined && this.#tokenAddresses !== undefined;
  }

  /**
   * The perform stage of the pipeline: guards, the body parsed once with the operation's schema,
   * `prepare` outside the transaction, then the operation — a write through `perform`, a read on
   * committed state.
   */
  async execute(principal: Principal, operation: Operation, input: OperationInput, meta: RequestMeta, prefetched?: Prefetched): Promise<OperationResult> {
    const headers: Record<string, string> = {};
    for (const guard of this.guards) {
      const added = await guard(this.#store, principal, meta);
      if (added) Object.assign(headers, added);
    }
    const parsed = operation.parse ? { ...input, body: operation.parse(input) } : input;
    const prepared = operation.prepare ? { ...parsed, prepared: await operation.prepare(parsed, { principal, reader: this.#store, services: this.services }) } : parsed;
    const body = operation.mutates
      ? await this.perform(principal, (ctx) => operation.run(ctx, prepared), meta.baseUrl)
      : await operation.run(this.#context(prefetched ? prefetched.over(this.#reader) : this.#reader, principal, meta.baseUrl, refuseEmit, refuseAfterCommit), prepared);
    return { status: operation.status, body, headers };
  }

  async perform<T>(actor: Actor, work: (ctx: OperationContext) => Promise<T>, baseUrl = this.options.baseUrl ?? 'http://burrow.local'): Promise<T> {
    const hooks = this.registry.writeHooks;
    const { body, results, actions } = await this.#store.transaction(async (tx) => {
      const principal = typeof actor === 'function' ? await actor(tx) : actor;
      const emitted: { type: string; object: unknown }[] = [];
      const actions: (() => void)[] = [];
      const sequence = this.options.seed === undefined ? undefined : await openAccountIds(tx, principal.account, this.options.seed, () => this.clock.now());
      const ctx = this.#context(tx, principal, baseUrl, (type, object) => emitted.push({ type, object }), (action) => actions.push(action), sequence?.ids);
      const body = await work(ctx);
      const results: unknown[] = [];
      for (const hook of hooks) results.push(await hook.inside(ctx, emitted));
      await sequence?.save();
      return { body, results, actions };
    });
    for (const [i, hook] of hooks.entries()) {
      const delivered = hook.committed?.(results[i], this.services);
      if (delivered) await delivered;
    }
    for (const action of actions) action();
    return body;
  }

  #context(tx: StoreTransaction, principal: Principal, baseUrl: string, emit: OperationContext['emit'], afterCommit: OperationContext['afterCommit'], ids = this.ids): OperationContext {
    return { account: principal.account, principal, tx, clock: this.clock, ids, baseUrl, emit, afterCommit, services: this.services };
  }

  /** An in-process client acting with the API key `token`: the same pipeline as HTTP. */
  client(token: string, baseUrl = this.options.baseUrl ?? 'http://burrow.local'): BurrowClient<K> {
    return new BurrowClient<K>(this, token, baseUrl);
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
   * Makes the state of every account, as it is now, its starting state: what `reset` returns to.
   * An account created later starts as it was created; the CLI calls this once its default
   * account and `--api-key` key exist, with `missingOnly` (only accounts without a starting state:
   * a server starting beside others over one store leaves the states they captured alone).
   */
  captureStart(options?: { missingOnly?: boolean }): Promise<void> {
    return this.checkpoints.captureStart(options);
  }

  /**
   * Returns one account (or every account) to its starting state: the records it started with
   * (its `--api-key` key, its admin user) back as they were, everything else gone; fault rules
   * scoped to it (all of them, for every account) removed and its request journal emptied.
   */
  async reset(accountId?: string): Promise<{ accounts: string[]; removed: number }> {
    return resetAccounts(this, accountId);
  }

  /** Keeps the whole state under `name` (replacing a checkpoint of that name), to `restore` later. */
  checkpoint(name: string): Promise<CheckpointInfo> {
    return this.checkpoints.create(name);
  }

  /** Replaces the whole state with the checkpoint `name`, in one transaction; the request journal starts afresh. */
  restore(name: string): Promise<CheckpointInfo> {
    return restoreCheckpoint(this, name);
  }

  /**
   * Replaces the whole state with a snapshot (`GET /_burrow/snapshot`'s document), checked whole
   * first, in one transaction; it becomes every account's starting state (`PUT /_burrow/snapshot`).
   */
  loadSnapshot(snapshot: unknown): Promise<{ scopes: number; records: number }> {
    return loadSnapshot(this, snapshot);
  }

  /** Sets (`now`) and/or advances (`advance_seconds`) the manual clock (`POST /_burrow/clock`); answers its time. */
  moveClock(move: ClockMove): { now: string; manual: true } {
    return moveClock(this, move);
  }

  /** Flushes and closes the store. */
  close(): Promise<void> {
    return this.store.close();
  }
}

const refuseEmit = (): never => {
  throw new ApiError(ERRORS.INTERNAL, 'a read operation tried to emit an event');
};

const refuseAfterCommit = (): never => {
  throw new ApiError(ERRORS.INTERNAL, 'a read operation has no commit to act after');
};

/** Makes a store usable as the `tx` of a read operation: reads pass through, writes throw. */
function readOnly(reader: StoreReader): StoreTransaction {
  const refuse = () => Promise.reject(new ApiError(ERRORS.INTERNAL, 'a read operation tried to write'));
  return {
    get: (scope, id) => reader.get(scope, id),
    page: (scope, query) => reader.page(scope, query),
    ...(reader.readMany ? { readMany: (reads: readonly Read[]) => reader.readMany!(reads) } : {}),
    put: refuse,
    insert: refuse,
    delete: refuse,
    deleteAccount: refuse,
  };
}

/** What a body schema accepts; a kind whose schema is built at run time (edges) takes any object. */
type Accepts<S> = Schema extends S ? Record<string, unknown> : S extends Schema ? v.InferInput<S> : never;

/** The body `POST` on the resource kind `D` accepts, from its valibot schema. */
export type CreateBodyOf<D> = D extends ResourceDefinition<any, infer C, any> ? Accepts<C> : never;
/** The body `PATCH` on the resource kind `D` accepts, from its valibot schema. */
export type UpdateBodyOf<D> = D extends ResourceDefinition<any, any, infer U> ? Accepts<U> : never;

/** A resource as the API answers it: the common fields, typed, and the kind's own fields. */
export type ResourceResponse = BaseResponse & { readonly [field: string]: any };
/** One page of a list: the kind's list key holds the resources; `next_page_uri` is null on the last page. */
export interface ListResponse {
  readonly uri: string;
  readonly next_page_uri: string | null;
  readonly [listKey: string]: any;
}

/** CRUD calls on one resource collection of an in-process client, typed for the kind `D`. */
export interface ResourceClient<D = ResourceDefinition<any, any, any>> {
  create(body?: CreateBodyOf<D>): Promise<ResourceResponse>;
  get(id: string): Promise<ResourceResponse>;
  list(query?: QueryParams): Promise<ListResponse>;
  update(id: string, body: UpdateBodyOf<D>): Promise<ResourceResponse>;
  delete(id: string): Promise<void>;
}

/** A UTF-16 surrogate without its pair: `encodeURIComponent` throws on one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Calls operations in-process as the owner of one API key. Each call takes the request pipeline
 * (lib/engine/pipeline.ts) as an HTTP request does — version, auth, guards, parse, perform, journal — and
 * throws the ApiError an HTTP client would get in the envelope.
 */
export class BurrowClient<K extends FamilyKinds = FamilyKinds> {
  readonly #burrow: BurrowCore<K>;
  readonly #token: string;
  readonly #baseUrl: string;

  constructor(burrow: BurrowCore<K>, token: string, baseUrl: string) {
    this.#burrow = burrow;
    this.#token = token;
    this.#baseUrl = baseUrl;
  }

  /** Runs the operation `operationId` (e.g. `api_keys.update`) and returns its response body. */
  async call(operationId: string, input: Partial<OperationInput> = {}): Promise<any> {
    const operation = this.#burrow.operation(operationId);
    if (!operation) throw new Error(`burrow: unknown operation ${operationId}`);
    const params = input.params ?? {};
    const query = input.query ?? {};
    const search = new URLSearchParams(Object.entries(query).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v as string]]))).toString();
    const authorization = `Bearer ${this.#token}`;
    // In-process, a programming mistake reaches the caller as itself, not as the 500 envelope.
    let unexpected: { error: unknown } | undefined;
    const answer = await this.#burrow.pipeline.answer({
      target: { operationId, params },
      method: operation.method,
      // The journal's path; an id with a lone surrogate is shown with U+FFFD (it names no record anyway).
      path: operation.path.replace(/:([A-Za-z_]+)/g, (_, name: string) => encodeURIComponent((params[name] ?? '').replace(LONE_SURROGATE, '\uFFFD'))),
      search: search === '' ? '' : `?${search}`,
      query,
      header: (name) => (name === 'authorization' ? authorization : null),
      body: async () => input.body ?? {},
      baseUrl: this.#baseUrl,
    }, (error) => (unexpected = { error }));
    if (unexpected) throw unexpected.error;
    if (answer.drop) throw new ConnectionDroppedError(answer.fault ?? '');
    if (answer.error) throw answer.error;
    return answer.body;
  }

  /**
   * CRUD shortcuts for one resource kind by its name (`api_keys`, `credentials`, …; docs/ lists
   * them all). An unknown name or a body its schema would refuse is a compile error.
   */
  resource<N extends keyof K & string>(name: N): ResourceClient<K[N]> {
    return {
      create: (body = {} as CreateBodyOf<K[N]>) => this.call(`${name}.create`, { body }),
      get: (id) => this.call(`${name}.get`, { params: { id } }),
      list: (query = {}) => this.call(`${name}.list`, { query }),
      update: (id, body) => this.call(`${name}.update`, { params: { id }, body }),
      delete: async (id) => {
        await this.call(`${name}.delete`, { params: { id } });
      },
    };
  }
}
