import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as v from 'valibot';
import { ApiError } from '../../lib/conventions/errors.ts';
import { parseInput } from '../../lib/conventions/fields.ts';
import { CONNECTION_PHASES, HTTP_REQUEST_PHASES, trafficPolicyProblem, trafficPolicyValue } from '../../lib/conventions/traffic-policy.ts';

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
    assert.match(trafficPolicyProblem('on_http_request: []\non_http_request: []')!, /^is neither JSON nor YAML: Map keys must be unique/);
    assert.match(trafficPolicyProblem('- deny')!, /^must be a traffic policy document: a mapping of phases/);
    assert.match(trafficPolicyProblem('  ')!, /not empty/);
  });

  test('phases: unknown ones, and those the holder does not have', () => {
    assert.equal(trafficPolicyProblem(policy({ inbound: [] })), 'inbound: unknown phase; phases: on_tcp_connect, on_http_request, on_http_response');
    assert.equal(trafficPolicyProblem(onRequest({ type: 'deny' }), { phases: CONNECTION_PHASES }), 'on_http_request: not a phase of this traffic (it has on_tcp_connect)');
    assert.equal(trafficPolicyProblem(policy({ on_tcp_connect: [{ actions: [{ type: 'deny' }] }] }), { phases: HTTP_REQUEST_PHASES }), 'on_tcp_connect: not a phase of this traffic (it has on_http_request, on_http_response)');
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
