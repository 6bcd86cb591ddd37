import type { CertificateAuthority } from '../ca/certificate-authority.ts';
import type { Clock } from '../conventions/clock.ts';
import type { LiveAgents } from '../traffic/live-agents.ts';
import type { IdFactory } from '../conventions/ids.ts';
import type { QueryParams } from '../conventions/paging.ts';
import type { Schema } from '../conventions/fields.ts';
import type { SimulationSettings } from '../simulation/settings.ts';
import type { RequestJournal } from '../journal/request-journal.ts';
import type { TrafficJournal } from '../journal/traffic-journal.ts';
import type { ReplayRequest } from '../journal/replay.ts';
import type { TcpPorts } from '../traffic/tcp-ports.ts';
import type { TrafficPolicyChecker } from '../conventions/traffic-policy.ts';
import type { Faults } from '../simulation/faults.ts';
import type { Read, Scope, Store, StoredRecord, StoreReader, StoreTransaction } from '../store.ts';

/** Who is calling: the owner (user or bot) behind an API key, or the operator. */
export interface Principal {
  readonly account: string;
  /** `usr_…` or `bot_…`. */
  readonly ownerId: string;
  readonly admin: boolean;
  /** The API key used, when the call came through one. */
  readonly apiKeyId?: string;
}

/** An event an operation wants published (events are stored in the same transaction). */
export interface EmittedEvent {
  readonly type: string;
  readonly object: unknown;
}

/**
 * Everything an operation may use. Operations take a context and plain input, return plain output
 * or throw an ApiError; they never see HTTP types.
 */
export interface OperationContext {
  readonly account: string;
  readonly principal: Principal;
  /** The store transaction of this operation (read-only for reads: writes throw). */
  readonly tx: StoreTransaction;
  readonly clock: Clock;
  readonly ids: IdFactory;
  /** Base URL that `uri` fields and Refs are built from. */
  readonly baseUrl: string;
  /** Queues an audit or agent event; it is stored with the operation's writes, or not at all. */
  emit(type: string, object: unknown): void;
  /**
   * Runs `action` once the operation's transaction committed, and never for a run that did not
   * (work outside the store: disconnecting the live agent of a session that ended).
   */
  afterCommit(action: () => void): void;
  /** Instance services that families need (key generation, simulator hooks). */
  readonly services: Services;
}

/** Instance-wide services and settings reachable from operations. */
export interface Services {
  readonly now: () => Date;
  /** What the simulated service looks like (agent versions, regions, name servers, CA). */
  readonly simulation: SimulationSettings;
  /** The instance's resource kinds, found by name, store kind or id (lib/engine/registry.ts). */
  readonly kinds: KindIndex;
  /** What a family's `setup` answered for this instance (its settings, validated). */
  state(family: string): unknown;
  /**
   * The instance's certificate authority (lib/ca/instance-ca.ts): the one brought with the
   * `certificateAuthority` option, else the one kept in the store, generated on first use. It
   * signs the agent gateway's certificate; operations sign with it where the vendor signs.
   */
  ca(): Promise<CertificateAuthority>;
  /** The agent sessions this process holds and how to reach those other servers hold (lib/traffic/live-agents.ts). */
  readonly liveAgents: LiveAgents;
  /** The addresses this instance listens on, by listener (`api`, `agent`, `ssh`…), for the health report. */
  readonly listeners: Map<string, string>;
  /** Real listening ports of TCP endpoints, when this process runs an ingress (lib/traffic/tcp-ports.ts). */
  readonly tcpPorts: TcpPorts;
  /** The write-time check of traffic policies (lib/policy/checker.ts), which every path that stores one uses. */
  readonly trafficPolicies: TrafficPolicyChecker;
}

/** Finds the instance's resource kinds; families use it instead of importing each other. */
export interface KindIndex {
  /** Every flat resource kind, in routing order. */
  readonly kinds: readonly ResourceKind[];
  /** The kind named `name` (`api_keys`), or undefined. */
  kind(name: string): ResourceKind | undefined;
  /** The kind an id belongs to, by its prefix (`ak_…` → API keys), or undefined. */
  kindOfId(id: string): ResourceKind | undefined;
  /** The reactions families registered to writes of records of store kind `storeKind`. */
  reactionsTo(storeKind: string): readonly Reaction[];
}

/**
 * A reaction to a write of a record of store kind `kind`, run inside the writing transaction after
 * the record and its indexes are stored: `before` is absent on create, `after` on delete. A family
 * keeps what it derives from another family's records in step this way (a deleted credential ends
 * its agents' sessions) without importing that family.
 */
export interface Reaction {
  readonly kind: string;
  readonly on: readonly ('created' | 'updated' | 'deleted')[];
  run(ctx: OperationContext, before: StoredRecord | undefined, after: StoredRecord | undefined): Promise<void>;
}

/** Who performs a write: a principal, or a read inside the transaction that finds it (agents). */
export type Actor = Principal | ((reader: StoreReader) => Promise<Principal>);

/** The operator acting in one account (the control plane), or instance-wide (`INSTANCE_SCOPE`). */
export function operatorIn(account: string): Principal {
  return { account, ownerId: '', admin: true };
}

/**
 * What control operations, the agent simulator and provisioning use of a Burrow instance, instead
 * of the whole `Burrow`: reads of committed state, the clock, ids, services, and `perform`, the one
 * path every write takes (API operations included): one transaction, checks inside it, events
 * recorded with it and delivered after it commits.
 */
export interface Instance {
  /** Reads outside a transaction; each may see a newer committed state (lib/store.ts). */
  readonly reader: StoreReader & Pick<Store, 'name' | 'scopes' | 'openChannel'>;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly services: Services;
  /** Base URL for `uri` fields when configured; otherwise each request's origin is used. */
  readonly baseUrl: string | undefined;
  /** Wall-clock start time (ms), for the health report's uptime. */
  readonly startedAt: number;
  /** The resource kinds the API serves (the registry's definitions). */
  readonly resources: readonly ResourceKind[];
  /** The API's operations and the control plane's, in routing order. */
  readonly operations: readonly Operation[];
  readonly controlOperations: readonly ControlOperation[];
  /** The API operation with this id (`api_keys.create`), or undefined. */
  operation(id: string): Operation | undefined;
  /** The last API requests of each account, as the HTTP adapter recorded them. */
  readonly requests: RequestJournal;
  /** What the ingress carried, exchange by exchange (lib/journal/traffic-journal.ts). */
  readonly traffic: TrafficJournal;
  /** The fault rules the request pipeline applies (lib/simulation/faults.ts). */
  readonly faults: Faults;
  /** Each account's starting state and the named checkpoints (lib/control/checkpoints.ts). */
  readonly checkpoints: Checkpoints;
  /**
   * Runs `work` as `actor` in one write transaction with a full operation context, so its writes
   * and the events it emits commit together. `work` may run more than once (store retries).
   */
  perform<T>(actor: Actor, work: (ctx: OperationContext) => Promise<T>, baseUrl?: string): Promise<T>;
}

/** A named checkpoint as the control plane lists it. */
export interface CheckpointInfo {
  readonly name: string;
  readonly created_at: string;
  /** Records it holds. */
  readonly records: number;
}

/** The states a test returns to (lib/control/checkpoints.ts): starting states of accounts and named checkpoints. */
export interface Checkpoints {
  /** Makes the state of every account (with `missingOnly`: of those without one), as it is now, its starting state. */
  captureStart(options?: { missingOnly?: boolean }): Promise<void>;
  /** Makes the state of one account, as it is now, its starting state (on its creation). */
  captureAccountStart(accountId: string): Promise<void>;
  /** Returns one account, or every account, to its starting state; answers them and the records gone. */
  reset(accountId?: string): Promise<{ accounts: string[]; removed: number }>;
  /** Keeps the whole state under `name`. */
  create(name: string): Promise<CheckpointInfo>;
  list(): Promise<CheckpointInfo[]>;
  /** Replaces the whole state with the checkpoint `name` (404 when there is none). */
  restore(name: string): Promise<CheckpointInfo>;
  /** Forgets a checkpoint; false when there was none. */
  delete(name: string): Promise<boolean>;
}

/** The facts of a resource kind that the control plane and tools read (a definition has more). */
export interface ResourceKind {
  /** Operation-id prefix and OpenAPI tag, e.g. `api_keys`. */
  readonly name: string;
  /** Human name for messages: "API key". */
  readonly label: string;
  /** Store kind, e.g. `api_key`. */
  readonly kind: string;
  /** Id prefix without the underscore: `ak`. */
  readonly prefix: string;
  /** Collection path: `/api_keys`. */
  readonly path: string;
  /** Key of the list in list responses: `keys`. */
  readonly listKey: string;
  /** Event object name (`api_key` → `api_key_created.v0`); absent for kinds without audit events. */
  readonly event?: string;
}

/** What a control operation knows of its request besides its input. */
export interface ControlMeta {
  readonly baseUrl: string;
  /** Whether the caller sent the operator token (open operations answer others too, with less). */
  readonly operator: boolean;
  /** Whether `token` is the control plane's operator token (an account key must never be one). */
  isOperatorToken(token: string): boolean;
  /** Sends an API request through the adapter the control request came by (a replay), answering its operation id; absent in-process. */
  readonly send?: (request: ReplayRequest) => Promise<string>;
}

type ControlMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** One control-plane operation as lib/control/ and the families declare it. */
export interface ControlOperationSpec {
  readonly id: string;
  /** The method and the path below `/_burrow`, with `:param` placeholders: `GET /accounts/:account_id/records/:id`. */
  readonly route: `${ControlMethod} /${string}`;
  /** The success status, where it is not 200. */
  readonly status?: 201 | 204;
  readonly summary: string;
  readonly body?: Schema;
  /** A body limit of its own (lib/limits.ts), above the API's (the snapshot import: a whole state). */
  readonly bodyLimit?: 'snapshot_body_bytes';
  /** Served without the operator token. */
  readonly open?: boolean;
  /** The answer is text of this media type (a PEM file), sent as it is instead of as JSON. */
  readonly contentType?: string;
  run(instance: Instance, input: OperationInput, meta: ControlMeta): Promise<unknown>;
}

/** A control operation as the router and the OpenAPI document read it: its route split, its status given. */
export interface ControlOperation extends Omit<ControlOperationSpec, 'route' | 'status'> {
  readonly method: ControlMethod;
  readonly path: string;
  readonly status: 200 | 201 | 204;
}

/** The operation a spec declares (the registry reads every spec through this). */
export function controlOperation({ route, status, ...spec }: ControlOperationSpec): ControlOperation {
  const space = route.indexOf(' ');
  return { ...spec, method: route.slice(0, space) as ControlMethod, path: route.slice(space + 1), status: status ?? 200 };
}

/** What an operation receives: path parameters, query and JSON body. */
export interface OperationInput {
  readonly params: Readonly<Record<string, string>>;
  readonly query: QueryParams;
  readonly body: unknown;
  /** What the operation's `prepare` produced, outside the transaction (generated keys). */
  readonly prepared?: unknown;
}

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** One API operation: what the router exposes and the OpenAPI document describes. */
export interface Operation {
  /** Stable id, e.g. `api_keys.create`. */
  readonly id: string;
  readonly method: HttpMethod;
  /** Path with `:param` placeholders, e.g. `/api_keys/:id`. */
  readonly path: string;
  /** Success status: 200, 201 or 204 (no body). */
  readonly status: 200 | 201 | 204;
  /** Whether the operation writes (runs in a write transaction). */
  readonly mutates: boolean;
  /** The request body schema, when the operation takes one. */
  readonly body?: Schema;
  /** Query parameters the operation accepts (paging for lists). */
  readonly query?: readonly string[];
  /** Those of `query` that still work but are deprecated in favour of `filter` (the OpenAPI document marks them). */
  readonly deprecatedQuery?: readonly string[];
  /** A short human summary for the OpenAPI document. */
  readonly summary: string;
  /** The tag (resource family) it belongs to in the OpenAPI document. */
  readonly tag: string;
  /**
   * Validates the request body (and path ids a client repeats in it) once, before anything else
   * runs; `prepare` and `run` then receive what it answers as `input.body`. Operations without a
   * body schema have none.
   */
  parse?(input: OperationInput): unknown;
  /**
   * Slow work that needs no stored state (key generation), run before the transaction opens so
   * that other writes are not held up; its result reaches `run` as `input.prepared`.
   */
  prepare?(input: OperationInput, caller: Caller): Promise<unknown>;
  /**
   * A read operation's first reads for a caller of `account` (the record its path names, the page
   * a list starts with; [] when the input is not valid). A store a round trip away answers them in
   * the statement that checks the API key (lib/engine/auth.ts), and `run`'s first read of each is answered
   * from there. Only a prefetch: `run` reads as it always does.
   */
  reads?(account: string, input: Pick<OperationInput, 'params' | 'query'>): readonly Read[];
  run(ctx: OperationContext, input: OperationInput): Promise<unknown>;
}

/** Who calls an operation's `prepare`, and what it may read there (committed state, services). */
export interface Caller {
  readonly principal: Principal;
  readonly reader: StoreReader;
  readonly services: Services;
}

/** Extra facts about one request that guards (IP restrictions, rate limits) may use. */
export interface RequestMeta {
  /** Base URL to build `uri` fields with. */
  baseUrl: string;
  /** The caller's address, when known. */
  sourceIp?: string;
}

/** A check run before every authenticated API operation; may refuse or add response headers. */
export type RequestGuard = (
  store: StoreReader,
  principal: Principal,
  meta: RequestMeta,
) => Promise<Record<string, string> | void>;
