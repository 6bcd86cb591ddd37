import type { Clock } from './conventions/clock.ts';
import type { IdFactory } from './conventions/ids.ts';
import type { QueryParams } from './conventions/paging.ts';
import type { Schema } from './conventions/fields.ts';
import type { SimulationSettings } from './simulator/settings.ts';
import type { StoreReader, StoreTransaction } from './store.ts';

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
  /** Instance services that families need (key generation, simulator hooks). */
  readonly services: Services;
}

/** Instance-wide services and settings reachable from operations. */
export interface Services {
  readonly now: () => Date;
  /** What the simulated service looks like (agent versions, regions, name servers, CA). */
  readonly simulation: SimulationSettings;
  /** The event catalogue: every type a subscription source may name. */
  readonly eventTypes: ReadonlySet<string>;
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
  /** A short human summary for the OpenAPI document. */
  readonly summary: string;
  /** The tag (resource family) it belongs to in the OpenAPI document. */
  readonly tag: string;
  /**
   * Slow work that needs no stored state (key generation), run before the transaction opens so
   * that other writes are not held up; its result reaches `run` as `input.prepared`.
   */
  prepare?(input: OperationInput): Promise<unknown>;
  run(ctx: OperationContext, input: OperationInput): Promise<unknown>;
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
