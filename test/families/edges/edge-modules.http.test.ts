import assert from 'node:assert/strict';
import { before, beforeEach, describe, test } from 'node:test';
import { allOperations } from '../../../lib/index.ts';
import { assertError, BASE, createTestInstance, type TestInstance } from '../../helpers.ts';
import { generateTestCertificates, type TestCertificates } from '../../fixtures/x509.ts';
import { moduleExamples, SAML_METADATA, type ModuleHolder } from '../../fixtures/representative-records.ts';

let certs: TestCertificates;
let api: TestInstance;
before(() => {
  certs = generateTestCertificates();
});
beforeEach(async () => {
  api = await createTestInstance();
});


async function ok(method: string, path: string, body?: unknown): Promise<any> {
  const res = await api.request(method, path, body);
  assert.equal(res.status, method === 'POST' ? 201 : 200, `${method} ${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The module endpoints the spec and facts list, by holder. */
const EXPECTED: Record<ModuleHolder, readonly string[]> = {
  tcp: ['backend', 'ip_restriction', 'policy', 'traffic_policy'],
  tls: ['backend', 'ip_restriction', 'mutual_tls', 'tls_termination', 'policy', 'traffic_policy'],
  https: ['mutual_tls', 'tls_termination'],
  route: [
    'backend',
    'ip_restriction',
    'circuit_breaker',
    'compression',
    'request_headers',
    'response_headers',
    'webhook_verification',
    'oauth',
    'saml',
    'oidc',
    'websocket_tcp_converter',
    'user_agent_filter',
    'policy',
    'traffic_policy',
  ],
};

interface Holder {
  /** Path of the holder (edge or route). */
  path: string;
  /** Path that answers the holder with its modules. */
  read: () => Promise<any>;
  /** Extra ids the official client's wrapper carries. */
  wrapper: Record<string, string>;
}

async function holders(): Promise<Record<string, Holder>> {
  const tcp = await ok('POST', '/edges/tcp', {});
  const tls = await ok('POST', '/edges/tls', {});
  const https = await ok('POST', '/edges/https', {});
  const route = await ok('POST', `/edges/https/${https.id}/routes`, { match_type: 'path_prefix', match: '/' });
  const edge = (path: string, id: string): Holder => ({ path: `${path}/${id}`, read: () => ok('GET', `${path}/${id}`), wrapper: { id } });
  return {
    tcp: edge('/edges/tcp', tcp.id),
    tls: edge('/edges/tls', tls.id),
    https: edge('/edges/https', https.id),
    route: {
      path: `/edges/https/${https.id}/routes/${route.id}`,
      read: () => ok('GET', `/edges/https/${https.id}/routes/${route.id}`),
      wrapper: { edge_id: https.id, id: route.id },
    },
  };
}

/** A valid PUT body per module (the shared examples), and what the response must contain. */
async function samples(holder: ModuleHolder): Promise<Record<string, { body: unknown; expect: Record<string, unknown> }>> {
  const backend = (await ok('POST', '/backends/static', { address: 'example.com:443' })).id;
  const policy = (await ok('POST', '/ip_policies', {})).id;
  const ca = (await ok('POST', '/certificate_authorities', { ca_pem: certs.ca })).id;
  return moduleExamples({ backend, policy, ca }, holder);
}

function assertContains(actual: Record<string, unknown>, expected: Record<string, unknown>) {
  for (const [key, value] of Object.entries(expected)) assert.deepEqual(actual[key], value, `${key} of ${JSON.stringify(actual)}`);
}

describe('the module endpoint table', () => {
  test('serves PUT, GET and DELETE for exactly the listed (holder, module) pairs', () => {
    const prefixes: Record<string, string> = { tcp: '/edges/tcp/:id/', tls: '/edges/tls/:id/', https: '/edges/https/:id/', route: '/edges/https/:edge_id/routes/:id/' };
    const served = allOperations().filter((op) => op.tag === 'edge_modules');
    for (const method of ['PUT', 'GET', 'DELETE']) {
      const paths = served.filter((op) => op.method === method).map((op) => op.path).sort();
      const expected = Object.entries(EXPECTED).flatMap(([holder, modules]) => modules.map((m) => `${prefixes[holder]}${m}`)).sort();
      assert.deepEqual(paths, expected, method);
    }
  });
});

describe('module endpoints: replace, get and delete', () => {
  for (const [holderName, modules] of Object.entries(EXPECTED) as [ModuleHolder, readonly string[]][]) {
    for (const module of modules) {
      test(`${holderName} ${module}: PUT answers the module, GET and the holder show it, DELETE removes it`, async () => {
        const holder = (await holders())[holderName]!;
        const sample = (await samples(holderName))[module]!;
        const path = `${holder.path}/${module}`;
        const put = await ok('PUT', path, sample.body);
        assertContains(put, sample.expect);
        assert.deepEqual(await ok('GET', path), put);
        assert.deepEqual((await holder.read())[module], put);
        assert.equal((await api.request('DELETE', path)).status, 204);
        assert.equal((await holder.read())[module], null);
        assertError(await api.request('GET', path), 404, 9001, new RegExp(`module of .* was not found`));
        assert.equal((await api.request('DELETE', path)).status, 204, 'deleting an unset module is a no-op');
      });
    }
  }

  test('PUT accepts the official client\'s { id, module } wrapper for edges and { edge_id, id, module } for routes', async () => {
    const all = await holders();
    for (const name of ['tcp', 'route'] as const) {
      const holder = all[name]!;
      const put = await ok('PUT', `${holder.path}/ip_restriction`, { ...holder.wrapper, module: { enabled: false, ip_policy_ids: [] } });
      assert.deepEqual(put, { enabled: false, ip_policies: [] });
    }
  });

  test('a wrapper with another id is refused; another edge_id is 7110', async () => {
    const all = await holders();
    assertError(await api.request('PUT', `${all.tcp!.path}/policy`, { id: 'edgtcp_other', module: {} }), 400, 215, /^id: must equal the id in the path/);
    assertError(await api.request('PUT', `${all.route!.path}/compression`, { ...all.route!.wrapper, edge_id: 'edghts_other', module: {} }), 400, 7110, /^edge_id: /);
  });

  test('a PUT replaces the module whole', async () => {
    const { route } = await holders();
    await ok('PUT', `${route!.path}/request_headers`, { add: { a: '1' }, remove: ['b'] });
    assert.deepEqual(await ok('PUT', `${route!.path}/request_headers`, { remove: ['c'] }), { enabled: true, add: {}, remove: ['c'] });
  });

  test('unknown fields are refused, naming the field', async () => {
    const { tcp } = await holders();
    assertError(await api.request('PUT', `${tcp!.path}/backend`, { backend_id: 'x', weight: 1 }), 400, 214, /^weight: unknown field; supported fields: enabled, backend_id/);
  });

  test('PUT on an unknown edge (7000) or route (7124) is a 404', async () => {
    assertError(await api.request('PUT', '/edges/tcp/edgtcp_missing/policy', {}), 404, 7000, /TCP edge 'edgtcp_missing' was not found/);
    const { https } = await holders();
    assertError(await api.request('PUT', `${https!.path}/routes/edghtsrt_missing/compression`, {}), 404, 7124, /was not found/);
  });

  test('referenced ids must exist: backend 6501, IP policy 7007, CA 7072', async () => {
    const { tls } = await holders();
    assertError(await api.request('PUT', `${tls!.path}/backend`, { backend_id: 'bkdsc_missing' }), 404, 6501, /^backend_id: static backend 'bkdsc_missing' was not found/);
    assertError(await api.request('PUT', `${tls!.path}/ip_restriction`, { ip_policy_ids: ['ipp_missing'] }), 404, 7007, /^ip_policy_ids\[0\]: IP policy 'ipp_missing' was not found/);
    assertError(await api.request('PUT', `${tls!.path}/mutual_tls`, { certificate_authority_ids: ['ca_missing'] }), 404, 7072, /^certificate_authority_ids\[0\]: certificate authority 'ca_missing' was not found/);
  });

  test('HTTPS edge tls_termination refuses terminate_at (7109)', async () => {
    const { https } = await holders();
    assertError(await api.request('PUT', `${https!.path}/tls_termination`, { terminate_at: 'edge' }), 400, 7109, /^terminate_at: may not be set on an HTTPS edge/);
  });
});

describe('module references', () => {
  test('a module PUT keeps the reverse index: the backend is held, then released by replace and by DELETE', async () => {
    const { tcp, route } = await holders();
    const first = (await ok('POST', '/backends/http_response', {})).id;
    const second = (await ok('POST', '/backends/http_response', {})).id;
    await ok('PUT', `${tcp!.path}/backend`, { backend_id: first });
    await ok('PUT', `${route!.path}/backend`, { backend_id: first });
    const refused = await api.request('DELETE', `/backends/http_response/${first}`);
    assertError(refused, 409, 6502, /still used by TCP edge '.+', HTTPS edge route '.+'/);
    await ok('PUT', `${tcp!.path}/backend`, { backend_id: second });
    assert.equal((await api.request('DELETE', `${route!.path}/backend`)).status, 204);
    assert.equal((await api.request('DELETE', `/backends/http_response/${first}`)).status, 204);
    assertError(await api.request('DELETE', `/backends/http_response/${second}`), 409, 6502, /TCP edge/);
  });

  test('an IP policy used through a module is not deleted (1420)', async () => {
    const { tls } = await holders();
    const policy = (await ok('POST', '/ip_policies', {})).id;
    await ok('PUT', `${tls!.path}/ip_restriction`, { ip_policy_ids: [policy] });
    assertError(await api.request('DELETE', `/ip_policies/${policy}`), 409, 1420, /TLS edge/);
    await api.request('DELETE', `${tls!.path}/ip_restriction`);
    assert.equal((await api.request('DELETE', `/ip_policies/${policy}`)).status, 204);
  });
});

describe('enabled', () => {
  test('defaults to true and keeps false', async () => {
    const { route } = await holders();
    assert.deepEqual(await ok('PUT', `${route!.path}/compression`, {}), { enabled: true });
    assert.deepEqual(await ok('PUT', `${route!.path}/compression`, { enabled: false }), { enabled: false });
  });
});

describe('policy module', () => {
  // HTTP actions run on a route's request; terminate-tls on an edge's connection.
  const put = async (body: unknown) => api.request('PUT', `${(await holders()).route!.path}/policy`, body);
  const putTcp = async (body: unknown) => api.request('PUT', `${(await holders()).tcp!.path}/policy`, body);
  const rule = (actions: unknown[]) => ({ inbound: [{ name: 'r', expressions: ['true'], actions }] });

  test('stores each action type with its config; deny and log configs may be null', async () => {
    const actions = [
      { type: 'url-rewrite', config: { from: '^/old/(.*)$', to: '/new/$1' } },
      { type: 'custom-response', config: { status_code: 418, content: 'teapot', headers: { 'content-type': 'text/plain' } } },
      { type: 'deny', config: null },
      { type: 'deny', config: { status_code: 404 } },
      { type: 'log', config: { metadata: { team: 'web', level: 3 } } },
      { type: 'log' },
    ];
    const res = await put({ ...rule(actions), outbound: null });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.inbound[0].actions, [...actions.slice(0, 5), { type: 'log', config: null }]);
    assert.deepEqual(res.body.outbound, []);
  });

  test('an unknown action type is refused, listing the types', async () => {
    assertError(await put(rule([{ type: 'redirect', config: {} }])), 400, 215, /^inbound\[0\]\.actions\[0\]\.type: must be one of url-rewrite, custom-response, deny, log, terminate-tls \(got "redirect"\)/);
  });

  test('terminate-tls: versions, certificate with key (key answered null), mutual TLS; inbound only', async () => {
    const config = {
      min_version: '1.3',
      max_version: '1.3',
      server_certificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
      server_private_key: '-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----',
      mutual_tls_certificate_authorities: ['ca_1'],
      mutual_tls_verification_strategy: 'require-any',
    };
    const res = await putTcp(rule([{ type: 'terminate-tls', config }, { type: 'terminate-tls' }]));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.inbound[0].actions, [{ type: 'terminate-tls', config: { ...config, server_private_key: null } }, { type: 'terminate-tls', config: null }]);
    assert.ok(!res.text.includes('secret'));
    assertError(await putTcp(rule([{ type: 'terminate-tls', config: { min_version: '1.1' } }])), 400, 219, /config\.min_version: "1\.1" is not a supported TLS version/);
    assertError(await putTcp(rule([{ type: 'terminate-tls', config: { min_version: '1.3', max_version: '1.2' } }])), 400, 215, /config\.min_version: must not be above max_version/);
    assertError(await putTcp(rule([{ type: 'terminate-tls', config: { server_certificate: 'pem' } }])), 400, 215, /config\.server_certificate: server_certificate and server_private_key go together/);
    assertError(await putTcp(rule([{ type: 'terminate-tls', config: { mutual_tls_verification_strategy: 'maybe' } }])), 400, 215, /mutual_tls_verification_strategy: must be one of require-and-verify, require-any, request/);
    assertError(await putTcp({ outbound: [{ name: 'r', expressions: [], actions: [{ type: 'log' }, { type: 'terminate-tls' }] }] }), 400, 215, /^outbound\[0\]\.actions\[1\]\.type: terminate-tls acts on the incoming connection/);
  });

  test('url-rewrite `from` is an RE2 pattern: named groups as Go writes them pass, lookahead does not', async () => {
    assert.equal((await put(rule([{ type: 'url-rewrite', config: { from: '^/users/(?P<id>[0-9]+)$', to: '/u/$id' } }]))).status, 200);
    assertError(await put(rule([{ type: 'url-rewrite', config: { from: '^/(?=api)', to: '/' } }])), 400, 215, /^inbound\[0\]\.actions\[0\]\.config\.from: must be an RE2 regular expression/);
  });

  test('configs are validated per type', async () => {
    assertError(await put(rule([{ type: 'url-rewrite', config: { from: '/a' } }])), 400, 215, /^inbound\[0\]\.actions\[0\]\.config\.to: is required/);
    assertError(await put(rule([{ type: 'url-rewrite', config: { from: '(', to: '/' } }])), 400, 215, /config\.from: must be an RE2 regular expression/);
    assertError(await put(rule([{ type: 'custom-response', config: { content: 'x' } }])), 400, 215, /config\.status_code: is required/);
    assertError(await put(rule([{ type: 'custom-response', config: { status_code: 700 } }])), 400, 215, /config\.status_code: must be an HTTP status code/);
    assertError(await put(rule([{ type: 'deny', config: { status_code: 403, body: 'no' } }])), 400, 214, /config\.body: unknown field/);
    assertError(await put(rule([{ type: 'log', config: { metadata: 'text' } }])), 400, 215, /config\.metadata: must be an object/);
  });

  test('rules need a name, expressions and at least one action', async () => {
    assertError(await put({ inbound: [{ expressions: [], actions: [{ type: 'deny' }] }] }), 400, 215, /^inbound\[0\]\.name: is required/);
    assertError(await put({ inbound: [{ name: 'r', actions: [{ type: 'deny' }] }] }), 400, 215, /^inbound\[0\]\.expressions: is required/);
    assertError(await put({ inbound: [{ name: 'r', expressions: [], actions: [] }] }), 400, 215, /^inbound\[0\]\.actions: a rule needs at least one action/);
  });
});

describe('oidc module', () => {
  const put = async (body: unknown) => api.request('PUT', `${(await holders()).route!.path}/oidc`, body);
  const base = { issuer: 'https://accounts.example.com', client_id: 'id', client_secret: 'secret' };

  test('answers every field with defaults, client_secret included', async () => {
    const res = await put(base);
    assert.deepEqual(res.body, {
      enabled: true,
      options_passthrough: false,
      cookie_prefix: 'burrow.',
      inactivity_timeout: 0,
      maximum_duration: 0,
      issuer: 'https://accounts.example.com',
      client_id: 'id',
      client_secret: 'secret',
      scopes: [],
    });
  });

  test('issuer must be an absolute http(s) URL', async () => {
    assertError(await put({ ...base, issuer: '/realms/main' }), 400, 215, /^issuer: must be an absolute http\(s\) URL/);
    assertError(await put({ ...base, issuer: 'ftp://idp.example.com' }), 400, 215, /^issuer: must be an absolute/);
    assertError(await put({ client_id: 'id', client_secret: 's' }), 400, 215, /^issuer: is required/);
  });

  test('client_id and client_secret are required while enabled', async () => {
    assertError(await put({ issuer: base.issuer, client_secret: 's' }), 400, 215, /^client_id: is required while the OIDC module is enabled/);
    assertError(await put({ issuer: base.issuer, client_id: 'id' }), 400, 215, /^client_secret: is required/);
    assert.equal((await put({ issuer: base.issuer, enabled: false })).status, 200);
  });

  test('timeouts are uint32 seconds', async () => {
    assert.equal((await put({ ...base, inactivity_timeout: 4294967295, maximum_duration: 0 })).status, 200);
    for (const bad of [-1, 4294967296, 1.5]) {
      assertError(await put({ ...base, maximum_duration: bad }), 400, 215, /^maximum_duration: must be a whole number of seconds from 0 to 4294967295/);
    }
  });

  test('a cookie prefix and scopes are kept', async () => {
    const res = await put({ ...base, cookie_prefix: 'app.', scopes: ['openid', 'email'], options_passthrough: true });
    assert.deepEqual([res.body.cookie_prefix, res.body.scopes, res.body.options_passthrough], ['app.', ['openid', 'email'], true]);
  });
});

describe('authentication modules on routes (OAuth, OIDC, SAML)', () => {
  const google = { provider: { google: {} } };
  const oidc = { issuer: 'https://id.example.com', client_id: 'c', client_secret: 's' };
  const saml = { idp_metadata: SAML_METADATA };
  async function edgeWithRoutes(...matches: string[]) {
    const edge = await ok('POST', '/edges/https', {});
    const routes = [];
    for (const match of matches) routes.push(await ok('POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match }));
    return { edge, paths: routes.map((route) => `/edges/https/${edge.id}/routes/${route.id}`), ids: routes.map((route) => route.id as string) };
  }

  test('one of them enabled per route (7079); a disabled one does not count', async () => {
    const { paths } = await edgeWithRoutes('/');
    await ok('PUT', `${paths[0]}/oidc`, oidc);
    assertError(await api.request('PUT', `${paths[0]}/saml`, saml), 400, 7079, /^oidc, saml: only one of OAuth, OIDC and SAML may be enabled on a route/);
    assertError(await api.request('PATCH', paths[0]!, { oauth: google }), 400, 7079, /^oauth, oidc: only one/);
    await ok('PUT', `${paths[0]}/saml`, { ...saml, enabled: false });
    await ok('PUT', `${paths[0]}/oidc`, { ...oidc, enabled: false });
    await ok('PUT', `${paths[0]}/saml`, saml);
  });

  test('OAuth only on the route for "/" (7127), also in a route create and when the match moves', async () => {
    const { edge, paths } = await edgeWithRoutes('/', '/api');
    assertError(await api.request('PUT', `${paths[1]}/oauth`, google), 400, 7127, /^oauth: OAuth may only be set on the route for "\/", not on the route for "\/api"/);
    assertError(await api.request('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/login', oauth: google }), 400, 7127, /"\/login"/);
    await ok('PUT', `${paths[0]}/oauth`, google);
    assertError(await api.request('PATCH', paths[0]!, { match: '/home' }), 400, 7127, /"\/home"/);
    await ok('PUT', `${paths[1]}/oidc`, { ...oidc, enabled: false });
  });

  test('on one route of an edge (7155), naming the route that has one', async () => {
    const { edge, paths, ids } = await edgeWithRoutes('/', '/admin');
    await ok('PUT', `${paths[1]}/saml`, saml);
    const res = await api.request('PUT', `${paths[0]}/oidc`, oidc);
    assertError(res, 400, 7155, new RegExp(`^oidc: HTTPS edge '${edge.id}' already has saml enabled on route '${ids[1]}'`));
    assert.equal(res.body.details.used_by, ids[1]);
    assert.equal((await api.request('DELETE', `${paths[1]}/saml`)).status, 204);
    await ok('PUT', `${paths[0]}/oidc`, oidc);
    const other = await ok('POST', '/edges/https', {});
    await ok('POST', `/edges/https/${other.id}/routes`, { match_type: 'exact_path', match: '/', oauth: google });
  });
});

describe('oauth module', () => {
  const put = async (body: unknown) => api.request('PUT', `${(await holders()).route!.path}/oauth`, body);

  test('answers all eight provider keys, unused ones null, and hides client_secret', async () => {
    const res = await put({ provider: { github: { client_id: 'cid', client_secret: 'cs', scopes: ['read:org'], teams: ['acme/web'] } }, auth_check_interval: 300 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body.provider).sort(), ['amazon', 'facebook', 'github', 'gitlab', 'google', 'linkedin', 'microsoft', 'twitch']);
    assert.deepEqual(res.body.provider.github, { client_id: 'cid', client_secret: null, scopes: ['read:org'], email_addresses: [], email_domains: [], teams: ['acme/web'], organizations: [] });
    assert.equal(res.body.provider.google, null);
    assert.deepEqual([res.body.cookie_prefix, res.body.auth_check_interval], ['burrow.', 300]);
  });

  test('needs exactly one provider', async () => {
    assertError(await put({ provider: {} }), 400, 215, /^provider: set exactly one of github, .* \(got none\)/);
    assertError(await put({ provider: { github: {}, google: {} } }), 400, 215, /\(got github, google\)/);
  });

  test('client_id and client_secret go together; custom scopes need them (7034)', async () => {
    assertError(await put({ provider: { google: { client_id: 'x' } } }), 400, 215, /^provider\.google: client_id and client_secret go together/);
    assertError(await put({ provider: { google: { scopes: ['profile'] } } }), 400, 7034, /^provider\.google\.scopes: custom scopes need your own OAuth application/);
  });
});

describe('other route modules', () => {
  test('circuit_breaker: defaults, a threshold above 1.0 is 7011, at most 128 buckets', async () => {
    const { route } = await holders();
    assert.deepEqual(await ok('PUT', `${route!.path}/circuit_breaker`, {}), {
      enabled: true,
      tripped_duration: 10,
      rolling_window: 10,
      num_buckets: 10,
      volume_threshold: 20,
      error_threshold_percentage: 0.5,
    });
    assertError(await api.request('PUT', `${route!.path}/circuit_breaker`, { error_threshold_percentage: 1.5 }), 400, 7011, /^error_threshold_percentage: must be a fraction from 0\.0 to 1\.0/);
    assertError(await api.request('PUT', `${route!.path}/circuit_breaker`, { num_buckets: 129 }), 400, 215, /^num_buckets: must be an integer from 1 to 128/);
  });

  test('webhook_verification: a secret is required except for SNS', async () => {
    const { route } = await holders();
    assertError(await api.request('PUT', `${route!.path}/webhook_verification`, { provider: 'GITHUB' }), 400, 215, /^secret: is required for provider GITHUB/);
    assert.deepEqual(await ok('PUT', `${route!.path}/webhook_verification`, { provider: 'SNS' }), { enabled: true, provider: 'SNS', secret: null });
  });

  test('request_headers: header names must be tokens', async () => {
    const { route } = await holders();
    assertError(await api.request('PUT', `${route!.path}/request_headers`, { add: { 'x y': '1' } }), 400, 215, /^add\.x y: must be an HTTP header name/);
    assertError(await api.request('PUT', `${route!.path}/response_headers`, { remove: ['bad header'] }), 400, 215, /^remove\[0\]: must be an HTTP header name/);
  });

  test('user_agent_filter: patterns are RE2, the vendor\'s Go syntax', async () => {
    const { route } = await holders();
    const valid = { allow: ['(?i)bot', '^Mozilla/(?P<major>\\d+)'], deny: ['\\p{Greek}+', '(?s)a.b', '[[:alpha:]]+'] };
    assert.deepEqual(await ok('PUT', `${route!.path}/user_agent_filter`, valid), { enabled: true, ...valid });
    assertError(await api.request('PUT', `${route!.path}/user_agent_filter`, { allow: ['[unclosed'] }), 400, 215, /^allow\[0\]: must be an RE2 regular expression .*missing closing \]/);
    assertError(await api.request('PUT', `${route!.path}/user_agent_filter`, { deny: ['curl', '^(?!Mozilla)'] }), 400, 215, /^deny\[1\]: must be an RE2 regular expression .*\(\?!/);
    assertError(await api.request('PUT', `${route!.path}/user_agent_filter`, { deny: ['(bot)\\1'] }), 400, 215, /^deny\[0\]: must be an RE2 regular expression .*invalid escape sequence: `\\1`/);
  });

  test('a bad pattern inside a route create names the module field', async () => {
    const { route } = await holders();
    const edge = route!.path.split('/routes/')[0];
    assertError(await api.request('POST', `${edge}/routes`, { match_type: 'path_prefix', match: '/x', user_agent_filter: { allow: ['(?<=a)b'] } }), 400, 215, /^user_agent_filter\.allow\[0\]: must be an RE2/);
  });

  test('saml: computes the service provider URLs from the route and checks the metadata', async () => {
    const { route } = await holders();
    const routeId = route!.path.split('/').pop();
    const saml = await ok('PUT', `${route!.path}/saml`, { idp_metadata: SAML_METADATA, authorized_groups: ['admins'], force_authn: true });
    const sp = `https://idp.burrow.internal/saml/${routeId}`;
    assert.deepEqual(
      [saml.entity_id, saml.metadata_url, saml.assertion_consumer_service_url, saml.single_logout_url, saml.nameid_format, saml.authorized_groups, saml.force_authn],
      [sp, sp, `${sp}/acs`, `${sp}/slo`, 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent', ['admins'], true],
    );
    assertError(await api.request('PUT', `${route!.path}/saml`, { idp_metadata: 'https://idp.example.com/metadata' }), 400, 215, /^idp_metadata: must be the identity provider's SAML metadata XML/);
  });
});
