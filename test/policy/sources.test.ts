import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { IpRule } from '../../lib/conventions/cidr.ts';
import { agentBindSources, edgeModuleSources, type AgentBindOptions, type ModuleHolder } from '../../lib/policy/sources.ts';
import { CONN, ENDPOINT, harness, requestFacts } from './helpers.ts';
import type { ConnectionFacts, HttpRequestFacts } from '../../lib/traffic/facts.ts';

const POLICIES: Record<string, IpRule[]> = { ipp_office: [{ cidr: '203.0.113.0/24', action: 'allow' }] };
const h = harness({
  async ipPolicyRules(ids) {
    return ids.flatMap((id) => POLICIES[id] ?? []);
  },
  async certificateAuthorities(ids) {
    return ids.map((id) => `PEM of ${id}`);
  },
});

const request = (overrides: Partial<HttpRequestFacts> = {}, conn: Partial<ConnectionFacts> = {}) => ({ overrides, conn });
async function http(holder: ModuleHolder, modules: Record<string, unknown>, { overrides, conn } = request()) {
  const policy = h.engine.compile(edgeModuleSources(holder, 'edghtsrt_1', modules));
  return h.engine.http(policy, ENDPOINT, { ...CONN, ...conn }, requestFacts(overrides)).request();
}
async function agent(protocol: 'http' | 'https' | 'tcp' | 'tls', options: AgentBindOptions, { overrides, conn } = request()) {
  const policy = h.engine.compile(agentBindSources(protocol, options));
  return {
    connect: await h.engine.connect(policy, ENDPOINT, { ...CONN, ...conn }),
    request: protocol === 'tcp' || protocol === 'tls' ? undefined : await h.engine.http(policy, ENDPOINT, { ...CONN, ...conn }, requestFacts(overrides)).request(),
  };
}

describe('edge modules of HTTPS edge routes, as rules', () => {
  test('ip_restriction checks the request against its IP policies (403, ERR_NGROK_3205)', async () => {
    const modules = { ip_restriction: { enabled: true, ip_policy_ids: ['ipp_office'] } };
    assert.equal((await http('https_route', modules)).terminal, undefined);
    const refused = await http('https_route', modules, request({}, { clientIp: '198.51.100.4' }));
    assert.deepEqual(refused.terminal, { kind: 'error', error: { status: 403, code: 'ERR_NGROK_3205', message: 'Request blocked by IP restriction: 198.51.100.4 matches no allowed CIDR', headers: [] } });
    assert.deepEqual(refused.rules, [{ phase: 'on_http_request', index: 0, source: 'module:ip_restriction', matched: true, actions: [{ type: 'restrict-ips', ended: true, note: '198.51.100.4 matches no allowed CIDR' }] }]);
  });

  test('request_headers removes before it adds (so a header can be replaced); response_headers on the response', async () => {
    const modules = {
      request_headers: { enabled: true, add: { Authorization: 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==', 'X-Client': '${conn.client_ip}' }, remove: ['authorization'] },
      response_headers: { enabled: true, add: { 'X-Frame-Options': 'DENY' }, remove: ['Server'] },
    };
    const outcome = await http('https_route', modules, request({ headers: [['Authorization', 'Basic dXNlcjpwYXNz']] }));
    assert.deepEqual(outcome.request.headers, [['authorization', 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=='], ['x-client', '203.0.113.7']]);
    const flow = h.engine.http(h.engine.compile(edgeModuleSources('https_route', 'r', modules)), ENDPOINT, CONN, requestFacts());
    await flow.request();
    assert.deepEqual((await flow.response({ status: 200, headers: [['Server', 'x'], ['Content-Type', 'text/plain']] })).response.headers, [['Content-Type', 'text/plain'], ['x-frame-options', 'DENY']]);
  });

  test('user_agent_filter: allowed by any allow pattern or when no deny pattern matches; no User-Agent is refused unless ^$ is allowed', async () => {
    const modules = (allow: string[]) => ({ user_agent_filter: { enabled: true, allow, deny: ['(?i)google', '[Bb]ing'] } });
    const ua = (value?: string) => request({ headers: value === undefined ? [] : [['User-Agent', value]] });
    assert.equal((await http('https_route', modules(['(?i)google-images']), ua('Google-Images/1.0'))).terminal, undefined);
    assert.equal((await http('https_route', modules([]), ua('curl/8'))).terminal, undefined);
    assert.deepEqual((await http('https_route', modules([]), ua('Googlebot/2.1'))).terminal, {
      kind: 'error',
      error: { status: 403, code: 'ERR_NGROK_3211', message: 'The server does not authorize requests from your user-agent: user agent "Googlebot/2.1" matches (?i)google', headers: [] },
    });
    assert.equal((await http('https_route', modules([]), ua())).terminal?.kind, 'error');
    assert.equal((await http('https_route', modules(['^$']), ua())).terminal, undefined);
  });

  test('webhook_verification, circuit_breaker, compression and oauth use their actions; disabled modules do nothing', async () => {
    const verified = await http('https_route', { webhook_verification: { enabled: true, provider: 'GITHUB', secret: 's' } });
    assert.deepEqual(verified.terminal, {
      kind: 'error',
      error: { status: 403, code: 'ERR_NGROK_3204', message: 'Request failed webhook verification: github webhook verification failed: the x-hub-signature-256 header is missing', headers: [] },
    });
    assert.equal((await http('https_route', { webhook_verification: { enabled: false, provider: 'GITHUB', secret: 's' } })).terminal, undefined);
    const oauth = await http('https_route', { oauth: { enabled: true, provider_name: 'google', provider: { client_id: null, scopes: [] }, options_passthrough: false } });
    assert.equal(oauth.terminal?.kind === 'respond' && new URL(oauth.terminal.response.headers[0]![1]).host, 'accounts.google.com');
    const breaker = { circuit_breaker: { enabled: true, tripped_duration: 10, rolling_window: 10, num_buckets: 10, volume_threshold: 20, error_threshold_percentage: 0.5 } };
    assert.deepEqual((await http('https_route', breaker)).rules[0]!.actions, [{ type: 'circuit-breaker', ended: false, note: 'closed' }]);
    const flow = h.engine.http(h.engine.compile(edgeModuleSources('https_route', 'r', { compression: { enabled: true } })), ENDPOINT, CONN, requestFacts({ headers: [['Accept-Encoding', 'br, gzip;q=0.5']] }));
    await flow.request();
    assert.equal((await flow.response({ status: 200, headers: [] })).compression, 'gzip', 'the module compresses with gzip or deflate, not br');
  });

  test('the legacy policy module and the traffic_policy module run after the other modules', async () => {
    const modules = {
      request_headers: { enabled: true, add: { 'x-from-module': '1' }, remove: [] },
      policy: { enabled: true, inbound: [{ name: 'legacy', expressions: ["req.headers['x-from-module'][0] == '1'"], actions: [{ type: 'add-headers', config: { headers: { 'x-legacy': 'yes' } } }] }], outbound: [] },
      traffic_policy: { enabled: true, value: "on_http_request: [{actions: [{type: custom-response, config: {body: '${req.headers[\"x-legacy\"][0]}'}}]}]" },
    };
    const outcome = await http('https_route', modules);
    assert.deepEqual(outcome.terminal, { kind: 'respond', response: { status: 200, headers: [['content-type', 'text/plain; charset=utf-8']], body: 'yes' } });
    assert.deepEqual(outcome.rules.map((r) => r.source), ['module:request_headers', 'module:policy', 'module:traffic_policy']);
  });
});

describe('edge modules of HTTPS, TLS and TCP edges: connect-time decisions', () => {
  test('HTTPS edges always terminate TLS; mutual_tls names the certificate authorities by id', async () => {
    const policy = h.engine.compile(edgeModuleSources('https_edge', 'edghts_1', { tls_termination: { enabled: true, min_version: '1.3' }, mutual_tls: { enabled: true, certificate_authority_ids: ['ca_1'] } }));
    assert.deepEqual((await h.engine.connect(policy, ENDPOINT, CONN)).tls, { minVersion: '1.3', maxVersion: '1.3', mutualTls: { certificateAuthorities: ['PEM of ca_1'], strategy: 'require-and-verify' } });
  });

  test('TLS edges: terminate at the edge or pass TLS through to the upstream', async () => {
    const edge = h.engine.compile(edgeModuleSources('tls_edge', 'edgtls_1', { tls_termination: { enabled: true, terminate_at: 'edge', min_version: null } }));
    assert.deepEqual((await h.engine.connect(edge, ENDPOINT, CONN)).tls, { minVersion: '1.2', maxVersion: '1.3' });
    const upstream = h.engine.compile(edgeModuleSources('tls_edge', 'edgtls_1', { tls_termination: { enabled: true, terminate_at: 'upstream', min_version: null } }));
    assert.equal((await h.engine.connect(upstream, ENDPOINT, CONN)).tls, undefined);
    assert.equal((await h.engine.connect(h.engine.compile(edgeModuleSources('tls_edge', 'edgtls_1', {})), ENDPOINT, CONN)).tls, undefined);
  });

  test('TCP edges: ip_restriction closes refused connections', async () => {
    const policy = h.engine.compile(edgeModuleSources('tcp_edge', 'edgtcp_1', { ip_restriction: { enabled: true, ip_policy_ids: ['ipp_office'] } }));
    assert.equal((await h.engine.connect(policy, ENDPOINT, CONN)).terminal, undefined);
    assert.deepEqual((await h.engine.connect(policy, ENDPOINT, { ...CONN, clientIp: '198.51.100.4' })).terminal, { kind: 'close', reason: '198.51.100.4 matches no allowed CIDR' });
  });
});

describe('options an agent sets on its bind, as rules', () => {
  const basic = (user: string, password: string) => request({ headers: [['Authorization', `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`]] });

  test('basic auth (Auth and BasicAuth credentials) and IP restriction', async () => {
    const options: AgentBindOptions = { Auth: 'legacy:password1', BasicAuth: { credentials: [{ username: 'alice', cleartext_password: 'password2' }] }, IPRestriction: { allow_cidrs: ['203.0.113.0/24'], deny_cidrs: ['203.0.113.9/32'] } };
    assert.equal((await agent('https', options, basic('alice', 'password2'))).request!.terminal, undefined);
    assert.equal((await agent('https', options, basic('legacy', 'password1'))).request!.terminal, undefined);
    assert.equal((await agent('https', options, basic('alice', 'nope'))).request!.terminal?.kind, 'error');
    // On an HTTP(S) endpoint each request is refused with a page; on TCP and TLS the connection closes.
    const refused = await agent('https', options, request({}, { clientIp: '203.0.113.9' }));
    assert.equal(refused.connect.terminal, undefined);
    assert.equal(refused.request!.terminal?.kind, 'error');
    if (refused.request!.terminal?.kind === 'error') assert.deepEqual([refused.request!.terminal.error.status, refused.request!.terminal.error.code], [403, 'ERR_NGROK_3205']);
    const ip = { IPRestriction: options.IPRestriction };
    assert.deepEqual((await agent('tcp', ip, request({}, { clientIp: '203.0.113.9' }))).connect.terminal, { kind: 'close', reason: '203.0.113.9 is denied by 203.0.113.9/32' });
    assert.deepEqual((await agent('tls', ip, request({}, { clientIp: '198.51.100.1' }))).connect.terminal, { kind: 'close', reason: '198.51.100.1 matches no allowed CIDR' });
    const hashed = h.engine.compile(agentBindSources('http', { BasicAuth: { credentials: [{ username: 'a', hashed_password: 'aGFzaA==' }] } }));
    assert.deepEqual(hashed.problems, ['agent:basic_auth: basic auth with hashed passwords cannot be checked: the vendor does not document the hash']);
  });

  test('request and response headers in the SDK form (name:value), user agent filter, compression, circuit breaker, webhook verification', async () => {
    const options: AgentBindOptions = {
      RequestHeaders: { add: ['x-added:one', 'x-more: two'], remove: ['accept'] },
      UserAgentFilter: { deny: ['(?i)bot'] },
      CircuitBreaker: { error_threshold: 0.5 },
      WebhookVerification: { provider: 'gitlab', secret: 'token' },
      Compression: {},
    };
    const outcome = (await agent('http', options, request({ headers: [['Accept', '*/*'], ['X-Gitlab-Token', 'token'], ['User-Agent', 'curl/8']] }))).request!;
    assert.equal(outcome.terminal, undefined);
    assert.deepEqual(outcome.request.headers, [['X-Gitlab-Token', 'token'], ['User-Agent', 'curl/8'], ['x-added', 'one'], ['x-more', 'two']]);
    assert.deepEqual(outcome.rules.map((r) => r.source), ['agent:circuit_breaker', 'agent:webhook_verification', 'agent:user_agent_filter', 'agent:request_headers', 'agent:request_headers']);
    assert.equal((await agent('http', options, request({ headers: [['X-Gitlab-Token', 'token'], ['User-Agent', 'somebot/1']] }))).request!.terminal?.kind, 'error');
  });

  test('the traffic policy of a bind, and the legacy policy in the PascalCase form the SDKs send', async () => {
    const document = await agent('http', { TrafficPolicy: 'on_http_request: [{actions: [{type: deny, config: {status_code: 451}}]}]' });
    assert.deepEqual(document.request!.terminal, { kind: 'respond', response: { status: 451, headers: [], body: '' } });
    const legacy = await agent('http', { TrafficPolicy: JSON.stringify({ Inbound: [{ Name: 'old', Expressions: ["req.method == 'GET'"], Actions: [{ Type: 'custom-response', Config: { status_code: 202, content: 'legacy' } }] }], Outbound: [] }) });
    assert.deepEqual(legacy.request!.terminal, { kind: 'respond', response: { status: 202, headers: [['content-type', 'text/plain; charset=utf-8']], body: 'legacy' } });
    assert.deepEqual(legacy.request!.rules[0]!.source, 'agent:policy');
    const tcp = await agent('tcp', { TrafficPolicy: 'on_tcp_connect: [{actions: [{type: deny}]}]' });
    assert.deepEqual(tcp.connect.terminal, { kind: 'close', reason: 'denied by the traffic policy' });
  });

  test('TLS binds: TLSTermination with the agent certificate and client certificates checked at the edge', async () => {
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const options: AgentBindOptions = { TLSTermination: { cert: b64('CERT PEM'), key: b64('KEY PEM') }, MutualTLSAtEdge: { mutual_tls_ca: b64('-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n') } };
    assert.deepEqual((await agent('tls', options)).connect.tls, {
      minVersion: '1.2',
      maxVersion: '1.3',
      serverCertificate: 'CERT PEM',
      serverPrivateKey: 'KEY PEM',
      mutualTls: { certificateAuthorities: ['-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n'], strategy: 'require-and-verify' },
    });
    assert.equal((await agent('tls', {})).connect.tls, undefined, 'without TLSTermination TLS passes through to the agent');
  });
});
