import * as v from 'valibot';
import type { OperationContext } from '../../context.ts';
import { ApiError, ERRORS, fail } from '../../conventions/errors.ts';
import { coded, refusedField, stringList, zeroIsUnset, type Schema } from '../../conventions/fields.ts';
import { re2Pattern } from '../../conventions/patterns.ts';
import { trafficPolicyValue, type TrafficPolicyPhase } from '../../conventions/traffic-policy.ts';
import { absoluteUri, makeRef } from '../../conventions/refs.ts';
import { existingIds } from '../../references.ts';
import { scopeOf } from '../../resource.ts';
import { backendRef, httpHeaderMap, requireBackend } from '../backends/index.ts';
import { certificateAuthorities, CERTIFICATE_AUTHORITY_KIND } from '../certificate-authorities/index.ts';
import { ipPolicies, requirePolicy } from '../ip-policies/index.ts';
import { EDGES_ERRORS } from './errors.ts';

/**
 * The edge modules: one spec per module (its request "mutate" schema, how it is checked and
 * stored, the ids it points at, its response shape). Edges and routes hold a set of specs; their
 * bodies, PATCH rules, responses and the module endpoints (module-endpoints.ts) are all derived
 * from these specs, so a module is described once.
 *
 * Shared rules: `enabled` defaults to true; every id a module names (backend, IP policy, CA) must
 * exist in the caller's account (404); stored modules keep ids, responses show Refs. Secrets are
 * stored but answered as `null`, except the OIDC `client_secret`, which the spec says is returned.
 */

/** A module as stored on its edge or route: always with `enabled`. */
export interface StoredModule {
  readonly enabled: boolean;
  readonly [field: string]: unknown;
}

type Awaitable<T> = T | Promise<T>;

/** One edge module. */
export interface ModuleSpec {
  /** Field name on the edge or route, and the last segment of its endpoint path. */
  readonly name: string;
  /** Human name for summaries: "backend", "IP restriction". */
  readonly label: string;
  /** The request ("mutate") shape: strict, so unknown fields are refused. */
  readonly schema: Schema;
  /** Checks the validated input (references, cross-field rules) and fills defaults. `field` prefixes messages. */
  store(ctx: OperationContext, input: any, field: string): Awaitable<StoredModule>;
  /** Ids the stored module points at, for the reverse-reference index. */
  references?(stored: StoredModule): readonly string[];
  /**
   * The older module this one replaced (`traffic_policy` replaced the 0.11.0 clients' `policy`): an
   * edge or route holds one of the two, so setting either unsets the other, and one body may not
   * send both.
   */
  readonly replaces?: string;
  /** The response shape; `holderId` is the id of the edge or route that holds the module. */
  respond(ctx: OperationContext, stored: StoredModule, holderId: string): Record<string, unknown>;
}

/** `prefix.name`, or `name` alone when the module is the whole body (module PUT). */
const at = (field: string, name: string) => (field ? `${field}.${name}` : name);

const enabled = v.optional(v.boolean());
const MAX_UINT32 = 4_294_967_295;
const seconds = v.pipe(
  v.number(),
  v.check((n) => Number.isInteger(n) && n >= 0 && n <= MAX_UINT32, (issue) => `must be a whole number of seconds from 0 to ${MAX_UINT32} (got ${issue.input})`),
);
const statusCode = v.pipe(
  v.number(),
  v.check((n) => Number.isInteger(n) && n >= 100 && n <= 599, (issue) => `must be an HTTP status code, an integer from 100 to 599 (got ${issue.input})`),
);
const regexList = v.array(re2Pattern);
const headerNames = v.array(v.pipe(v.string(), v.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name')));
const absoluteUrl = v.pipe(
  v.string(),
  v.check((text) => URL.canParse(text) && ['http:', 'https:'].includes(new URL(text).protocol), (issue) => `must be an absolute http(s) URL (got ${JSON.stringify(issue.input)})`),
);

/** The service's name in session cookie names: the vendor's `ngrok.` default becomes `burrow.`. */
export const DEFAULT_COOKIE_PREFIX = 'burrow.';

// --- backend, ip_restriction, mutual_tls ---------------------------------------------------------

/**
 * The ids a module points at; left out means none. The vendor's Go client (omitempty) leaves an
 * empty list out, so a module it turns off arrives as `{"enabled": false}` alone.
 */
const idList = v.optional(v.array(v.string()), []);

export const BACKEND_MODULE: ModuleSpec = {
  name: 'backend',
  label: 'backend',
  schema: v.strictObject({ enabled, backend_id: v.string() }),
  async store(ctx, input: { enabled?: boolean; backend_id: string }, field) {
    await requireBackend(ctx, input.backend_id, at(field, 'backend_id'));
    return { enabled: input.enabled ?? true, backend_id: input.backend_id };
  },
  references: (stored) => [stored.backend_id as string],
  respond: (ctx, stored) => ({ enabled: stored.enabled, backend: backendRef(ctx, stored.backend_id as string) }),
};

export const IP_RESTRICTION_MODULE: ModuleSpec = {
  name: 'ip_restriction',
  label: 'IP restriction',
  schema: v.strictObject({ enabled, ip_policy_ids: idList }),
  async store(ctx, input: { enabled?: boolean; ip_policy_ids: string[] }, field) {
    const ids = await existingIds(input.ip_policy_ids, (id, index) => requirePolicy(ctx, id, `${at(field, 'ip_policy_ids')}[${index}]`, EDGES_ERRORS.EDGE_IP_POLICY_NOT_FOUND));
    return { enabled: input.enabled ?? true, ip_policy_ids: ids };
  },
  references: (stored) => stored.ip_policy_ids as string[],
  respond: (ctx, stored) => ({ enabled: stored.enabled, ip_policies: (stored.ip_policy_ids as string[]).map((id) => makeRef(ctx.baseUrl, ipPolicies.path, id)) }),
};

export const MUTUAL_TLS_MODULE: ModuleSpec = {
  name: 'mutual_tls',
  label: 'mutual TLS',
  schema: v.strictObject({ enabled, certificate_authority_ids: idList }),
  async store(ctx, input: { enabled?: boolean; certificate_authority_ids: string[] }, field) {
    const ids = await existingIds(input.certificate_authority_ids, async (id, index) => {
      if (!(await ctx.tx.get(scopeOf(ctx, CERTIFICATE_AUTHORITY_KIND), id))) {
        throw new ApiError(EDGES_ERRORS.EDGE_CA_NOT_FOUND, `${at(field, 'certificate_authority_ids')}[${index}]: certificate authority '${id}' was not found`, { id });
      }
    });
    return { enabled: input.enabled ?? true, certificate_authority_ids: ids };
  },
  references: (stored) => stored.certificate_authority_ids as string[],
  respond: (ctx, stored) => ({
    enabled: stored.enabled,
    certificate_authorities: (stored.certificate_authority_ids as string[]).map((id) => makeRef(ctx.baseUrl, certificateAuthorities.path, id)),
  }),
};

// --- tls_termination -----------------------------------------------------------------------------

const TLS_VERSIONS = ['1.2', '1.3'] as const;
const TERMINATE_AT = ['edge', 'upstream'] as const;

const minVersion = v.optional(
  v.nullable(v.picklist(TLS_VERSIONS, (issue) => coded(EDGES_ERRORS.TLS_VERSION_UNSUPPORTED, `${JSON.stringify(issue.input)} is not a supported TLS version; supported: ${TLS_VERSIONS.join(', ')} (null: the service default, 1.2)`))),
);

const respondTermination = (_ctx: OperationContext, stored: StoredModule) => ({ enabled: stored.enabled, terminate_at: stored.terminate_at, min_version: stored.min_version });

/**
 * TLS termination on TLS edges. `upstream` passes TLS through to the agent or application, so a
 * minimum version cannot apply (it must be null) and modules that need the decrypted traffic are
 * refused on the edge (see tls.ts). `min_version` null means the service default, TLS 1.2.
 */
export const TLS_TERMINATION_MODULE: ModuleSpec = {
  name: 'tls_termination',
  label: 'TLS termination',
  schema: v.strictObject({
    enabled,
    terminate_at: zeroIsUnset(v.picklist(TERMINATE_AT, (issue) => coded(EDGES_ERRORS.TERMINATE_AT_INVALID, `${JSON.stringify(issue.input)} is not valid; must be either 'edge' or 'upstream'`))),
    min_version: minVersion,
  }),
  store(_ctx, input: { enabled?: boolean; terminate_at?: 'edge' | 'upstream'; min_version?: string | null }, field) {
    const terminateAt = input.terminate_at ?? 'edge';
    const version = input.min_version ?? null;
    if (terminateAt === 'upstream' && version !== null) {
      fail('INVALID_FIELD', `${at(field, 'min_version')}: must be null when terminate_at is upstream (TLS is then terminated by the upstream, not the edge; got ${JSON.stringify(version)})`);
    }
    return { enabled: input.enabled ?? true, terminate_at: terminateAt, min_version: version };
  },
  respond: respondTermination,
};

/** TLS termination on HTTPS edges: always at the edge, so `terminate_at` may not be sent (7109). */
export const HTTPS_TLS_TERMINATION_MODULE: ModuleSpec = {
  name: 'tls_termination',
  label: 'TLS termination',
  schema: v.strictObject({
    enabled,
    min_version: minVersion,
    terminate_at: refusedField('may not be set on an HTTPS edge: HTTPS edges always terminate TLS at the edge', EDGES_ERRORS.TERMINATE_AT_ON_HTTPS_EDGE),
  }),
  store: (_ctx, input: { enabled?: boolean; min_version?: string | null }) => ({ enabled: input.enabled ?? true, terminate_at: 'edge', min_version: input.min_version ?? null }),
  respond: respondTermination,
};

// --- policy --------------------------------------------------------------------------------------

const ACTION_TYPES = ['url-rewrite', 'custom-response', 'deny', 'log', 'terminate-tls'] as const;
const MTLS_STRATEGIES = ['require-and-verify', 'require-any', 'request'] as const;

const nonEmpty = v.pipe(v.string(), v.minLength(1, 'must not be empty'));
const tlsVersion = v.picklist(TLS_VERSIONS, (issue) => coded(EDGES_ERRORS.TLS_VERSION_UNSUPPORTED, `${JSON.stringify(issue.input)} is not a supported TLS version; supported: ${TLS_VERSIONS.join(', ')}`));

/**
 * `terminate-tls` (the vendor's traffic-policy action reference): TLS versions 1.2–1.3 (defaults
 * min 1.2, max 1.3), an optional server certificate with its private key (together), mutual-TLS
 * CAs (PEM or CA ids) and a verification strategy. The private key is a secret: answered as null.
 */
const terminateTlsConfig = v.pipe(
  v.strictObject({
    min_version: v.optional(tlsVersion),
    max_version: v.optional(tlsVersion),
    server_private_key: v.optional(nonEmpty),
    server_certificate: v.optional(nonEmpty),
    mutual_tls_certificate_authorities: v.optional(v.array(nonEmpty)),
    mutual_tls_verification_strategy: v.optional(v.picklist(MTLS_STRATEGIES, (issue) => `must be one of ${MTLS_STRATEGIES.join(', ')} (got ${JSON.stringify(issue.input)})`)),
  }),
  v.forward(
    v.check((config) => (config.min_version ?? '1.2') <= (config.max_version ?? '1.3'), 'must not be above max_version'),
    ['min_version'],
  ),
  v.forward(
    v.check((config) => (config.server_private_key === undefined) === (config.server_certificate === undefined), 'server_certificate and server_private_key go together'),
    ['server_certificate'],
  ),
);

const action = v.variant(
  'type',
  [
    v.strictObject({ type: v.literal('url-rewrite'), config: v.strictObject({ from: re2Pattern, to: v.string() }) }),
    v.strictObject({
      type: v.literal('custom-response'),
      config: v.strictObject({ status_code: statusCode, content: v.optional(v.string()), headers: v.optional(httpHeaderMap) }),
    }),
    v.strictObject({ type: v.literal('deny'), config: v.optional(v.nullable(v.strictObject({ status_code: v.optional(statusCode) }))) }),
    v.strictObject({ type: v.literal('log'), config: v.optional(v.nullable(v.strictObject({ metadata: v.optional(v.record(v.string(), v.unknown())) }))) }),
    v.strictObject({ type: v.literal('terminate-tls'), config: v.optional(v.nullable(terminateTlsConfig)) }),
  ],
  (issue) => `must be one of ${ACTION_TYPES.join(', ')} (got ${JSON.stringify(issue.input)})`,
);

const rule = v.strictObject({
  name: nonEmpty,
  expressions: v.array(nonEmpty),
  actions: v.pipe(v.array(action), v.minLength(1, 'a rule needs at least one action')),
});

type PolicyRule = v.InferOutput<typeof rule>;

const storeRules = (rules: readonly PolicyRule[] | null | undefined) =>
  (rules ?? []).map((r) => ({ name: r.name, expressions: [...r.expressions], actions: r.actions.map((a) => ({ type: a.type, config: a.config ?? null })) }));

type StoredRule = ReturnType<typeof storeRules>[number];

/** Rules as answered: a terminate-tls server private key is a secret, answered as null. */
const respondRules = (rules: readonly StoredRule[]) =>
  rules.map((r) => ({
    ...r,
    actions: r.actions.map((a) => (a.type === 'terminate-tls' && a.config && 'server_private_key' in a.config ? { ...a, config: { ...a.config, server_private_key: null } } : a)),
  }));

/**
 * The policy module of the 0.11.0 API (replaced by traffic_policy below): inbound and outbound rules, each a name, CEL expressions (an empty
 * list applies the rule to all traffic; Burrow stores them, it evaluates no traffic) and at least
 * one action. Actions: url-rewrite {from (an RE2 pattern), to}, custom-response {status_code, content?,
 * headers?}, deny {status_code?} or null, log {metadata?} or null, and terminate-tls (above), which
 * acts on the connection and so belongs to inbound rules only.
 */
export const POLICY_MODULE: ModuleSpec = {
  name: 'policy',
  label: 'policy',
  schema: v.strictObject({ enabled, inbound: v.optional(v.nullable(v.array(rule))), outbound: v.optional(v.nullable(v.array(rule))) }),
  store(_ctx, input: { enabled?: boolean; inbound?: PolicyRule[] | null; outbound?: PolicyRule[] | null }, field) {
    (input.outbound ?? []).forEach((r, index) => {
      const position = r.actions.findIndex((a) => a.type === 'terminate-tls');
      if (position >= 0) fail('INVALID_FIELD', `${at(field, 'outbound')}[${index}].actions[${position}].type: terminate-tls acts on the incoming connection; put it in an inbound rule`);
    });
    return { enabled: input.enabled ?? true, inbound: storeRules(input.inbound), outbound: storeRules(input.outbound) };
  },
  respond: (_ctx, stored) => ({ enabled: stored.enabled, inbound: respondRules(stored.inbound as StoredRule[]), outbound: respondRules(stored.outbound as StoredRule[]) }),
};

/**
 * The traffic policy module of the newer API (0.12 on), which replaced `policy`: `{enabled, value}`,
 * `value` a traffic policy document in JSON or YAML (lib/conventions/traffic-policy.ts), checked
 * for the phases of the holder's traffic and stored and answered exactly as sent. An edge or route
 * holds one traffic policy: setting `traffic_policy` unsets `policy` and the other way round (the
 * vendor's responses carry both keys, the old one null), and a body may not send both.
 */
export function trafficPolicyModule(phases: readonly TrafficPolicyPhase[]): ModuleSpec {
  return {
    name: 'traffic_policy',
    label: 'traffic policy',
    replaces: 'policy',
    schema: v.strictObject({ enabled, value: trafficPolicyValue({ phases }) }),
    store: (_ctx, input: { enabled?: boolean; value: string }) => ({ enabled: input.enabled ?? true, value: input.value }),
    respond: (_ctx, stored) => ({ enabled: stored.enabled, value: stored.value }),
  };
}

// --- HTTP route modules --------------------------------------------------------------------------

const headersModule = (name: 'request_headers' | 'response_headers', label: string): ModuleSpec => ({
  name,
  label,
  schema: v.strictObject({ enabled, add: v.optional(v.nullable(httpHeaderMap)), remove: v.optional(v.nullable(headerNames)) }),
  store: (_ctx, input: { enabled?: boolean; add?: Record<string, string> | null; remove?: string[] | null }) => ({
    enabled: input.enabled ?? true,
    add: { ...(input.add ?? {}) },
    remove: [...(input.remove ?? [])],
  }),
  respond: (_ctx, stored) => ({ enabled: stored.enabled, add: stored.add, remove: stored.remove }),
});

export const REQUEST_HEADERS_MODULE = headersModule('request_headers', 'request headers');
export const RESPONSE_HEADERS_MODULE = headersModule('response_headers', 'response headers');

const toggleModule = (name: string, label: string): ModuleSpec => ({
  name,
  label,
  schema: v.strictObject({ enabled }),
  store: (_ctx, input: { enabled?: boolean }) => ({ enabled: input.enabled ?? true }),
  respond: (_ctx, stored) => ({ enabled: stored.enabled }),
});

export const COMPRESSION_MODULE = toggleModule('compression', 'compression');
export const WEBSOCKET_TCP_CONVERTER_MODULE = toggleModule('websocket_tcp_converter', 'websocket TCP converter');

const CIRCUIT_BREAKER_DEFAULTS = { tripped_duration: 10, rolling_window: 10, num_buckets: 10, volume_threshold: 20, error_threshold_percentage: 0.5 };

/**
 * Circuit breaker; defaults: tripped 10 s, window 10 s, 10 buckets, 20 requests, 50 % errors. A 0
 * counts as not sent (the default applies): the vendor's request type cannot tell 0 from absent.
 */
export const CIRCUIT_BREAKER_MODULE: ModuleSpec = {
  name: 'circuit_breaker',
  label: 'circuit breaker',
  schema: v.strictObject({
    enabled,
    tripped_duration: zeroIsUnset(seconds),
    rolling_window: zeroIsUnset(seconds),
    num_buckets: zeroIsUnset(v.pipe(v.number(), v.check((n) => Number.isInteger(n) && n >= 1 && n <= 128, (issue) => `must be an integer from 1 to 128 (got ${issue.input})`))),
    volume_threshold: zeroIsUnset(v.pipe(v.number(), v.check((n) => Number.isInteger(n) && n >= 0 && n <= MAX_UINT32, (issue) => `must be a whole number from 0 to ${MAX_UINT32} (got ${issue.input})`))),
    error_threshold_percentage: zeroIsUnset(
      v.pipe(v.number(), v.check((n) => n >= 0 && n <= 1, (issue) => coded(EDGES_ERRORS.CIRCUIT_BREAKER_THRESHOLD_INVALID, `must be a fraction from 0.0 to 1.0 (got ${issue.input})`))),
    ),
  }),
  store: (_ctx, input: Partial<typeof CIRCUIT_BREAKER_DEFAULTS> & { enabled?: boolean }) => ({
    enabled: input.enabled ?? true,
    tripped_duration: input.tripped_duration ?? CIRCUIT_BREAKER_DEFAULTS.tripped_duration,
    rolling_window: input.rolling_window ?? CIRCUIT_BREAKER_DEFAULTS.rolling_window,
    num_buckets: input.num_buckets ?? CIRCUIT_BREAKER_DEFAULTS.num_buckets,
    volume_threshold: input.volume_threshold ?? CIRCUIT_BREAKER_DEFAULTS.volume_threshold,
    error_threshold_percentage: input.error_threshold_percentage ?? CIRCUIT_BREAKER_DEFAULTS.error_threshold_percentage,
  }),
  respond: (_ctx, stored) => ({
    enabled: stored.enabled,
    tripped_duration: stored.tripped_duration,
    rolling_window: stored.rolling_window,
    num_buckets: stored.num_buckets,
    volume_threshold: stored.volume_threshold,
    error_threshold_percentage: stored.error_threshold_percentage,
  }),
};

/** Webhook verification: `provider` names the sender; `secret` is required except for SNS, stored, answered as null. */
export const WEBHOOK_VERIFICATION_MODULE: ModuleSpec = {
  name: 'webhook_verification',
  label: 'webhook verification',
  schema: v.strictObject({ enabled, provider: nonEmpty, secret: v.optional(v.string()) }),
  store(_ctx, input: { enabled?: boolean; provider: string; secret?: string }, field) {
    const secret = input.secret ?? '';
    if (secret === '' && input.provider.toUpperCase() !== 'SNS') fail('INVALID_FIELD', `${at(field, 'secret')}: is required for provider ${input.provider} (only SNS verifies without a secret)`);
    return { enabled: input.enabled ?? true, provider: input.provider, secret };
  },
  respond: (_ctx, stored) => ({ enabled: stored.enabled, provider: stored.provider, secret: null }),
};

const sessionFields = {
  options_passthrough: v.optional(v.boolean()),
  cookie_prefix: v.optional(v.string()),
  inactivity_timeout: v.optional(seconds),
  maximum_duration: v.optional(seconds),
};

interface SessionInput {
  enabled?: boolean;
  options_passthrough?: boolean;
  cookie_prefix?: string;
  inactivity_timeout?: number;
  maximum_duration?: number;
}

/** The session settings OAuth, OIDC and SAML share; timeouts 0 mean no limit. */
const storeSession = (input: SessionInput) => ({
  enabled: input.enabled ?? true,
  options_passthrough: input.options_passthrough ?? false,
  cookie_prefix: input.cookie_prefix || DEFAULT_COOKIE_PREFIX,
  inactivity_timeout: input.inactivity_timeout ?? 0,
  maximum_duration: input.maximum_duration ?? 0,
});

const respondSession = (stored: StoredModule) => ({
  enabled: stored.enabled,
  options_passthrough: stored.options_passthrough,
  cookie_prefix: stored.cookie_prefix,
  inactivity_timeout: stored.inactivity_timeout,
  maximum_duration: stored.maximum_duration,
});

const OAUTH_PROVIDERS = ['github', 'facebook', 'microsoft', 'google', 'linkedin', 'gitlab', 'twitch', 'amazon'] as const;
const providerFields = {
  client_id: v.optional(v.nullable(v.string())),
  client_secret: v.optional(v.nullable(v.string())),
  scopes: v.optional(v.nullable(stringList)),
  email_addresses: v.optional(v.nullable(stringList)),
  email_domains: v.optional(v.nullable(stringList)),
};
const GITHUB_ONLY = ['teams', 'organizations'] as const;
const oauthProvider = v.strictObject(
  Object.fromEntries(
    OAUTH_PROVIDERS.map((name) => [
      name,
      v.optional(v.nullable(v.strictObject(name === 'github' ? { ...providerFields, teams: v.optional(v.nullable(stringList)), organizations: v.optional(v.nullable(stringList)) } : providerFields))),
    ]),
  ),
);

type ProviderInput = Partial<Record<'client_id' | 'client_secret', string | null>> & Partial<Record<'scopes' | 'email_addresses' | 'email_domains' | 'teams' | 'organizations', string[] | null>>;

/**
 * OAuth: exactly one identity provider. Without `client_id`/`client_secret` (which go together)
 * the service's own OAuth application is used, and then custom scopes are refused (7034).
 * `client_secret` is stored and answered as null.
 */
export const OAUTH_MODULE: ModuleSpec = {
  name: 'oauth',
  label: 'OAuth',
  schema: v.strictObject({ enabled, provider: oauthProvider, ...sessionFields, auth_check_interval: v.optional(seconds) }),
  store(_ctx, input: SessionInput & { provider: Record<string, ProviderInput | null | undefined>; auth_check_interval?: number }, field) {
    const chosen = OAUTH_PROVIDERS.filter((name) => input.provider[name]);
    if (chosen.length !== 1) fail('INVALID_FIELD', `${at(field, 'provider')}: set exactly one of ${OAUTH_PROVIDERS.join(', ')} (got ${chosen.length ? chosen.join(', ') : 'none'})`);
    const name = chosen[0]!;
    const given = input.provider[name]!;
    const where = `${at(field, 'provider')}.${name}`;
    if (!given.client_id !== !given.client_secret) fail('INVALID_FIELD', `${where}: client_id and client_secret go together (your own OAuth application), or neither (the service's)`);
    if (!given.client_id && (given.scopes ?? []).length > 0) {
      throw new ApiError(EDGES_ERRORS.OAUTH_SCOPES_NEED_OWN_APP, `${where}.scopes: custom scopes need your own OAuth application; set client_id and client_secret`);
    }
    const provider = {
      client_id: given.client_id || null,
      client_secret: given.client_secret || null,
      scopes: [...(given.scopes ?? [])],
      email_addresses: [...(given.email_addresses ?? [])],
      email_domains: [...(given.email_domains ?? [])],
      ...(name === 'github' ? Object.fromEntries(GITHUB_ONLY.map((key) => [key, [...(given[key] ?? [])]])) : {}),
    };
    return { ...storeSession(input), provider_name: name, provider, auth_check_interval: input.auth_check_interval ?? 0 };
  },
  respond: (_ctx, stored) => ({
    ...respondSession(stored),
    auth_check_interval: stored.auth_check_interval,
    provider: Object.fromEntries(
      OAUTH_PROVIDERS.map((name) => [name, name === stored.provider_name ? { ...(stored.provider as Record<string, unknown>), client_secret: null } : null]),
    ),
  }),
};

/**
 * OpenID Connect: `issuer` is the provider's absolute URL (its discovery base); `client_id` and
 * `client_secret` are required while the module is enabled. `client_secret` is returned (spec).
 */
export const OIDC_MODULE: ModuleSpec = {
  name: 'oidc',
  label: 'OIDC',
  schema: v.strictObject({ enabled, ...sessionFields, issuer: absoluteUrl, client_id: v.optional(v.string()), client_secret: v.optional(v.string()), scopes: v.optional(v.nullable(stringList)) }),
  store(_ctx, input: SessionInput & { issuer: string; client_id?: string; client_secret?: string; scopes?: string[] | null }, field) {
    const session = storeSession(input);
    for (const key of ['client_id', 'client_secret'] as const) {
      if (session.enabled && !input[key]) fail('INVALID_FIELD', `${at(field, key)}: is required while the OIDC module is enabled`);
    }
    return { ...session, issuer: input.issuer, client_id: input.client_id ?? '', client_secret: input.client_secret ?? '', scopes: [...(input.scopes ?? [])] };
  },
  respond: (_ctx, stored) => ({ ...respondSession(stored), issuer: stored.issuer, client_id: stored.client_id, client_secret: stored.client_secret, scopes: stored.scopes }),
};

const DEFAULT_NAMEID_FORMAT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';

/**
 * SAML: `idp_metadata` is the identity provider's metadata XML (an EntityDescriptor). The service
 * provider side is computed per route under `https://idp.<service zone>/saml/<route id>` (entity id
 * and metadata URL, `/acs`, `/slo`). Burrow signs no SAML requests, so
 * `request_signing_certificate_pem` is "".
 */
export const SAML_MODULE: ModuleSpec = {
  name: 'saml',
  label: 'SAML',
  schema: v.strictObject({
    enabled,
    ...sessionFields,
    idp_metadata: v.pipe(
      v.string(),
      v.check((xml) => /<([\w-]+:)?EntityDescriptor[\s>]/.test(xml), 'must be the identity provider\'s SAML metadata XML (an EntityDescriptor element)'),
    ),
    force_authn: v.optional(v.boolean()),
    allow_idp_initiated: v.optional(v.boolean()),
    authorized_groups: v.optional(v.nullable(stringList)),
    nameid_format: v.optional(v.string()),
  }),
  store: (
    _ctx,
    input: SessionInput & { idp_metadata: string; force_authn?: boolean; allow_idp_initiated?: boolean; authorized_groups?: string[] | null; nameid_format?: string },
  ) => ({
    ...storeSession(input),
    idp_metadata: input.idp_metadata,
    force_authn: input.force_authn ?? false,
    allow_idp_initiated: input.allow_idp_initiated ?? false,
    authorized_groups: [...(input.authorized_groups ?? [])],
    nameid_format: input.nameid_format || DEFAULT_NAMEID_FORMAT,
  }),
  respond(ctx, stored, holderId) {
    const serviceProvider = absoluteUri(`https://idp.${ctx.services.simulation.serviceZone}`, `/saml/${holderId}`);
    return {
      ...respondSession(stored),
      idp_metadata: stored.idp_metadata,
      force_authn: stored.force_authn,
      allow_idp_initiated: stored.allow_idp_initiated,
      authorized_groups: stored.authorized_groups,
      entity_id: serviceProvider,
      assertion_consumer_service_url: `${serviceProvider}/acs`,
      single_logout_url: `${serviceProvider}/slo`,
      request_signing_certificate_pem: '',
      metadata_url: serviceProvider,
      nameid_format: stored.nameid_format,
    };
  },
};

/** User agent filter: `allow` and `deny` RE2 patterns (the vendor's Go syntax, such as `(?i)bot`). */
export const USER_AGENT_FILTER_MODULE: ModuleSpec = {
  name: 'user_agent_filter',
  label: 'user agent filter',
  schema: v.strictObject({ enabled, allow: v.optional(v.nullable(regexList)), deny: v.optional(v.nullable(regexList)) }),
  store: (_ctx, input: { enabled?: boolean; allow?: string[] | null; deny?: string[] | null }) => ({
    enabled: input.enabled ?? true,
    allow: [...(input.allow ?? [])],
    deny: [...(input.deny ?? [])],
  }),
  respond: (_ctx, stored) => ({ enabled: stored.enabled, allow: stored.allow, deny: stored.deny }),
};

// --- module sets: what edges and routes do with their specs --------------------------------------

/** The modules of an edge or route as stored: every module key, `null` when unset. */
export type StoredModules = Record<string, StoredModule | null>;

/** Body schema entries for a set: each module optional, `null` allowed (unset on create; refused on PATCH). */
export function moduleFields(specs: readonly ModuleSpec[]): Record<string, Schema> {
  return Object.fromEntries(specs.map((spec) => [spec.name, v.optional(v.nullable(spec.schema))]));
}

/** Stores the modules of a create body; absent and null modules are unset. */
export async function storeModules(ctx: OperationContext, specs: readonly ModuleSpec[], input: Record<string, unknown>): Promise<StoredModules> {
  refuseBothReplacements(specs, input);
  const out: StoredModules = {};
  for (const spec of specs) out[spec.name] = input[spec.name] == null ? null : await spec.store(ctx, input[spec.name], spec.name);
  return out;
}

/** A body may set `policy` or `traffic_policy`, not both: they are one policy in two dialects. */
function refuseBothReplacements(specs: readonly ModuleSpec[], body: Record<string, unknown>): void {
  for (const spec of specs) {
    if (spec.replaces && body[spec.name] != null && body[spec.replaces] != null) {
      fail('INVALID_FIELD', `${spec.name}: send either ${spec.replaces} (the 0.11.0 clients' form) or ${spec.name}, not both; an edge or route has one traffic policy`);
    }
  }
}

/** What setting module `name` unsets besides: the module it replaced, or the one that replaced it. */
export function displacedModules(specs: readonly ModuleSpec[], name: string, stored: StoredModule | null): StoredModules {
  if (!stored) return {};
  const other = specs.find((spec) => spec.name === name)?.replaces ?? specs.find((spec) => spec.replaces === name)?.name;
  return other && specs.some((spec) => spec.name === other) ? { [other]: null } : {};
}

/**
 * The modules a PATCH replaces: absent ones are left as they are, present ones are replaced whole,
 * and `null` is refused, because modules are removed only through their own DELETE endpoint.
 */
export async function patchModules(ctx: OperationContext, specs: readonly ModuleSpec[], patch: Record<string, unknown>, endpoint: string): Promise<StoredModules> {
  refuseBothReplacements(specs, patch);
  const out: StoredModules = {};
  for (const spec of specs) {
    const value = patch[spec.name];
    if (value === undefined) continue;
    if (value === null) fail('INVALID_FIELD', `${spec.name}: a module cannot be removed by an update; use DELETE ${endpoint}/${spec.name}`);
    out[spec.name] = await spec.store(ctx, value, spec.name);
    Object.assign(out, displacedModules(specs, spec.name, out[spec.name] ?? null));
  }
  return out;
}

/** The ids every set module of a record points at. */
export function moduleReferences(specs: readonly ModuleSpec[], record: Readonly<Record<string, unknown>>): string[] {
  return specs.flatMap((spec) => {
    const stored = record[spec.name] as StoredModule | null | undefined;
    return stored && spec.references ? spec.references(stored) : [];
  });
}

/** Every module key of a record in its response shape, `null` when unset. */
export function moduleResponses(ctx: OperationContext, specs: readonly ModuleSpec[], record: Readonly<Record<string, unknown>>, holderId: string): Record<string, unknown> {
  return Object.fromEntries(
    specs.map((spec) => {
      const stored = record[spec.name] as StoredModule | null | undefined;
      return [spec.name, stored ? spec.respond(ctx, stored, holderId) : null];
    }),
  );
}
