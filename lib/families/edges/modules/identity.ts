import * as v from 'valibot';
import { ApiError, fail } from '../../../conventions/errors.ts';
import { stringList } from '../../../conventions/fields.ts';
import { absoluteUri } from '../../../conventions/refs.ts';
import { EDGES_ERRORS } from '../errors.ts';
import { type ModuleSpec, type StoredModule, at, enabled, seconds, absoluteUrl, DEFAULT_COOKIE_PREFIX } from './spec.ts';

/**
 * The HTTP route modules that sign visitors in: OAuth, OIDC and SAML, with the session settings
 * they share.
 */

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
