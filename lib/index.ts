/**
 * Burrow's public API. Embed it with a store from adapters/ and, for HTTP, the handlers in
 * adapters/http:
 *
 *   const burrow = createBurrow({ store: new MemoryStore() });
 *   const { token } = await burrow.createAccount();
 *   await burrow.client(token).resource('api_keys').create({ description: 'ci' });
 */

// Instance
export { Burrow, BurrowClient, createBurrow } from './burrow.ts';
export type { BurrowOptions, CreateBody, ListResponse, OperationResult, ResourceClient, ResourceResponse, UpdateBody } from './burrow.ts';
export type { Actor, Instance, Operation, OperationContext, OperationInput, Principal, RequestGuard, RequestMeta } from './context.ts';
export type { CreatedAccount } from './accounts.ts';

// Rate limiting
export { parseRateLimit, type RateLimit } from './rate-limit.ts';

// Control plane
export type { ControlOperation } from './context.ts';
export { RequestJournal, DEFAULT_JOURNAL_SIZE, redactQuery, type JournalEntry, type JournalFilter, type RequestRecord } from './request-journal.ts';

// Conventions
export { ManualClock, systemClock, formatTime, type Clock } from './conventions/clock.ts';
export { ApiError, ERRORS, errorBody, fail, type ErrorBody, type ErrorName } from './conventions/errors.ts';
export { IdFactory, idTime, seededRandom, type RandomSource } from './conventions/ids.ts';
export { MAX_PAGE_SIZE } from './conventions/paging.ts';
export { LIMITS, limitNote, type Limit, type LimitName } from './limits.ts';

// Storage contract
export { INSTANCE_SCOPE, StoreUnavailableError, StoreWriteError, type PageQuery, type Scope, type Store, type StoreReader, type StoreTransaction, type StoredRecord } from './store.ts';

// Resource engine and registry
export { crudOperations, defineResource, type BaseRecord, type ResourceDefinition } from './resource.ts';
export { REGISTRY, RESOURCES, allOperations, type ResourceName } from './registry.ts';

// Agent simulator
export { connectAgent, disconnectAgent, type AgentConnect } from './families/agents/simulator.ts';
export { DEFAULT_SIMULATION, type SimulationSettings } from './simulation.ts';

// Events
export { eventCatalogue, AGENT_SESSION_EVENTS } from './families/events/catalogue.ts';
export type { BurrowEvent, Delivery, EventSink, OutboxContents } from './families/events/outbox.ts';

// Rules usable on their own
export { aclPermits, parseAcl, type AclBind } from './conventions/acl.ts';
export { evaluateIpRules, parseCidr, CidrError, type IpDecision, type IpRule } from './conventions/cidr.ts';
export { evaluateRestriction, type RestrictionVerdict } from './families/ip-policies/restrictions.ts';
