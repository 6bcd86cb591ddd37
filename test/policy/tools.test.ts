import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkPolicyDocument, formatPolicyProblem, formatPolicyTest, parseTestRequest, testPolicyDocument } from '../../lib/policy/tools.ts';

/**
 * The policy tools (lib/policy/tools.ts) behind `burrow policy check|test`: every problem of a
 * document at its line and column with the vendor's code, and one request run through the phases.
 */

describe('checkPolicyDocument: every problem, where it is, with the vendor code', () => {
  test('YAML: an expression problem points inside the expression, an action type at the type, in document order', async () => {
    const yaml = [
      'on_http_request:',
      '  - actions:',
      '      - type: nope',
      '  - expressions:',
      `      - "req.method == 'GET' && req.foo == 'a'"`,
      '    actions: [{type: deny}]',
      '  - expressions:',
      '      - |',
      "        req.method == 'GET' &&",
      "          req.url.port == 'x'",
      '    actions: [{type: deny}]',
      '',
    ].join('\n');
    const problems = await checkPolicyDocument(yaml);
    assert.deepEqual(
      problems.map((p) => formatPolicyProblem('p.yml', p)),
      [
        'p.yml:3:15: on_http_request[0].actions[0].type: unknown action "nope" (ERR_NGROK_2201)',
        "p.yml:5:33: on_http_request[1].expressions[0]: unknown variable req.foo at column 24 (ERR_NGROK_2200)",
        'p.yml:10:11: on_http_request[2].expressions[0]: no such overload: int == string at line 2, column 3 (ERR_NGROK_2200)',
      ],
    );
  });

  test('JSON: an action configuration problem at its field', async () => {
    const json = '{\n  "on_http_request": [\n    {"actions": [{"type": "custom-response", "config": {"status_code": 999}}]}\n  ]\n}\n';
    const [problem, ...rest] = await checkPolicyDocument(json);
    assert.equal(rest.length, 0);
    assert.deepEqual({ line: problem!.line, col: problem!.col, code: problem!.code }, { line: 3, col: 72, code: 'ERR_NGROK_2204' });
    assert.match(problem!.message, /^on_http_request\[0\]\.actions\[0\]\.config\.status_code: must be an integer from 100 to 599/);
  });

  test('a valid policy has no problem; a cloud endpoint\'s that does not always answer has 2235; phases of TCP refuse HTTP ones with 2230', async () => {
    const policy = JSON.stringify({ on_http_request: [{ expressions: ["req.url.path == '/'"], actions: [{ type: 'deny' }] }] });
    assert.deepEqual(await checkPolicyDocument(policy), []);
    assert.deepEqual((await checkPolicyDocument(policy, { cloudEndpoint: true })).map((p) => p.code), ['ERR_NGROK_2235']);
    assert.deepEqual((await checkPolicyDocument(policy, { phases: ['on_tcp_connect'] })).map((p) => p.code), ['ERR_NGROK_2230']);
    assert.deepEqual((await checkPolicyDocument(JSON.stringify({ on_http_request: [{ actions: [{ type: 'restrict-ips', config: { ip_policies: ['ipp_x'] } }] }] }), { ipPolicyExists: async () => false })).map((p) => p.code), ['ERR_NGROK_2216']);
  });

  test('a text that is no document: one problem where the parser stopped', async () => {
    const [problem, ...rest] = await checkPolicyDocument('on_http_request:\n  - actions: [\n');
    assert.equal(rest.length, 0);
    assert.match(problem!.message, /^is neither JSON nor YAML/);
    assert.equal(problem!.code, undefined);
  });
});

describe('testPolicyDocument: the phases, the rules that matched, and the answer or the upstream request', () => {
  const POLICY = [
    'on_tcp_connect:',
    '  - expressions: ["conn.client_ip == \'192.0.2.9\'"]',
    '    actions: [{type: deny}]',
    'on_http_request:',
    '  - name: api',
    '    expressions: ["req.url.path.startsWith(\'/api/\')"]',
    '    actions:',
    '      - {type: url-rewrite, config: {from: "/api/(.*)", to: "/v2/$1"}}',
    '      - {type: add-headers, config: {headers: {x-client: "${conn.client_ip}"}}}',
    '  - expressions: ["!req.url.path.startsWith(\'/v2/\')"]',
    '    actions: [{type: custom-response, config: {status_code: 404, body: "no ${req.url.path}", headers: {content-type: text/plain}}}]',
  ].join('\n');

  test('a request the policy lets through: the upstream request after url-rewrite and add-headers', async () => {
    const report = await testPolicyDocument(POLICY, { ...parseTestRequest('GET https://app.example/api/items?x=1'), headers: [['Accept', 'text/html']], clientIp: '198.51.100.4' });
    assert.deepEqual(report.phases.map((p) => [p.phase, p.rules.map((r) => r.matched)]), [['on_tcp_connect', [false]], ['on_http_request', [true, false]]]);
    assert.deepEqual(report.upstream, { method: 'GET', url: 'https://app.example/v2/items?x=1', headers: [['Host', 'app.example'], ['Accept', 'text/html'], ['x-client', '198.51.100.4']] });
    assert.equal(report.terminal, undefined);
    assert.match(formatPolicyTest(report), /rule 0 "api": matched\n    url-rewrite: .*\n    add-headers: .*\n  rule 1: not matched\nupstream receives:\n  GET https:\/\/app\.example\/v2\/items\?x=1\n/);
  });

  test('a request the policy answers, and a connection it refuses', async () => {
    const answered = await testPolicyDocument(POLICY, parseTestRequest('https://app.example/x'));
    assert.deepEqual(answered.terminal, { kind: 'respond', response: { status: 404, headers: [['content-type', 'text/plain']], body: 'no /x' } });
    assert.match(formatPolicyTest(answered), /custom-response \(ended the phase\)[^\n]*\nanswer: 404\n  content-type: text\/plain\n\nno \/x\n$/);
    const refused = await testPolicyDocument(POLICY, { ...parseTestRequest('GET https://app.example/x'), clientIp: '192.0.2.9' });
    assert.equal(refused.phases.length, 1);
    assert.equal(refused.terminal?.kind, 'close');
  });

  test('the request line: METHOD URL, a bare URL is GET, anything else refused', () => {
    assert.deepEqual(parseTestRequest('post https://app.example/x'), { method: 'POST', url: 'https://app.example/x' });
    assert.deepEqual(parseTestRequest('https://app.example'), { method: 'GET', url: 'https://app.example' });
    assert.throws(() => parseTestRequest('GET /x'), /absolute http\(s\) URL/);
  });
});
