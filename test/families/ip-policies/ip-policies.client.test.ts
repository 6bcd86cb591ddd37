import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useOfficialClient } from '../../compat/official-client.ts';

const official = useOfficialClient();

describe('official client: IP policies, rules and restrictions', () => {
  test('create, read, update and list all three', async () => {
    const { client } = official;
    const policy = await client.ipPolicies.create({ description: 'office' });
    assert.match(policy.id, /^ipp_/);
    assert.equal((await client.ipPolicies.get(policy.id)).description, 'office');
    assert.equal((await client.ipPolicies.update({ id: policy.id, metadata: 'm' })).metadata, 'm');

    const rule = await client.ipPolicyRules.create({ ipPolicyId: policy.id, cidr: '10.0.0.0/8', action: 'allow', description: 'lan' });
    assert.equal(rule.cidr, '10.0.0.0/8');
    assert.equal(rule.action, 'allow');
    assert.equal(rule.ipPolicy.id, policy.id);
    assert.equal((await client.ipPolicyRules.update({ id: rule.id, cidr: '10.1.0.0/16' })).cidr, '10.1.0.0/16');
    assert.ok((await client.ipPolicyRules.list()).some((r: any) => r.id === rule.id));

    const restriction = await client.ipRestrictions.create({ type: 'agent', ipPolicyIds: [policy.id], enforced: true });
    assert.equal(restriction.type, 'agent');
    assert.equal(restriction.enforced, true);
    assert.deepEqual(restriction.ipPolicies.map((p: any) => p.id), [policy.id]);
    const relaxed = await client.ipRestrictions.update({ id: restriction.id, enforced: false, ipPolicyIds: [policy.id] });
    assert.equal(relaxed.enforced, false);
    assert.ok((await client.ipRestrictions.list()).some((r: any) => r.id === restriction.id));
    assert.ok((await client.ipPolicies.list()).some((p: any) => p.id === policy.id));

    assert.equal(await official.deleteWithFetch(`/ip_policies/${policy.id}`), 409);
    assert.equal(await official.deleteWithFetch(`/ip_restrictions/${restriction.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/ip_policy_rules/${rule.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/ip_policies/${policy.id}`), 204);
  });

  test('errors reach the client with their code and message', async () => {
    const policy = await official.client.ipPolicies.create({});
    await assert.rejects(official.client.ipPolicyRules.create({ ipPolicyId: policy.id, cidr: '10.1.2.3/24', action: 'allow' }), (error: any) => {
      assert.equal(error.statusCode, 400);
      assert.equal(error.errorCode, 'ERR_BURROW_1409');
      assert.match(error.msg, /10\.1\.2\.0\/24/);
      return true;
    });
  });
});
