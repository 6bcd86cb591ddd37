import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, createTestInstance, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

async function policy(): Promise<string> {
  const res = await api.request('POST', '/ip_policies', { description: 'office' });
  assert.equal(res.status, 201);
  return res.body.id;
}

async function rule(ip_policy_id: string, cidr: string, action = 'allow') {
  return api.request('POST', '/ip_policy_rules', { ip_policy_id, cidr, action });
}


describe('/ip_policies', () => {
  test('create, get, list, update and delete', async () => {
    const created = await api.request('POST', '/ip_policies', { description: 'office', metadata: 'm' });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^ipp_[0-9A-Za-z]{27}$/);
    assert.deepEqual(Object.keys(created.body).sort(), ['created_at', 'description', 'id', 'metadata', 'uri']);
    assert.equal((await api.request('GET', `/ip_policies/${created.body.id}`)).body.description, 'office');
    const list = await api.request('GET', '/ip_policies');
    assert.deepEqual(list.body.ip_policies.map((p: any) => p.id), [created.body.id]);
    const updated = await api.request('PATCH', `/ip_policies/${created.body.id}`, { description: 'hq' });
    assert.equal(updated.body.description, 'hq');
    assert.equal(updated.body.metadata, 'm');
    assert.equal((await api.request('DELETE', `/ip_policies/${created.body.id}`)).status, 204);
    assertError(await api.request('GET', `/ip_policies/${created.body.id}`), 404, 1402, /IP policy 'ipp_\w+' was not found/);
  });

  test('an action on the policy is refused with a pointer to the rules', async () => {
    assertError(await api.request('POST', '/ip_policies', { action: 'allow' }), 400, 1423, /^action: .*each IP policy rule/);
  });

  test('deleting a policy deletes its rules', async () => {
    const id = await policy();
    const r = await rule(id, '10.0.0.0/8');
    assert.equal((await api.request('DELETE', `/ip_policies/${id}`)).status, 204);
    assertError(await api.request('GET', `/ip_policy_rules/${r.body.id}`), 404, 1404, /was not found/);
  });

  test('a policy used by an IP restriction is not deleted, and the error names the restriction', async () => {
    const id = await policy();
    const restriction = await api.request('POST', '/ip_restrictions', { type: 'agent', ip_policy_ids: [id] });
    const res = await api.request('DELETE', `/ip_policies/${id}`);
    assertError(res, 409, 1420, new RegExp(`IP restriction '${restriction.body.id}'`));
    assert.equal(res.body.details.used_by, restriction.body.id);
    assert.equal((await api.request('GET', `/ip_policies/${id}`)).status, 200);
    await api.request('DELETE', `/ip_restrictions/${restriction.body.id}`);
    assert.equal((await api.request('DELETE', `/ip_policies/${id}`)).status, 204);
  });

  test('a restriction that drops a policy frees it for deletion', async () => {
    const [a, b] = [await policy(), await policy()];
    const restriction = await api.request('POST', '/ip_restrictions', { type: 'api', ip_policy_ids: [a] });
    await api.request('PATCH', `/ip_restrictions/${restriction.body.id}`, { ip_policy_ids: [b] });
    assert.equal((await api.request('DELETE', `/ip_policies/${a}`)).status, 204);
    assertError(await api.request('DELETE', `/ip_policies/${b}`), 409, 1420, /still used/);
  });
});

describe('/ip_policy_rules', () => {
  test('create returns every field with the policy as a Ref', async () => {
    const id = await policy();
    const res = await api.request('POST', '/ip_policy_rules', { ip_policy_id: id, cidr: '10.0.0.0/8', action: 'deny', description: 'lab' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^ipr_/);
    assert.equal(res.body.cidr, '10.0.0.0/8');
    assert.equal(res.body.action, 'deny');
    assert.equal(res.body.description, 'lab');
    assert.deepEqual(res.body.ip_policy, { id, uri: `http://burrow.test/ip_policies/${id}` });
    const list = await api.request('GET', '/ip_policy_rules');
    assert.deepEqual(list.body.ip_policy_rules.map((r: any) => r.id), [res.body.id]);
  });

  test('IPv6 CIDRs are stored in canonical form', async () => {
    const res = await rule(await policy(), '2001:DB8:0::/32');
    assert.equal(res.status, 201);
    assert.equal(res.body.cidr, '2001:db8::/32');
  });

  test('a bare address is a 400 that suggests the /32 or /128 form', async () => {
    const id = await policy();
    const v4 = await rule(id, '10.1.2.3');
    assertError(v4, 400, 1413, /^cidr: .*10\.1\.2\.3\/32/);
    assert.equal(v4.body.details.suggestion, '10.1.2.3/32');
    assertError(await rule(id, '2001:db8::1'), 400, 1413, /2001:db8::1\/128/);
  });

  test('host bits set is a 400 that suggests the network address', async () => {
    const res = await rule(await policy(), '10.1.2.3/24');
    assertError(res, 400, 1409, /^cidr: .*network address is 10\.1\.2\.0\/24/);
    assert.equal(res.body.details.suggestion, '10.1.2.0/24');
  });

  test('an unparseable CIDR is a 400', async () => {
    assertError(await rule(await policy(), '10.0.0.0/40'), 400, 1406, /^cidr: /);
  });

  test('the same CIDR twice in one policy is a 409; in another policy it is fine', async () => {
    const [a, b] = [await policy(), await policy()];
    const first = await rule(a, '10.0.0.0/8');
    assertError(await rule(a, '10.0.0.0/8', 'deny'), 409, 1408, new RegExp(first.body.id));
    assert.equal((await rule(b, '10.0.0.0/8')).status, 201);
  });

  test('action must be allow or deny', async () => {
    assertError(await rule(await policy(), '10.0.0.0/8', 'block'), 400, 1422, /^action: must be allow or deny \(got "block"\)/);
  });

  test('missing fields are named', async () => {
    assertError(await api.request('POST', '/ip_policy_rules', { cidr: '10.0.0.0/8', action: 'allow' }), 400, 215, /ip_policy_id: is required/);
  });

  test('ip_policy_id must name a policy of this account', async () => {
    assertError(await rule('ipp_nope', '10.0.0.0/8'), 404, 1402, /^ip_policy_id: IP policy 'ipp_nope' was not found/);
    const other = await api.burrow.createAccount({ name: 'other' });
    const foreign = await api.request('POST', '/ip_policies', {}, { token: other.token });
    assertError(await rule(foreign.body.id, '10.0.0.0/8'), 404, 1402, /was not found/);
  });

  test('cidr is updatable and re-validated; action and ip_policy_id are not', async () => {
    const id = await policy();
    const created = await rule(id, '10.0.0.0/8');
    await rule(id, '192.168.0.0/16');
    const updated = await api.request('PATCH', `/ip_policy_rules/${created.body.id}`, { cidr: '172.16.0.0/12' });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.cidr, '172.16.0.0/12');
    assert.equal((await api.request('PATCH', `/ip_policy_rules/${created.body.id}`, { cidr: '172.16.0.0/12' })).status, 200, 'its own CIDR is no duplicate');
    assertError(await api.request('PATCH', `/ip_policy_rules/${created.body.id}`, { cidr: '192.168.0.0/16' }), 409, 1408, /already has a rule/);
    assertError(await api.request('PATCH', `/ip_policy_rules/${created.body.id}`, { cidr: '172.16.0.1/12' }), 400, 1409, /172\.16\.0\.0\/12/);
    assertError(await api.request('PATCH', `/ip_policy_rules/${created.body.id}`, { action: 'deny' }), 400, 215, /^action: cannot be changed/);
    assertError(await api.request('PATCH', `/ip_policy_rules/${created.body.id}`, { ip_policy_id: await policy() }), 400, 215, /^ip_policy_id: cannot be changed/);
    assert.equal((await api.request('GET', `/ip_policy_rules/${created.body.id}`)).body.cidr, '172.16.0.0/12', 'refused updates change nothing');
  });

  test('the only rule of a policy a dashboard restriction uses is not deleted', async () => {
    const id = await policy();
    const only = await rule(id, '10.0.0.0/8');
    await api.request('POST', '/ip_restrictions', { type: 'dashboard', ip_policy_ids: [id] });
    assertError(await api.request('DELETE', `/ip_policy_rules/${only.body.id}`), 409, 1419, /only rule/);
    const second = await rule(id, '192.168.0.0/16');
    assert.equal((await api.request('DELETE', `/ip_policy_rules/${only.body.id}`)).status, 204);
    assertError(await api.request('DELETE', `/ip_policy_rules/${second.body.id}`), 409, 1419, /only rule/);
  });
});

describe('/ip_restrictions', () => {
  test('create returns every field; enforced defaults to false', async () => {
    const id = await policy();
    const res = await api.request('POST', '/ip_restrictions', { type: 'agent', ip_policy_ids: [id, id], description: 'agents' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^ipx_/);
    assert.equal(res.body.enforced, false);
    assert.equal(res.body.type, 'agent');
    assert.deepEqual(res.body.ip_policies, [{ id, uri: `http://burrow.test/ip_policies/${id}` }], 'duplicates collapse');
    assert.deepEqual((await api.request('GET', '/ip_restrictions')).body.ip_restrictions.map((r: any) => r.id), [res.body.id]);
  });

  test('type must be one of the four', async () => {
    assertError(await api.request('POST', '/ip_restrictions', { type: 'ssh', ip_policy_ids: [await policy()] }), 400, 1803, /^type: must be one of dashboard, api, agent, endpoints/);
  });

  test('at least one policy, each existing', async () => {
    assertError(await api.request('POST', '/ip_restrictions', { type: 'api', ip_policy_ids: [] }), 400, 1804, /^ip_policy_ids: a restriction needs at least one IP policy/);
    assertError(await api.request('POST', '/ip_restrictions', { type: 'api', ip_policy_ids: [await policy(), 'ipp_missing'] }), 404, 1801, /^ip_policy_ids\[1\]: IP policy 'ipp_missing' was not found/);
    assertError(await api.request('POST', '/ip_restrictions', { type: 'api' }), 400, 215, /ip_policy_ids: is required/);
  });

  test('one restriction per type per account', async () => {
    const id = await policy();
    const first = await api.request('POST', '/ip_restrictions', { type: 'endpoints', ip_policy_ids: [id] });
    assertError(await api.request('POST', '/ip_restrictions', { type: 'endpoints', ip_policy_ids: [id] }), 409, 1802, new RegExp(first.body.id));
    assert.equal((await api.request('POST', '/ip_restrictions', { type: 'agent', ip_policy_ids: [id] })).status, 201);
    await api.request('DELETE', `/ip_restrictions/${first.body.id}`);
    assert.equal((await api.request('POST', '/ip_restrictions', { type: 'endpoints', ip_policy_ids: [id] })).status, 201, 'free again after delete');
    const other = await api.burrow.createAccount({ name: 'other' });
    const otherPolicy = await api.request('POST', '/ip_policies', {}, { token: other.token });
    assert.equal((await api.request('POST', '/ip_restrictions', { type: 'endpoints', ip_policy_ids: [otherPolicy.body.id] }, { token: other.token })).status, 201, 'other accounts are independent');
  });

  test('update changes enforced and policies; type is immutable', async () => {
    const [a, b] = [await policy(), await policy()];
    const created = await api.request('POST', '/ip_restrictions', { type: 'agent', ip_policy_ids: [a] });
    const updated = await api.request('PATCH', `/ip_restrictions/${created.body.id}`, { enforced: true, ip_policy_ids: [b] });
    assert.equal(updated.body.enforced, true);
    assert.deepEqual(updated.body.ip_policies.map((p: any) => p.id), [b]);
    assertError(await api.request('PATCH', `/ip_restrictions/${created.body.id}`, { type: 'api' }), 400, 215, /^type: cannot be changed/);
    const kept = await api.request('PATCH', `/ip_restrictions/${created.body.id}`, { ip_policy_ids: [] });
    assert.deepEqual(kept.body.ip_policies.map((p: any) => p.id), [b], 'an empty list counts as not sent');
    assertError(await api.request('PATCH', `/ip_restrictions/${created.body.id}`, { ip_policy_ids: ['ipp_gone'] }), 404, 1801, /ipp_gone/);
    assert.equal((await api.request('GET', `/ip_restrictions/${created.body.id}`)).body.type, 'agent');
  });
});

describe('api restrictions on requests', () => {
  async function apiRestriction(enforced: boolean, rules: [string, string][]) {
    const id = await policy();
    for (const [cidr, action] of rules) assert.equal((await rule(id, cidr, action)).status, 201);
    const res = await api.request('POST', '/ip_restrictions', { type: 'api', enforced, ip_policy_ids: [id] });
    assert.equal(res.status, 201);
    return res.body.id as string;
  }
  const from = (ip: string) => ({ headers: { 'x-test-source-ip': ip } });

  test('an enforced restriction refuses denied addresses with 403 and lets allowed ones through', async () => {
    const restriction = await apiRestriction(true, [['10.0.0.0/8', 'allow'], ['10.9.0.0/16', 'deny']]);
    assert.equal((await api.request('GET', '/api_keys', undefined, from('10.1.1.1'))).status, 200);
    const denied = await api.request('GET', '/api_keys', undefined, from('10.9.0.1'));
    assertError(denied, 403, 220, new RegExp(`IP restriction '${restriction}' denies 10\\.9\\.0\\.1: rule 'ipr_\\w+' \\(deny 10\\.9\\.0\\.0/16\\)`));
    assert.equal(denied.body.details.ip, '10.9.0.1');
    assertError(await api.request('POST', '/api_keys', {}, from('192.0.2.1')), 403, 220, /no rule allows it/);
  });

  test('a refused write changes nothing', async () => {
    await apiRestriction(true, [['10.0.0.0/8', 'allow']]);
    await api.request('POST', '/api_keys', { description: 'blocked' }, from('192.0.2.1'));
    const keys = (await api.request('GET', '/api_keys', undefined, from('10.0.0.1'))).body.keys;
    assert.ok(!keys.some((k: any) => k.description === 'blocked'));
  });

  test('an unenforced restriction only warns', async () => {
    const restriction = await apiRestriction(false, [['10.0.0.0/8', 'allow']]);
    const res = await api.request('GET', '/api_keys', undefined, from('192.0.2.1'));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('warning') ?? '', new RegExp(`^199 burrow ".*${restriction}.*not enforced`));
    assert.equal((await api.request('GET', '/api_keys', undefined, from('10.0.0.1'))).headers.get('warning'), null);
  });

  test('restrictions apply only to their own account', async () => {
    await apiRestriction(true, [['10.0.0.0/8', 'allow']]);
    const other = await api.burrow.createAccount({ name: 'other' });
    assert.equal((await api.request('GET', '/api_keys', undefined, { ...from('192.0.2.1'), token: other.token })).status, 200);
  });

  test('agent restrictions do not affect API requests', async () => {
    const id = await policy();
    await api.request('POST', '/ip_restrictions', { type: 'agent', enforced: true, ip_policy_ids: [id] });
    assert.equal((await api.request('GET', '/api_keys', undefined, from('192.0.2.1'))).status, 200);
  });
});
