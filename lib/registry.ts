import type { ControlOperation, Operation, RequestGuard } from './context.ts';
import { CORE_CONTROL_OPERATIONS } from './control.ts';
import { crudOperations, type ResourceDefinition } from './resource.ts';
import { apiKeys } from './resources/api-keys.ts';
import { credentials } from './resources/credentials.ts';
import { sshCredentials } from './resources/ssh-credentials.ts';
import { ipPolicies, ipPolicyRules } from './resources/ip-policies/policies.ts';
import { apiRestrictionGuard, ipRestrictions } from './resources/ip-policies/restrictions.ts';
import { sshCertificateAuthorities } from './resources/ssh/certificate-authorities.ts';
import { sshHostCertificates, sshUserCertificates } from './resources/ssh/certificates.ts';
import { AGENT_INGRESS_CONTROL_OPERATIONS, agentIngresses } from './resources/agent-ingresses.ts';
import { EVENT_CONTROL_OPERATIONS } from './resources/events/control.ts';
import { TUNNEL_SESSION_COMMANDS, tunnelSessions } from './resources/tunnel-sessions.ts';
import { SIMULATOR_CONTROL_OPERATIONS } from './simulator/agents.ts';
import { REQUEST_JOURNAL_CONTROL_OPERATIONS } from './request-journal-control.ts';
import { INSPECTION_CONTROL_OPERATIONS } from './inspection.ts';
import { eventDestinations } from './resources/events/destinations.ts';
import { EVENT_SOURCE_OPERATIONS } from './resources/events/sources.ts';
import { eventSubscriptions } from './resources/events/subscriptions.ts';
import { BACKENDS } from './resources/backends/index.ts';
import { certificateAuthorities } from './resources/certificate-authorities.ts';
import { EDGE_OPERATIONS, EDGES } from './resources/edges/index.ts';

/**
 * Every resource kind Burrow serves. Adding a kind = its definition file + one line here; the
 * router, the OpenAPI document and the official-client tests pick it up from this list.
 */
export const RESOURCES: readonly ResourceDefinition<any>[] = [
  apiKeys,
  credentials,
  sshCredentials,
  ipPolicies,
  ipPolicyRules,
  ipRestrictions,
  sshCertificateAuthorities,
  sshHostCertificates,
  sshUserCertificates,
  eventDestinations,
  eventSubscriptions,
  tunnelSessions,
  agentIngresses,
  ...BACKENDS,
  certificateAuthorities,
  ...EDGES,
];

/** Operations that are not plain CRUD (module endpoints, agent commands, sources). */
export const EXTRA_OPERATIONS: readonly Operation[] = [...EVENT_SOURCE_OPERATIONS, ...TUNNEL_SESSION_COMMANDS, ...EDGE_OPERATIONS];

/** Checks run before every API request (IP restrictions of type `api`). */
export const GUARDS: readonly RequestGuard[] = [apiRestrictionGuard];

/** Control-plane operations (`/_burrow/…`): core ones plus those of families (simulator, outboxes). */
export const CONTROL_OPERATIONS: readonly ControlOperation[] = [
  ...CORE_CONTROL_OPERATIONS,
  ...EVENT_CONTROL_OPERATIONS,
  ...SIMULATOR_CONTROL_OPERATIONS,
  ...AGENT_INGRESS_CONTROL_OPERATIONS,
  ...REQUEST_JOURNAL_CONTROL_OPERATIONS,
  ...INSPECTION_CONTROL_OPERATIONS,
];

/** All API operations, in routing order. */
export function allOperations(): Operation[] {
  return [...RESOURCES.flatMap((def) => crudOperations(def)), ...EXTRA_OPERATIONS];
}
