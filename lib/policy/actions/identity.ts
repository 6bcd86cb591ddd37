import { deflateRawSync } from 'node:zlib';
import * as v from 'valibot';
import { formatTime } from '../../conventions/clock.ts';
import { headerValues } from '../http-fields.ts';
import { ActionFailure, defineAction, readConfig, type ActionContext } from './types.ts';

/**
 * oauth, oidc and saml (the actions, the edge modules and the agent's OAuth/OIDC, translated into
 * them) as far as Burrow can take them offline: a request is sent to the identity provider's
 * authorization page (302), with the vendor's parameters and a `state` carrying the original URL.
 * No login can complete offline, so no session is ever established: every request that is not a
 * CORS preflight let through (`allow_cors_preflight` / `options_passthrough`) is redirected.
 * Callbacks go to the host's identity origin (`<origin>/oauth2/callback`, `<origin>/saml/<id>/acs`).
 */

/** The managed providers' authorization endpoints and the scopes asked when none are configured. */
const OAUTH_PROVIDERS: Readonly<Record<string, { readonly authorize: string; readonly scopes: readonly string[] }>> = {
  amazon: { authorize: 'https://www.amazon.com/ap/oa', scopes: ['profile'] },
  facebook: { authorize: 'https://www.facebook.com/dialog/oauth', scopes: ['email'] },
  github: { authorize: 'https://github.com/login/oauth/authorize', scopes: ['read:user', 'user:email'] },
  gitlab: { authorize: 'https://gitlab.com/oauth/authorize', scopes: ['read_user'] },
  google: { authorize: 'https://accounts.google.com/o/oauth2/v2/auth', scopes: ['openid', 'email', 'profile'] },
  linkedin: { authorize: 'https://www.linkedin.com/oauth/v2/authorization', scopes: ['openid', 'profile', 'email'] },
  microsoft: { authorize: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize', scopes: ['openid', 'email', 'profile'] },
  twitch: { authorize: 'https://id.twitch.tv/oauth2/authorize', scopes: ['user:read:email'] },
};

/** The client id Burrow sends for the service's own ("managed") OAuth application, which it does not have. */
const MANAGED_CLIENT_ID = 'burrow-managed';

function origin(context: ActionContext, type: string): string {
  if (!context.services.identityOrigin) throw new ActionFailure({ status: 501, message: `${type}: no identity host is configured to receive the provider's callback`, headers: [] });
  return context.services.identityOrigin.replace(/\/$/, '');
}

const state = (context: ActionContext) => Buffer.from(JSON.stringify({ url: context.scope.request!.url, endpoint: context.scope.endpoint.id })).toString('base64url');

/** A hex id from the injected randomness (nonces, SAML request ids). */
const randomId = (context: ActionContext) => Array.from({ length: 16 }, () => Math.floor((context.services.random ?? Math.random)() * 256).toString(16).padStart(2, '0')).join('');

const preflight = (context: ActionContext) => {
  const request = context.scope.request!;
  return request.method === 'OPTIONS' && headerValues(request.headers, 'access-control-request-method').length > 0;
};

const redirectTo = (location: string, note: string) => ({ end: { kind: 'respond' as const, response: { status: 302, headers: [['location', location] as const], body: '' } }, note });

const corsPreflight = v.optional(v.boolean(), false);

export const oauth = defineAction({
  // No login completes offline: requests are sent to the provider, never let through.
  support: 'third-party',
  type: 'oauth',
  compile: (config) =>
    readConfig(
      v.looseObject({
        provider: v.picklist(Object.keys(OAUTH_PROVIDERS), (issue) => `must be one of ${Object.keys(OAUTH_PROVIDERS).join(', ')} (got ${JSON.stringify(issue.input)})`),
        client_id: v.optional(v.string()),
        scopes: v.optional(v.array(v.string())),
        allow_cors_preflight: corsPreflight,
      }),
      config,
    ),
  run(config, context) {
    if (config.allow_cors_preflight && preflight(context)) return { note: 'CORS preflight let through' };
    const provider = OAUTH_PROVIDERS[config.provider]!;
    const url = new URL(provider.authorize);
    url.searchParams.set('client_id', config.client_id || MANAGED_CLIENT_ID);
    url.searchParams.set('redirect_uri', `${origin(context, 'oauth')}/oauth2/callback`);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', (config.scopes?.length ? config.scopes : provider.scopes).join(' '));
    url.searchParams.set('state', state(context));
    return redirectTo(url.href, `sent to ${config.provider} to sign in (no session can be established offline)`);
  },
});

export const oidc = defineAction({
  support: 'third-party',
  type: 'oidc',
  compile: (config) =>
    readConfig(v.looseObject({ issuer_url: v.string(), client_id: v.string(), scopes: v.optional(v.array(v.string())), allow_cors_preflight: corsPreflight }), config),
  async run(config, context) {
    if (config.allow_cors_preflight && preflight(context)) return { note: 'CORS preflight let through' };
    const discovery = `${config.issuer_url.replace(/\/$/, '')}/.well-known/openid-configuration`;
    let endpoint: unknown;
    try {
      endpoint = ((await context.documents.get(discovery)) as { authorization_endpoint?: unknown })?.authorization_endpoint;
    } catch (error) {
      throw new ActionFailure({ status: 502, code: 'ERR_NGROK_3160', message: `oidc: the provider's discovery document ${discovery} could not be read: ${(error as Error).message}`, headers: [] });
    }
    if (typeof endpoint !== 'string' || !URL.canParse(endpoint)) throw new ActionFailure({ status: 502, code: 'ERR_NGROK_3160', message: `oidc: ${discovery} names no authorization_endpoint`, headers: [] });
    const url = new URL(endpoint);
    const scopes = config.scopes?.length ? config.scopes : ['openid', 'profile', 'email'];
    url.searchParams.set('client_id', config.client_id);
    url.searchParams.set('redirect_uri', `${origin(context, 'oidc')}/oauth2/callback`);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', (scopes.includes('openid') ? scopes : ['openid', ...scopes]).join(' '));
    url.searchParams.set('state', state(context));
    url.searchParams.set('nonce', randomId(context));
    return redirectTo(url.href, `sent to ${config.issuer_url} to sign in (no session can be established offline)`);
  },
});

const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

/** The identity provider's single sign-on URL for the HTTP-Redirect binding, from its metadata. */
function singleSignOnUrl(metadata: string): string | undefined {
  for (const element of metadata.matchAll(/<(?:[\w-]+:)?SingleSignOnService\b([^>]*)>/g)) {
    const attributes = element[1]!;
    if (attributes.includes(`"${REDIRECT_BINDING}"`) || attributes.includes(`'${REDIRECT_BINDING}'`)) return /\bLocation\s*=\s*["']([^"']+)["']/.exec(attributes)?.[1];
  }
  return undefined;
}

const xmlEscape = (text: string) => text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** SAML (module only; the vendor's traffic policy has no SAML action): an AuthnRequest by the HTTP-Redirect binding. */
export const saml = defineAction({
  type: 'saml',
  compile: (config) =>
    readConfig(
      v.looseObject({ idp_metadata: v.string(), holder_id: v.string(), force_authn: v.optional(v.boolean(), false), nameid_format: v.string(), options_passthrough: corsPreflight }),
      config,
    ),
  run(config, context) {
    if (config.options_passthrough && preflight(context)) return { note: 'CORS preflight let through' };
    const sso = singleSignOnUrl(config.idp_metadata);
    if (!sso) throw new ActionFailure({ status: 500, message: 'saml: the identity provider metadata has no SingleSignOnService for the HTTP-Redirect binding', headers: [] });
    const provider = `${origin(context, 'saml')}/saml/${config.holder_id}`;
    const request =
      `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${randomId(context)}" Version="2.0"` +
      ` IssueInstant="${formatTime(context.scope.now)}" Destination="${xmlEscape(sso)}" AssertionConsumerServiceURL="${xmlEscape(provider)}/acs"` +
      ` ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"${config.force_authn ? ' ForceAuthn="true"' : ''}>` +
      `<saml:Issuer>${xmlEscape(provider)}</saml:Issuer><samlp:NameIDPolicy Format="${xmlEscape(config.nameid_format)}" AllowCreate="true"/></samlp:AuthnRequest>`;
    const url = new URL(sso);
    url.searchParams.set('SAMLRequest', deflateRawSync(request).toString('base64'));
    url.searchParams.set('RelayState', context.scope.request!.url);
    return redirectTo(url.href, 'sent to the SAML identity provider to sign in (no session can be established offline)');
  },
});
