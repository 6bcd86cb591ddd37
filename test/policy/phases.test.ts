import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { trafficPolicySource } from '../../lib/policy/sources.ts';
import { CONN, ENDPOINT, exchange, harness, onRequest, policyOf, requestFacts } from './helpers.ts';

const h = harness();

describe('phases: rules in order, expressions, actions that end the phase', () => {
  test('rules run in order; a rule applies when every expression holds; non-terminating actions go on', async () => {
    const outcome = await onRequest(
      h,
      `
on_http_request:
  - name: tag api
    expressions: ["req.url.path.startsWith('/api')", "req.method == 'GET'"]
    actions:
      - type: add-headers
        config: {headers: {x-api: "yes"}}
  - name: posts only
    expressions: ["req.method == 'POST'"]
    actions: [{type: deny}]
  - name: everyone
    actions:
      - type: add-headers
        config: {headers: {x-seen: "\${req.headers['x-api'][0]}"}}
`,
    );
    assert.deepEqual(outcome, {
      request: {
        method: 'GET',
        url: 'https://app.example/api/items?sort=asc&tag=a&tag=b',
        headers: [['Host', 'app.example'], ['User-Agent', 'curl/8.5.0'], ['Accept', '*/*'], ['x-api', 'yes'], ['x-seen', 'yes']],
      },
      logs: [],
      rules: [
        { phase: 'on_http_request', index: 0, source: 'traffic_policy', name: 'tag api', matched: true, actions: [{ type: 'add-headers', ended: false, note: 'added x-api' }] },
        { phase: 'on_http_request', index: 1, source: 'traffic_policy', name: 'posts only', matched: false, actions: [] },
        { phase: 'on_http_request', index: 2, source: 'traffic_policy', name: 'everyone', matched: true, actions: [{ type: 'add-headers', ended: false, note: 'added x-seen' }] },
      ],
    });
  });

  test('a terminating action ends the phase: later actions and rules do not run', async () => {
    const outcome = await onRequest(
      h,
      `
on_http_request:
  - actions:
      - type: custom-response
        config: {status_code: 418, body: teapot, headers: {content-type: text/plain}}
      - type: add-headers
        config: {headers: {x-never: "1"}}
  - actions: [{type: deny}]
`,
    );
    assert.deepEqual(outcome.terminal, { kind: 'respond', response: { status: 418, headers: [['content-type', 'text/plain']], body: 'teapot' } });
    assert.deepEqual(outcome.rules, [{ phase: 'on_http_request', index: 0, source: 'traffic_policy', matched: true, actions: [{ type: 'custom-response', ended: true }] }]);
  });

  test('later rules see the URL and headers earlier actions changed', async () => {
    const outcome = await onRequest(
      h,
      `
on_http_request:
  - actions:
      - type: url-rewrite
        config: {from: "/api/(\\\\w+)", to: "/v2/$1"}
  - expressions: ["req.url.path == '/v2/items'"]
    actions:
      - type: custom-response
        config: {body: "\${req.url.path}?\${req.url.query}"}
`,
    );
    assert.deepEqual(outcome.terminal, { kind: 'respond', response: { status: 200, headers: [['content-type', 'text/plain; charset=utf-8']], body: '/v2/items?sort=asc&tag=a&tag=b' } });
  });

  test('on_tcp_connect: deny closes the connection; rules record what ran', async () => {
    const policy = policyOf(h, `on_tcp_connect: [{expressions: ["conn.client_ip == '203.0.113.7'"], actions: [{type: log, config: {metadata: {ip: "\${conn.client_ip}"}}}, {type: deny}]}]`);
    assert.deepEqual(await h.engine.connect(policy, ENDPOINT, CONN), {
      terminal: { kind: 'close', reason: 'denied by the traffic policy' },
      logs: [{ phase: 'on_tcp_connect', metadata: { ip: '203.0.113.7' } }],
      rules: [{ phase: 'on_tcp_connect', index: 0, source: 'traffic_policy', matched: true, actions: [{ type: 'log', ended: false, note: 'logged ip' }, { type: 'deny', ended: true }] }],
    });
    assert.deepEqual(await h.engine.connect(policy, ENDPOINT, { ...CONN, clientIp: '198.51.100.1' }), {
      logs: [],
      rules: [{ phase: 'on_tcp_connect', index: 0, source: 'traffic_policy', matched: false, actions: [] }],
    });
  });

  test('on_http_response runs over the upstream answer with the request still readable', async () => {
    const { response } = await exchange(
      h,
      `
on_http_response:
  - expressions: ["res.status_code >= 500 && req.method == 'GET'"]
    actions:
      - type: custom-response
        config: {status_code: 503, body: "upstream said \${res.status_code} to \${req.url.path}"}
`,
      { status: 502, headers: [['content-type', 'text/html']] },
    );
    assert.deepEqual(response.terminal, { kind: 'respond', response: { status: 503, headers: [['content-type', 'text/plain; charset=utf-8']], body: 'upstream said 502 to /api/items' } });
  });
});

describe('phases: failures are answers, never silent passes', () => {
  test('an expression that fails to evaluate answers 500 naming the rule and expression', async () => {
    const outcome = await onRequest(h, `on_http_request: [{name: needs header, expressions: ["req.headers['authorization'][0] == 'x'"], actions: [{type: deny}]}]`);
    const message = "traffic_policy on_http_request rule \"needs header\", expression \"req.headers['authorization'][0] == 'x'\": No such key: authorization";
    assert.deepEqual(outcome.terminal, { kind: 'error', error: { status: 500, message, headers: [] } });
    assert.deepEqual(outcome.rules, [{ phase: 'on_http_request', index: 0, source: 'traffic_policy', name: 'needs header', matched: false, actions: [], error: message }]);
  });

  test('an expression that is not a condition, or does not type-check, answers 500', async () => {
    const notBool = await onRequest(h, `on_http_request: [{expressions: ["req.url.port"], actions: [{type: deny}]}]`);
    assert.match(JSON.stringify(notBool.terminal), /"status":500.*expressions\[0\]: must be a condition \(a bool\), not an int/);
    const dynamic = await onRequest(h, `on_http_request: [{expressions: ["vars.missing"], actions: [{type: deny}]}]`);
    assert.match(JSON.stringify(dynamic.terminal), /"status":500/);
    const mismatched = await onRequest(h, `on_http_request: [{expressions: ["req.method == 1"], actions: [{type: deny}]}]`);
    assert.match(JSON.stringify(mismatched.terminal), /"status":500.*expressions\[0\]: .*no such overload: string == int/);
    assert.deepEqual(h.engine.compile([trafficPolicySource(`on_http_request: [{expressions: ["req.nope"], actions: [{type: deny}]}]`)]).problems, [
      'traffic_policy on_http_request[0].expressions[0]: unknown variable req.nope at column 1',
    ]);
  });

  test('an action Burrow cannot perform answers 501 naming it', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: owasp-crs-request}, {type: add-headers, config: {headers: {x: y}}}]}]`);
    assert.deepEqual(outcome.terminal, { kind: 'error', error: { status: 501, message: 'Burrow cannot run the owasp-crs-request action: Burrow ships no OWASP Core Rule Set', headers: [] } });
    assert.deepEqual(outcome.rules[0]!.actions, [{ type: 'owasp-crs-request', ended: true, note: 'not supported by Burrow' }]);
  });

  test('a configuration the action cannot use answers 500 naming the field; compile lists it', async () => {
    const document = `on_http_request: [{actions: [{type: jwt-validation, config: {http: {tokens: []}}}]}]`;
    assert.deepEqual(policyOf(h, document).problems, ['traffic_policy on_http_request[0].actions[0] (jwt-validation): config.issuer: is required']);
    const outcome = await onRequest(h, document);
    assert.deepEqual(outcome.terminal, {
      kind: 'error',
      error: { status: 500, message: 'traffic_policy on_http_request rule 0: action jwt-validation: config.issuer: is required', headers: [] },
    });
  });

  test('an interpolation that fails answers the vendor error ERR_NGROK_3900 naming action and field', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: add-headers, config: {headers: {x-auth: "\${req.headers['authorization'][0]}"}}}]}]`);
    assert.deepEqual(outcome.terminal, {
      kind: 'error',
      error: { status: 500, code: 'ERR_NGROK_3900', message: 'CEL interpolation was unsuccessful in action add-headers field headers.x-auth: No such key: authorization', headers: [] },
    });
  });

  test('a stored document that no longer parses answers 500 in every phase', async () => {
    const policy = h.engine.compile([trafficPolicySource('on_http_request: [{actions: []}]')]);
    assert.deepEqual(policy.problems, ['traffic_policy: the traffic policy is not valid: on_http_request[0].actions: a rule needs at least one action']);
    const outcome = await h.engine.http(policy, ENDPOINT, CONN, requestFacts()).request();
    assert.equal(outcome.terminal?.kind === 'error' && outcome.terminal.error.status, 500);
  });
});

describe('phases: interpolation', () => {
  test('${…} in strings; a lone ${…} keeps its type in set-vars and log metadata', async () => {
    const outcome = await onRequest(
      h,
      `
on_http_request:
  - actions:
      - type: set-vars
        config:
          vars:
            - tags: "\${req.url.query_params['tag']}"
            - count: "\${size(req.url.query_params['tag'])}"
            - label: "path \${req.url.path} has \${size(req.url.query_params['tag'])} tags"
      - type: log
        config:
          metadata:
            tags: "\${vars.tags}"
            more: "\${vars.count + 1}"
            label: "\${vars.label}"
            nested: {ip: "\${conn.client_ip}", fixed: 3}
`,
    );
    assert.deepEqual(outcome.logs, [{ phase: 'on_http_request', metadata: { tags: ['a', 'b'], more: 3, label: 'path /api/items has 2 tags', nested: { ip: '203.0.113.7', fixed: 3 } } }]);
  });
});
