import ngrok, { type Session } from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, inflateRawSync } from 'node:zlib';
import { describe, test, type TestContext } from 'node:test';
import { startAgentGateway } from '../../../adapters/agent-gateway/index.ts';
import { createIngress } from '../../../adapters/ingress/index.ts';
import { createTestInstance, type TestInstance } from '../../helpers.ts';
import { until } from '../agent-gateway/helpers.ts';
import { callIngress, seen, startApp, startUpperService, upgradeCall, WebSocketFrames, type Answer, type Call } from './helpers.ts';

/**
 * Edges on live traffic: HTTPS edges configured through the API, their routes, backends and
 * modules, with the vendor's agent (@ngrok/ngrok) binding labeled tunnels to the agent gateway
 * over Burrow, local apps behind them, and node's HTTP client sending requests to the ingress by
 * Host (the plain HTTP ingress serves HTTPS edges by host name, as it serves HTTPS endpoints).
 */

const HOST = 'shop.burrow.test';

const SAML_METADATA = `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example/metadata">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso/redirect"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;

/** An instance with an agent gateway and an ingress over it; `agent` connects the vendor's agent with a tunnel credential. */
async function setUp(t: TestContext) {
  const api = await createTestInstance();
  // Agents close while the gateway still serves them (after-hooks run in the order registered):
  // the SDK's close of a session the gateway has ended can wait forever.
  const agents: Session[] = [];
  t.after(() => Promise.all(agents.map((agent) => agent.close().catch(() => undefined))));
  const gateway = await startAgentGateway(api.burrow);
  t.after(() => gateway.close());
  const ingress = await createIngress(api.burrow, { sessions: () => gateway.sessions(), accountOf: (session) => session.context.account });
  t.after(() => ingress.close());
  const ca = (await api.burrow.services.ca()).certificatePem;
  const token = (await ok(api, 'POST', '/credentials', {})).token as string;
  const agent = async () => {
    const session = await new ngrok.SessionBuilder().authtoken(token).serverAddr(`localhost:${gateway.address.port}`).caCert(Buffer.from(ca)).handleDisconnection(() => false).connect();
    agents.push(session);
    return session;
  };
  /** Leaves an agent the gateway disconnected unclosed (see above). */
  const disconnected = (session: Session) => agents.splice(agents.indexOf(session), 1);
  /** A labeled tunnel of a new agent, forwarding to a new app named `name`. */
  const labeled = async (name: string, labels: Record<string, string>) => {
    const session = await agent();
    let builder = session.labeledListener();
    for (const [key, value] of Object.entries(labels)) builder = builder.label(key, value);
    const listener = await builder.listenAndForward(`http://127.0.0.1:${await startApp(t, name)}`);
    return { session, listener };
  };
  const call = (options: Partial<Call> = {}) => callIngress(ingress.http!.port, { host: HOST, ...options });
  return { api, gateway, call, agent, labeled, disconnected, port: ingress.http!.port };
}

async function ok(api: TestInstance, method: string, path: string, body?: unknown): Promise<any> {
  const res = await api.request(method, path, body);
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

/** An HTTPS edge on HOST with one route per entry: `[match_type, match, backend id]`. */
async function edgeWith(api: TestInstance, routes: readonly (readonly [string, string, string])[], modules: Record<string, unknown> = {}) {
  const edge = await ok(api, 'POST', '/edges/https', { hostports: [`${HOST}:443`], ...modules });
  const ids: string[] = [];
  for (const [match_type, match, backend_id] of routes) ids.push((await ok(api, 'POST', `/edges/https/${edge.id}/routes`, { match_type, match, backend: { backend_id } })).id);
  return { edge: edge.id as string, routes: ids };
}

const respond = (api: TestInstance, body: string, status_code = 200) => ok(api, 'POST', '/backends/http_response', { body, status_code, headers: { 'content-type': 'text/plain' } }).then((b) => b.id as string);

function assertOffline(answer: Answer, why: RegExp): void {
  assert.equal(answer.status, 404);
  assert.equal(answer.headers['ngrok-error-code'], 'ERR_BURROW_3200');
  assert.match(answer.body.toString(), why);
}

describe('edges on live traffic: routing', () => {
  test('an exact_path route wins, else the longest path_prefix; a path no route selects is offline (3200)', async (t) => {
    const { api, call } = await setUp(t);
    await edgeWith(api, [
      ['path_prefix', '/api', await respond(api, 'api prefix')],
      ['path_prefix', '/api/v2', await respond(api, 'v2 prefix')],
      ['exact_path', '/api', await respond(api, 'api exactly')],
      ['path_prefix', '/static', await respond(api, 'static')],
    ]);
    const body = async (path: string) => (await call({ path })).body.toString();
    assert.equal(await body('/api'), 'api exactly');
    assert.equal(await body('/api/'), 'api prefix');
    assert.equal(await body('/api/v2/items?x=1'), 'v2 prefix');
    assert.equal(await body('/api/v1'), 'api prefix');
    assert.equal(await body('/static/app.css'), 'static');
    assertOffline(await call({ path: '/other' }), /no route of HTTPS edge &#39;edghts_\w+&#39; selects the path \/other/);
    assertOffline(await call({ host: 'nobody.burrow.test' }), /The endpoint http:\/\/nobody\.burrow\.test is offline\./);
  });

  test('an HTTP response backend answers its status, headers and body', async (t) => {
    const { api, call } = await setUp(t);
    const backend = await ok(api, 'POST', '/backends/http_response', { status_code: 418, headers: { 'X-Teapot': 'short', 'Content-Type': 'text/plain' }, body: 'and stout' });
    await edgeWith(api, [['path_prefix', '/', backend.id]]);
    const answer = await call({ method: 'POST', path: '/brew', body: Buffer.alloc(256 * 1024, 1) });
    assert.equal(answer.status, 418);
    assert.equal(answer.headers['x-teapot'], 'short');
    assert.equal(answer.body.toString(), 'and stout');
  });

  test('a route with the websocket_tcp_converter module: WebSockets reach its static TCP backend as bytes; other requests answer ERR_NGROK_3206', async (t) => {
    const { api, call, port } = await setUp(t);
    const service = await startUpperService(t);
    const backend = await ok(api, 'POST', '/backends/static', { address: `127.0.0.1:${service.port}` });
    const { edge, routes } = await edgeWith(api, [['path_prefix', '/', backend.id]]);
    await ok(api, 'PUT', `/edges/https/${edge}/routes/${routes[0]}/websocket_tcp_converter`, { enabled: true });
    const plain = await call({ path: '/' });
    assert.equal(plain.status, 400);
    assert.equal(plain.headers['ngrok-error-code'], 'ERR_BURROW_3206');
    const opened = await upgradeCall(port, HOST, '/socket');
    assert.ok('switched' in opened);
    const ws = new WebSocketFrames(opened.socket, opened.head);
    ws.send(2, 'over the edge');
    assert.equal((await ws.read(13)).toString(), 'OVER THE EDGE');
  });

  test('a static backend: requests reach the address it names', async (t) => {
    const { api, call } = await setUp(t);
    const port = await startApp(t, 'static app');
    const backend = await ok(api, 'POST', '/backends/static', { address: `127.0.0.1:${port}` });
    await edgeWith(api, [['path_prefix', '/', backend.id]]);
    const answer = await call({ path: '/page?q=1', headers: { 'X-Test': 'through' } });
    assert.equal(answer.status, 200);
    assert.equal(seen(answer).app, 'static app');
    assert.equal(seen(answer).url, '/page?q=1');
    assert.equal(seen(answer).headers['x-test'], 'through');
    assert.equal(seen(answer).headers['x-forwarded-for'], '127.0.0.1');
  });

  test("a tunnel group backend shares requests among the live agents' labeled tunnels whose labels match; none online is offline", async (t) => {
    const { api, call, labeled, gateway, disconnected } = await setUp(t);
    const group = await ok(api, 'POST', '/backends/tunnel_group', { labels: { app: 'shop' } });
    await edgeWith(api, [['path_prefix', '/', group.id]]);
    assertOffline(await call(), new RegExp(`tunnel group backend &#39;${group.id}&#39; has no online tunnel with its labels`));

    const first = await labeled('first', { app: 'shop', team: 'blue' });
    await labeled('second', { app: 'shop' });
    await labeled('other', { app: 'blog' });
    assert.equal((await ok(api, 'GET', `/backends/tunnel_group/${group.id}`)).tunnels.length, 2);
    const apps = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      const answer = await call({ path: `/n/${i}` });
      assert.equal(answer.status, 200);
      apps.set(seen(answer).app, (apps.get(seen(answer).app) ?? 0) + 1);
    }
    assert.deepEqual([...apps.keys()].sort(), ['first', 'second'], 'both tunnels of the group serve, the other label none');

    // The first agent goes away: the second serves everything.
    gateway.sessions().find((session) => session.tunnels().some((tunnel) => tunnel.tunnelId === first.listener.id()))!.close('gone');
    disconnected(first.session);
    await until(() => ok(api, 'GET', `/backends/tunnel_group/${group.id}`), (backend) => backend.tunnels.length === 1, 'the gone tunnel leaving the group');
    for (let i = 0; i < 5; i++) assert.equal(seen(await call()).app, 'second');
  });

  test('a failover backend sends to its first backend with an online upstream; a weighted one shares by weight', async (t) => {
    const { api, call, labeled } = await setUp(t);
    const group = await ok(api, 'POST', '/backends/tunnel_group', { labels: { app: 'primary' } });
    const fallback = await respond(api, 'fallback');
    const failover = await ok(api, 'POST', '/backends/failover', { backends: [group.id, fallback] });
    const light = await respond(api, 'light');
    const heavy = await respond(api, 'heavy');
    const weighted = await ok(api, 'POST', '/backends/weighted', { backends: { [light]: 1, [heavy]: 3, [fallback]: 0 } });
    await edgeWith(api, [
      ['path_prefix', '/', failover.id],
      ['path_prefix', '/weighted', weighted.id],
    ]);

    assert.equal((await call()).body.toString(), 'fallback', 'the group has no online tunnel');
    await labeled('primary', { app: 'primary' });
    assert.equal(seen(await call()).app, 'primary');

    const counts = new Map<string, number>();
    for (let i = 0; i < 80; i++) {
      const body = (await call({ path: '/weighted' })).body.toString();
      counts.set(body, (counts.get(body) ?? 0) + 1);
    }
    assert.deepEqual([...counts.keys()].sort(), ['heavy', 'light'], 'a weight of 0 gets nothing');
    assert.ok(counts.get('heavy')! > counts.get('light')!, `heavy (3) over light (1): ${JSON.stringify([...counts])}`);
  });
});

describe('edges on live traffic: modules', () => {
  test('request_headers, response_headers and compression change the request and the answer', async (t) => {
    const { api, call } = await setUp(t);
    const port = await startApp(t);
    const backend = await ok(api, 'POST', '/backends/static', { address: `127.0.0.1:${port}` });
    const { edge, routes } = await edgeWith(api, [['path_prefix', '/', backend.id]]);
    const route = `/edges/https/${edge}/routes/${routes[0]}`;
    await ok(api, 'PUT', `${route}/request_headers`, { add: { 'x-from-edge': 'yes' }, remove: ['x-secret'] });
    await ok(api, 'PUT', `${route}/response_headers`, { add: { 'x-served-by': 'edge' }, remove: ['x-app'] });
    await ok(api, 'PUT', `${route}/compression`, { enabled: true });

    const answer = await call({ headers: { 'X-Secret': 'hidden', 'Accept-Encoding': 'gzip' } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['content-encoding'], 'gzip');
    assert.equal(answer.headers['x-served-by'], 'edge');
    assert.equal(answer.headers['x-app'], undefined);
    const request = JSON.parse(gunzipSync(answer.body).toString());
    assert.equal(request.headers['x-from-edge'], 'yes');
    assert.equal(request.headers['x-secret'], undefined);
  });

  test('ip_restriction: the IP policies it names, read from the account, allow or block the client address', async (t) => {
    const { api, call } = await setUp(t);
    const { edge, routes } = await edgeWith(api, [['path_prefix', '/', await respond(api, 'inside')]]);
    const policy = await ok(api, 'POST', '/ip_policies', {});
    const rule = await ok(api, 'POST', '/ip_policy_rules', { ip_policy_id: policy.id, cidr: '127.0.0.0/8', action: 'deny' });
    await ok(api, 'PUT', `/edges/https/${edge}/routes/${routes[0]}/ip_restriction`, { ip_policy_ids: [policy.id] });
    const blocked = await call();
    assert.equal(blocked.status, 403);
    assert.equal(blocked.headers['ngrok-error-code'], 'ERR_BURROW_3205');
    assert.match(blocked.body.toString(), /127\.0\.0\.1 is denied by 127\.0\.0\.0\/8/);

    await ok(api, 'DELETE', `/ip_policy_rules/${rule.id}`);
    await ok(api, 'POST', '/ip_policy_rules', { ip_policy_id: policy.id, cidr: '127.0.0.1/32', action: 'allow' });
    assert.equal((await call()).body.toString(), 'inside', 'the rules are read on each request');
  });

  test('user_agent_filter refuses (3211) and webhook_verification checks the signature (3204)', async (t) => {
    const { api, call } = await setUp(t);
    const { edge, routes } = await edgeWith(api, [['path_prefix', '/', await respond(api, 'hooked')]]);
    const route = `/edges/https/${edge}/routes/${routes[0]}`;
    await ok(api, 'PUT', `${route}/user_agent_filter`, { deny: ['(?i)curl'] });
    await ok(api, 'PUT', `${route}/webhook_verification`, { provider: 'github', secret: 'hook-secret' });
    const payload = Buffer.from('{"action":"opened"}');
    const signature = `sha256=${createHmac('sha256', 'hook-secret').update(payload).digest('hex')}`;

    const curl = await call({ method: 'POST', headers: { 'User-Agent': 'curl/8.5.0', 'X-Hub-Signature-256': signature }, body: payload });
    assert.equal(curl.status, 403);
    assert.equal(curl.headers['ngrok-error-code'], 'ERR_BURROW_3211');
    const unsigned = await call({ method: 'POST', headers: { 'User-Agent': 'GitHub-Hookshot/1' }, body: payload });
    assert.equal(unsigned.status, 403);
    assert.equal(unsigned.headers['ngrok-error-code'], 'ERR_BURROW_3204');
    const signed = await call({ method: 'POST', headers: { 'User-Agent': 'GitHub-Hookshot/1', 'X-Hub-Signature-256': signature }, body: payload });
    assert.equal(signed.status, 200);
    assert.equal(signed.body.toString(), 'hooked');
  });

  test('circuit_breaker: upstream errors past the threshold open it (503, 3202)', async (t) => {
    const { api, call } = await setUp(t);
    const { edge, routes } = await edgeWith(api, [['path_prefix', '/', await respond(api, 'broken', 500)]]);
    await ok(api, 'PUT', `/edges/https/${edge}/routes/${routes[0]}/circuit_breaker`, { volume_threshold: 3, error_threshold_percentage: 0.5, tripped_duration: 60, rolling_window: 60, num_buckets: 10 });
    for (let i = 0; i < 3; i++) assert.equal((await call()).status, 500);
    const open = await call();
    assert.equal(open.status, 503);
    assert.equal(open.headers['ngrok-error-code'], 'ERR_BURROW_3202');
  });

  test('oauth and saml redirect to the provider; mutual_tls over plain HTTP is refused naming why (501)', async (t) => {
    const { api, call } = await setUp(t);
    const { edge, routes } = await edgeWith(api, [
      ['path_prefix', '/', await respond(api, 'root')],
      ['path_prefix', '/sso', await respond(api, 'sso')],
    ]);
    await ok(api, 'PUT', `/edges/https/${edge}/routes/${routes[0]}/oauth`, { provider: { google: {} } });
    const oauth = await call({ path: '/account' });
    assert.equal(oauth.status, 302);
    const location = new URL(String(oauth.headers.location));
    assert.equal(location.origin, 'https://accounts.google.com');
    assert.equal(location.searchParams.get('redirect_uri'), 'https://idp.burrow.internal/oauth2/callback');

    const sso = await ok(api, 'POST', '/edges/https', { hostports: ['sso.burrow.test:443'] });
    const ssoRoute = await ok(api, 'POST', `/edges/https/${sso.id}/routes`, { match_type: 'path_prefix', match: '/', backend: { backend_id: await respond(api, 'signed in') } });
    await ok(api, 'PUT', `/edges/https/${sso.id}/routes/${ssoRoute.id}/saml`, { idp_metadata: SAML_METADATA });
    const saml = await call({ host: 'sso.burrow.test', path: '/reports' });
    assert.equal(saml.status, 302);
    const sign = new URL(String(saml.headers.location));
    assert.equal(`${sign.origin}${sign.pathname}`, 'https://idp.example/sso/redirect');
    assert.equal(sign.searchParams.get('RelayState'), 'http://sso.burrow.test/reports');
    assert.match(inflateRawSync(Buffer.from(sign.searchParams.get('SAMLRequest')!, 'base64')).toString(), new RegExp(`AssertionConsumerServiceURL="https://idp\\.burrow\\.internal/saml/${ssoRoute.id}/acs"`));

    const ca = await ok(api, 'POST', '/certificate_authorities', { ca_pem: (await api.burrow.services.ca()).certificatePem });
    await ok(api, 'PUT', `/edges/https/${edge}/mutual_tls`, { certificate_authority_ids: [ca.id] });
    const plain = await call({ path: '/sso' });
    assert.equal(plain.status, 501);
    assert.match(plain.body.toString(), /asks for client certificates \(mutual TLS\), which only a TLS connection can present/);
  });
});

describe("agent endpoints' traffic policies read the account's records", () => {
  test('restrict-ips ip_policies: the IP policies of the agent\'s account allow or block the client address; one unknown at bind refuses the bind (2216), one deleted since is a 500', async (t) => {
    const { api, agent, call } = await setUp(t);
    const office = await ok(api, 'POST', '/ip_policies', {});
    await ok(api, 'POST', '/ip_policy_rules', { ip_policy_id: office.id, cidr: '127.0.0.1/32', action: 'allow' });
    const blocked = await ok(api, 'POST', '/ip_policies', {});
    await ok(api, 'POST', '/ip_policy_rules', { ip_policy_id: blocked.id, cidr: '127.0.0.0/8', action: 'deny' });
    const doomed = await ok(api, 'POST', '/ip_policies', {});
    const restrict = (path: string, policies: string[]) => ({ expressions: [`req.url.path == '${path}'`], actions: [{ type: 'restrict-ips', config: { ip_policies: policies } }] });
    const session = await agent();
    const host = 'office.burrow.test';
    await ok(api, 'POST', '/reserved_domains', { domain: host });
    const unknownAtBind = JSON.stringify({ on_http_request: [restrict('/unknown', ['ipp_unknown'])] });
    await assert.rejects(session.httpEndpoint().domain(host).trafficPolicy(unknownAtBind).listen(), /'ipp_unknown' is no IP policy of this account\s+ERR_BURROW_2216/);
    const policy = JSON.stringify({ on_http_request: [restrict('/office', [office.id]), restrict('/blocked', [blocked.id]), restrict('/unknown', [doomed.id])] });
    await session.httpEndpoint().domain(host).trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${await startApp(t)}`);
    assert.equal((await api.request('DELETE', `/ip_policies/${doomed.id}`)).status, 204);

    assert.equal((await call({ host, path: '/office' })).status, 200);
    const denied = await call({ host, path: '/blocked' });
    assert.equal(denied.status, 403);
    assert.equal(denied.headers['ngrok-error-code'], 'ERR_BURROW_3205');
    const unknown = await call({ host, path: '/unknown' });
    assert.equal(unknown.status, 500);
    assert.match(unknown.body.toString(), new RegExp(`restrict-ips: ip_policies: IP policy &#39;${doomed.id}&#39; was not found`));
  });
});

/** An identity provider on this machine: its OIDC discovery document and its JWKS, stopped after the test. */
async function startProvider(t: TestContext, jwks: unknown): Promise<string> {
  const server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    res.setHeader('Content-Type', 'application/json');
    if (req.url === '/.well-known/openid-configuration') return void res.end(JSON.stringify({ issuer: origin, authorization_endpoint: `${origin}/authorize`, jwks_uri: `${origin}/jwks` }));
    if (req.url === '/jwks') return void res.end(JSON.stringify(jwks));
    res.statusCode = 404;
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('documents a policy fetches come from this machine only', () => {
  test("oidc: the provider's discovery document is read from a local issuer, then the redirect; another issuer is 502 (3160) naming why", async (t) => {
    const { api, call } = await setUp(t);
    const issuer = await startProvider(t, { keys: [] });
    for (const [host, issuerUrl] of [['oidc.burrow.test', issuer], ['remote.burrow.test', 'https://accounts.example']] as const) {
      const edge = await ok(api, 'POST', '/edges/https', { hostports: [`${host}:443`] });
      const route = await ok(api, 'POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/', backend: { backend_id: await respond(api, 'in') } });
      await ok(api, 'PUT', `/edges/https/${edge.id}/routes/${route.id}/oidc`, { issuer: issuerUrl, client_id: 'web', client_secret: 'secret' });
    }
    const local = await call({ host: 'oidc.burrow.test', path: '/inbox' });
    assert.equal(local.status, 302);
    const signIn = new URL(String(local.headers.location));
    assert.equal(`${signIn.origin}${signIn.pathname}`, `${issuer}/authorize`);
    assert.equal(signIn.searchParams.get('client_id'), 'web');
    assert.equal(signIn.searchParams.get('redirect_uri'), 'https://idp.burrow.internal/oauth2/callback');

    const remote = await call({ host: 'remote.burrow.test' });
    assert.equal(remote.status, 502);
    assert.equal(remote.headers['ngrok-error-code'], 'ERR_BURROW_3160');
    assert.match(remote.body.toString(), /https:\/\/accounts\.example\/\.well-known\/openid-configuration is not fetched: offline, Burrow reads documents only from this machine/);
  });

  test("jwt-validation checks tokens against a JWKS served on this machine", async (t) => {
    const { api, agent, call } = await setUp(t);
    const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const provider = await startProvider(t, { keys: [{ ...keys.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256' }] });
    const policy = JSON.stringify({
      on_http_request: [
        {
          actions: [
            {
              type: 'jwt-validation',
              config: {
                issuer: { allow_list: [{ value: provider }] },
                audience: { allow_list: [{ value: 'urn:api' }] },
                http: { tokens: [{ type: 'access_token', method: 'header', name: 'Authorization', prefix: 'Bearer ' }] },
                jws: { allowed_algorithms: ['ES256'], keys: { sources: { additional_jkus: [`${provider}/jwks`] } } },
              },
            },
          ],
        },
      ],
    });
    const host = 'api.burrow.test';
    await ok(api, 'POST', '/reserved_domains', { domain: host });
    await (await agent()).httpEndpoint().domain(host).trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${await startApp(t)}`);
    const now = Math.floor(api.clock.now().getTime() / 1000);
    const head = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k1', typ: 'JWT' })).toString('base64url');
    const data = `${head}.${Buffer.from(JSON.stringify({ iss: provider, aud: 'urn:api', sub: 'u1', exp: now + 300 })).toString('base64url')}`;
    const token = `${data}.${sign('sha256', Buffer.from(data), { key: keys.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;

    assert.equal((await call({ host, headers: { Authorization: `Bearer ${token}` } })).status, 200);
    const missing = await call({ host });
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['ngrok-error-code'], 'ERR_BURROW_3408');
  });
});
