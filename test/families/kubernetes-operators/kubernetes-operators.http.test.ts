import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPublicKey, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { GO_CLIENT_HEADERS, PYTHON_CLIENT_HEADERS } from '../../fixtures/client-dialects.ts';
import { tempDir } from '../../fixtures/openssh.ts';
import { generateCertificateRequest, type TestCertificateRequest } from '../../fixtures/x509.ts';
import { createBurrow } from '../../../lib/index.ts';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const dir = tempDir('burrow-k8s-');
after(() => dir.remove());

let operatorCsr: TestCertificateRequest;
before(() => {
  operatorCsr = generateCertificateRequest();
});

/** As the Go client v8 sends: omitempty fields left out, the Deployment struct always there. */
const asGo = (method: string, path: string, body?: unknown) => api.request(method, path, body, { headers: GO_CLIENT_HEADERS });

/** The create body the ngrok-operator sends (its controller's KubernetesOperatorCreate) with bindings on. */
const operatorCreate = (csr: string, extra: Record<string, unknown> = {}) => ({
  metadata: '{"owned-by":"ngrok-operator"}',
  description: 'Created by the ngrok-operator',
  enabled_features: ['ingress', 'bindings'],
  region: 'global',
  deployment: { name: 'ngrok-operator', namespace: 'ngrok-operator', version: '0.19.0' },
  binding: { endpoint_selectors: ['true'], csr },
  ...extra,
});

/** Burrow's CA as a client fetches it (the one the agent gateway's certificate chains to). */
async function bindingCaPem(): Promise<string> {
  const res = await api.request('GET', '/_burrow/ca.pem', undefined, { token: null });
  assert.equal(res.status, 200);
  return res.text;
}

describe('/kubernetes_operators', () => {
  test('create as the ngrok-operator sends it: its CSR signed by Burrow\'s CA, a client certificate for the CSR\'s key', async () => {
    const res = await asGo('POST', '/kubernetes_operators', operatorCreate(operatorCsr.csr));
    assert.equal(res.status, 201, res.text);
    const { id, binding } = res.body;
    assert.match(id, /^k8sop_[0-9A-Za-z]{27}$/);
    assert.deepEqual({ ...res.body, binding: { ...binding, cert: { ...binding.cert, cert: '(pem)' } } }, {
      id,
      uri: `http://burrow.test/kubernetes_operators/${id}`,
      created_at: '2026-03-01T12:00:00Z',
      updated_at: '2026-03-01T12:00:00Z',
      description: 'Created by the ngrok-operator',
      metadata: '{"owned-by":"ngrok-operator"}',
      principal: { id: api.userId, uri: `http://burrow.test/users/${api.userId}` },
      enabled_features: ['ingress', 'bindings'],
      region: 'global',
      deployment: { name: 'ngrok-operator', namespace: 'ngrok-operator', version: '0.19.0', cluster_name: '' },
      binding: {
        endpoint_selectors: ['true'],
        cert: { cert: '(pem)', not_before: '2026-03-01T11:00:00Z', not_after: '2027-03-01T12:00:00Z' },
        ingress_endpoint: 'kubernetes-binding.burrow.internal:443',
      },
    });
    const certificate = new X509Certificate(binding.cert.cert);
    assert.equal(certificate.subject, `CN=${id}`);
    assert.equal(certificate.issuer, 'O=Burrow\nCN=Burrow Root CA');
    assert.equal(certificate.publicKey.export({ type: 'spki', format: 'pem' }), createPublicKey(operatorCsr.publicKey).export({ type: 'spki', format: 'pem' }));
    assert.deepEqual(certificate.keyUsage, ['1.3.6.1.5.5.7.3.2'], 'clientAuth');
    assert.equal(new Date(certificate.validTo).toISOString().replace('.000', ''), binding.cert.not_after);
    const caFile = join(dir.path, 'ca.pem');
    const certFile = join(dir.path, `${id}.pem`);
    writeFileSync(caFile, await bindingCaPem());
    writeFileSync(certFile, binding.cert.cert);
    assert.match(execFileSync('openssl', ['verify', '-x509_strict', '-purpose', 'sslclient', '-attime', String(Date.parse('2026-06-01T00:00:00Z') / 1000), '-CAfile', caFile, certFile], { encoding: 'utf8' }), /: OK/);
    assert.deepEqual((await asGo('GET', `/kubernetes_operators/${id}`)).body, res.body);
  });

  test('the signing CA is the store\'s: a server started again on the same state (or a second one) answers the CA the certificate chains to', async () => {
    const res = await asGo('POST', '/kubernetes_operators', operatorCreate(operatorCsr.csr));
    assert.equal(res.status, 201, res.text);
    const again = createBurrow({ store: api.burrow.store, clock: api.clock });
    const ca = new X509Certificate((await again.services.ca()).certificatePem);
    assert.equal(ca.toString(), new X509Certificate(await bindingCaPem()).toString());
    assert.ok(new X509Certificate(res.body.binding.cert.cert).verify(ca.publicKey), 'signed by the stored CA');
  });

  test('the documented example: features in any case, no binding, region global by default', async () => {
    const res = await asGo('POST', '/kubernetes_operators', { deployment: { name: 'ngrok-operator', namespace: 'ngrok-operator' }, description: 'Example Kubernetes Operator', enabled_features: ['Ingress', 'INGRESS'], metadata: '{"environment": "staging"}' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual([res.body.enabled_features, res.body.region, res.body.binding], [['ingress'], 'global', null]);
    assert.equal((await asGo('POST', '/kubernetes_operators', { deployment: {}, region: 'eu' })).body.region, 'eu');
  });

  test('the zero values of a generated Python client (every keyword, "" and [] by default, None dropped) make an operator with no features in region global', async () => {
    const res = await api.request('POST', '/kubernetes_operators', { description: '', metadata: '', enabled_features: [], region: '' }, { headers: PYTHON_CLIENT_HEADERS });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual([res.body.enabled_features, res.body.region, res.body.deployment, res.body.binding], [[], 'global', { name: '', namespace: '', version: '', cluster_name: '' }, null]);
    const updated = await api.request('PATCH', `/kubernetes_operators/${res.body.id}`, { id: res.body.id, description: 'py' }, { headers: PYTHON_CLIENT_HEADERS });
    assert.deepEqual([updated.body.description, updated.body.region], ['py', 'global']);
  });

  test("the vendor's rules: 19002 for features, regions and a binding without the feature; 19001 for CSRs; 19003 for selectors", async () => {
    assertError(await asGo('POST', '/kubernetes_operators', { deployment: {}, enabled_features: ['tunnels'] }), 400, 19002, /^enabled_features\[0\]: "tunnels" is not a feature; enabled_features is a subset of bindings, ingress, gateway/);
    assertError(await asGo('POST', '/kubernetes_operators', { deployment: {}, region: 'mars' }), 400, 19002, /^Failed to validate Kubernetes Operator: region: "mars" is not a region; use global or one of us, eu/);
    assertError(await asGo('POST', '/kubernetes_operators', { deployment: {}, enabled_features: ['bindings'] }), 400, 19002, /binding: is required with the bindings feature/);
    assertError(await asGo('POST', '/kubernetes_operators', { deployment: {}, enabled_features: ['ingress'], binding: { endpoint_selectors: ['true'], csr: operatorCsr.csr } }), 400, 19002, /binding: is set only with the bindings feature/);
    const bindings = (binding: unknown) => asGo('POST', '/kubernetes_operators', { deployment: {}, enabled_features: ['bindings'], binding });
    assertError(await bindings({ endpoint_selectors: ['true'] }), 400, 19001, /^Certificate Signing Request failed: binding\.csr is required/);
    assertError(await bindings({ endpoint_selectors: ['true'], csr: 'hello' }), 400, 19001, /binding\.csr: not a PEM certificate request/);
    // A bit of the signature flipped: the tenth base64 digit from the end (the last one may carry
    // only padding bits, which a decoder drops, so flipping it changed nothing one time in four).
    const forged = operatorCsr.csr.replace(/([A-Za-z0-9+/])((?:[A-Za-z0-9+/]\n?){9}={0,2}\n-----END)/, (_m, digit: string, rest: string) => `${digit === 'A' ? 'B' : 'A'}${rest}`);
    assert.notEqual(forged, operatorCsr.csr);
    assertError(await bindings({ endpoint_selectors: ['true'], csr: forged }), 400, 19001, /binding\.csr: (its signature does not verify|not a PKCS#10)/);
    assertError(await bindings({ endpoint_selectors: ['obj.url ='], csr: operatorCsr.csr }), 400, 19003, /^Failed to validate endpoint selectors: binding\.endpoint_selectors\[0\]:/);
    assertError(await bindings({ endpoint_selectors: ['true', 'obj.url.matches("x")'], csr: operatorCsr.csr }), 400, 19003, /binding\.endpoint_selectors\[1\]: matches\(\) is not supported/);
    assertError(await asGo('POST', '/kubernetes_operators', { deployment: { name: 'x', replicas: 2 } }), 400, 214, /^deployment\.replicas: unknown field/);
    assertError(await asGo('POST', '/kubernetes_operators', { deployment: {}, description: 'd'.repeat(256) }), 400, 215, /^description: must be at most 255 bytes/);
    assertError(await bindings({ endpoint_selectors: ['true'], csr: 'x'.repeat(16 * 1024 + 1) }), 400, 215, /^binding\.csr: must be at most 16384 bytes .*\(limit csr_pem_bytes\)/);
  });

  test('CSRs of RSA and Ed25519 keys, with a subject, are signed too; a CSR made with SHA-1 is refused', async () => {
    const rsa = generateCertificateRequest({ key: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'], digest: 'sha256', subject: '/CN=ignored' });
    const ed = generateCertificateRequest({ key: ['-algorithm', 'ed25519'], digest: 'sha512' });
    for (const { csr } of [rsa, ed]) {
      const res = await asGo('POST', '/kubernetes_operators', operatorCreate(csr));
      assert.equal(res.status, 201, res.text);
      assert.equal(new X509Certificate(res.body.binding.cert.cert).subject, `CN=${res.body.id}`);
    }
    const sha1 = generateCertificateRequest({ digest: 'sha1' });
    assertError(await asGo('POST', '/kubernetes_operators', operatorCreate(sha1.csr)), 400, 19001, /signed with an unsupported algorithm/);
  });

  test('update as the operator sends it: the same CSR keeps its certificate, a new one is signed; deployment takes name and version', async () => {
    const created = (await asGo('POST', '/kubernetes_operators', operatorCreate(operatorCsr.csr))).body;
    await api.request('POST', '/_burrow/clock', { advance_seconds: 60 }, { token: OPERATOR_TOKEN });
    const update = { description: 'Created by the ngrok-operator', metadata: created.metadata, enabled_features: ['ingress', 'bindings'], region: 'global', binding: { endpoint_selectors: ['true'], csr: operatorCsr.csr }, deployment: { name: 'ngrok-operator', version: '0.20.0' } };
    const same = await asGo('PATCH', `/kubernetes_operators/${created.id}`, update);
    assert.equal(same.status, 200, same.text);
    assert.deepEqual(same.body.binding.cert, created.binding.cert, 'the same CSR keeps its certificate');
    assert.equal(same.body.updated_at, '2026-03-01T12:01:00Z');
    assert.deepEqual(same.body.deployment, { ...created.deployment, version: '0.20.0' });
    const renewed = generateCertificateRequest();
    const signed = await asGo('PATCH', `/kubernetes_operators/${created.id}`, { ...update, binding: { endpoint_selectors: ['obj.url.startsWith("http://")'], csr: renewed.csr, ingress_endpoint: 'bindings.example.com:443' } });
    assert.notEqual(signed.body.binding.cert.cert, created.binding.cert.cert);
    assert.equal(signed.body.binding.cert.not_after, '2027-03-01T12:01:00Z');
    assert.deepEqual([signed.body.binding.endpoint_selectors, signed.body.binding.ingress_endpoint], [['obj.url.startsWith("http://")'], 'bindings.example.com:443']);
    assertError(await asGo('PATCH', `/kubernetes_operators/${created.id}`, { deployment: { namespace: 'other' } }), 400, 214, /^deployment\.namespace: unknown field; supported fields: name, version/);
    assertError(await asGo('PATCH', `/kubernetes_operators/${created.id}`, { binding: { csr: 'nope' } }), 400, 19001, /not a PEM certificate request/);
    const off = await asGo('PATCH', `/kubernetes_operators/${created.id}`, { enabled_features: ['gateway'] });
    assert.deepEqual([off.body.enabled_features, off.body.binding], [['gateway'], null], 'without the feature the binding goes');
    assertError(await asGo('PATCH', `/kubernetes_operators/${created.id}`, { enabled_features: ['bindings'] }), 400, 19002, /binding: is required/);
  });

  test('list under operators (as the Go client reads it), newest first; delete; another account sees a 404', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await asGo('POST', '/kubernetes_operators', { deployment: { name: `op${i}` } })).body.id);
    const page = await asGo('GET', '/kubernetes_operators?limit=2');
    assert.deepEqual(page.body.operators.map((operator: any) => operator.id), [ids[2], ids[1]]);
    assert.equal(page.body.next_page_uri, `http://burrow.test/kubernetes_operators?limit=2&before_id=${ids[1]}`);
    const other = await api.burrow.createAccount();
    assert.equal((await api.request('GET', `/kubernetes_operators/${ids[0]}`, undefined, { token: other.token })).status, 404);
    assert.equal((await api.request('GET', `/kubernetes_operators/${ids[0]}/bound_endpoints`, undefined, { token: other.token })).status, 404);
    assert.equal((await asGo('DELETE', `/kubernetes_operators/${ids[0]}`)).status, 204);
    assertError(await asGo('GET', `/kubernetes_operators/${ids[0]}`), 404, 9001, /^Kubernetes operator 'k8sop_\w+' was not found/);
  });
});

describe('/kubernetes_operators/{id}/bound_endpoints', () => {
  const cloud = (url: string, bindings: string[]) => api.request('POST', '/endpoints', { url, type: 'cloud', bindings, traffic_policy: '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}' });

  test('the kubernetes-bound endpoints one of the selectors matches, newest first, paged', async () => {
    const web = (await cloud('http://web.default', ['kubernetes'])).body.id;
    const db = (await cloud('tcp://db.default:5432', ['kubernetes'])).body.id;
    const api2 = (await cloud('http://api.shop', ['kubernetes'])).body.id;
    await cloud('https://public.internal', ['internal']);
    const operator = (await asGo('POST', '/kubernetes_operators', operatorCreate(operatorCsr.csr, { binding: { endpoint_selectors: ['obj.url.contains(".default")', 'obj.url == "http://api.shop"'], csr: operatorCsr.csr } }))).body;
    const all = await asGo('GET', `/kubernetes_operators/${operator.id}/bound_endpoints`);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(all.body.endpoints.map((endpoint: any) => endpoint.id), [api2, db, web]);
    assert.deepEqual(all.body.endpoints[2], (await api.request('GET', `/endpoints/${web}`)).body, 'each as the endpoints API answers it');
    assert.deepEqual([all.body.uri, all.body.next_page_uri], [`http://burrow.test/kubernetes_operators/${operator.id}/bound_endpoints`, null]);
    const first = await asGo('GET', `/kubernetes_operators/${operator.id}/bound_endpoints?limit=2`);
    assert.deepEqual(first.body.endpoints.map((endpoint: any) => endpoint.id), [api2, db]);
    assert.equal(first.body.next_page_uri, `http://burrow.test/kubernetes_operators/${operator.id}/bound_endpoints?limit=2&before_id=${db}`);
    assert.deepEqual((await asGo('GET', first.body.next_page_uri.replace('http://burrow.test', ''))).body.endpoints.map((endpoint: any) => endpoint.id), [web]);
    assertError(await asGo('GET', `/kubernetes_operators/${operator.id}/bound_endpoints?filter=true`), 400, 231, /unknown query parameter 'filter'/);
  });

  test('a selector that fails on an endpoint does not match it; no binding binds nothing; selector changes apply at once', async () => {
    const web = (await cloud('http://web.default', ['kubernetes'])).body.id;
    const operator = (await asGo('POST', '/kubernetes_operators', operatorCreate(operatorCsr.csr, { binding: { endpoint_selectors: ['obj.nope == "x"', 'obj.url.startsWith("http://web")'], csr: operatorCsr.csr } }))).body;
    assert.deepEqual((await asGo('GET', `/kubernetes_operators/${operator.id}/bound_endpoints`)).body.endpoints.map((endpoint: any) => endpoint.id), [web]);
    await asGo('PATCH', `/kubernetes_operators/${operator.id}`, { binding: { endpoint_selectors: ['false'] } });
    assert.deepEqual((await asGo('GET', `/kubernetes_operators/${operator.id}/bound_endpoints`)).body.endpoints, []);
    const ingressOnly = (await asGo('POST', '/kubernetes_operators', { deployment: {}, enabled_features: ['ingress'] })).body;
    assert.deepEqual((await asGo('GET', `/kubernetes_operators/${ingressOnly.id}/bound_endpoints`)).body, { endpoints: [], uri: `http://burrow.test/kubernetes_operators/${ingressOnly.id}/bound_endpoints`, next_page_uri: null });
  });
});

describe('in-process client', () => {
  test('kubernetes_operators and their bound endpoints through the typed client', async () => {
    const client = api.burrow.client(api.token, 'http://burrow.test');
    const operators = client.resource('kubernetes_operators');
    const operator = await operators.create({ enabled_features: ['bindings'], deployment: { name: 'typed' }, binding: { endpoint_selectors: ['true'], csr: operatorCsr.csr } });
    assert.match(operator.binding.cert.cert, /^-----BEGIN CERTIFICATE-----/);
    await cloud2(api, 'http://typed.default');
    const bound = (await client.call('kubernetes_operators.get_bound_endpoints', { params: { id: operator.id } })) as { endpoints: { url: string }[] };
    assert.deepEqual(bound.endpoints.map((endpoint) => endpoint.url), ['http://typed.default']);
    assert.equal((await operators.list()).operators[0].id, operator.id);
    await operators.delete(operator.id);
    await assert.rejects(operators.get(operator.id), (error: any) => error.status === 404);
  });
});

async function cloud2(instance: TestInstance, url: string): Promise<void> {
  assert.equal((await instance.request('POST', '/endpoints', { url, type: 'cloud', bindings: ['kubernetes'], traffic_policy: '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}' })).status, 201);
}
