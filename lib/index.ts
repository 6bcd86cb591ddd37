/**
 * Burrow's public API. Embed it with a store from adapters/ and, for HTTP, the handlers in
 * adapters/http:
 *
 *   const burrow = createBurrow({ store: new MemoryStore() });
 *   const { token } = await burrow.createAccount();
 *   await burrow.client(token).resource('api_keys').create({ description: 'ci' });
 *
 * This module is where the core (lib/*.ts) meets the families (lib/families/): `Burrow` is the
 * core instance over every family, with the families' own conveniences (outboxes, secret values).
 */
import { BurrowClient as CoreClient, BurrowCore, type CoreOptions, type CreateBodyOf, type UpdateBodyOf } from './burrow.ts';
import type { FamilyKinds } from './engine/family.ts';
import { FAMILIES, REGISTRY, type Kinds, type ResourceName } from './families/index.ts';
import { clearOutbox, eventsOf, readOutbox, type EventOptions, type OutboxContents } from './families/events/index.ts';
import { LIMITS as LIMIT_ROWS } from './limits.ts';
import { storedPolicyIssues, type StoredPolicyIssue } from './policy/stored.ts';
import { operatorKeyOf, readAccountSecrets, readSecretNamed, readSecretValue, type VaultOptions } from './families/vaults/index.ts';
import { operatorIn, type Operation } from './engine/context.ts';
import { Registry } from './engine/registry.ts';

/** Options of `createBurrow`. Only `store` is required. */
export interface BurrowOptions extends CoreOptions, EventOptions, VaultOptions {}

/** One Burrow instance: every family, many isolated accounts over one store. */
export class Burrow extends BurrowCore<Kinds> {
  declare readonly options: Readonly<BurrowOptions>;

  constructor(options: BurrowOptions) {
    super(options as BurrowOptions & Record<string, unknown>, FAMILIES);
  }

  /** The events in an event destination's outbox (oldest first) and how many were dropped. */
  outbox(accountId: string, destinationId: string): Promise<OutboxContents> {
    return readOutbox(this.reader, accountId, destinationId, this.outboxLimit);
  }

  /** Empties an event destination's outbox; answers how many events it held. */
  clearOutbox(accountId: string, destinationId: string): Promise<number> {
    return this.perform(operatorIn(accountId), (ctx) => clearOutbox(ctx.tx, accountId, destinationId));
  }

  /** Events kept per event destination's outbox before the oldest are dropped. */
  get outboxLimit(): number {
    return eventsOf(this.services).outboxLimit;
  }

  /**
   * The value of a secret of an account, unsealed, for an embedder that acts on secrets (a
   * traffic-policy evaluator). No API operation answers a value; this in-process call is the only
   * way to read one back. Throws the secret's 404 for an unknown id.
   */
  revealSecretValue(accountId: string, secretId: string): Promise<string> {
    return readSecretValue(this.reader, operatorKeyOf(this.services), accountId, secretId);
  }
}

/** Creates a Burrow instance over a store. */
export function createBurrow(options: BurrowOptions): Burrow {
  return new Burrow(options);
}

/** The body `POST` on resource kind `N` accepts, from its valibot schema. */
export type CreateBody<N extends ResourceName> = CreateBodyOf<Kinds[N]>;
/** The body `PATCH` on resource kind `N` accepts, from its valibot schema. */
export type UpdateBody<N extends ResourceName> = UpdateBodyOf<Kinds[N]>;

/**
 * The in-process client (lib/burrow.ts), typed by default with Burrow's own kinds, so that the
 * natural annotation `const client: BurrowClient = burrow.client(token)` keeps the resource names
 * and bodies checked; `BurrowClient<K>` for an instance over other families.
 */
export type BurrowClient<K extends FamilyKinds = Kinds> = CoreClient<K>;
export const BurrowClient = CoreClient;

// Instance
export { BurrowCore } from './burrow.ts';
export type { CoreOptions, ListResponse, ResourceClient, ResourceResponse } from './burrow.ts';
export type { Actor, Instance, Operation, OperationContext, OperationInput, Principal, RequestGuard, RequestMeta } from './engine/context.ts';
export type { CreatedAccount } from './engine/accounts.ts';

// Families and the registry
export { FAMILIES, REGISTRY, type Kinds, type ResourceName };
export { Registry };
export { defineFamily, type Family } from './engine/family.ts';
const registry = new Registry(FAMILIES);
/** Every resource kind, in routing order. */
export const RESOURCES = registry.kinds;
/** Every API operation, in routing order. */
export const allOperations = (): Operation[] => [...registry.operations];
/** Every error condition by name: the core's and each family's. */
export const allErrors = () => registry.errors();

// Request pipeline
export { Pipeline, type ControlRequest, SUPPORTED_VERSIONS, routeMiss, toApiError, errorHeaders, type OperationResult, type PipelineAnswer, type PipelineRequest, type Target } from './engine/pipeline.ts';

// Rate limiting
export { parseRateLimit, type RateLimit } from './engine/rate-limit.ts';

// Control plane
export type { CheckpointInfo, Checkpoints, ControlOperation, ControlOperationSpec } from './engine/context.ts';
export { ConnectionDroppedError, Faults, type FaultInput, type FaultRule } from './simulation/faults.ts';
export { CHOSEN_TOKEN, checkChosenToken } from './engine/accounts.ts';
export { redactQuery, redactUrl } from './journal/journal.ts';
export { decidingRule } from './traffic/decisions.ts';
export { RequestJournal, DEFAULT_JOURNAL_SIZE, type JournalEntry, type JournalFault, type JournalFilter, type RequestRecord } from './journal/request-journal.ts';
export { TrafficJournal, DEFAULT_TRAFFIC_JOURNAL_SIZE, type TrafficEntry, type TrafficFilter, type TrafficRuleEntry } from './journal/traffic-journal.ts';
export { TRAFFIC_EVENT_TYPES } from './traffic/events.ts';
export type { AnsweredBy, HttpTraffic, TcpTraffic, Traffic, TrafficEndpoint } from './traffic/exchanges.ts';

// Conventions
export { ManualClock, systemClock, formatTime, type Clock } from './conventions/clock.ts';
export { ApiError, ERRORS, errorBody, fail, type ErrorBody, type ErrorName } from './conventions/errors.ts';
export { IdFactory, idTime, seededRandom, type RandomSource } from './conventions/ids.ts';
export { MAX_PAGE_SIZE, type QueryParams } from './conventions/paging.ts';
export { LIMITS, limitNote, type Limit, type LimitName } from './limits.ts';

// Storage contract
export { CLUSTER_SCOPE, INSTANCE_SCOPE, isShared, StoreUnavailableError, StoreWriteError, type PageQuery, type Scope, type Store, type StoreChannel, type StoreReader, type StoreTransaction, type StoredRecord } from './store.ts';

// Resource engine
export { crudOperations, defineResource, type BaseRecord, type ResourceDefinition } from './engine/resource.ts';

// Agent sessions: the one session path every transport takes (the simulator, the agent and SSH gateways)
export { connectAgent, disconnectAgent, type AgentConnect } from './families/agents/simulator.ts';
export {
  bindAgentTunnel,
  closeAgentSession,
  endSessionResumedBy,
  endSessionsOfGoneServers,
  findHeldTunnel,
  findHeldTunnelById,
  liveTcpTunnelUrls,
  type HeldTunnel,
  openAgentSession,
  releaseExpiredUrlHolds,
  unbindAgentTunnel,
  type AgentBind,
  type AgentHello,
  type AgentProof,
  type BoundTunnel,
  type OpenedSession,
  AGENTS_ERRORS,
  VENDOR_ZONES,
} from './families/agents/index.ts';
export { findSshCredentialAccounts } from './families/ssh/index.ts';
// What the ingress reads of stored endpoints and domains
export { findCloudEndpoint, isInternalHost, type CloudEndpointAddress, type EndpointRecord } from './families/endpoints/index.ts';
export { findCoveringDomain, type CoveringDomain, type DomainCertificate } from './families/domains/index.ts';
export { AgentRelayFailure, LiveAgents, type AgentCommand, type AgentCommandReply, type AgentUpdate, type HeldSession } from './traffic/live-agents.ts';
export { TcpPorts, type TcpPortLease, type TcpPortListener } from './traffic/tcp-ports.ts';
export { checkCertificateAuthority, generateCertificateAuthority, signServerCertificate, type CertificateAuthority, type SignedCertificate } from './ca/certificate-authority.ts';
export { DEFAULT_SIMULATION, type SimulationSettings } from './simulation/settings.ts';

// Events
export { eventCatalogue, AGENT_SESSION_EVENTS, type BurrowEvent, type Delivery, type EventSink, type OutboxContents } from './families/events/index.ts';

// Rules usable on their own
export { aclPermits, parseAcl, type AclBind } from './conventions/acl.ts';
export { evaluateIpRules, parseCidr, CidrError, type IpDecision, type IpRule } from './conventions/cidr.ts';
export { evaluateRestriction, type RestrictionVerdict } from './families/ip-policies/restrictions.ts';
export { listenersOf, type ClockMove } from './control/operations.ts';
export type { RequestFindInput, TrafficFindInput } from './journal/find.ts';
export type { JournalEntryDetail } from './journal/request-journal.ts';
export type { ReplayEdits } from './journal/replay.ts';
export type { TrafficEntryDetail } from './journal/traffic-journal.ts';

// Live traffic: where a request to an edge goes, and the account records traffic policies read
export { routeEdgeTraffic, tcpEdgeHostports, type AppliedModules, type EdgeTraffic } from './families/edges/index.ts';
export { pickUpstream, type Upstream, type UpstreamChoice } from './families/backends/index.ts';
export { rulesOfPolicies } from './families/ip-policies/index.ts';
export { certificateAuthorityPems } from './families/certificate-authorities/index.ts';

/**
 * The traffic policies the state holds that the write-time checker refuses now (a state written
 * before the checker, or one of its rules, existed): kept and served as stored; `burrow serve`
 * warns of each at load (lib/policy/stored.ts).
 */
export const storedPolicyIssuesOf = (burrow: BurrowCore<any>): Promise<StoredPolicyIssue[]> => storedPolicyIssues(burrow.reader, burrow.services.trafficPolicies);
export type { StoredPolicyIssue } from './policy/stored.ts';

/** The value of the secret `name` in the vault named `vault` of `account`, for a traffic policy's `secrets.get` (undefined: no such secret). */
export const secretValueNamed = (burrow: BurrowCore<any>, account: string, vault: string, name: string): Promise<string | undefined> =>
  readSecretNamed(burrow.reader, operatorKeyOf(burrow.services), account, vault, name);

/** The secrets of `account` by vault and name, for a traffic policy's `secrets.get` with computed arguments (at most `policy_secrets_read`; more throws). */
export const accountSecretsOf = (burrow: BurrowCore<any>, account: string): Promise<(vault: string, name: string) => string | undefined> =>
  readAccountSecrets(burrow.reader, operatorKeyOf(burrow.services), account, LIMIT_ROWS.policy_secrets_read.value);
