import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, beforeEach, describe, test } from 'node:test';
import { assertError, BASE, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';
import { generateTlsFixtures, type TlsFixtures } from '../../fixtures/tls.ts';
import { GO_CLIENT_HEADERS, PYTHON_CLIENT_HEADERS } from '../../fixtures/client-dialects.ts';

let tls: TlsFixtures;
let api: TestInstance;
before(() => {
  tls = generateTlsFixtures();
});
beforeEach(async () => {
  api = await createTestInstance();
});

const reserve = (body: Record<string, unknown>, token?: string) => api.request('POST', '/reserved_domains', body, token ? { token } : {});
const uploadCertificate = async () => (await api.request('POST', '/tls_certificates', { certificate_pem: tls.leaf.cert, private_key_pem: tls.leaf.key })).body;
const provisioning = (id: string, outcome: string) =>
  api.request('POST', `/_burrow/accounts/${api.accountId}/reserved_domains/${id}/provisioning`, { outcome }, { token: OPERATOR_TOKEN });

describe('POST /reserved_domains', () => {
  test('a domain of your own gets a CNAME target under the service zone; region is "" unless sent', async () => {
    const res = await reserve({ domain: 'App.Example.COM.', description: 'app' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.match(res.body.id, /^rd_[0-9A-Za-z]{27}$/);
    assert.match(res.body.cname_target, /^[0-9a-z]{17}\.[0-9a-z]{16}\.cname\.burrow\.internal$/);
    assert.deepEqual(res.body, {
      id: res.body.id,
      uri: `${BASE}/reserved_domains/${res.body.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'app',
      metadata: '',
      domain: 'app.example.com',
      region: '',
      cname_target: res.body.cname_target,
      certificate: null,
      certificate_management_policy: null,
      certificate_management_status: null,
      acme_challenge_cname_target: null,
      resolves_to: [],
    });
    assert.deepEqual((await api.request('GET', `/reserved_domains/${res.body.id}`)).body, res.body);
    assert.deepEqual((await api.request('GET', '/reserved_domains')).body.reserved_domains, [res.body]);
    assert.equal((await reserve({ domain: 'eu.example.com', region: 'eu' })).body.region, 'eu');
    assertError(await reserve({ domain: 'mars.example.com', region: 'mars' }), 400, 400, /^region: must be one of us, eu, .* \(got "mars"\)/);
  });

  test('a name under the service zone needs no CNAME; wildcards get an ACME challenge target', async () => {
    const own = await reserve({ domain: 'myapp.burrow.internal' });
    assert.equal(own.status, 201);
    assert.equal(own.body.cname_target, null);
    assert.equal(own.body.acme_challenge_cname_target, null);
    const wildcard = await reserve({ domain: '*.example.org' });
    assert.match(wildcard.body.cname_target, /\.cname\.burrow\.internal$/);
    assert.match(wildcard.body.acme_challenge_cname_target, /^[0-9a-z]{17}\.[0-9a-z]{16}\.acme\.burrow\.internal$/);
  });

  test('refuses invalid names with the vendor codes', async () => {
    assertError(await reserve({ domain: 'not a domain' }), 400, 406, /^domain: "not a domain" is not a valid domain name/);
    assertError(await reserve({ domain: '192.0.2.1' }), 400, 406, /not an IP address/);
    assertError(await reserve({ domain: 'localhost' }), 400, 406, /at least two labels/);
    assertError(await reserve({ domain: `${'a'.repeat(64)}.example.com` }), 400, 406, /labels of at most 63/);
    assertError(await reserve({ domain: 'app.*.example.com' }), 400, 402, /only the first label may be a wildcard/);
    assertError(await reserve({ domain: 'a*.example.com' }), 400, 403, /must be the whole first label/);
    assertError(await reserve({ domain: 'burrow.internal' }), 400, 404, /service's own zone/);
    assertError(await reserve({ domain: 'a.b.burrow.internal' }), 400, 450, /only a single label/);
    assertError(await reserve({ domain: '*.burrow.internal' }), 400, 450, /only a single label/);
    assertError(await reserve({}), 400, 215, /^domain: is required/);
  });

  test('a domain is reserved once in the instance: 413 in your account, 414 in another', async () => {
    const first = await reserve({ domain: 'taken.example.com' });
    assertError(await reserve({ domain: 'TAKEN.example.com' }), 409, 413, new RegExp(`already reserved by this account \\(${first.body.id}\\)`));
    const other = await api.burrow.createAccount({ name: 'other' });
    const refused = await reserve({ domain: 'taken.example.com' }, other.token);
    assertError(refused, 409, 414, /already reserved by another account$/);
    assert.ok(!refused.text.includes(first.body.id));
    assert.equal((await api.request('DELETE', `/reserved_domains/${first.body.id}`)).status, 204);
    assert.equal((await reserve({ domain: 'taken.example.com' }, other.token)).status, 201);
  });
});

describe('certificates of reserved domains', () => {
  test('certificate_id attaches an uploaded certificate; DELETE …/certificate detaches it', async () => {
    const cert = await uploadCertificate();
    const domain = await reserve({ domain: 'app.example.com', certificate_id: cert.id });
    assert.equal(domain.status, 201, JSON.stringify(domain.body));
    assert.deepEqual(domain.body.certificate, { id: cert.id, uri: `${BASE}/tls_certificates/${cert.id}` });
    assert.equal((await api.request('DELETE', `/reserved_domains/${domain.body.id}/certificate`)).status, 204);
    assert.equal((await api.request('GET', `/reserved_domains/${domain.body.id}`)).body.certificate, null);
    assert.equal((await api.request('DELETE', `/reserved_domains/${domain.body.id}/certificate`)).status, 204, 'detaching again is a no-op');
    const patched = await api.request('PATCH', `/reserved_domains/${domain.body.id}`, { certificate_id: cert.id });
    assert.equal(patched.body.certificate.id, cert.id);
    assertError(await reserve({ domain: 'x.example.com', certificate_id: 'cert_0000000000000000000000000000' }), 404, 1965, /TLS certificate 'cert_0+' was not found/);
    assert.equal((await reserve({ domain: 'zero.example.com', certificate_id: '' })).body.certificate, null, '"" counts as not sent');
  });

  test('certificate_id and a policy together are refused (434); setting one replaces the other', async () => {
    const cert = await uploadCertificate();
    assertError(await reserve({ domain: 'both.example.com', certificate_id: cert.id, certificate_management_policy: {} }), 400, 434, /give at most one/);
    const domain = await reserve({ domain: 'app.example.com', certificate_id: cert.id });
    const managed = await api.request('PATCH', `/reserved_domains/${domain.body.id}`, { certificate_management_policy: { private_key_type: 'rsa' } });
    assert.equal(managed.body.certificate, null);
    assert.deepEqual(managed.body.certificate_management_policy, { authority: 'letsencrypt', private_key_type: 'rsa' });
    assertError(await api.request('DELETE', `/reserved_domains/${domain.body.id}/certificate`), 409, 436, /detach the policy instead/);
    assert.equal((await api.request('DELETE', `/tls_certificates/${cert.id}`)).status, 204, 'the certificate is free again');
  });

  test('a policy defaults to letsencrypt and ecdsa, runs a provisioning job on the instance clock and issues a certificate', async () => {
    const domain = (await reserve({ domain: 'managed.example.com', certificate_management_policy: { authority: '', private_key_type: '' } })).body;
    assert.deepEqual(domain.certificate_management_policy, { authority: 'letsencrypt', private_key_type: 'ecdsa' });
    assert.deepEqual(domain.certificate_management_status, {
      renews_at: null,
      provisioning_job: { error_code: null, msg: 'provisioning a certificate', started_at: '2026-03-01T12:00:00Z', retries_at: null },
    });
    api.clock.advance(60);
    const failed = await provisioning(domain.id, 'DNS_ERROR');
    assert.equal(failed.status, 200, JSON.stringify(failed.body));
    const status = (await api.request('GET', `/reserved_domains/${domain.id}`)).body.certificate_management_status;
    assert.equal(status.provisioning_job.error_code, 'DNS_ERROR');
    assert.equal(status.provisioning_job.msg, `the CNAME record of managed.example.com does not point at ${domain.cname_target}`);
    await api.request('PATCH', `/reserved_domains/${domain.id}`, { certificate_management_policy: {} });
    assert.equal((await provisioning(domain.id, 'success')).status, 200);
    const issued = (await api.request('GET', `/reserved_domains/${domain.id}`)).body;
    assert.deepEqual(issued.certificate_management_status, { renews_at: '2026-04-30T12:01:00Z', provisioning_job: null });

    // The job issued a real certificate for the domain: a TLS certificate of the account.
    assert.match(issued.certificate.id, /^cert_/);
    const cert = (await api.request('GET', `/tls_certificates/${issued.certificate.id}`)).body;
    assert.equal(cert.issued_at, '2026-03-01T12:01:00Z');
    assert.equal(cert.not_before, '2026-03-01T12:01:00Z');
    assert.equal(cert.not_after, '2026-05-30T12:01:00Z');
    assert.equal(cert.subject_common_name, 'managed.example.com');
    assert.deepEqual(cert.subject_alternative_names, { dns_names: ['managed.example.com'], ips: [] });
    assert.equal(cert.private_key_type, 'ecdsa');
    assert.equal(cert.issuer_common_name, 'Burrow Simulated ACME (letsencrypt)');
    assert.deepEqual(cert.extended_key_usages, ['server_auth']);
    assert.equal(new X509Certificate(cert.certificate_pem).checkHost('managed.example.com'), 'managed.example.com');
    assertError(await api.request('DELETE', `/tls_certificates/${cert.id}`), 409, 9007, new RegExp(`used by reserved domain '${domain.id}'`));
    assertError(await api.request('DELETE', `/reserved_domains/${domain.id}/certificate`), 409, 436, /detach the policy instead/);

    assert.equal((await api.request('DELETE', `/reserved_domains/${domain.id}/certificate_management_policy`)).status, 204);
    const off = (await api.request('GET', `/reserved_domains/${domain.id}`)).body;
    assert.equal(off.certificate_management_policy, null);
    assert.equal(off.certificate_management_status, null);
    assert.equal(off.certificate.id, cert.id, 'the issued certificate stays until detached');
    assert.equal((await api.request('DELETE', `/reserved_domains/${domain.id}/certificate`)).status, 204);
    assert.equal((await api.request('DELETE', `/tls_certificates/${cert.id}`)).status, 204);
    assertError(await api.request('PATCH', `/reserved_domains/${domain.id}`, { certificate_management_policy: { authority: 'other-ca' } }), 400, 215, /the only supported authority is letsencrypt/);
  });

  test('an issued certificate stays through a new policy until the next issuance; an upload replaces it', async () => {
    const domain = (await reserve({ domain: '*.example.org', certificate_management_policy: { private_key_type: 'rsa' } })).body;
    await provisioning(domain.id, 'success');
    const first = (await api.request('GET', `/reserved_domains/${domain.id}`)).body.certificate;
    const cert = (await api.request('GET', `/tls_certificates/${first.id}`)).body;
    assert.equal(cert.private_key_type, 'rsa');
    assert.deepEqual(cert.subject_alternative_names.dns_names, ['*.example.org']);
    assert.deepEqual(cert.key_usages, ['digital_signature', 'key_encipherment']);
    const renewing = await api.request('PATCH', `/reserved_domains/${domain.id}`, { certificate_management_policy: { private_key_type: 'ecdsa' } });
    assert.deepEqual(renewing.body.certificate, first);
    await provisioning(domain.id, 'success');
    const second = (await api.request('GET', `/reserved_domains/${domain.id}`)).body.certificate;
    assert.notEqual(second.id, first.id);
    assert.equal((await api.request('DELETE', `/tls_certificates/${first.id}`)).status, 204, 'the older issued certificate is free');
    const upload = await uploadCertificate();
    const uploaded = await api.request('PATCH', `/reserved_domains/${domain.id}`, { certificate_id: upload.id });
    assert.equal(uploaded.body.certificate.id, upload.id);
    assert.equal(uploaded.body.certificate_management_policy, null);
    assert.equal((await api.request('DELETE', `/tls_certificates/${second.id}`)).status, 204);
  });

  test('names under the service zone take neither a certificate nor a policy', async () => {
    const cert = await uploadCertificate();
    assertError(await reserve({ domain: 'own.burrow.internal', certificate_management_policy: {} }), 400, 439, /must be null for own\.burrow\.internal/);
    assertError(await reserve({ domain: 'own.burrow.internal', certificate_id: cert.id }), 400, 440, /served with the service's certificate/);
  });
});

describe('PATCH and DELETE /reserved_domains/{id}', () => {
  test('domain and region are fixed; description and metadata change', async () => {
    const domain = (await reserve({ domain: 'app.example.com', region: 'us' })).body;
    assertError(await api.request('PATCH', `/reserved_domains/${domain.id}`, { domain: 'b.example.com' }), 400, 215, /^domain: cannot be changed/);
    assertError(await api.request('PATCH', `/reserved_domains/${domain.id}`, { region: 'eu' }), 400, 451, /^region: cannot be changed/);
    const patched = await api.request('PATCH', `/reserved_domains/${domain.id}`, { id: domain.id, metadata: 'm' });
    assert.deepEqual(patched.body, { ...domain, metadata: 'm' });
  });

  test('a domain an edge uses is not deleted (446) until the edge lets go of it', async () => {
    const exact = (await reserve({ domain: 'app.example.com' })).body;
    const wildcard = (await reserve({ domain: '*.example.org' })).body;
    const edge = (await api.request('POST', '/edges/https', { hostports: ['app.example.com:443', 'shop.example.org:443', 'free.example.net:443'] })).body;
    const tlsEdge = (await api.request('POST', '/edges/tls', { hostports: ['api.example.org:443'] })).body;
    const refused = await api.request('DELETE', `/reserved_domains/${exact.id}`);
    assertError(refused, 409, 446, new RegExp(`reserved domain '${exact.id}' is still used by HTTPS edge '${edge.id}'`));
    assert.equal(refused.body.details.used_by, edge.id);
    assertError(await api.request('DELETE', `/reserved_domains/${wildcard.id}`), 409, 446, new RegExp(`used by HTTPS edge '${edge.id}', TLS edge '${tlsEdge.id}'`));
    assert.equal((await api.request('PATCH', `/edges/https/${edge.id}`, { hostports: ['free.example.net:443'] })).status, 200);
    assert.equal((await api.request('DELETE', `/reserved_domains/${exact.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/edges/tls/${tlsEdge.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/reserved_domains/${wildcard.id}`)).status, 204);
  });

  test('emits domain_created/updated/deleted.v0 audit events', async () => {
    const destination = await api.request('POST', '/event_destinations', { format: 'json', target: { logs: { auth: { role: { role_ref: 'r' } }, log_group_ref: 'g' } } });
    const types = ['domain_created.v0', 'domain_updated.v0', 'domain_deleted.v0'];
    await api.request('POST', '/event_subscriptions', { destination_ids: [destination.body.id], sources: types.map((type) => ({ type })) });
    const domain = (await reserve({ domain: 'events.example.com' })).body;
    await api.request('PATCH', `/reserved_domains/${domain.id}`, { description: 'x' });
    await api.request('DELETE', `/reserved_domains/${domain.id}`);
    const outbox = await api.burrow.outbox(api.accountId, destination.body.id);
    assert.deepEqual(outbox.events.map((event: any) => [event.event_type, event.object.id]), types.map((type) => [type, domain.id]));
  });
});

describe('resolves_to (region pinning), as the Go client v8 and the Python client send it', () => {
  const asGo = (method: string, path: string, body?: unknown) => api.request(method, path, body, { headers: GO_CLIENT_HEADERS });

  test('Go create with resolves_to pins the domain; get, list and the filter read the pins back', async () => {
    const res = await asGo('POST', '/reserved_domains', { domain: 'api.example.com', resolves_to: [{ value: 'us-cal-1' }, { value: 'eu' }] });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.resolves_to, [{ value: 'us-cal-1' }, { value: 'eu' }]);
    assert.deepEqual((await asGo('GET', `/reserved_domains/${res.body.id}`)).body, res.body);
    await asGo('POST', '/reserved_domains', { domain: 'free.example.com' });
    const pinned = await asGo('GET', `/reserved_domains?filter=${encodeURIComponent('size(obj.resolves_to) > 0')}`);
    assert.deepEqual(pinned.body.reserved_domains.map((domain: any) => domain.id), [res.body.id]);
  });

  test('Python create (its zero defaults, no resolves_to: the 0.17 client has none) answers resolves_to []', async () => {
    const res = await api.request('POST', '/reserved_domains', { domain: 'py.example.com', region: '', description: '', metadata: '' }, { headers: PYTHON_CLIENT_HEADERS });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.resolves_to, []);
  });

  test('update: the Go body without resolves_to keeps the pins, a new list replaces them, [] un-pins', async () => {
    const domain = (await asGo('POST', '/reserved_domains', { domain: 'api.example.com', resolves_to: [{ value: 'us' }] })).body;
    const described = await asGo('PATCH', `/reserved_domains/${domain.id}`, { description: 'pinned' });
    assert.deepEqual(described.body.resolves_to, [{ value: 'us' }]);
    const replaced = await asGo('PATCH', `/reserved_domains/${domain.id}`, { resolves_to: [{ value: 'us' }, { value: 'eu' }, { value: 'jp' }] });
    assert.deepEqual(replaced.body, { ...described.body, resolves_to: [{ value: 'us' }, { value: 'eu' }, { value: 'jp' }] });
    assert.deepEqual((await api.request('PATCH', `/reserved_domains/${domain.id}`, { resolves_to: [] })).body.resolves_to, []);
    assert.deepEqual((await api.request('PATCH', `/reserved_domains/${domain.id}`, { resolves_to: [{ value: 'global' }] })).body.resolves_to, [{ value: 'global' }]);
  });

  test('refuses unknown points of presence (400), repeated ones (215) and malformed entries, naming the entry', async () => {
    assertError(await reserve({ domain: 'a.example.com', resolves_to: [{ value: 'eu' }, { value: 'banana' }] }), 400, 400, /^resolves_to\[1\]\.value: must be one of us, eu, ap, au, sa, jp, in, us-cal-1, global \(got "banana"\)/);
    assertError(await reserve({ domain: 'a.example.com', resolves_to: [{ value: '8.8.8.8:1234' }] }), 400, 400, /^resolves_to\[0\]\.value: must be one of/);
    assertError(await reserve({ domain: 'a.example.com', resolves_to: [{ value: 'eu' }, { value: 'eu' }] }), 400, 215, /^resolves_to\[1\]\.value: "eu" is listed twice/);
    assertError(await reserve({ domain: 'a.example.com', resolves_to: [{}] }), 400, 215, /^resolves_to\[0\]\.value: /);
    assertError(await reserve({ domain: 'a.example.com', resolves_to: [{ value: 'eu', weight: 1 }] }), 400, 214, /^resolves_to\[0\]\.weight: unknown field/);
    assertError(await reserve({ domain: 'a.example.com', resolves_to: 'eu' }), 400, 215, /^resolves_to: /);
    const domain = (await reserve({ domain: 'a.example.com', resolves_to: [{ value: 'ap' }] })).body;
    assertError(await api.request('PATCH', `/reserved_domains/${domain.id}`, { resolves_to: [{ value: 'mars' }] }), 400, 400, /^resolves_to\[0\]\.value: /);
    assert.deepEqual((await api.request('GET', `/reserved_domains/${domain.id}`)).body.resolves_to, [{ value: 'ap' }], 'a refused update changes nothing');
  });
});

describe('in-process and in the OpenAPI document', () => {
  test('the typed client reserves, lists and detaches like HTTP', async () => {
    const client = api.burrow.client(api.token, BASE);
    const cert = await client.resource('tls_certificates').create({ certificate_pem: tls.ecdsa.cert, private_key_pem: tls.ecdsa.key });
    const domain = await client.resource('reserved_domains').create({ domain: 'inproc.example.com', certificate_id: cert.id });
    assert.deepEqual(domain.certificate, { id: cert.id, uri: `${BASE}/tls_certificates/${cert.id}` });
    assert.deepEqual((await client.resource('reserved_domains').list()).reserved_domains.map((d: any) => d.id), [domain.id]);
    await client.call('reserved_domains.delete_certificate', { params: { id: domain.id } });
    assert.equal((await client.resource('reserved_domains').get(domain.id)).certificate, null);
    const addr = await client.resource('reserved_addrs').create({ region: 'jp' });
    assert.match(addr.addr, /\.tcp\.jp\.burrow\.internal:\d+$/);
  });

  test('the document lists every operation of the three services', async () => {
    const paths = (await api.request('GET', '/openapi.json', undefined, { token: null })).body.paths;
    assert.deepEqual(Object.keys(paths['/reserved_domains/{id}/certificate']), ['delete']);
    assert.deepEqual(Object.keys(paths['/reserved_domains/{id}/certificate_management_policy']), ['delete']);
    for (const path of ['/reserved_domains', '/tls_certificates', '/reserved_addrs']) {
      assert.deepEqual(Object.keys(paths[path]).sort(), ['get', 'post'], path);
      assert.deepEqual(Object.keys(paths[`${path}/{id}`]).sort(), ['delete', 'get', 'patch'], path);
    }
    assert.ok(paths['/tls_certificates'].post.requestBody.content['application/json'].schema.properties.private_key_pem);
  });
});
