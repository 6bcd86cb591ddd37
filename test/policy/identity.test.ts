import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inflateRawSync } from 'node:zlib';
import { edgeModuleSources } from '../../lib/policy/sources.ts';
import { CONN, ENDPOINT, harness, onRequest, requestFacts } from './helpers.ts';

const location = (terminal: unknown) => {
  const t = terminal as { kind: string; response: { status: number; headers: [string, string][] } };
  assert.equal(t.kind, 'respond');
  assert.equal(t.response.status, 302);
  return new URL(t.response.headers.find(([name]) => name === 'location')![1]);
};
const state = Buffer.from(JSON.stringify({ url: 'https://app.example/api/items?sort=asc&tag=a&tag=b', endpoint: ENDPOINT.id })).toString('base64url');

describe('oauth: as far as the redirect to the provider', () => {
  test('a managed provider: its authorization page, the identity host callback, default scopes and the original URL in state', async () => {
    const outcome = await onRequest(harness(), 'on_http_request: [{actions: [{type: oauth, config: {provider: github}}]}]');
    const url = location(outcome.terminal);
    assert.equal(`${url.origin}${url.pathname}`, 'https://github.com/login/oauth/authorize');
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      client_id: 'burrow-managed',
      redirect_uri: 'https://idp.burrow.test/oauth2/callback',
      response_type: 'code',
      scope: 'read:user user:email',
      state,
    });
  });

  test('your own application and scopes; CORS preflights pass when allowed', async () => {
    const document = 'on_http_request: [{actions: [{type: oauth, config: {provider: google, client_id: my-app, client_secret: s, scopes: [email], allow_cors_preflight: true}}]}]';
    const url = location((await onRequest(harness(), document)).terminal);
    assert.equal(url.searchParams.get('client_id'), 'my-app');
    assert.equal(url.searchParams.get('scope'), 'email');
    const preflight = await onRequest(harness(), document, { method: 'OPTIONS', headers: [['Access-Control-Request-Method', 'POST']] });
    assert.equal(preflight.terminal, undefined);
  });

  test('without an identity host to return to: 501', async () => {
    const h = harness({ identityOrigin: undefined });
    assert.deepEqual((await onRequest(h, 'on_http_request: [{actions: [{type: oauth, config: {provider: gitlab}}]}]')).terminal, {
      kind: 'error',
      error: { status: 501, message: "oauth: no identity host is configured to receive the provider's callback", headers: [] },
    });
  });
});

describe('oidc: discovery, then the redirect', () => {
  test('reads authorization_endpoint from the issuer discovery document (through the injected fetcher)', async () => {
    const h = harness({
      async fetchJson(url) {
        assert.equal(url, 'http://127.0.0.1:8000/realms/dev/.well-known/openid-configuration');
        return { issuer: 'http://127.0.0.1:8000/realms/dev', authorization_endpoint: 'http://127.0.0.1:8000/realms/dev/auth' };
      },
    });
    const url = location((await onRequest(h, 'on_http_request: [{actions: [{type: oidc, config: {issuer_url: "http://127.0.0.1:8000/realms/dev/", client_id: web, client_secret: s, scopes: [email]}}]}]')).terminal);
    assert.equal(`${url.origin}${url.pathname}`, 'http://127.0.0.1:8000/realms/dev/auth');
    assert.deepEqual({ ...Object.fromEntries(url.searchParams), nonce: 'n' }, { client_id: 'web', redirect_uri: 'https://idp.burrow.test/oauth2/callback', response_type: 'code', scope: 'openid email', state, nonce: 'n' });
    assert.match(url.searchParams.get('nonce')!, /^[0-9a-f]{32}$/);
  });

  test("the reference's name openid-connect is the same action as its alias oidc", async () => {
    const h = harness({ fetchJson: async () => ({ issuer: 'https://idp.example', authorization_endpoint: 'https://idp.example/auth' }) });
    const url = location((await onRequest(h, 'on_http_request: [{actions: [{type: openid-connect, config: {issuer_url: "https://idp.example", client_id: web, client_secret: s}}]}]')).terminal);
    assert.equal(`${url.origin}${url.pathname}`, 'https://idp.example/auth');
  });

  test('an unreachable provider answers 502 (ERR_NGROK_3160)', async () => {
    const outcome = await onRequest(harness(), 'on_http_request: [{actions: [{type: oidc, config: {issuer_url: "https://accounts.example", client_id: web}}]}]');
    assert.deepEqual(outcome.terminal, {
      kind: 'error',
      error: {
        status: 502,
        code: 'ERR_NGROK_3160',
        message: "oidc: the provider's discovery document https://accounts.example/.well-known/openid-configuration could not be read: cannot fetch https://accounts.example/.well-known/openid-configuration here (no document fetcher was provided; a data: URL works offline)",
        headers: [],
      },
    });
  });
});

describe('saml module: an AuthnRequest by the HTTP-Redirect binding', () => {
  const metadata = `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example/metadata">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://idp.example/sso/post"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso/redirect"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;

  test('redirects to the SSO URL with a deflated AuthnRequest (unsigned) naming the route as service provider', async () => {
    const h = harness();
    const stored = { enabled: true, idp_metadata: metadata, force_authn: true, nameid_format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent', options_passthrough: false };
    const policy = h.engine.compile(edgeModuleSources('https_route', 'edghtsrt_1', { saml: stored }));
    const outcome = await h.engine.http(policy, ENDPOINT, CONN, requestFacts()).request();
    const url = location(outcome.terminal);
    assert.equal(`${url.origin}${url.pathname}`, 'https://idp.example/sso/redirect');
    assert.equal(url.searchParams.get('RelayState'), 'https://app.example/api/items?sort=asc&tag=a&tag=b');
    const request = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
    assert.match(request, /^<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2\.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2\.0:assertion" ID="_[0-9a-f]{32}" Version="2\.0"/);
    assert.ok(request.includes(' IssueInstant="2026-03-01T12:00:00Z" Destination="https://idp.example/sso/redirect" AssertionConsumerServiceURL="https://idp.burrow.test/saml/edghtsrt_1/acs"'), request);
    assert.ok(request.includes(' ForceAuthn="true"><saml:Issuer>https://idp.burrow.test/saml/edghtsrt_1</saml:Issuer><samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:2.0:nameid-format:persistent" AllowCreate="true"/></samlp:AuthnRequest>'), request);
  });
});
