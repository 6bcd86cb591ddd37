import type { VendorSchemaName } from './vendor-schemas.ts';

/**
 * Every operation of the vendor's Go client v8 (github.com/ngrok/ngrok-api-go/v8, v8.0.0 of March
 * 2026: 61 service packages, 252 operations), written by us from its `<package>/client.go` files:
 * per package, the coverage row (docs/compatibility.md) it belongs to and its operations as [method name, HTTP
 * method, path, the schema the answer decodes into (test/compat/vendor-schemas.ts; null for a 204),
 * and `filter` on the lists that send the CEL filter parameter]. test/compat/coverage.test.ts calls
 * each one against a live server; test/compat/vendor-schemas.test.ts looks up the schema of each
 * answer here.
 */

export type GoOperation = readonly [name: string, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, answer: VendorSchemaName | null, query?: 'filter'];

export interface GoService {
  /** The coverage table row (docs/compatibility.md) (the service's name in the TypeScript client where it has one). */
  readonly row: string;
  readonly operations: readonly GoOperation[];
}

export const GO_V8_SERVICES: Readonly<Record<string, GoService>> = {
  abuse_reports: {
    row: 'AbuseReports',
    operations: [
      ['Create', 'POST', '/abuse_reports', 'AbuseReport'],
      ['Get', 'GET', '/abuse_reports/{id}', 'AbuseReport'],
    ],
  },
  agent_ingresses: {
    row: 'AgentIngresses',
    operations: [
      ['Create', 'POST', '/agent_ingresses', 'AgentIngress'],
      ['Delete', 'DELETE', '/agent_ingresses/{id}', null],
      ['Get', 'GET', '/agent_ingresses/{id}', 'AgentIngress'],
      ['List', 'GET', '/agent_ingresses', 'AgentIngressList', 'filter'],
      ['Update', 'PATCH', '/agent_ingresses/{id}', 'AgentIngress'],
    ],
  },
  ai_gateway_api_keys: {
    row: 'AIGatewayAPIKeys',
    operations: [
      ['Create', 'POST', '/ai_gateway_api_keys', 'AIGatewayAPIKey'],
      ['Update', 'PATCH', '/ai_gateway_api_keys/{id}', 'AIGatewayAPIKey'],
      ['Delete', 'DELETE', '/ai_gateway_api_keys/{id}', null],
      ['Get', 'GET', '/ai_gateway_api_keys/{id}', 'AIGatewayAPIKey'],
      ['List', 'GET', '/ai_gateway_api_keys', 'AIGatewayAPIKeyList'],
    ],
  },
  api_keys: {
    row: 'APIKeys',
    operations: [
      ['Create', 'POST', '/api_keys', 'APIKey'],
      ['Delete', 'DELETE', '/api_keys/{id}', null],
      ['Get', 'GET', '/api_keys/{id}', 'APIKey'],
      ['List', 'GET', '/api_keys', 'APIKeyList', 'filter'],
      ['Update', 'PATCH', '/api_keys/{id}', 'APIKey'],
    ],
  },
  application_sessions: {
    row: 'ApplicationSessions',
    operations: [
      ['Get', 'GET', '/app/sessions/{id}', 'ApplicationSession'],
      ['Delete', 'DELETE', '/app/sessions/{id}', null],
      ['List', 'GET', '/app/sessions', 'ApplicationSessionList'],
    ],
  },
  application_users: {
    row: 'ApplicationUsers',
    operations: [
      ['Get', 'GET', '/app/users/{id}', 'ApplicationUser'],
      ['Delete', 'DELETE', '/app/users/{id}', null],
      ['List', 'GET', '/app/users', 'ApplicationUserList'],
    ],
  },
  'backends/failover': {
    row: 'FailoverBackends',
    operations: [
      ['Create', 'POST', '/backends/failover', 'FailoverBackend'],
      ['Delete', 'DELETE', '/backends/failover/{id}', null],
      ['Get', 'GET', '/backends/failover/{id}', 'FailoverBackend'],
      ['List', 'GET', '/backends/failover', 'FailoverBackendList'],
      ['Update', 'PATCH', '/backends/failover/{id}', 'FailoverBackend'],
    ],
  },
  'backends/http_response': {
    row: 'HTTPResponseBackends',
    operations: [
      ['Create', 'POST', '/backends/http_response', 'HTTPResponseBackend'],
      ['Delete', 'DELETE', '/backends/http_response/{id}', null],
      ['Get', 'GET', '/backends/http_response/{id}', 'HTTPResponseBackend'],
      ['List', 'GET', '/backends/http_response', 'HTTPResponseBackendList'],
      ['Update', 'PATCH', '/backends/http_response/{id}', 'HTTPResponseBackend'],
    ],
  },
  'backends/static_address': {
    row: 'StaticBackends',
    operations: [
      ['Create', 'POST', '/backends/static', 'StaticBackend'],
      ['Delete', 'DELETE', '/backends/static/{id}', null],
      ['Get', 'GET', '/backends/static/{id}', 'StaticBackend'],
      ['List', 'GET', '/backends/static', 'StaticBackendList'],
      ['Update', 'PATCH', '/backends/static/{id}', 'StaticBackend'],
    ],
  },
  'backends/tunnel_group': {
    row: 'TunnelGroupBackends',
    operations: [
      ['Create', 'POST', '/backends/tunnel_group', 'TunnelGroupBackend'],
      ['Delete', 'DELETE', '/backends/tunnel_group/{id}', null],
      ['Get', 'GET', '/backends/tunnel_group/{id}', 'TunnelGroupBackend'],
      ['List', 'GET', '/backends/tunnel_group', 'TunnelGroupBackendList'],
      ['Update', 'PATCH', '/backends/tunnel_group/{id}', 'TunnelGroupBackend'],
    ],
  },
  'backends/weighted': {
    row: 'WeightedBackends',
    operations: [
      ['Create', 'POST', '/backends/weighted', 'WeightedBackend'],
      ['Delete', 'DELETE', '/backends/weighted/{id}', null],
      ['Get', 'GET', '/backends/weighted/{id}', 'WeightedBackend'],
      ['List', 'GET', '/backends/weighted', 'WeightedBackendList'],
      ['Update', 'PATCH', '/backends/weighted/{id}', 'WeightedBackend'],
    ],
  },
  bot_users: {
    row: 'BotUsers',
    operations: [
      ['Create', 'POST', '/bot_users', 'BotUser'],
      ['Delete', 'DELETE', '/bot_users/{id}', null],
      ['Get', 'GET', '/bot_users/{id}', 'BotUser'],
      ['List', 'GET', '/bot_users', 'BotUserList'],
      ['Update', 'PATCH', '/bot_users/{id}', 'BotUser'],
    ],
  },
  certificate_authorities: {
    row: 'CertificateAuthorities',
    operations: [
      ['Create', 'POST', '/certificate_authorities', 'CertificateAuthority'],
      ['Delete', 'DELETE', '/certificate_authorities/{id}', null],
      ['Get', 'GET', '/certificate_authorities/{id}', 'CertificateAuthority'],
      ['List', 'GET', '/certificate_authorities', 'CertificateAuthorityList', 'filter'],
      ['Update', 'PATCH', '/certificate_authorities/{id}', 'CertificateAuthority'],
    ],
  },
  credentials: {
    row: 'Credentials',
    operations: [
      ['Create', 'POST', '/credentials', 'Credential'],
      ['Delete', 'DELETE', '/credentials/{id}', null],
      ['Get', 'GET', '/credentials/{id}', 'Credential'],
      ['List', 'GET', '/credentials', 'CredentialList', 'filter'],
      ['Update', 'PATCH', '/credentials/{id}', 'Credential'],
    ],
  },
  'edge_modules/https_edge_mutual_tls': {
    row: 'HTTPSEdgeMutualTLSModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{id}/mutual_tls', 'EndpointMutualTLS'],
      ['Get', 'GET', '/edges/https/{id}/mutual_tls', 'EndpointMutualTLS'],
      ['Delete', 'DELETE', '/edges/https/{id}/mutual_tls', null],
    ],
  },
  'edge_modules/https_edge_route_backend': {
    row: 'EdgeRouteBackendModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/backend', 'EndpointBackend'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/backend', 'EndpointBackend'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/backend', null],
    ],
  },
  'edge_modules/https_edge_route_circuit_breaker': {
    row: 'EdgeRouteCircuitBreakerModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/circuit_breaker', 'EndpointCircuitBreaker'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/circuit_breaker', 'EndpointCircuitBreaker'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/circuit_breaker', null],
    ],
  },
  'edge_modules/https_edge_route_compression': {
    row: 'EdgeRouteCompressionModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/compression', 'EndpointCompression'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/compression', 'EndpointCompression'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/compression', null],
    ],
  },
  'edge_modules/https_edge_route_ip_restriction': {
    row: 'EdgeRouteIPRestrictionModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/ip_restriction', 'EndpointIPPolicy'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/ip_restriction', 'EndpointIPPolicy'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/ip_restriction', null],
    ],
  },
  'edge_modules/https_edge_route_oauth': {
    row: 'EdgeRouteOAuthModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/oauth', 'EndpointOAuth'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/oauth', 'EndpointOAuth'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/oauth', null],
    ],
  },
  'edge_modules/https_edge_route_oidc': {
    row: 'EdgeRouteOIDCModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/oidc', 'EndpointOIDC'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/oidc', 'EndpointOIDC'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/oidc', null],
    ],
  },
  'edge_modules/https_edge_route_request_headers': {
    row: 'EdgeRouteRequestHeadersModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/request_headers', 'EndpointRequestHeaders'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/request_headers', 'EndpointRequestHeaders'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/request_headers', null],
    ],
  },
  'edge_modules/https_edge_route_response_headers': {
    row: 'EdgeRouteResponseHeadersModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/response_headers', 'EndpointResponseHeaders'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/response_headers', 'EndpointResponseHeaders'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/response_headers', null],
    ],
  },
  'edge_modules/https_edge_route_saml': {
    row: 'EdgeRouteSAMLModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/saml', 'EndpointSAML'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/saml', 'EndpointSAML'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/saml', null],
    ],
  },
  'edge_modules/https_edge_route_traffic_policy': {
    row: 'EdgeRouteTrafficPolicyModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/traffic_policy', 'EndpointTrafficPolicy'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/traffic_policy', 'EndpointTrafficPolicy'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/traffic_policy', null],
    ],
  },
  'edge_modules/https_edge_route_user_agent_filter': {
    row: 'EdgeRouteUserAgentFilterModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/user_agent_filter', 'EndpointUserAgentFilter'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/user_agent_filter', 'EndpointUserAgentFilter'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/user_agent_filter', null],
    ],
  },
  'edge_modules/https_edge_route_webhook_verification': {
    row: 'EdgeRouteWebhookVerificationModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/webhook_verification', 'EndpointWebhookValidation'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/webhook_verification', 'EndpointWebhookValidation'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/webhook_verification', null],
    ],
  },
  'edge_modules/https_edge_route_websocket_tcp_converter': {
    row: 'EdgeRouteWebsocketTCPConverterModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{edge_id}/routes/{id}/websocket_tcp_converter', 'EndpointWebsocketTCPConverter'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}/websocket_tcp_converter', 'EndpointWebsocketTCPConverter'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}/websocket_tcp_converter', null],
    ],
  },
  'edge_modules/https_edge_tls_termination': {
    row: 'HTTPSEdgeTLSTerminationModule',
    operations: [
      ['Replace', 'PUT', '/edges/https/{id}/tls_termination', 'EndpointTLSTermination'],
      ['Get', 'GET', '/edges/https/{id}/tls_termination', 'EndpointTLSTermination'],
      ['Delete', 'DELETE', '/edges/https/{id}/tls_termination', null],
    ],
  },
  'edge_modules/tcp_edge_backend': {
    row: 'TCPEdgeBackendModule',
    operations: [
      ['Replace', 'PUT', '/edges/tcp/{id}/backend', 'EndpointBackend'],
      ['Get', 'GET', '/edges/tcp/{id}/backend', 'EndpointBackend'],
      ['Delete', 'DELETE', '/edges/tcp/{id}/backend', null],
    ],
  },
  'edge_modules/tcp_edge_ip_restriction': {
    row: 'TCPEdgeIPRestrictionModule',
    operations: [
      ['Replace', 'PUT', '/edges/tcp/{id}/ip_restriction', 'EndpointIPPolicy'],
      ['Get', 'GET', '/edges/tcp/{id}/ip_restriction', 'EndpointIPPolicy'],
      ['Delete', 'DELETE', '/edges/tcp/{id}/ip_restriction', null],
    ],
  },
  'edge_modules/tcp_edge_traffic_policy': {
    row: 'TCPEdgeTrafficPolicyModule',
    operations: [
      ['Replace', 'PUT', '/edges/tcp/{id}/traffic_policy', 'EndpointTrafficPolicy'],
      ['Get', 'GET', '/edges/tcp/{id}/traffic_policy', 'EndpointTrafficPolicy'],
      ['Delete', 'DELETE', '/edges/tcp/{id}/traffic_policy', null],
    ],
  },
  'edge_modules/tls_edge_backend': {
    row: 'TLSEdgeBackendModule',
    operations: [
      ['Replace', 'PUT', '/edges/tls/{id}/backend', 'EndpointBackend'],
      ['Get', 'GET', '/edges/tls/{id}/backend', 'EndpointBackend'],
      ['Delete', 'DELETE', '/edges/tls/{id}/backend', null],
    ],
  },
  'edge_modules/tls_edge_ip_restriction': {
    row: 'TLSEdgeIPRestrictionModule',
    operations: [
      ['Replace', 'PUT', '/edges/tls/{id}/ip_restriction', 'EndpointIPPolicy'],
      ['Get', 'GET', '/edges/tls/{id}/ip_restriction', 'EndpointIPPolicy'],
      ['Delete', 'DELETE', '/edges/tls/{id}/ip_restriction', null],
    ],
  },
  'edge_modules/tls_edge_mutual_tls': {
    row: 'TLSEdgeMutualTLSModule',
    operations: [
      ['Replace', 'PUT', '/edges/tls/{id}/mutual_tls', 'EndpointMutualTLS'],
      ['Get', 'GET', '/edges/tls/{id}/mutual_tls', 'EndpointMutualTLS'],
      ['Delete', 'DELETE', '/edges/tls/{id}/mutual_tls', null],
    ],
  },
  'edge_modules/tls_edge_tls_termination': {
    row: 'TLSEdgeTLSTerminationModule',
    operations: [
      ['Replace', 'PUT', '/edges/tls/{id}/tls_termination', 'EndpointTLSTermination'],
      ['Get', 'GET', '/edges/tls/{id}/tls_termination', 'EndpointTLSTermination'],
      ['Delete', 'DELETE', '/edges/tls/{id}/tls_termination', null],
    ],
  },
  'edge_modules/tls_edge_traffic_policy': {
    row: 'TLSEdgeTrafficPolicyModule',
    operations: [
      ['Replace', 'PUT', '/edges/tls/{id}/traffic_policy', 'EndpointTrafficPolicy'],
      ['Get', 'GET', '/edges/tls/{id}/traffic_policy', 'EndpointTrafficPolicy'],
      ['Delete', 'DELETE', '/edges/tls/{id}/traffic_policy', null],
    ],
  },
  'edges/https': {
    row: 'EdgesHTTPS',
    operations: [
      ['Create', 'POST', '/edges/https', 'HTTPSEdge'],
      ['Get', 'GET', '/edges/https/{id}', 'HTTPSEdge'],
      ['List', 'GET', '/edges/https', 'HTTPSEdgeList'],
      ['Update', 'PATCH', '/edges/https/{id}', 'HTTPSEdge'],
      ['Delete', 'DELETE', '/edges/https/{id}', null],
    ],
  },
  'edges/https_routes': {
    row: 'EdgesHTTPSRoutes',
    operations: [
      ['Create', 'POST', '/edges/https/{edge_id}/routes', 'HTTPSEdgeRoute'],
      ['Get', 'GET', '/edges/https/{edge_id}/routes/{id}', 'HTTPSEdgeRoute'],
      ['Update', 'PATCH', '/edges/https/{edge_id}/routes/{id}', 'HTTPSEdgeRoute'],
      ['Delete', 'DELETE', '/edges/https/{edge_id}/routes/{id}', null],
    ],
  },
  'edges/tcp': {
    row: 'EdgesTCP',
    operations: [
      ['Create', 'POST', '/edges/tcp', 'TCPEdge'],
      ['Get', 'GET', '/edges/tcp/{id}', 'TCPEdge'],
      ['List', 'GET', '/edges/tcp', 'TCPEdgeList'],
      ['Update', 'PATCH', '/edges/tcp/{id}', 'TCPEdge'],
      ['Delete', 'DELETE', '/edges/tcp/{id}', null],
    ],
  },
  'edges/tls': {
    row: 'EdgesTLS',
    operations: [
      ['Create', 'POST', '/edges/tls', 'TLSEdge'],
      ['Get', 'GET', '/edges/tls/{id}', 'TLSEdge'],
      ['List', 'GET', '/edges/tls', 'TLSEdgeList'],
      ['Update', 'PATCH', '/edges/tls/{id}', 'TLSEdge'],
      ['Delete', 'DELETE', '/edges/tls/{id}', null],
    ],
  },
  endpoints: {
    row: 'Endpoints',
    operations: [
      ['Create', 'POST', '/endpoints', 'Endpoint'],
      ['List', 'GET', '/endpoints', 'EndpointList'],
      ['Get', 'GET', '/endpoints/{id}', 'Endpoint'],
      ['Update', 'PATCH', '/endpoints/{id}', 'Endpoint'],
      ['Delete', 'DELETE', '/endpoints/{id}', null],
    ],
  },
  event_destinations: {
    row: 'EventDestinations',
    operations: [
      ['Create', 'POST', '/event_destinations', 'EventDestination'],
      ['Delete', 'DELETE', '/event_destinations/{id}', null],
      ['Get', 'GET', '/event_destinations/{id}', 'EventDestination'],
      ['List', 'GET', '/event_destinations', 'EventDestinationList', 'filter'],
      ['Update', 'PATCH', '/event_destinations/{id}', 'EventDestination'],
    ],
  },
  event_sources: {
    row: 'EventSources',
    operations: [
      ['Create', 'POST', '/event_subscriptions/{subscription_id}/sources', 'EventSource'],
      ['Delete', 'DELETE', '/event_subscriptions/{subscription_id}/sources/{type}', null],
      ['Get', 'GET', '/event_subscriptions/{subscription_id}/sources/{type}', 'EventSource'],
      ['List', 'GET', '/event_subscriptions/{subscription_id}/sources', 'EventSourceList'],
      ['Update', 'PATCH', '/event_subscriptions/{subscription_id}/sources/{type}', 'EventSource'],
    ],
  },
  event_subscriptions: {
    row: 'EventSubscriptions',
    operations: [
      ['Create', 'POST', '/event_subscriptions', 'EventSubscription'],
      ['Delete', 'DELETE', '/event_subscriptions/{id}', null],
      ['Get', 'GET', '/event_subscriptions/{id}', 'EventSubscription'],
      ['List', 'GET', '/event_subscriptions', 'EventSubscriptionList', 'filter'],
      ['Update', 'PATCH', '/event_subscriptions/{id}', 'EventSubscription'],
    ],
  },
  ip_policies: {
    row: 'IPPolicies',
    operations: [
      ['Create', 'POST', '/ip_policies', 'IPPolicy'],
      ['Delete', 'DELETE', '/ip_policies/{id}', null],
      ['Get', 'GET', '/ip_policies/{id}', 'IPPolicy'],
      ['List', 'GET', '/ip_policies', 'IPPolicyList', 'filter'],
      ['Update', 'PATCH', '/ip_policies/{id}', 'IPPolicy'],
    ],
  },
  ip_policy_rules: {
    row: 'IPPolicyRules',
    operations: [
      ['Create', 'POST', '/ip_policy_rules', 'IPPolicyRule'],
      ['Delete', 'DELETE', '/ip_policy_rules/{id}', null],
      ['Get', 'GET', '/ip_policy_rules/{id}', 'IPPolicyRule'],
      ['List', 'GET', '/ip_policy_rules', 'IPPolicyRuleList', 'filter'],
      ['Update', 'PATCH', '/ip_policy_rules/{id}', 'IPPolicyRule'],
    ],
  },
  ip_restrictions: {
    row: 'IPRestrictions',
    operations: [
      ['Create', 'POST', '/ip_restrictions', 'IPRestriction'],
      ['Delete', 'DELETE', '/ip_restrictions/{id}', null],
      ['Get', 'GET', '/ip_restrictions/{id}', 'IPRestriction'],
      ['List', 'GET', '/ip_restrictions', 'IPRestrictionList', 'filter'],
      ['Update', 'PATCH', '/ip_restrictions/{id}', 'IPRestriction'],
    ],
  },
  kubernetes_operators: {
    row: 'KubernetesOperators',
    operations: [
      ['Create', 'POST', '/kubernetes_operators', 'KubernetesOperator'],
      ['Update', 'PATCH', '/kubernetes_operators/{id}', 'KubernetesOperator'],
      ['Delete', 'DELETE', '/kubernetes_operators/{id}', null],
      ['Get', 'GET', '/kubernetes_operators/{id}', 'KubernetesOperator'],
      ['List', 'GET', '/kubernetes_operators', 'KubernetesOperatorList'],
      ['GetBoundEndpoints', 'GET', '/kubernetes_operators/{id}/bound_endpoints', 'EndpointList'],
    ],
  },
  reserved_addrs: {
    row: 'ReservedAddrs',
    operations: [
      ['Create', 'POST', '/reserved_addrs', 'ReservedAddr'],
      ['Delete', 'DELETE', '/reserved_addrs/{id}', null],
      ['Get', 'GET', '/reserved_addrs/{id}', 'ReservedAddr'],
      ['List', 'GET', '/reserved_addrs', 'ReservedAddrList', 'filter'],
      ['Update', 'PATCH', '/reserved_addrs/{id}', 'ReservedAddr'],
    ],
  },
  reserved_domains: {
    row: 'ReservedDomains',
    operations: [
      ['Create', 'POST', '/reserved_domains', 'ReservedDomain'],
      ['Delete', 'DELETE', '/reserved_domains/{id}', null],
      ['Get', 'GET', '/reserved_domains/{id}', 'ReservedDomain'],
      ['List', 'GET', '/reserved_domains', 'ReservedDomainList', 'filter'],
      ['Update', 'PATCH', '/reserved_domains/{id}', 'ReservedDomain'],
      ['DeleteCertificateManagementPolicy', 'DELETE', '/reserved_domains/{id}/certificate_management_policy', null],
      ['DeleteCertificate', 'DELETE', '/reserved_domains/{id}/certificate', null],
    ],
  },
  secrets: {
    row: 'Secrets',
    operations: [
      ['Create', 'POST', '/vault_secrets', 'Secret'],
      ['Update', 'PATCH', '/vault_secrets/{id}', 'Secret'],
      ['Delete', 'DELETE', '/vault_secrets/{id}', null],
      ['Get', 'GET', '/vault_secrets/{id}', 'Secret'],
      ['List', 'GET', '/vault_secrets', 'SecretList', 'filter'],
    ],
  },
  service_users: {
    row: 'ServiceUsers',
    operations: [
      ['Create', 'POST', '/service_users', 'ServiceUser'],
      ['Delete', 'DELETE', '/service_users/{id}', null],
      ['Get', 'GET', '/service_users/{id}', 'ServiceUser'],
      ['List', 'GET', '/service_users', 'ServiceUserList', 'filter'],
      ['Update', 'PATCH', '/service_users/{id}', 'ServiceUser'],
    ],
  },
  ssh_certificate_authorities: {
    row: 'SSHCertificateAuthorities',
    operations: [
      ['Create', 'POST', '/ssh_certificate_authorities', 'SSHCertificateAuthority'],
      ['Delete', 'DELETE', '/ssh_certificate_authorities/{id}', null],
      ['Get', 'GET', '/ssh_certificate_authorities/{id}', 'SSHCertificateAuthority'],
      ['List', 'GET', '/ssh_certificate_authorities', 'SSHCertificateAuthorityList', 'filter'],
      ['Update', 'PATCH', '/ssh_certificate_authorities/{id}', 'SSHCertificateAuthority'],
    ],
  },
  ssh_credentials: {
    row: 'SSHCredentials',
    operations: [
      ['Create', 'POST', '/ssh_credentials', 'SSHCredential'],
      ['Delete', 'DELETE', '/ssh_credentials/{id}', null],
      ['Get', 'GET', '/ssh_credentials/{id}', 'SSHCredential'],
      ['List', 'GET', '/ssh_credentials', 'SSHCredentialList', 'filter'],
      ['Update', 'PATCH', '/ssh_credentials/{id}', 'SSHCredential'],
    ],
  },
  ssh_host_certificates: {
    row: 'SSHHostCertificates',
    operations: [
      ['Create', 'POST', '/ssh_host_certificates', 'SSHHostCertificate'],
      ['Delete', 'DELETE', '/ssh_host_certificates/{id}', null],
      ['Get', 'GET', '/ssh_host_certificates/{id}', 'SSHHostCertificate'],
      ['List', 'GET', '/ssh_host_certificates', 'SSHHostCertificateList'],
      ['Update', 'PATCH', '/ssh_host_certificates/{id}', 'SSHHostCertificate'],
    ],
  },
  ssh_user_certificates: {
    row: 'SSHUserCertificates',
    operations: [
      ['Create', 'POST', '/ssh_user_certificates', 'SSHUserCertificate'],
      ['Delete', 'DELETE', '/ssh_user_certificates/{id}', null],
      ['Get', 'GET', '/ssh_user_certificates/{id}', 'SSHUserCertificate'],
      ['List', 'GET', '/ssh_user_certificates', 'SSHUserCertificateList'],
      ['Update', 'PATCH', '/ssh_user_certificates/{id}', 'SSHUserCertificate'],
    ],
  },
  tls_certificates: {
    row: 'TLSCertificates',
    operations: [
      ['Create', 'POST', '/tls_certificates', 'TLSCertificate'],
      ['Delete', 'DELETE', '/tls_certificates/{id}', null],
      ['Get', 'GET', '/tls_certificates/{id}', 'TLSCertificate'],
      ['List', 'GET', '/tls_certificates', 'TLSCertificateList', 'filter'],
      ['Update', 'PATCH', '/tls_certificates/{id}', 'TLSCertificate'],
    ],
  },
  tunnel_sessions: {
    row: 'TunnelSessions',
    operations: [
      ['List', 'GET', '/tunnel_sessions', 'TunnelSessionList', 'filter'],
      ['Get', 'GET', '/tunnel_sessions/{id}', 'TunnelSession'],
      ['Restart', 'POST', '/tunnel_sessions/{id}/restart', null],
      ['Stop', 'POST', '/tunnel_sessions/{id}/stop', null],
      ['Update', 'POST', '/tunnel_sessions/{id}/update', null],
    ],
  },
  tunnels: {
    row: 'Tunnels',
    operations: [
      ['List', 'GET', '/tunnels', 'TunnelList'],
      ['Get', 'GET', '/tunnels/{id}', 'Tunnel'],
    ],
  },
  vaults: {
    row: 'Vaults',
    operations: [
      ['Create', 'POST', '/vaults', 'Vault'],
      ['Update', 'PATCH', '/vaults/{id}', 'Vault'],
      ['Delete', 'DELETE', '/vaults/{id}', null],
      ['Get', 'GET', '/vaults/{id}', 'Vault'],
      ['GetSecretsByVault', 'GET', '/vaults/{id}/secrets', 'SecretList'],
      ['List', 'GET', '/vaults', 'VaultList', 'filter'],
    ],
  },
};
