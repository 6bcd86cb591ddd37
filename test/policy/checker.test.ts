import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { bindAgentTunnel, openAgentSession } from '../../lib/index.ts';
import { assertError, createTestInstance, type TestInstance } from '../helpers.ts';

/**
 * The write-time check of traffic policies (lib/policy/checker.ts): every path that stores a policy
 * refuses, with a 400 naming the rule, the expression and the spot, what would otherwise fail on
 * every request — and the vendor's save-time rules, with the vendor's numbers (its error catalogue,
 * ngrok-docs snippets/errors/_err_ngrok_list.mdx: 2200 expression, 2201 action type, 2202 action
 * in a phase, 2204 configuration, 2216 IP policy reference, 2230 phase of a protocol, 2235 a cloud
 * endpoint's policy that does not always answer).
 */

let api: TestInstance;
before(async () => {
  api = await createTestInstance();
  assert.equal((await api.request('POST', '/reserved_domains', { domain: 'app.example.com' })).status, 201);
});

const ANSWER = { actions: [{ type: 'custom-response', config: { status_code: 200, body: 'ok' } }] };
/** A cloud endpoint's policy: `rules` first, then the rule that answers every request. */
const cloudPolicy = (rules: unknown[], phase = 'on_http_request') => JSON.stringify({ [phase]: [...rules, ANSWER] });
const createCloud = (traffic_policy: string, url = 'https://app.example.com') => api.request('POST', '/endpoints', { type: 'cloud', url, traffic_policy });

describe('the write-time check: expressions type-check against the phase', () => {
  const REFUSED: [string, string, RegExp][] = [
    ['an unknown variable', "req.foo == 'a'", /^traffic_policy: on_http_request\[0\]\.expressions\[0\]: unknown variable req\.foo at column 1$/],
    ['an unknown function', "foo(req.url.path)", /^traffic_policy: on_http_request\[0\]\.expressions\[0\]: found no matching overload for 'foo\(string\)' at column 1$/],
    ['an unknown method, past the start', "req.method == 'GET' && req.url.path.nope()", /expressions\[0\]: found no matching overload for 'string\.nope\(\)' at column 24$/],
    ['an int compared with a string', "req.url.port == '443'", /expressions\[0\]: no such overload: int == string at column 1$/],
    ['a value that is not a condition', 'req.url.port', /expressions\[0\]: must be a condition \(a bool\), not an int$/],
    ['a response variable before the response', 'res.status_code == 200', /expressions\[0\]: variable res\.status_code is not available in on_http_request at column 1$/],
    ['the second line of an expression', "req.method == 'GET' &&\n  req.url.port == 'x'", /at line 2, column 3$/],
    // terminate-tls's result variables are typed (a string version) and on_tcp_connect's alone, where the action runs.
    ['a terminate-tls result outside on_tcp_connect', "actions.ngrok.terminate_tls.version == '1.3'", /expressions\[0\]: variable actions\.ngrok\.terminate_tls\.version is not available in on_http_request at column 1$/],
  ];
  for (const [what, expression, message] of REFUSED) {
    test(`refuses ${what} with 2200`, async () => {
      assertError(await createCloud(cloudPolicy([{ expressions: [expression], actions: [{ type: 'deny' }] }])), 400, 2200, message);
    });
  }

  test("accepts the reference's examples (macros, functions, variables of the response phase)", async () => {
    const policy = JSON.stringify({
      on_http_request: [
        { expressions: ["req.headers['user-agent'].exists(h, h.contains('bot'))", "conn.client_ip.isPrivateIp() || inCidrRange(conn.client_ip, '10.0.0.0/8')"], actions: [{ type: 'deny' }] },
        ANSWER,
      ],
      on_http_response: [{ expressions: ['res.status_code >= 500'], actions: [{ type: 'add-headers', config: { headers: { 'x-failed': '${string(res.status_code)}' } } }] }],
    });
    const created = await createCloud(policy);
    assert.equal(created.status, 201, created.text);
    assert.equal((await api.request('DELETE', `/endpoints/${created.body.id}`)).status, 204);
  });

  test('a request variable on a connection is refused on a TCP edge, naming the rule of the module', async () => {
    const edge = await api.request('POST', '/edges/tcp', {});
    const value = JSON.stringify({ on_tcp_connect: [{ expressions: ["req.url.path == '/'"], actions: [{ type: 'deny' }] }] });
    assertError(await api.request('PUT', `/edges/tcp/${edge.body.id}/traffic_policy`, { value }), 400, 2200, /^value: on_tcp_connect\[0\]\.expressions\[0\]: variable req\.url\.path is not available in on_tcp_connect at column 1$/);
    const legacy = { inbound: [{ name: 'r', expressions: ["req.method == 'GET'"], actions: [{ type: 'deny' }] }] };
    assertError(await api.request('PUT', `/edges/tcp/${edge.body.id}/policy`, legacy), 400, 2200, /^inbound\[0\]\.expressions\[0\]: variable req\.method is not available in on_tcp_connect/);
  });

  test('a terminate-tls result is typed as its reference says: a string version compared with an int is refused', async () => {
    const rules = [{ actions: [{ type: 'terminate-tls' }] }, { expressions: ['actions.ngrok.terminate_tls.version == 13'], actions: [{ type: 'deny' }] }];
    const closing = (list: unknown[]) => JSON.stringify({ on_tcp_connect: [...list, { actions: [{ type: 'close-connection' }] }] });
    assertError(await createCloud(closing(rules)), 400, 2200, /on_tcp_connect\[1\]\.expressions\[0\]: no such overload: string == int at column 1$/);
    const typed = [{ actions: [{ type: 'terminate-tls' }] }, { expressions: ["actions.ngrok.terminate_tls.client.subject.common_name != 'alice' && actions.ngrok.terminate_tls.client.validity.not_after > timestamp('2026-01-01T00:00:00Z')"], actions: [{ type: 'deny' }] }];
    const created = await createCloud(closing(typed));
    assert.equal(created.status, 201, created.text);
    assert.equal((await api.request('DELETE', `/endpoints/${created.body.id}`)).status, 204);
  });

  test('interpolated configuration is checked too', async () => {
    const policy = cloudPolicy([{ actions: [{ type: 'add-headers', config: { headers: { 'x-a': '${req.nope}' } } }] }]);
    assertError(await createCloud(policy), 400, 2204, /^traffic_policy: on_http_request\[0\]\.actions\[0\]\.config\.headers\.x-a: \$\{req\.nope\}: unknown variable req\.nope at column 1$/);
  });
});

describe("the write-time check: the vendor's save-time rules", () => {
  test('a cloud endpoint whose policy may not answer is refused with 2235; a rule without expressions that answers, in either phase, suffices', async () => {
    const conditional = JSON.stringify({ on_http_request: [{ expressions: ["req.url.path == '/'"], actions: [{ type: 'deny' }] }] });
    assertError(await createCloud(conditional), 400, 2235, /^traffic_policy: the traffic policy is not guaranteed to handle traffic/);
    assertError(await createCloud(JSON.stringify({ on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { a: 'b' } } }] }] })), 400, 2235, /terminating action/);
    assertError(await createCloud('{}'), 400, 2235, /terminating action/);
    const byConnection = await createCloud(JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'deny' }] }] }));
    assert.equal(byConnection.status, 201, byConnection.text);
    assertError(await api.request('PATCH', `/endpoints/${byConnection.body.id}`, { traffic_policy: conditional }), 400, 2235, /not guaranteed/);
    assert.equal((await api.request('DELETE', `/endpoints/${byConnection.body.id}`)).status, 204);
  });

  test("agent endpoints' and edges' policies need not answer (the agent or the backend does)", async () => {
    const edge = await api.request('POST', '/edges/tcp', { traffic_policy: { value: JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'log' }] }] }) } });
    assert.equal(edge.status, 201, edge.text);
  });

  test('restrict-ips naming an IP policy that does not exist is refused with 2216, on every path', async () => {
    const real = (await api.request('POST', '/ip_policies', {})).body.id;
    const restrict = (ids: string[]) => ({ actions: [{ type: 'restrict-ips', config: { ip_policies: ids } }] });
    assertError(await createCloud(cloudPolicy([restrict([real, 'ipp_missing'])])), 400, 2216, /^traffic_policy: on_http_request\[0\]\.actions\[0\]\.config\.ip_policies\[1\]: invalid IP policy reference: 'ipp_missing'/);
    const edge = (await api.request('POST', '/edges/tcp', {})).body.id;
    const value = JSON.stringify({ on_tcp_connect: [restrict(['ipp_missing'])] });
    assertError(await api.request('PUT', `/edges/tcp/${edge}/traffic_policy`, { value }), 400, 2216, /^value: on_tcp_connect\[0\]\.actions\[0\]\.config\.ip_policies\[0\]/);
    assert.equal((await api.request('PUT', `/edges/tcp/${edge}/traffic_policy`, { value: JSON.stringify({ on_tcp_connect: [restrict([real])] }) })).status, 200);
  });

  test('unknown action types (2201), actions in a phase they do not run in (2202), bad configurations (2204), phases of another protocol (2230)', async () => {
    assertError(await createCloud(cloudPolicy([{ actions: [{ type: 'teleport' }] }])), 400, 2201, /actions\[0\]\.type: unknown action "teleport"/);
    assertError(await createCloud(cloudPolicy([{ actions: [{ type: 'url-rewrite', config: { to: '/' } }] }], 'on_tcp_connect')), 400, 2202, /url-rewrite does not run in on_tcp_connect/);
    assertError(await createCloud(cloudPolicy([{ actions: [{ type: 'jwt-validation', config: {} }] }])), 400, 2204, /^traffic_policy: on_http_request\[0\]\.actions\[0\]\.config\.issuer: is required$/);
    assert.equal((await api.request('POST', '/reserved_addrs', {})).status, 201);
    const addr = (await api.request('GET', '/reserved_addrs')).body.reserved_addrs[0].addr;
    assertError(await createCloud(cloudPolicy([], 'on_http_request'), `tcp://${addr}`), 400, 2230, /^traffic_policy: on_http_request: not a phase of this traffic/);
  });
});

describe('the write-time check: an agent bind', () => {
  test("a bind's traffic policy is checked like a stored one (a document or the legacy JSON policy); an agent endpoint's need not answer", async () => {
    const credential = await api.request('POST', '/credentials', {});
    const opened = await openAgentSession(api.burrow, { proof: { token: credential.body.token }, ip: '192.0.2.1', os: 'linux', agent_version: '3.0.0', metadata: '', region: 'us', update_checks: false });
    const bind = (traffic_policy: string) => bindAgentTunnel(api.burrow, opened.account, opened.session.id, { proto: 'https', traffic_policy });
    await assert.rejects(bind(JSON.stringify({ on_http_request: [{ expressions: ['req.foo'], actions: [{ type: 'deny' }] }] })), (error: any) => error.code === 2200 && /^traffic_policy: on_http_request\[0\]\.expressions\[0\]: unknown variable req\.foo at column 1$/.test(error.message));
    await assert.rejects(bind(JSON.stringify({ Inbound: [{ Expressions: ["req.url.port == 'x'"], Actions: [{ Type: 'deny' }] }] })), (error: any) => error.code === 2200 && /^traffic_policy: Inbound\[0\]\.expressions\[0\]: no such overload/.test(error.message));
    const bound = await bind(JSON.stringify({ on_http_request: [{ expressions: ["req.url.path == '/x'"], actions: [{ type: 'deny' }] }] }));
    assert.match(bound.url!, /^https:\/\//);
  });
});
