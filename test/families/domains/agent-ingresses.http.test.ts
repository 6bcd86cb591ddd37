import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance({ simulation: { regions: ['us', 'eu'] } });
});


const provisioning = (id: string, outcome: string) =>
  api.request('POST', `/_burrow/accounts/${api.accountId}/agent_ingresses/${id}/provisioning`, { outcome }, { token: OPERATOR_TOKEN });

describe('/agent_ingresses', () => {
  test('create answers the domain, name servers, regional domains and a path uri', async () => {
    const res = await api.request('POST', '/agent_ingresses', { domain: 'Connect.Example.COM', description: 'agents' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^agin_/);
    assert.equal(res.body.uri, `/agent_ingresses/${res.body.id}`);
    assert.equal(res.body.domain, 'connect.example.com');
    assert.deepEqual(res.body.ns_targets, ['ns1.burrow.internal.', 'ns2.burrow.internal.', 'ns3.burrow.internal.', 'ns4.burrow.internal.']);
    assert.deepEqual(res.body.region_domains, ['tunnel.us.connect.example.com', 'tunnel.eu.connect.example.com']);
    assert.equal(res.body.certificate_management_policy, null);
    assert.equal(res.body.certificate_management_status, null);
    assert.deepEqual((await api.request('GET', '/agent_ingresses')).body.ingresses.map((i: any) => i.id), [res.body.id]);
  });

  test('refuses invalid domains, IPs, the service zone and duplicates across accounts', async () => {
    const post = (domain: unknown, token?: string) => api.request('POST', '/agent_ingresses', { domain }, token ? { token } : {});
    assertError(await post('not a domain'), 400, 6704, /^domain: "not a domain" is not a valid domain name/);
    assertError(await post('192.0.2.1'), 400, 6704, /not an IP address/);
    assertError(await post(`${'a'.repeat(64)}.example.com`), 400, 6704, /labels of at most 63/);
    assertError(await post(`${'abcdefghi.'.repeat(26)}com`), 400, 6704, /at most 253/);
    assertError(await post('localhost'), 400, 6704, /not a valid domain/);
    assertError(await post('x.burrow.internal'), 400, 6705, /service's own zone/);
    assert.equal((await post('taken.example.com')).status, 201);
    const other = await api.burrow.createAccount({ name: 'other' });
    assertError(await post('TAKEN.example.com', other.token), 409, 6706, /already an agent ingress/);
  });

  test('the domain cannot change; a deleted ingress frees its domain', async () => {
    const created = await api.request('POST', '/agent_ingresses', { domain: 'a.example.com' });
    assertError(await api.request('PATCH', `/agent_ingresses/${created.body.id}`, { domain: 'b.example.com' }), 400, 215, /^domain: cannot be changed/);
    assert.equal((await api.request('PATCH', `/agent_ingresses/${created.body.id}`, { metadata: 'm' })).body.metadata, 'm');
    assert.equal((await api.request('DELETE', `/agent_ingresses/${created.body.id}`)).status, 204);
    assert.equal((await api.request('POST', '/agent_ingresses', { domain: 'a.example.com' })).status, 201);
  });
});

describe('certificate management', () => {
  async function managed(policy: Record<string, unknown> = {}) {
    const res = await api.request('POST', '/agent_ingresses', { domain: 'm.example.com', certificate_management_policy: policy });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  test('a policy defaults to the supported authority and rsa, and starts a provisioning job', async () => {
    const ingress = await managed();
    assert.deepEqual(ingress.certificate_management_policy, { authority: 'letsencrypt', private_key_type: 'rsa' });
    assert.deepEqual(ingress.certificate_management_status, {
      renews_at: null,
      provisioning_job: { error_code: null, msg: 'provisioning a certificate', started_at: '2026-03-01T12:00:00Z', retries_at: null },
    });
    assertError(await api.request('POST', '/agent_ingresses', { domain: 'n.example.com', certificate_management_policy: { authority: 'other-ca' } }), 400, 215, /only supported authority is letsencrypt/);
    assertError(await api.request('POST', '/agent_ingresses', { domain: 'n.example.com', certificate_management_policy: { private_key_type: 'dsa' } }), 400, 215, /must be rsa or ecdsa/);
  });

  test('success clears the job and schedules the renewal', async () => {
    const ingress = await managed({ private_key_type: 'ecdsa' });
    api.clock.advance(60);
    assert.equal((await provisioning(ingress.id, 'success')).status, 200);
    const status = (await api.request('GET', `/agent_ingresses/${ingress.id}`)).body.certificate_management_status;
    assert.deepEqual(status, { renews_at: '2026-04-30T12:01:00Z', provisioning_job: null });
    assert.equal((await provisioning(ingress.id, 'success')).status, 409, 'no job is running any more');
  });

  test('INTERNAL_ERROR is temporary: retried when the clock reaches retries_at', async () => {
    const ingress = await managed();
    await provisioning(ingress.id, 'INTERNAL_ERROR');
    const failed = (await api.request('GET', `/agent_ingresses/${ingress.id}`)).body.certificate_management_status.provisioning_job;
    assert.equal(failed.error_code, 'INTERNAL_ERROR');
    assert.equal(failed.retries_at, '2026-03-01T12:05:00Z');
    assert.equal((await provisioning(ingress.id, 'success')).status, 409, 'nothing to decide before the retry');
    api.clock.advance(300);
    const retrying = (await api.request('GET', `/agent_ingresses/${ingress.id}`)).body.certificate_management_status.provisioning_job;
    assert.deepEqual(retrying, { error_code: null, msg: 'retrying certificate provisioning', started_at: '2026-03-01T12:05:00Z', retries_at: null });
    assert.equal((await provisioning(ingress.id, 'success')).status, 200);
  });

  test('DNS_ERROR is permanent until the policy is set again', async () => {
    const ingress = await managed();
    await provisioning(ingress.id, 'DNS_ERROR');
    api.clock.advance(86400);
    const job = (await api.request('GET', `/agent_ingresses/${ingress.id}`)).body.certificate_management_status.provisioning_job;
    assert.equal(job.error_code, 'DNS_ERROR');
    assert.equal(job.retries_at, null);
    assert.match(job.msg, /NS records of m\.example\.com/);
    const again = await api.request('PATCH', `/agent_ingresses/${ingress.id}`, { certificate_management_policy: { private_key_type: 'rsa' } });
    assert.equal(again.body.certificate_management_status.provisioning_job.error_code, null);
  });

  test('removing the policy removes the status', async () => {
    const ingress = await managed();
    const res = await api.request('PATCH', `/agent_ingresses/${ingress.id}`, { certificate_management_policy: null });
    assert.equal(res.body.certificate_management_policy, null);
    assert.equal(res.body.certificate_management_status, null);
    assert.equal((await provisioning(ingress.id, 'success')).status, 409);
  });
});
