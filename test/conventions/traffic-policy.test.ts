import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as v from 'valibot';
import { ApiError } from '../../lib/conventions/errors.ts';
import { parseInput } from '../../lib/conventions/fields.ts';
import { CONNECTION_PHASES, HTTP_REQUEST_PHASES, trafficPolicyProblem, trafficPolicyValue } from '../../lib/conventions/traffic-policy.ts';
import { LIMITS } from '../../lib/limits.ts';
import {
  expressionsPolicyOfChars,
  jsonPolicyOfNodes,
  nestedPolicy,
  re2PolicyOfCost,
  yamlFlowKeys,
  yamlKeyLines,
  yamlPolicyOfBytes,
  yamlPolicyOfTokens,
} from '../fixtures/bounded-inputs.ts';

const policy = (document: unknown) => JSON.stringify(document);
const onRequest = (...actions: unknown[]) => policy({ on_http_request: [{ name: 'r', actions }] });

describe('traffic policy documents', () => {
  test('accepts JSON and the same policy in YAML', () => {
    const json = policy({ on_http_request: [{ name: 'bots', expressions: ["req.headers['user-agent'].exists(h, h.contains('bot'))"], actions: [{ type: 'deny', config: { status_code: 403 } }] }] });
    const yaml = [
      'on_http_request:',
      '  - name: bots',
      "    expressions: [\"req.headers['user-agent'].exists(h, h.contains('bot'))\"]",
      '    actions:',
      '      - type: deny',
      '        config: {status_code: 403}',
    ].join('\n');
    assert.equal(trafficPolicyProblem(json), undefined);
    assert.equal(trafficPolicyProblem(yaml), undefined);
    assert.equal(trafficPolicyProblem('{}'), undefined);
  });

  test('names the path inside the document', () => {
    assert.equal(trafficPolicyProblem(onRequest({ type: 'deny' }, { type: 'x' })), 'on_http_request[0].actions[1].type: unknown action "x"');
    assert.equal(trafficPolicyProblem(policy({ on_http_request: [{ actions: [{ type: 'deny', cfg: {} }] }] })), 'on_http_request[0].actions[0].cfg: unknown field');
    assert.equal(trafficPolicyProblem(policy({ on_http_request: [{ actions: [] }] })), 'on_http_request[0].actions: a rule needs at least one action');
    assert.equal(trafficPolicyProblem(policy({ on_http_request: [{ expressions: [1], actions: [{ type: 'deny' }] }] })), 'on_http_request[0].expressions[0]: must be a string (got 1)');
  });

  test('refuses what is neither JSON nor YAML, duplicate keys, and non-mappings', () => {
    assert.match(trafficPolicyProblem('{')!, /^is neither JSON nor YAML: .* at line 1, column 2$/);
    assert.equal(trafficPolicyProblem('on_http_request: []\non_http_request: []'), 'duplicate key "on_http_request" at line 2, column 1');
    assert.equal(trafficPolicyProblem('on_http_request:\n  - name: a\n    name: b\n    actions: [{type: deny}]'), 'on_http_request[0]: duplicate key "name" at line 3, column 5');
    assert.match(trafficPolicyProblem('on_http_request: []\n---\non_http_response: []')!, /^is neither JSON nor YAML: the text holds more than one YAML document$/);
    assert.match(trafficPolicyProblem('- deny')!, /^must be a traffic policy document: a mapping of phases/);
    assert.match(trafficPolicyProblem('  ')!, /not empty/);
  });

  test('phases: unknown ones, and those the holder does not have', () => {
    assert.equal(trafficPolicyProblem(policy({ inbound: [] })), 'inbound: unknown phase; phases: on_tcp_connect, on_http_request, on_http_response, on_event_stream_message');
    assert.equal(trafficPolicyProblem(onRequest({ type: 'deny' }), { phases: CONNECTION_PHASES }), 'on_http_request: not a phase of this traffic (it has on_tcp_connect)');
    assert.equal(trafficPolicyProblem(policy({ on_tcp_connect: [{ actions: [{ type: 'deny' }] }] }), { phases: HTTP_REQUEST_PHASES }), 'on_tcp_connect: not a phase of this traffic (it has on_http_request, on_http_response, on_event_stream_message)');
    assert.equal(trafficPolicyProblem(policy({ on_tcp_connect: [{ actions: [{ type: 'restrict-ips', config: { allow: ['10.0.0.0/8'] } }] }] }), { phases: CONNECTION_PHASES }), undefined);
  });

  test('an action runs only in its own phases', () => {
    assert.equal(
      trafficPolicyProblem(policy({ on_tcp_connect: [{ actions: [{ type: 'url-rewrite', config: { to: '/' } }] }] })),
      'on_tcp_connect[0].actions[0].type: url-rewrite does not run in on_tcp_connect (it runs in on_http_request)',
    );
    assert.match(trafficPolicyProblem(policy({ on_http_response: [{ actions: [{ type: 'terminate-tls' }] }] }))!, /terminate-tls does not run in on_http_response/);
  });

  test('expressions are checked as CEL syntax', () => {
    assert.match(trafficPolicyProblem(policy({ on_http_request: [{ expressions: ['req.url.path =='], actions: [{ type: 'deny' }] }] }))!, /^on_http_request\[0\]\.expressions\[0\]: not a CEL expression: /);
  });

  test('patterns are RE2: named groups pass, lookahead is refused', () => {
    assert.equal(trafficPolicyProblem(onRequest({ type: 'url-rewrite', config: { from: '/items/(?P<id>\\d+)', to: '/i/$id' } })), undefined);
    assert.match(trafficPolicyProblem(onRequest({ type: 'redirect', config: { from: '(?=x)', to: '/' } }))!, /^on_http_request\[0\]\.actions\[0\]\.config\.from: must be an RE2 regular expression/);
  });

  test('configs of the common actions are checked; unknown actions configs are objects', () => {
    const problem = (action: unknown) => trafficPolicyProblem(onRequest(action));
    assert.equal(problem({ type: 'url-rewrite' }), 'on_http_request[0].actions[0].config: is required');
    assert.equal(problem({ type: 'url-rewrite', config: { from: '/a' } }), 'on_http_request[0].actions[0].config.to: is required');
    assert.equal(problem({ type: 'custom-response', config: { status_code: 700 } }), 'on_http_request[0].actions[0].config.status_code: must be an integer from 100 to 599 (got 700)');
    assert.equal(problem({ type: 'add-headers', config: { headers: {} } }), 'on_http_request[0].actions[0].config.headers: needs at least one header');
    assert.match(problem({ type: 'rate-limit', config: { name: 'x', algorithm: 'sliding_window', capacity: 10, rate: '15s', bucket_key: ['conn.client_ip'] } })!, /config\.rate: must be a duration from 60s to 24h/);
    assert.equal(problem({ type: 'rate-limit', config: { name: 'x', algorithm: 'sliding_window', capacity: 10, rate: '1m30s', bucket_key: ['conn.client_ip'] } }), undefined);
    assert.equal(problem({ type: 'basic-auth', config: { credentials: ['nopassword'] } }), 'on_http_request[0].actions[0].config.credentials[0]: must be "username:password"');
    assert.equal(problem({ type: 'jwt-validation', config: { issuer: { allow_list: [{ value: 'x' }] } } }), undefined);
    assert.equal(problem({ type: 'jwt-validation', config: 'x' }), 'on_http_request[0].actions[0].config: must be an object (got "x")');
    assert.equal(problem({ type: 'custom-response', config: { status_code: 200, content: 'hi', new_field_of_the_vendor: true } }), undefined);
  });

  test('as a request field, the 400 names the field and the path inside the value', () => {
    const schema = v.strictObject({ traffic_policy: v.strictObject({ enabled: v.optional(v.boolean()), value: trafficPolicyValue() }) });
    try {
      parseInput(schema, { traffic_policy: { value: onRequest({ type: 'deny' }, { type: 'x' }) } });
      assert.fail('expected a 400');
    } catch (error) {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 400);
      assert.equal(error.message, 'traffic_policy.value: on_http_request[0].actions[1].type: unknown action "x"');
    }
  });
});

/**
 * The work one document may cause is bounded (lib/limits.ts); each bound accepts its largest
 * document and refuses one more with a message naming the limit and the path where it was crossed.
 */
describe('traffic policy bounds', () => {
  const { traffic_policy_yaml_tokens: tokens, traffic_policy_nodes: nodes, traffic_policy_depth: depth, traffic_policy_expression_chars: chars } = LIMITS;

  test('the issue\'s 60,000-line and 30,000-key YAML are refused unread; a tenth of them stops at the token limit, before any key is compared', () => {
    assert.equal(trafficPolicyProblem(yamlKeyLines(60_000)), `is not JSON, and as YAML it has ${yamlKeyLines(60_000).length} bytes, more than ${LIMITS.traffic_policy_yaml_bytes.value} (limit traffic_policy_yaml_bytes)`);
    assert.match(trafficPolicyProblem(yamlFlowKeys(30_000))!, /\(limit traffic_policy_yaml_bytes\)$/);
    assert.match(trafficPolicyProblem(yamlKeyLines(6_000))!, new RegExp(`^k\\d+: the YAML document has more than ${tokens.value} tokens, reading stopped at line \\d+ \\(limit traffic_policy_yaml_tokens\\)$`));
    assert.match(trafficPolicyProblem(yamlFlowKeys(3_000))!, /^k\d+: the YAML document has more than \d+ tokens, reading stopped at line 1 \(limit traffic_policy_yaml_tokens\)$/);
  });

  test('YAML: the largest number of tokens is accepted, in block and in flow style; one more is refused', () => {
    for (const shape of ['block', 'flow'] as const) {
      assert.equal(trafficPolicyProblem(yamlPolicyOfTokens(tokens.value, shape)), undefined, shape);
      assert.match(trafficPolicyProblem(yamlPolicyOfTokens(tokens.value + 1, shape))!, /\(limit traffic_policy_yaml_tokens\)$/, shape);
    }
  });

  test('YAML bytes: the largest document of each slow style is accepted; one byte more, or a 1 MiB folded scalar, is refused unread', () => {
    const { traffic_policy_yaml_bytes: bytes } = LIMITS;
    for (const style of ['folded', 'plain lines', 'flow line'] as const) {
      assert.equal(trafficPolicyProblem(yamlPolicyOfBytes(bytes.value, style)), undefined, style);
      assert.equal(trafficPolicyProblem(yamlPolicyOfBytes(bytes.value + 1, style)), `is not JSON, and as YAML it has ${bytes.value + 1} bytes, more than ${bytes.value} (limit traffic_policy_yaml_bytes)`, style);
    }
    assert.match(trafficPolicyProblem(`a: >\n${'  x\n'.repeat(262_144)}`)!, /\(limit traffic_policy_yaml_bytes\)$/);
    assert.equal(trafficPolicyProblem(jsonPolicyOfNodes(nodes.value)), undefined, 'JSON is bounded by its values, not by these bytes');
  });

  test('1,400 levels of YAML are refused at the depth limit with the path, not a stack overflow', () => {
    const deep = `on_http_request:\n${Array.from({ length: 1400 }, (_, i) => `${' '.repeat(i + 1)}a:`).join('\n')}`.slice(0, LIMITS.traffic_policy_yaml_bytes.value);
    assert.equal(trafficPolicyProblem(deep), `on_http_request${'.a'.repeat(depth.value - 1)}: nested deeper than ${depth.value} levels (limit traffic_policy_depth)`);
    assert.match(trafficPolicyProblem(`on_http_request:\n${'- '.repeat(1400)}x`)!, /^on_http_request(\[0\]){31}: nested deeper than \d+ levels \(limit traffic_policy_depth\)$/);
    assert.match(trafficPolicyProblem(`x: ${'['.repeat(5000)}${']'.repeat(5000)}`)!, /^x\[0\]\[0\].*: nested deeper than \d+ levels \(limit traffic_policy_depth\)$/);
  });

  test('depth: JSON and YAML at the limit pass, one level more is refused with the path', () => {
    const path = `on_http_request[0].actions[0].config.metadata${'.a'.repeat(depth.value + 1 - 7)}`;
    for (const form of ['json', 'yaml'] as const) {
      assert.equal(trafficPolicyProblem(nestedPolicy(depth.value, form)), undefined, form);
      assert.equal(trafficPolicyProblem(nestedPolicy(depth.value + 1, form)), `${path}: nested deeper than ${depth.value} levels (limit traffic_policy_depth)`, form);
    }
    assert.match(trafficPolicyProblem(`{"x": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`)!, /^x(\[0\]){31}: nested deeper than \d+ levels \(limit traffic_policy_depth\)$/);
  });

  test('values: the largest document is accepted, one value more is refused where it crossed', () => {
    assert.equal(trafficPolicyProblem(jsonPolicyOfNodes(nodes.value)), undefined);
    assert.equal(
      trafficPolicyProblem(jsonPolicyOfNodes(nodes.value + 1)),
      `on_http_request[0].actions[0].config.metadata.k${nodes.value - 8}: the document has more than ${nodes.value} values (mappings, lists and scalars) (limit traffic_policy_nodes)`,
    );
  });

  test('expressions: their characters together are bounded before any is parsed', () => {
    assert.equal(trafficPolicyProblem(expressionsPolicyOfChars(chars.value)), undefined);
    assert.match(trafficPolicyProblem(expressionsPolicyOfChars(chars.value + 1))!, new RegExp(`^on_http_request\\[\\d+\\]\\.expressions\\[0\\]: the expressions up to this one hold ${chars.value + 1} characters, more than ${chars.value} together \\(limit traffic_policy_expression_chars\\)$`));
    const crowded = `${Array.from({ length: 2100 }, (_, i) => `a${i}`).join(' || ')}`;
    assert.match(trafficPolicyProblem(JSON.stringify({ on_http_request: [{ expressions: [crowded], actions: [{ type: 'deny' }] }] }))!, /^on_http_request\[0\]\.expressions\[0\]: not a CEL expression: more than 2048 syntax nodes \(limit policy_expression_nodes\)$/);
  });

  test('RE2: the issue\'s [a-z]{1000}×300 patterns are refused by their estimated cost, before compiling', () => {
    const problem = trafficPolicyProblem(JSON.stringify({ on_http_request: Array.from({ length: 60 }, () => ({ actions: [{ type: 'url-rewrite', config: { from: '[a-z]{1000}'.repeat(300), to: '/' } }] })) }));
    assert.match(problem!, /^on_http_request\[0\]\.actions\[0\]\.config\.from: costs about 303308 cost units to compile, more than \d+ \(limit re2_pattern_cost\); use smaller repetition counts \(got "\[a-z\]\{1000\}.*"… \(3300 characters\)\)$/);
  });

  test('RE2: the patterns of one document share a budget: at the total they pass, one unit more is refused at the pattern that crossed it', () => {
    for (const pattern of ['x{1000}', '(a|b){100}', '\\pL[a-z]{10}']) {
      assert.equal(trafficPolicyProblem(re2PolicyOfCost(LIMITS.re2_total_cost.value, pattern)), undefined, pattern);
      assert.match(
        trafficPolicyProblem(re2PolicyOfCost(LIMITS.re2_total_cost.value + 1, pattern))!,
        new RegExp(`^on_http_request\\[\\d+\\]\\.actions\\[0\\]\\.config\\.from: the patterns up to this one cost about ${LIMITS.re2_total_cost.value + 1} cost units to compile, more than ${LIMITS.re2_total_cost.value} together \\(limit re2_total_cost\\)`),
        pattern,
      );
    }
    const manyRules = JSON.stringify({ on_http_request: Array.from({ length: 3000 }, () => ({ actions: [{ type: 'url-rewrite', config: { from: 'x{1000}y{1000}', to: '/' } }] })) });
    assert.match(trafficPolicyProblem(manyRules)!, /\(limit (traffic_policy_nodes|re2_total_cost)\)/);
  });

  test('a pattern written into an expression (matches(\'…\')) is RE2, within the same budget', () => {
    const rule = (expression: string) => JSON.stringify({ on_http_request: [{ expressions: [expression], actions: [{ type: 'deny' }] }] });
    assert.equal(trafficPolicyProblem(rule("req.url.path.matches('^/api/v[0-9]+/')")), undefined);
    assert.equal(
      trafficPolicyProblem(rule("req.url.path.matches('(?:x{1000}){1000}')")),
      'on_http_request[0].expressions[0]: not a CEL expression: matches("(?:x{1000}){1000}"): costs about 1000025 cost units to compile, more than 2000 (limit re2_pattern_cost); use smaller repetition counts',
    );
    assert.match(trafficPolicyProblem(rule("matches(req.url.path, '(?=x)')"))!, /^on_http_request\[0\]\.expressions\[0\]: not a CEL expression: matches\("\(\?=x\)"\): must be an RE2 regular expression/);
    const many = JSON.stringify({ on_http_request: Array.from({ length: 10 }, () => ({ expressions: ["req.url.path.matches('x{1000}')"], actions: [{ type: 'deny' }] })) });
    assert.match(trafficPolicyProblem(many)!, /^on_http_request\[9\]\.expressions\[0\]: .*\(limit re2_total_cost\)$/);
  });

  test('a traffic policy field in a body is checked once, with the body\'s pattern budget', () => {
    const schema = v.strictObject({ traffic_policy: trafficPolicyValue() });
    assert.throws(() => parseInput(schema, { traffic_policy: re2PolicyOfCost(LIMITS.re2_total_cost.value + 1, 'x{1000}') }), (error: ApiError) => {
      assert.equal(error.status, 400);
      assert.match(error.message, /^traffic_policy: on_http_request\[\d+\]\.actions\[0\]\.config\.from: .* \(limit re2_total_cost\) \(got "z+"/);
      return true;
    });
  });
});
