import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { storedPolicyIssuesOf } from '../../lib/index.ts';
import { createTestInstance } from '../helpers.ts';

/**
 * Policies a state holds from before the write-time checker (lib/policy/stored.ts): found again at
 * load, each with the checker's first problem and the vendor's number, wherever they are stored —
 * a cloud endpoint's traffic_policy, an edge's traffic_policy module, a route's 0.11.0 policy module.
 * The records are changed in the store directly, as an older Burrow would have left them.
 */
test('stored policies the checker refuses now are named with holder, field and problem; valid and disabled ones are not', async () => {
  const store = new MemoryStore();
  const api = await createTestInstance({ store });
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await api.request(method, path, body);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
    return res.body;
  };
  await ok('POST', '/reserved_domains', { domain: 'app.example.com' });
  const endpoint = await ok('POST', '/endpoints', { type: 'cloud', url: 'https://app.example.com', traffic_policy: JSON.stringify({ on_http_request: [{ actions: [{ type: 'deny' }] }] }) });
  const tcp = await ok('POST', '/edges/tcp', { traffic_policy: { value: JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'deny' }] }] }) } });
  const disabled = await ok('POST', '/edges/tcp', { traffic_policy: { enabled: false, value: '{}' } });
  const https = await ok('POST', '/edges/https', {});
  const route = await ok('POST', `/edges/https/${https.id}/routes`, { match_type: 'path_prefix', match: '/', policy: { inbound: [{ name: 'r', expressions: ["req.method == 'GET'"], actions: [{ type: 'deny' }] }] } });
  assert.deepEqual(await storedPolicyIssuesOf(api.burrow), [], 'everything written through the API passes');

  await store.transaction(async (tx) => {
    const scope = (kind: string) => ({ account: api.accountId, kind });
    const put = async (kind: string, id: string, change: (record: any) => unknown) => tx.put(scope(kind), change(structuredClone(await tx.get(scope(kind), id))) as never);
    await put('endpoint', endpoint.id, (r) => ({ ...r, traffic_policy: JSON.stringify({ on_http_request: [{ actions: [{ type: 'restrict-ips', config: { ip_policies: ['ipp_gone'] } }, { type: 'deny' }] }] }) }));
    await put('tcp_edge', tcp.id, (r) => ({ ...r, traffic_policy: { enabled: true, value: JSON.stringify({ on_tcp_connect: [{ expressions: ["req.method == 'GET'"], actions: [{ type: 'deny' }] }] }) } }));
    await put('tcp_edge', disabled.id, (r) => ({ ...r, traffic_policy: { enabled: false, value: '{"on_tcp_connect": [{"actions": [{"type": "nope"}]}]}' } }));
    await put('https_edge', https.id, (r) => ({ ...r, routes: r.routes.map((one: any) => (one.id === route.id ? { ...one, policy: { ...one.policy, inbound: [{ ...one.policy.inbound[0], expressions: ['req.foo == 1'] }] } } : one)) }));
  });
  const issues = await storedPolicyIssuesOf(api.burrow);
  assert.deepEqual(
    issues.map(({ holder, field, issue }) => [holder, field, issue.code, issue.message]),
    [
      [endpoint.id, 'traffic_policy', 'POLICY_IP_POLICY_UNKNOWN', "on_http_request[0].actions[0].config.ip_policies[0]: invalid IP policy reference: 'ipp_gone' is no IP policy of this account"],
      [tcp.id, 'traffic_policy.value', 'POLICY_EXPRESSION_INVALID', 'on_tcp_connect[0].expressions[0]: variable req.method is not available in on_tcp_connect at column 1'],
      [route.id, 'policy', 'POLICY_EXPRESSION_INVALID', 'inbound[0].expressions[0]: unknown variable req.foo at column 1'],
    ],
  );
  assert.ok(issues.every((issue) => issue.account === api.accountId));
});
