import { parseTrafficPolicy, TRAFFIC_POLICY_PHASES, type TrafficPolicyAction, type TrafficPolicyPhase } from '../conventions/traffic-policy.ts';
import type { EdgeModuleHolder, StoredModule } from '../families/edges/index.ts';
import type { PolicyRule, PolicyRules, RuleSource } from './program.ts';

/**
 * Where rules come from, all in one form (so there is one engine): traffic policy documents, the
 * edge modules of HTTPS edge routes and TCP/TLS/HTTPS edges, and the options an agent sets on its
 * own bind. Modules and agent options become the traffic policy actions the vendor's migration
 * guide maps them to (ip_restriction → restrict-ips, request_headers → remove-headers then
 * add-headers, compression → compress-response, webhook_verification → verify-webhook,
 * circuit_breaker → circuit-breaker, mutual_tls and tls_termination → terminate-tls, oauth → oauth,
 * oidc → oidc), plus two module-only actions (user-agent-filter, saml).
 *
 * Order (the vendor documents none for modules; Burrow's choice): on_tcp_connect TLS termination,
 * IP restriction; on_http_request IP restriction, circuit breaker, webhook verification, basic
 * auth, OAuth/OIDC/SAML, user agent filter, request headers; on_http_response response headers,
 * compression; then the legacy `policy` rules and the traffic policy document, in that order.
 */

const rule = (...actions: TrafficPolicyAction[]): PolicyRule => ({ actions });
const internal = (source: string, rules: PolicyRules): RuleSource => ({ source, rules, internal: true });

/** A traffic policy document (JSON or YAML); one that no longer parses answers 500 naming the reason. */
export function trafficPolicySource(text: string, source = 'traffic_policy', phases: readonly TrafficPolicyPhase[] = TRAFFIC_POLICY_PHASES): RuleSource {
  try {
    return { source, rules: parseTrafficPolicy(text, { phases }) };
  } catch (error) {
    return { source, rules: {}, problem: `the traffic policy is not valid: ${(error as Error).message}` };
  }
}

/** The header modules: removals first, so a header can be replaced (the vendor's basic-auth module example relies on it). */
function headerRules(change: { add?: Readonly<Record<string, string>>; remove?: readonly string[] }): PolicyRule[] {
  const rules: PolicyRule[] = [];
  if (change.remove?.length) rules.push(rule({ type: 'remove-headers', config: { headers: [...change.remove] } }));
  if (change.add && Object.keys(change.add).length) rules.push(rule({ type: 'add-headers', config: { headers: { ...change.add } } }));
  return rules;
}

/** The 0.11.0 API's `policy` module: inbound rules on the request (connection for TCP/TLS), outbound on the response. */
function legacyPolicy(stored: StoredModule, connectionOnly: boolean): PolicyRules {
  const convert = (rules: unknown) => ((rules as PolicyRule[] | undefined) ?? []).map((r) => ({ name: r.name, expressions: r.expressions, actions: r.actions.map((a) => ({ type: a.type, config: a.config ?? undefined })) }));
  return connectionOnly ? { on_tcp_connect: convert(stored.inbound) } : { on_http_request: convert(stored.inbound), on_http_response: convert(stored.outbound) };
}

type Translation = (stored: StoredModule, holderId: string) => PolicyRule[];

/** The modules of HTTPS edge routes, by phase, in order, with the rules each becomes. */
const ROUTE_MODULES: readonly (readonly [TrafficPolicyPhase, readonly (readonly [string, Translation])[]])[] = [
  [
    'on_http_request',
    [
      [
        'circuit_breaker',
        (m) => [
          rule({
            type: 'circuit-breaker',
            config: { error_threshold: m.error_threshold_percentage, volume_threshold: m.volume_threshold, window_duration: m.rolling_window, tripped_duration: m.tripped_duration, num_buckets: m.num_buckets },
          }),
        ],
      ],
      ['webhook_verification', (m) => [rule({ type: 'verify-webhook', config: { provider: m.provider, secret: m.secret } })]],
      [
        'oauth',
        (m) => {
          const provider = m.provider as Record<string, unknown>;
          return [rule({ type: 'oauth', config: { provider: m.provider_name, ...(provider.client_id ? { client_id: provider.client_id } : {}), scopes: provider.scopes, allow_cors_preflight: m.options_passthrough } })];
        },
      ],
      ['oidc', (m) => [rule({ type: 'oidc', config: { issuer_url: m.issuer, client_id: m.client_id, scopes: m.scopes, allow_cors_preflight: m.options_passthrough } })]],
      [
        'saml',
        (m, holderId) => [
          rule({ type: 'saml', config: { idp_metadata: m.idp_metadata, holder_id: holderId, force_authn: m.force_authn, nameid_format: m.nameid_format, options_passthrough: m.options_passthrough } }),
        ],
      ],
      ['user_agent_filter', (m) => [rule({ type: 'user-agent-filter', config: { allow: m.allow, deny: m.deny } })]],
      ['request_headers', (m) => headerRules(m as { add?: Record<string, string>; remove?: string[] })],
    ],
  ],
  [
    'on_http_response',
    [
      ['response_headers', (m) => headerRules(m as { add?: Record<string, string>; remove?: string[] })],
      ['compression', () => [rule({ type: 'compress-response', config: { algorithms: ['gzip', 'deflate'] } })]],
    ],
  ],
];

/** What holds a set of edge modules. */
export type ModuleHolder = EdgeModuleHolder;

/**
 * The rules of an edge's or route's modules as stored (lib/resources/edges/modules.ts); disabled
 * and unset modules contribute nothing. `holderId` names the edge or route (SAML's service
 * provider URLs carry it).
 */
export function edgeModuleSources(holder: ModuleHolder, holderId: string, modules: Readonly<Record<string, unknown>>): RuleSource[] {
  const get = (name: string) => {
    const stored = modules[name] as StoredModule | null | undefined;
    return stored && stored.enabled ? stored : undefined;
  };
  const sources: RuleSource[] = [];
  const connectionOnly = holder !== 'https_route';
  const termination = get('tls_termination');
  const mutualTls = get('mutual_tls');
  if (holder === 'https_edge' || (holder === 'tls_edge' && termination?.terminate_at === 'edge')) {
    sources.push(
      internal('module:tls_termination', {
        on_tcp_connect: [
          rule({
            type: 'terminate-tls',
            config: {
              ...(termination?.min_version ? { min_version: termination.min_version } : {}),
              ...(mutualTls ? { mutual_tls_certificate_authorities: [...(mutualTls.certificate_authority_ids as string[])] } : {}),
            },
          }),
        ],
      }),
    );
  }
  const ipRestriction = get('ip_restriction');
  if (ipRestriction) {
    const restrict = rule({ type: 'restrict-ips', config: { ip_policies: [...(ipRestriction.ip_policy_ids as string[])] } });
    sources.push(internal('module:ip_restriction', connectionOnly ? { on_tcp_connect: [restrict] } : { on_http_request: [restrict] }));
  }
  if (holder === 'https_route') {
    for (const [phase, translations] of ROUTE_MODULES) {
      for (const [name, translate] of translations) {
        const stored = get(name);
        if (stored) sources.push(internal(`module:${name}`, { [phase]: translate(stored, holderId) }));
      }
    }
  }
  const legacy = get('policy');
  if (legacy) sources.push({ source: 'module:policy', rules: legacyPolicy(legacy, connectionOnly) });
  const trafficPolicy = get('traffic_policy');
  if (trafficPolicy) sources.push(trafficPolicySource(trafficPolicy.value as string, 'module:traffic_policy'));
  return sources;
}

/** IP restriction of an agent's bind. */
interface AgentIpRestriction {
  readonly allow_cidrs?: readonly string[];
  readonly deny_cidrs?: readonly string[];
}

/** Header changes of an agent's bind: `add` as `name:value` entries (the SDKs' form), `addParsed` as a map. */
interface AgentHeaders {
  readonly add?: readonly string[];
  readonly remove?: readonly string[];
  readonly addParsed?: Readonly<Record<string, string>>;
}

/**
 * The options an agent sets on its own bind, as the Bind message carries them (the vendor's agent
 * protocol, ngrok-rust `internals/proto.rs` HttpEndpoint / TcpEndpoint / TlsEndpoint): byte fields
 * (CA and certificate PEMs, keys) are base64 as on the wire. The agent gateway hands them over as
 * it decodes them.
 */
export interface AgentBindOptions {
  /** Legacy basic auth, `user:password`. */
  readonly Auth?: string;
  readonly Compression?: object | null;
  readonly CircuitBreaker?: { readonly error_threshold?: number } | null;
  readonly IPRestriction?: AgentIpRestriction | null;
  readonly BasicAuth?: { readonly credentials?: readonly { readonly username: string; readonly cleartext_password?: string; readonly hashed_password?: string }[] } | null;
  readonly OAuth?: { readonly provider: string; readonly client_id?: string; readonly allow_emails?: readonly string[]; readonly allow_domains?: readonly string[]; readonly scopes?: readonly string[] } | null;
  readonly OIDC?: { readonly issuer_url: string; readonly client_id?: string; readonly allow_emails?: readonly string[]; readonly allow_domains?: readonly string[]; readonly scopes?: readonly string[] } | null;
  readonly WebhookVerification?: { readonly provider: string; readonly secret?: string } | null;
  readonly MutualTLSCA?: { readonly mutual_tls_ca?: string } | null;
  readonly RequestHeaders?: AgentHeaders | null;
  readonly ResponseHeaders?: AgentHeaders | null;
  readonly UserAgentFilter?: { readonly allow?: readonly string[]; readonly deny?: readonly string[] } | null;
  /** A traffic policy document, or the legacy policy as JSON (`{"Inbound": […], "Outbound": […]}`). */
  readonly TrafficPolicy?: string | null;
  /** TLS binds: client certificates checked at the edge (the CAs, PEM, base64). */
  readonly MutualTLSAtEdge?: { readonly mutual_tls_ca?: string } | null;
  /** TLS binds: terminate TLS at the edge with this certificate and key (PEM, base64); absent: TLS passes through to the agent. */
  readonly TLSTermination?: { readonly cert?: string; readonly key?: string } | null;
}

const fromBase64 = (text: string | undefined) => Buffer.from(text ?? '', 'base64').toString('utf8');

function agentHeaders(headers: AgentHeaders): PolicyRule[] {
  const add: Record<string, string> = { ...(headers.addParsed ?? {}) };
  for (const entry of headers.add ?? []) {
    const colon = entry.indexOf(':');
    if (colon > 0) add[entry.slice(0, colon).trim()] = entry.slice(colon + 1).trim();
  }
  return headerRules({ add, remove: headers.remove });
}

/**
 * The legacy policy an agent may send instead of a document, JSON `{Inbound, Outbound}` (rules with
 * PascalCase fields), as rules: inbound on the connection of a TCP or TLS bind, else on the
 * request; outbound on the response. Undefined when `text` is not one (a document, or nothing).
 */
export function legacyAgentRules(text: string, connectionOnly: boolean): PolicyRules | undefined {
  let legacy: { Inbound?: unknown; Outbound?: unknown; inbound?: unknown; outbound?: unknown } | undefined;
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && ['Inbound', 'Outbound', 'inbound', 'outbound'].some((key) => key in parsed)) legacy = parsed;
  } catch {
    // YAML or not a document: read as a traffic policy
  }
  if (!legacy) return undefined;
  const convert = (rules: unknown): PolicyRule[] =>
    ((rules as Record<string, any>[] | null | undefined) ?? []).map((r) => ({
      name: r.Name ?? r.name,
      expressions: r.Expressions ?? r.expressions ?? [],
      actions: ((r.Actions ?? r.actions ?? []) as Record<string, any>[]).map((a) => ({ type: a.Type ?? a.type, config: a.Config ?? a.config })),
    }));
  const inbound = convert(legacy.Inbound ?? legacy.inbound);
  return connectionOnly ? { on_tcp_connect: inbound } : { on_http_request: inbound, on_http_response: convert(legacy.Outbound ?? legacy.outbound) };
}

/** The agent's traffic policy: a document, or the legacy policy (legacyAgentRules). */
function agentTrafficPolicy(text: string, connectionOnly: boolean): RuleSource {
  const legacy = legacyAgentRules(text, connectionOnly);
  return legacy ? { source: 'agent:policy', rules: legacy } : trafficPolicySource(text, 'agent:traffic_policy', connectionOnly ? ['on_tcp_connect'] : TRAFFIC_POLICY_PHASES);
}

/** The protocols of agent binds. */
type BindProtocol = 'http' | 'https' | 'tcp' | 'tls';
const HTTP_BINDS: ReadonlySet<BindProtocol> = new Set(['http', 'https']);

/** The rules of the options an agent set on its bind, for a bind of `protocol`. */
export function agentBindSources(protocol: BindProtocol, options: AgentBindOptions): RuleSource[] {
  const sources: RuleSource[] = [];
  const http = HTTP_BINDS.has(protocol);
  if (protocol === 'tls' && options.TLSTermination) {
    const mutual = options.MutualTLSAtEdge?.mutual_tls_ca;
    sources.push(
      internal('agent:tls_termination', {
        on_tcp_connect: [
          rule({
            type: 'terminate-tls',
            config: {
              ...(options.TLSTermination.cert ? { server_certificate: fromBase64(options.TLSTermination.cert), server_private_key: fromBase64(options.TLSTermination.key) } : {}),
              ...(mutual ? { mutual_tls_certificate_authorities: [fromBase64(mutual)] } : {}),
            },
          }),
        ],
      }),
    );
  }
  if (protocol === 'https' && options.MutualTLSCA?.mutual_tls_ca) {
    sources.push(internal('agent:mutual_tls', { on_tcp_connect: [rule({ type: 'terminate-tls', config: { mutual_tls_certificate_authorities: [fromBase64(options.MutualTLSCA.mutual_tls_ca)] } })] }));
  }
  const ip = options.IPRestriction;
  if (ip && (ip.allow_cidrs?.length || ip.deny_cidrs?.length)) {
    // The agent's restriction lists CIDRs to allow and to deny; with only denials, everything else is allowed.
    // On an HTTP(S) endpoint it refuses each request (403, ERR_NGROK_3205), as the vendor's edge does;
    // a TCP or TLS endpoint has only the connection to close.
    const allow = ip.allow_cidrs?.length ? [...ip.allow_cidrs] : ['0.0.0.0/0', '::/0'];
    const restrict = rule({ type: 'restrict-ips', config: { allow, deny: [...(ip.deny_cidrs ?? [])] } });
    sources.push(internal('agent:ip_restriction', http ? { on_http_request: [restrict] } : { on_tcp_connect: [restrict] }));
  }
  if (http) {
    if (options.CircuitBreaker?.error_threshold) sources.push(internal('agent:circuit_breaker', { on_http_request: [rule({ type: 'circuit-breaker', config: { error_threshold: options.CircuitBreaker.error_threshold, volume_threshold: 20 } })] }));
    if (options.WebhookVerification) sources.push(internal('agent:webhook_verification', { on_http_request: [rule({ type: 'verify-webhook', config: { provider: options.WebhookVerification.provider, secret: options.WebhookVerification.secret ?? '' } })] }));
    const credentials = [...(options.Auth ? [options.Auth] : []), ...(options.BasicAuth?.credentials ?? []).map((c) => `${c.username}:${c.cleartext_password ?? ''}`)];
    if (options.BasicAuth?.credentials?.some((c) => !c.cleartext_password && c.hashed_password)) {
      sources.push({ source: 'agent:basic_auth', rules: {}, problem: 'basic auth with hashed passwords cannot be checked: the vendor does not document the hash' });
    } else if (credentials.length) {
      sources.push(internal('agent:basic_auth', { on_http_request: [rule({ type: 'basic-auth', config: { credentials } })] }));
    }
    if (options.OAuth) {
      sources.push(
        internal('agent:oauth', {
          on_http_request: [rule({ type: 'oauth', config: { provider: options.OAuth.provider, ...(options.OAuth.client_id ? { client_id: options.OAuth.client_id } : {}), scopes: options.OAuth.scopes ?? [] } })],
        }),
      );
    }
    if (options.OIDC) {
      sources.push(
        internal('agent:oidc', {
          on_http_request: [rule({ type: 'oidc', config: { issuer_url: options.OIDC.issuer_url, client_id: options.OIDC.client_id ?? '', scopes: options.OIDC.scopes ?? [] } })],
        }),
      );
    }
    if (options.UserAgentFilter) sources.push(internal('agent:user_agent_filter', { on_http_request: [rule({ type: 'user-agent-filter', config: { allow: options.UserAgentFilter.allow ?? [], deny: options.UserAgentFilter.deny ?? [] } })] }));
    if (options.RequestHeaders) sources.push(internal('agent:request_headers', { on_http_request: agentHeaders(options.RequestHeaders) }));
    if (options.ResponseHeaders) sources.push(internal('agent:response_headers', { on_http_response: agentHeaders(options.ResponseHeaders) }));
    if (options.Compression) sources.push(internal('agent:compression', { on_http_response: [rule({ type: 'compress-response', config: { algorithms: ['gzip', 'deflate'] } })] }));
  }
  if (options.TrafficPolicy) sources.push(agentTrafficPolicy(options.TrafficPolicy, !http));
  return sources;
}
