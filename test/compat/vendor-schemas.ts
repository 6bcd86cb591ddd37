/**
 * The vendor's published response shapes, as a table this project owns: for every kind the vendor
 * serves (the 252 operations of its Go client v8, test/compat/go-v8-operations.ts), the JSON fields of
 * its answers and their types, nested objects included. Written by us from the vendor's OpenAPI
 * document (ngrok/ngrok-openapi `ngrok.yaml`, component schemas) and, for what that document of
 * August 2025 predates (`resolves_to`, `vault_name`, service users, Kubernetes operators, AI gateway
 * API keys), from the Go client v8's `datatypes.go` (github.com/ngrok/ngrok-api-go/v8, March 2026).
 * test/compat/vendor-schemas.test.ts checks every answer of every kind Burrow serves against it,
 * and, when the reference files are at hand, this table against them.
 *
 * Type notation: `string`, `integer`, `number`, `boolean`; a schema name (an object of that shape);
 * `T[]` an array of T; `map<T>` an object whose values are T; a trailing `?` allows `null` (the Go
 * client's pointer fields: optional objects, Refs and strings the vendor may answer as null). Every
 * declared field is expected in every answer: Burrow answers `""`, `[]`, `{}` or `null` where the
 * vendor's examples leave a zero value out.
 */

export const VENDOR_SCHEMAS = {
  Ref: { id: 'string', uri: 'string' },
  AbuseReport: {
    id: 'string', uri: 'string', created_at: 'string', urls: 'string[]', metadata: 'string', status: 'string',
    hostnames: 'AbuseReportHostname[]',
  },
  AbuseReportHostname: { hostname: 'string', status: 'string' },
  AgentIngress: {
    id: 'string', uri: 'string', description: 'string', metadata: 'string', domain: 'string', ns_targets: 'string[]',
    region_domains: 'string[]', created_at: 'string', certificate_management_policy: 'AgentIngressCertPolicy?',
    certificate_management_status: 'AgentIngressCertStatus?',
  },
  AgentIngressList: { ingresses: 'AgentIngress[]', uri: 'string', next_page_uri: 'string?' },
  AgentIngressCertPolicy: { authority: 'string', private_key_type: 'string' },
  AgentIngressCertStatus: { renews_at: 'string?', provisioning_job: 'AgentIngressCertJob?' },
  AgentIngressCertJob: { error_code: 'string?', msg: 'string', started_at: 'string', retries_at: 'string?' },
  AIGatewayAPIKey: {
    id: 'string', uri: 'string', created_at: 'string', updated_at: 'string', description: 'string', metadata: 'string', created_by: 'Ref',
    last_updated_by: 'Ref', endpoint: 'Ref', token: 'string', display_name: 'string', last_used: 'string?',
  },
  AIGatewayAPIKeyList: { ai_gateway_api_keys: 'AIGatewayAPIKey[]', uri: 'string', next_page_uri: 'string?' },
  APIKey: { id: 'string', uri: 'string', description: 'string', metadata: 'string', created_at: 'string', token: 'string?', owner_id: 'string?' },
  APIKeyList: { keys: 'APIKey[]', uri: 'string', next_page_uri: 'string?' },
  ApplicationSession: {
    id: 'string', uri: 'string', public_url: 'string', browser_session: 'BrowserSession', application_user: 'Ref?', created_at: 'string',
    last_active: 'string', expires_at: 'string', endpoint: 'Ref?', edge: 'Ref?', route: 'Ref?',
  },
  ApplicationSessionList: { application_sessions: 'ApplicationSession[]', uri: 'string', next_page_uri: 'string?' },
  BrowserSession: { user_agent: 'UserAgent', ip_address: 'string', location: 'Location?' },
  UserAgent: { raw: 'string', browser_name: 'string', browser_version: 'string', device_type: 'string', os_name: 'string', os_version: 'string' },
  Location: { country_code: 'string?', latitude: 'number?', longitude: 'number?', lat_long_radius_km: 'integer?' },
  ApplicationUser: {
    id: 'string', uri: 'string', identity_provider: 'IdentityProvider', provider_user_id: 'string', username: 'string', email: 'string',
    name: 'string', created_at: 'string', last_active: 'string', last_login: 'string',
  },
  ApplicationUserList: { application_users: 'ApplicationUser[]', uri: 'string', next_page_uri: 'string?' },
  IdentityProvider: { name: 'string', url: 'string' },
  TunnelSession: {
    agent_version: 'string', credential: 'Ref', id: 'string', ip: 'string', metadata: 'string', os: 'string', region: 'string',
    started_at: 'string', transport: 'string', uri: 'string',
  },
  TunnelSessionList: { tunnel_sessions: 'TunnelSession[]', uri: 'string', next_page_uri: 'string?' },
  FailoverBackend: { id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', backends: 'string[]' },
  FailoverBackendList: { backends: 'FailoverBackend[]', uri: 'string', next_page_uri: 'string?' },
  HTTPResponseBackend: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', body: 'string', headers: 'map<string>',
    status_code: 'integer',
  },
  HTTPResponseBackendList: { backends: 'HTTPResponseBackend[]', uri: 'string', next_page_uri: 'string?' },
  StaticBackend: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', address: 'string',
    tls: 'StaticBackendTLS',
  },
  StaticBackendTLS: { enabled: 'boolean' },
  StaticBackendList: { backends: 'StaticBackend[]', uri: 'string', next_page_uri: 'string?' },
  TunnelGroupBackend: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', labels: 'map<string>', tunnels: 'Ref[]',
  },
  TunnelGroupBackendList: { backends: 'TunnelGroupBackend[]', uri: 'string', next_page_uri: 'string?' },
  WeightedBackend: { id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', backends: 'map<integer>' },
  WeightedBackendList: { backends: 'WeightedBackend[]', uri: 'string', next_page_uri: 'string?' },
  BotUser: { id: 'string', uri: 'string', name: 'string', active: 'boolean', created_at: 'string' },
  BotUserList: { bot_users: 'BotUser[]', uri: 'string', next_page_uri: 'string?' },
  CertificateAuthority: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', ca_pem: 'string',
    subject_common_name: 'string', not_before: 'string', not_after: 'string', key_usages: 'string[]', extended_key_usages: 'string[]',
  },
  CertificateAuthorityList: { certificate_authorities: 'CertificateAuthority[]', uri: 'string', next_page_uri: 'string?' },
  Credential: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', token: 'string?', acl: 'string[]',
    owner_id: 'string?',
  },
  CredentialList: { credentials: 'Credential[]', uri: 'string', next_page_uri: 'string?' },
  EndpointWebhookValidation: { enabled: 'boolean?', provider: 'string', secret: 'string' },
  EndpointCompression: { enabled: 'boolean?' },
  EndpointMutualTLS: { enabled: 'boolean?', certificate_authorities: 'Ref[]' },
  EndpointTLSTermination: { enabled: 'boolean?', terminate_at: 'string', min_version: 'string?' },
  EndpointTLSTerminationAtEdge: { enabled: 'boolean?', min_version: 'string?' },
  EndpointRequestHeaders: { enabled: 'boolean?', add: 'map<string>', remove: 'string[]' },
  EndpointResponseHeaders: { enabled: 'boolean?', add: 'map<string>', remove: 'string[]' },
  EndpointIPPolicy: { enabled: 'boolean?', ip_policies: 'Ref[]' },
  EndpointCircuitBreaker: {
    enabled: 'boolean?', tripped_duration: 'integer', rolling_window: 'integer', num_buckets: 'integer', volume_threshold: 'integer',
    error_threshold_percentage: 'number',
  },
  EndpointOAuth: {
    enabled: 'boolean?', provider: 'EndpointOAuthProvider', options_passthrough: 'boolean', cookie_prefix: 'string',
    inactivity_timeout: 'integer', maximum_duration: 'integer', auth_check_interval: 'integer',
  },
  EndpointOAuthProvider: {
    github: 'EndpointOAuthGitHub?', facebook: 'EndpointOAuthFacebook?', microsoft: 'EndpointOAuthMicrosoft?',
    google: 'EndpointOAuthGoogle?', linkedin: 'EndpointOAuthLinkedIn?', gitlab: 'EndpointOAuthGitLab?', twitch: 'EndpointOAuthTwitch?',
    amazon: 'EndpointOAuthAmazon?',
  },
  EndpointOAuthGitHub: {
    client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]',
    teams: 'string[]', organizations: 'string[]',
  },
  EndpointOAuthFacebook: {
    client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]',
  },
  EndpointOAuthMicrosoft: {
    client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]',
  },
  EndpointOAuthGoogle: { client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]' },
  EndpointOAuthLinkedIn: {
    client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]',
  },
  EndpointOAuthGitLab: { client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]' },
  EndpointOAuthTwitch: { client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]' },
  EndpointOAuthAmazon: { client_id: 'string?', client_secret: 'string?', scopes: 'string[]', email_addresses: 'string[]', email_domains: 'string[]' },
  EndpointSAML: {
    enabled: 'boolean?', options_passthrough: 'boolean', cookie_prefix: 'string', inactivity_timeout: 'integer',
    maximum_duration: 'integer', idp_metadata: 'string', force_authn: 'boolean', allow_idp_initiated: 'boolean?',
    authorized_groups: 'string[]', entity_id: 'string', assertion_consumer_service_url: 'string', single_logout_url: 'string',
    request_signing_certificate_pem: 'string', metadata_url: 'string', nameid_format: 'string',
  },
  EndpointOIDC: {
    enabled: 'boolean?', options_passthrough: 'boolean', cookie_prefix: 'string', inactivity_timeout: 'integer',
    maximum_duration: 'integer', issuer: 'string', client_id: 'string', client_secret: 'string', scopes: 'string[]',
  },
  EndpointBackend: { enabled: 'boolean?', backend: 'Ref' },
  EndpointWebsocketTCPConverter: { enabled: 'boolean?' },
  EndpointUserAgentFilter: { enabled: 'boolean?', allow: 'string[]', deny: 'string[]' },
  EndpointTrafficPolicy: { enabled: 'boolean?', value: 'string' },
  HTTPSEdgeRoute: {
    edge_id: 'string', id: 'string', created_at: 'string', match_type: 'string', match: 'string', uri: 'string', description: 'string',
    metadata: 'string', backend: 'EndpointBackend?', ip_restriction: 'EndpointIPPolicy?', circuit_breaker: 'EndpointCircuitBreaker?',
    compression: 'EndpointCompression?', request_headers: 'EndpointRequestHeaders?', response_headers: 'EndpointResponseHeaders?',
    webhook_verification: 'EndpointWebhookValidation?', oauth: 'EndpointOAuth?', saml: 'EndpointSAML?', oidc: 'EndpointOIDC?',
    websocket_tcp_converter: 'EndpointWebsocketTCPConverter?', user_agent_filter: 'EndpointUserAgentFilter?',
    traffic_policy: 'EndpointTrafficPolicy?',
  },
  HTTPSEdgeList: { https_edges: 'HTTPSEdge[]', uri: 'string', next_page_uri: 'string?' },
  HTTPSEdge: {
    id: 'string', description: 'string', metadata: 'string', created_at: 'string', uri: 'string', hostports: 'string[]',
    mutual_tls: 'EndpointMutualTLS?', tls_termination: 'EndpointTLSTermination?', routes: 'HTTPSEdgeRoute[]',
  },
  TCPEdgeList: { tcp_edges: 'TCPEdge[]', uri: 'string', next_page_uri: 'string?' },
  TCPEdge: {
    id: 'string', description: 'string', metadata: 'string', created_at: 'string', uri: 'string', hostports: 'string[]',
    backend: 'EndpointBackend?', ip_restriction: 'EndpointIPPolicy?', traffic_policy: 'EndpointTrafficPolicy?',
  },
  TLSEdgeList: { tls_edges: 'TLSEdge[]', uri: 'string', next_page_uri: 'string?' },
  TLSEdge: {
    id: 'string', description: 'string', metadata: 'string', created_at: 'string', uri: 'string', hostports: 'string[]',
    backend: 'EndpointBackend?', ip_restriction: 'EndpointIPPolicy?', mutual_tls: 'EndpointMutualTLS?',
    tls_termination: 'EndpointTLSTermination?', traffic_policy: 'EndpointTrafficPolicy?',
  },
  Endpoint: {
    id: 'string', region: 'string', created_at: 'string', updated_at: 'string', public_url: 'string', proto: 'string', scheme: 'string',
    hostport: 'string', host: 'string', port: 'integer', type: 'string', metadata: 'string', description: 'string', domain: 'Ref?',
    tcp_addr: 'Ref?', tunnel: 'Ref?', edge: 'Ref?', upstream_url: 'string', upstream_protocol: 'string', url: 'string', principal: 'Ref?',
    traffic_policy: 'string', bindings: 'string[]', tunnel_session: 'Ref?', uri: 'string', name: 'string', pooling_enabled: 'boolean',
  },
  EndpointList: { endpoints: 'Endpoint[]', uri: 'string', next_page_uri: 'string?' },
  EventDestination: {
    id: 'string', metadata: 'string', created_at: 'string', description: 'string', format: 'string', target: 'EventTarget', uri: 'string',
  },
  EventDestinationList: { event_destinations: 'EventDestination[]', uri: 'string', next_page_uri: 'string?' },
  EventTarget: {
    firehose: 'EventTargetFirehose?', kinesis: 'EventTargetKinesis?', cloudwatch_logs: 'EventTargetCloudwatchLogs?',
    datadog: 'EventTargetDatadog?', azure_logs_ingestion: 'EventTargetAzureLogsIngestion?',
  },
  EventTargetFirehose: { auth: 'AWSAuth', delivery_stream_arn: 'string' },
  EventTargetKinesis: { auth: 'AWSAuth', stream_arn: 'string' },
  EventTargetCloudwatchLogs: { auth: 'AWSAuth', log_group_arn: 'string' },
  EventTargetDatadog: { api_key: 'string?', ddtags: 'string?', service: 'string?', ddsite: 'string?' },
  EventTargetAzureLogsIngestion: {
    tenant_id: 'string', client_id: 'string', client_secret: 'string', logs_ingestion_uri: 'string', data_collection_rule_id: 'string',
    data_collection_stream_name: 'string',
  },
  AWSAuth: { role: 'AWSRole?', creds: 'AWSCredentials?' },
  AWSRole: { role_arn: 'string' },
  AWSCredentials: { aws_access_key_id: 'string', aws_secret_access_key: 'string?' },
  EventSubscriptionList: { event_subscriptions: 'EventSubscription[]', uri: 'string', next_page_uri: 'string?' },
  EventSubscription: {
    id: 'string', uri: 'string', created_at: 'string', metadata: 'string', description: 'string', sources: 'EventSource[]',
    destinations: 'Ref[]',
  },
  EventSource: { type: 'string', uri: 'string' },
  EventSourceList: { sources: 'EventSource[]', uri: 'string' },
  IPPolicy: { id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string' },
  IPPolicyList: { ip_policies: 'IPPolicy[]', uri: 'string', next_page_uri: 'string?' },
  IPPolicyRule: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', cidr: 'string', ip_policy: 'Ref',
    action: 'string',
  },
  IPPolicyRuleList: { ip_policy_rules: 'IPPolicyRule[]', uri: 'string', next_page_uri: 'string?' },
  IPRestriction: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', enforced: 'boolean', type: 'string',
    ip_policies: 'Ref[]',
  },
  IPRestrictionList: { ip_restrictions: 'IPRestriction[]', uri: 'string', next_page_uri: 'string?' },
  KubernetesOperator: {
    id: 'string', uri: 'string', created_at: 'string', updated_at: 'string', description: 'string', metadata: 'string', principal: 'Ref',
    enabled_features: 'string[]', region: 'string', deployment: 'KubernetesOperatorDeployment', binding: 'KubernetesOperatorBinding?',
  },
  KubernetesOperatorDeployment: { name: 'string', namespace: 'string', version: 'string', cluster_name: 'string' },
  KubernetesOperatorCert: { cert: 'string', not_before: 'string', not_after: 'string' },
  KubernetesOperatorBinding: { endpoint_selectors: 'string[]', cert: 'KubernetesOperatorCert', ingress_endpoint: 'string' },
  KubernetesOperatorList: { operators: 'KubernetesOperator[]', uri: 'string', next_page_uri: 'string?' },
  ReservedAddr: { id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', addr: 'string', region: 'string' },
  ReservedAddrList: { reserved_addrs: 'ReservedAddr[]', uri: 'string', next_page_uri: 'string?' },
  ReservedDomain: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', domain: 'string', region: 'string',
    cname_target: 'string?', certificate: 'Ref?', certificate_management_policy: 'ReservedDomainCertPolicy?',
    certificate_management_status: 'ReservedDomainCertStatus?', acme_challenge_cname_target: 'string?',
    resolves_to: 'ReservedDomainResolvesToEntry[]',
  },
  ReservedDomainList: { reserved_domains: 'ReservedDomain[]', uri: 'string', next_page_uri: 'string?' },
  ReservedDomainCertPolicy: { authority: 'string', private_key_type: 'string' },
  ReservedDomainCertStatus: { renews_at: 'string?', provisioning_job: 'ReservedDomainCertJob?' },
  ReservedDomainCertJob: { error_code: 'string?', msg: 'string', started_at: 'string', retries_at: 'string?' },
  ReservedDomainResolvesToEntry: { value: 'string' },
  Secret: {
    id: 'string', uri: 'string', created_at: 'string', updated_at: 'string', name: 'string', description: 'string', metadata: 'string',
    created_by: 'Ref', last_updated_by: 'Ref', vault: 'Ref', vault_name: 'string',
  },
  SecretList: { secrets: 'Secret[]', uri: 'string', next_page_uri: 'string?' },
  ServiceUser: { id: 'string', uri: 'string', name: 'string', active: 'boolean', created_at: 'string' },
  ServiceUserList: { service_users: 'ServiceUser[]', uri: 'string', next_page_uri: 'string?' },
  SSHCertificateAuthority: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', public_key: 'string', key_type: 'string',
  },
  SSHCertificateAuthorityList: { ssh_certificate_authorities: 'SSHCertificateAuthority[]', uri: 'string', next_page_uri: 'string?' },
  SSHCredential: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', public_key: 'string', acl: 'string[]',
    owner_id: 'string?',
  },
  SSHCredentialList: { ssh_credentials: 'SSHCredential[]', uri: 'string', next_page_uri: 'string?' },
  SSHHostCertificate: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', public_key: 'string', key_type: 'string',
    ssh_certificate_authority_id: 'string', principals: 'string[]', valid_after: 'string', valid_until: 'string', certificate: 'string',
  },
  SSHHostCertificateList: { ssh_host_certificates: 'SSHHostCertificate[]', uri: 'string', next_page_uri: 'string?' },
  SSHUserCertificate: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', public_key: 'string', key_type: 'string',
    ssh_certificate_authority_id: 'string', principals: 'string[]', critical_options: 'map<string>', extensions: 'map<string>',
    valid_after: 'string', valid_until: 'string', certificate: 'string',
  },
  SSHUserCertificateList: { ssh_user_certificates: 'SSHUserCertificate[]', uri: 'string', next_page_uri: 'string?' },
  TLSCertificate: {
    id: 'string', uri: 'string', created_at: 'string', description: 'string', metadata: 'string', certificate_pem: 'string',
    subject_common_name: 'string', subject_alternative_names: 'TLSCertificateSANs', issued_at: 'string?', not_before: 'string',
    not_after: 'string', key_usages: 'string[]', extended_key_usages: 'string[]', private_key_type: 'string', issuer_common_name: 'string',
    serial_number: 'string', subject_organization: 'string', subject_organizational_unit: 'string', subject_locality: 'string',
    subject_province: 'string', subject_country: 'string',
  },
  TLSCertificateList: { tls_certificates: 'TLSCertificate[]', uri: 'string', next_page_uri: 'string?' },
  TLSCertificateSANs: { dns_names: 'string[]', ips: 'string[]' },
  Tunnel: {
    id: 'string', public_url: 'string', started_at: 'string', metadata: 'string', proto: 'string', region: 'string', tunnel_session: 'Ref',
    endpoint: 'Ref?', labels: 'map<string>', backends: 'Ref[]', forwards_to: 'string',
  },
  TunnelList: { tunnels: 'Tunnel[]', uri: 'string', next_page_uri: 'string?' },
  Vault: {
    id: 'string', uri: 'string', created_at: 'string', updated_at: 'string', name: 'string', description: 'string', metadata: 'string',
    created_by: 'string', last_updated_by: 'string',
  },
  VaultList: { vaults: 'Vault[]', uri: 'string', next_page_uri: 'string?' },
} as const satisfies Record<string, Record<string, string>>;

/** The name of a vendor schema. */
export type VendorSchemaName = keyof typeof VENDOR_SCHEMAS;
