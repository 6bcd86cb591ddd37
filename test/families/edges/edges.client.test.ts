import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { generateTestCertificates, type TestCertificates } from '../../fixtures/x509.ts';
import { useOfficialClient } from '../../compat/official-client.ts';

const official = useOfficialClient();
let certs: TestCertificates;
before(() => {
  certs = generateTestCertificates();
});

/**
 * Note on 0.11.0: the client converts the keys of every object it sends from camelCase to
 * snake_case, map keys included, and turns Map values into {}. A weighted backend's map keys are
 * backend ids, which contain capitals, so that client cannot name weighted children; these tests
 * create weighted backends without children and use lower-case header names.
 */
describe('official client: backends', () => {
  test('create, get, list and update each kind', async () => {
    const { backends } = official.client;
    const fixed = await backends.httpResponseBackends.create({ body: 'down for maintenance', headers: { 'content-type': 'text/plain' }, statusCode: 503 });
    assert.match(fixed.id, /^bkdhr_/);
    assert.equal(fixed.statusCode, 503);
    assert.deepEqual(fixed.headers, { contentType: 'text/plain' }, 'the client camel-cases response map keys too');
    const origin = await backends.staticBackends.create({ address: 'origin.example.com:443', tls: { enabled: true } });
    assert.deepEqual([origin.address, origin.tls.enabled], ['origin.example.com:443', true]);
    const group = await backends.tunnelGroupBackends.create({ labels: { env: 'prod' } });
    assert.deepEqual([group.labels, group.tunnels], [{ env: 'prod' }, []]);
    const failover = await backends.failoverBackends.create({ backends: [origin.id, fixed.id] });
    assert.deepEqual(failover.backends, [origin.id, fixed.id]);
    const weighted = await backends.weightedBackends.create({ description: 'canary', backends: {} });
    assert.match(weighted.id, /^bkdwd_/);

    assert.equal((await backends.failoverBackends.get(failover.id)).backends.length, 2);
    assert.ok((await backends.staticBackends.list()).some((b: any) => b.id === origin.id));
    const updated = await backends.failoverBackends.update({ id: failover.id, backends: [fixed.id] });
    assert.deepEqual(updated.backends, [fixed.id]);
    assert.equal((await backends.weightedBackends.update({ id: weighted.id, metadata: 'm' })).metadata, 'm');

    assert.equal(await official.deleteWithFetch(`/backends/http_response/${fixed.id}`), 409);
    assert.equal(await official.deleteWithFetch(`/backends/failover/${failover.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/backends/http_response/${fixed.id}`), 204);
  });
});

describe('official client: certificate authorities and edges', () => {
  test('TCP edge with modules; module replace and get', async () => {
    const { client } = official;
    const backend = await client.backends.staticBackends.create({ address: 'db.internal.example.com:5432', tls: {} });
    const policy = await client.ipPolicies.create({});
    const edge = await client.edges.edgesTcp.create({ hostports: ['1.tcp.example.com:20001'], backend: { backendId: backend.id } });
    assert.deepEqual([edge.backend.enabled, edge.backend.backend.id, edge.ipRestriction, edge.policy], [true, backend.id, null, null]);
    const restriction = await client.edgeModules.tcpEdgeIpRestrictionModule.replace({ id: edge.id, module: { ipPolicyIds: [policy.id] } });
    assert.deepEqual(restriction.ipPolicies.map((p: any) => p.id), [policy.id]);
    assert.deepEqual((await client.edgeModules.tcpEdgeIpRestrictionModule.get(edge.id)).ipPolicies.map((p: any) => p.id), [policy.id]);
    const updated = await client.edges.edgesTcp.update({ id: edge.id, description: 'postgres', hostports: ['1.tcp.example.com:20002'] });
    assert.deepEqual([updated.description, updated.hostports, updated.ipRestriction.enabled], ['postgres', ['1.tcp.example.com:20002'], true]);
    assert.ok((await client.edges.edgesTcp.list()).some((e: any) => e.id === edge.id));
    assert.equal(await official.deleteWithFetch(`/edges/tcp/${edge.id}/ip_restriction`), 204);
    assert.equal((await client.edges.edgesTcp.get(edge.id)).ipRestriction, null);
    assert.equal(await official.deleteWithFetch(`/edges/tcp/${edge.id}`), 204);
  });

  test('TLS edge with mutual TLS from an uploaded CA and TLS termination replaced', async () => {
    const { client } = official;
    const ca = await client.certificateAuthorities.create({ caPem: certs.ca, description: 'clients' });
    assert.equal(ca.subjectCommonName, 'Burrow Test Root');
    assert.deepEqual(ca.keyUsages, ['digital_signature', 'cert_sign', 'crl_sign']);
    const edge = await client.edges.edgesTls.create({ hostports: ['tls.example.com:443'], mutualTls: { certificateAuthorityIds: [ca.id] } });
    assert.deepEqual(edge.mutualTls.certificateAuthorities.map((c: any) => c.id), [ca.id]);
    const termination = await client.edgeModules.tlsEdgeTlsTerminationModule.replace({ id: edge.id, module: { terminateAt: 'edge', minVersion: '1.3' } });
    assert.deepEqual(termination, { enabled: true, terminateAt: 'edge', minVersion: '1.3' });
    await assert.rejects(client.edgeModules.tlsEdgeTlsTerminationModule.replace({ id: edge.id, module: { terminateAt: 'upstream' } }), (error: any) => {
      assert.equal(error.errorCode, 'ERR_BURROW_7002');
      return true;
    });
    assert.equal(await official.deleteWithFetch(`/certificate_authorities/${ca.id}`), 409);
  });

  test('HTTPS edge with routes: create, get, update, route modules and the edge\'s routes', async () => {
    const { client } = official;
    const backend = await client.backends.httpResponseBackends.create({ body: 'hello', headers: {}, statusCode: 200 });
    const edge = await client.edges.edgesHttps.create({ hostports: ['www.example.com:443'], tlsTermination: { minVersion: '1.2' } });
    assert.deepEqual([edge.tlsTermination.terminateAt, edge.routes], ['edge', []]);
    const route = await client.edges.edgesHttpsRoutes.create({ edgeId: edge.id, matchType: 'path_prefix', match: '/', backend: { backendId: backend.id } });
    assert.equal(route.edgeId, edge.id);
    assert.equal(route.backend.backend.id, backend.id);
    assert.equal((await client.edges.edgesHttpsRoutes.get({ edgeId: edge.id, id: route.id })).match, '/');
    const updated = await client.edges.edgesHttpsRoutes.update({ edgeId: edge.id, id: route.id, matchType: 'path_prefix', match: '/app', metadata: 'v2' });
    assert.deepEqual([updated.match, updated.metadata, updated.backend.backend.id], ['/app', 'v2', backend.id]);

    const oidc = await client.edgeModules.edgeRouteOidcModule.replace({
      edgeId: edge.id,
      id: route.id,
      module: { issuer: 'https://accounts.example.com', clientId: 'app', clientSecret: 'secret', scopes: ['openid'] },
    });
    assert.deepEqual([oidc.cookiePrefix, oidc.clientSecret, oidc.scopes], ['burrow.', 'secret', ['openid']]);
    assert.equal((await client.edgeModules.edgeRouteOidcModule.get({ edgeId: edge.id, id: route.id })).issuer, 'https://accounts.example.com');
    await client.edgeModules.edgeRouteCompressionModule.replace({ edgeId: edge.id, id: route.id, module: {} });
    assert.equal(await official.deleteWithFetch(`/edges/https/${edge.id}/routes/${route.id}/oidc`), 204);

    const read = await client.edges.edgesHttps.get(edge.id);
    assert.deepEqual(read.routes.map((r: any) => [r.id, r.compression.enabled, r.oidc]), [[route.id, true, null]]);
    await assert.rejects(client.edges.edgesHttpsRoutes.create({ edgeId: edge.id, matchType: 'path_prefix', match: '/app' }), (error: any) => {
      assert.equal(error.statusCode, 409);
      assert.equal(error.errorCode, 'ERR_BURROW_7126');
      return true;
    });
    assert.equal(await official.deleteWithFetch(`/edges/https/${edge.id}/routes/${route.id}`), 204);
    assert.deepEqual((await client.edges.edgesHttps.get(edge.id)).routes, []);
    assert.equal(await official.deleteWithFetch(`/edges/https/${edge.id}`), 204);
  });
});
