import type { ControlOperation, Operation, RequestGuard } from './context.ts';
import { CORE_CONTROL_OPERATIONS } from './control.ts';
import { childOperations, type ChildDefinition } from './children.ts';
import { definitionOperations, type ResourceDefinition } from './resource.ts';
import { apiKeys } from './families/api-keys/api-keys.ts';
import { botUsers } from './families/bot-users/bot-users.ts';
import { APPLICATION_CONTROL_OPERATIONS, applicationSessions, applicationUsers } from './families/applications/applications.ts';
import { ABUSE_REPORT_CONTROL_OPERATIONS, abuseReports } from './families/abuse-reports/abuse-reports.ts';
import { credentials } from './families/credentials/credentials.ts';
import { sshCredentials } from './families/ssh/ssh-credentials.ts';
import { ipPolicies, ipPolicyRules } from './families/ip-policies/policies.ts';
import { apiRestrictionGuard, ipRestrictions } from './families/ip-policies/restrictions.ts';
import { sshCertificateAuthorities } from './families/ssh/certificate-authorities.ts';
import { sshHostCertificates, sshUserCertificates } from './families/ssh/certificates.ts';
import { AGENT_INGRESS_CONTROL_OPERATIONS, agentIngresses } from './families/domains/agent-ingresses.ts';
import { EVENT_CONTROL_OPERATIONS } from './families/events/control.ts';
import { tunnelSessions } from './families/agents/tunnel-sessions.ts';
import { tunnels } from './families/agents/tunnels.ts';
import { ENDPOINT_OPERATIONS, endpoints } from './families/endpoints/endpoints.ts';
import { SIMULATOR_CONTROL_OPERATIONS } from './families/agents/simulator.ts';
import { REQUEST_JOURNAL_CONTROL_OPERATIONS } from './request-journal-control.ts';
import { INSPECTION_CONTROL_OPERATIONS } from './inspection.ts';
import { eventDestinations } from './families/events/destinations.ts';
import { eventSources } from './families/events/sources.ts';
import { eventSubscriptions } from './families/events/subscriptions.ts';
import { failoverBackends } from './families/backends/failover.ts';
import { httpResponseBackends } from './families/backends/http-response.ts';
import { staticBackends } from './families/backends/static.ts';
import { tunnelGroupBackends } from './families/backends/tunnel-group.ts';
import { weightedBackends } from './families/backends/weighted.ts';
import { certificateAuthorities } from './families/certificate-authorities/certificate-authorities.ts';
import { EDGE_MODULE_OPERATIONS } from './families/edges/module-endpoints.ts';
import { httpsEdgeRoutes } from './families/edges/routes.ts';
import { httpsEdges } from './families/edges/https.ts';
import { tcpEdges } from './families/edges/tcp.ts';
import { tlsEdges } from './families/edges/tls.ts';
import { RESERVED_DOMAIN_CONTROL_OPERATIONS, reservedDomains } from './families/domains/reserved-domains.ts';
import { reservedAddrs } from './families/reserved-addrs/reserved-addrs.ts';
import { tlsCertificates } from './families/tls-certificates/tls-certificates.ts';
import { secrets } from './families/vaults/secrets.ts';
import { vaults } from './families/vaults/vaults.ts';

/**
 * Every resource kind Burrow serves, by its name (the operation-id prefix). Adding a kind = its
 * definition file + one line here; the router, the OpenAPI document, the typed in-process client
 * and the official-client tests pick it up from this object. `satisfies` keeps each entry's own
 * type, so the client knows each kind's body schemas; the architecture test checks that every key
 * is its definition's name.
 */
export const REGISTRY = {
  api_keys: apiKeys,
  credentials,
  ssh_credentials: sshCredentials,
  ip_policies: ipPolicies,
  ip_policy_rules: ipPolicyRules,
  ip_restrictions: ipRestrictions,
  ssh_certificate_authorities: sshCertificateAuthorities,
  ssh_host_certificates: sshHostCertificates,
  ssh_user_certificates: sshUserCertificates,
  event_destinations: eventDestinations,
  event_subscriptions: eventSubscriptions,
  tunnel_sessions: tunnelSessions,
  tunnels,
  endpoints,
  agent_ingresses: agentIngresses,
  weighted_backends: weightedBackends,
  failover_backends: failoverBackends,
  http_response_backends: httpResponseBackends,
  tunnel_group_backends: tunnelGroupBackends,
  static_backends: staticBackends,
  certificate_authorities: certificateAuthorities,
  tcp_edges: tcpEdges,
  tls_edges: tlsEdges,
  https_edges: httpsEdges,
  bot_users: botUsers,
  application_users: applicationUsers,
  application_sessions: applicationSessions,
  abuse_reports: abuseReports,
  tls_certificates: tlsCertificates,
  reserved_domains: reservedDomains,
  reserved_addrs: reservedAddrs,
  vaults,
  secrets,
} satisfies Record<string, ResourceDefinition<any, any, any>>;

/** The name of a resource kind: `api_keys`, `credentials`, … */
export type ResourceName = keyof typeof REGISTRY;

/** The registry's definitions, in routing order. */
export const RESOURCES: readonly ResourceDefinition<any, any, any>[] = Object.values(REGISTRY);

/** Child collections: resources under one record of a parent kind, by name. */
export const CHILD_REGISTRY = {
  event_sources: eventSources,
  https_edge_routes: httpsEdgeRoutes,
} satisfies Record<string, ChildDefinition<any, any, any, any>>;

/** Operations that no definition describes yet: the module endpoints (one table, module-endpoints.ts) and the filtered endpoint list. */
export const EXTRA_OPERATIONS: readonly Operation[] = [...EDGE_MODULE_OPERATIONS, ...ENDPOINT_OPERATIONS];

/** Checks run before every API request (IP restrictions of type `api`). */
export const GUARDS: readonly RequestGuard[] = [apiRestrictionGuard];

/** Control-plane operations (`/_burrow/…`): core ones plus those of families (simulator, outboxes). */
export const CONTROL_OPERATIONS: readonly ControlOperation[] = [
  ...CORE_CONTROL_OPERATIONS,
  ...EVENT_CONTROL_OPERATIONS,
  ...SIMULATOR_CONTROL_OPERATIONS,
  ...AGENT_INGRESS_CONTROL_OPERATIONS,
  ...RESERVED_DOMAIN_CONTROL_OPERATIONS,
  ...REQUEST_JOURNAL_CONTROL_OPERATIONS,
  ...INSPECTION_CONTROL_OPERATIONS,
  ...APPLICATION_CONTROL_OPERATIONS,
  ...ABUSE_REPORT_CONTROL_OPERATIONS,
];

/** All API operations, in routing order. */
export function allOperations(): Operation[] {
  return [...RESOURCES.flatMap((def) => definitionOperations(def)), ...Object.values(CHILD_REGISTRY).flatMap((def: ChildDefinition<any, any, any, any>) => childOperations(def)), ...EXTRA_OPERATIONS];
}
