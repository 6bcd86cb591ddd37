import assert from 'node:assert/strict';
import { before, beforeEach, describe, test } from 'node:test';
import { assertError, BASE, createTestInstance, type TestInstance } from '../../helpers.ts';
import { generateTestCertificates, type TestCertificates } from '../../fixtures/x509.ts';
import { GO_CLIENT_HEADERS, PYTHON_CLIENT_HEADERS } from '../../fixtures/client-dialects.ts';

let certs: TestCertificates;
let api: TestInstance;
before(() => {
  certs = generateTestCertificates();
});
beforeEach(async () => {
  api = await createTestInstance();
});


async function created(method: string, path: string, body: unknown): Promise<any> {
  const res = await api.request(method, path, body);
  assert.equal(res.status, method === 'POST' ? 201 : 200, JSON.stringify(res.body));
  return res.body;
}

const backend = async () => (await created('POST', '/backends/http_response', { body: 'ok' })).id as string;
const policy = async () => (await created('POST', '/ip_policies', {})).id as string;
const ca = async () => (await created('POST', '/certificate_authorities', { ca_pem: certs.ca })).id as string;
const ref = (path: string, id: string) => ({ id, uri: `${BASE}${path}/${id}` });

describe('/edges/tcp', () => {
  test('create answers every module key, null when unset, and hostports [] when none were sent', async () => {
    const edge = await created('POST', '/edges/tcp', { description: 'db' });
    assert.match(edge.id, /^edgtcp_[0-9A-Za-z]{27}$/);
    assert.deepEqual(edge, {
      id: edge.id,
      uri: `${BASE}/edges/tcp/${edge.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'db',
      metadata: '',
      hostports: [],
      backend: null,
      ip_restriction: null,
      policy: null,
      traffic_policy: null,
    });
  });

  test('create with modules answers them resolved to Refs, enabled by default', async () => {
    const [b, p] = [await backend(), await policy()];
    const edge = await created('POST', '/edges/tcp', { hostports: ['1.tcp.example.com:20000'], backend: { backend_id: b }, ip_restriction: { enabled: false, ip_policy_ids: [p] } });
    assert.deepEqual(edge.hostports, ['1.tcp.example.com:20000']);
    assert.deepEqual(edge.backend, { enabled: true, backend: ref('/backends/http_response', b) });
    assert.deepEqual(edge.ip_restriction, { enabled: false, ip_policies: [ref('/ip_policies', p)] });
  });

  test('get, list, update and delete', async () => {
    const edge = await created('POST', '/edges/tcp', { hostports: ['a.example.com:1'] });
    assert.deepEqual((await api.request('GET', `/edges/tcp/${edge.id}`)).body, edge);
    const list = await api.request('GET', '/edges/tcp');
    assert.deepEqual(list.body.tcp_edges.map((e: any) => e.id), [edge.id]);
    assert.equal(list.body.next_page_uri, null);
    const updated = await created('PATCH', `/edges/tcp/${edge.id}`, { metadata: 'm', hostports: ['b.example.com:2'] });
    assert.deepEqual([updated.metadata, updated.hostports], ['m', ['b.example.com:2']]);
    assert.equal((await api.request('DELETE', `/edges/tcp/${edge.id}`)).status, 204);
    assertError(await api.request('GET', `/edges/tcp/${edge.id}`), 404, 7000, /TCP edge '.+' was not found/);
  });

  test('unknown referenced ids are 404s naming the field', async () => {
    assertError(await api.request('POST', '/edges/tcp', { backend: { backend_id: 'bkdwd_missing' } }), 404, 6501, /^backend\.backend_id: weighted backend 'bkdwd_missing' was not found/);
    assertError(await api.request('POST', '/edges/tcp', { ip_restriction: { ip_policy_ids: ['ipp_missing'] } }), 404, 7007, /^ip_restriction\.ip_policy_ids\[0\]: IP policy 'ipp_missing' was not found/);
  });

  test('TCP edges have no TLS modules', async () => {
    assertError(await api.request('POST', '/edges/tcp', { mutual_tls: { certificate_authority_ids: [] } }), 400, 214, /^mutual_tls: unknown field/);
  });
});

describe('PATCH of an edge', () => {
  test('leaves absent modules unchanged and replaces a sent module whole', async () => {
    const [b, p] = [await backend(), await policy()];
    const edge = await created('POST', '/edges/tcp', { backend: { backend_id: b, enabled: false }, ip_restriction: { ip_policy_ids: [p] } });
    const b2 = await backend();
    const updated = await created('PATCH', `/edges/tcp/${edge.id}`, { backend: { backend_id: b2 } });
    assert.deepEqual(updated.backend, { enabled: true, backend: ref('/backends/http_response', b2) });
    assert.deepEqual(updated.ip_restriction, edge.ip_restriction);
    assert.equal((await api.request('DELETE', `/backends/http_response/${b}`)).status, 204, 'the replaced backend is released');
  });

  test('cannot remove a module with null: the module DELETE endpoint does that', async () => {
    const edge = await created('POST', '/edges/tcp', { backend: { backend_id: await backend() } });
    assertError(await api.request('PATCH', `/edges/tcp/${edge.id}`, { backend: null }), 400, 215, new RegExp(`^backend: .*use DELETE /edges/tcp/${edge.id}/backend`));
  });

  test('tolerates the id of the path in the body and refuses another', async () => {
    const edge = await created('POST', '/edges/tcp', {});
    assert.equal((await api.request('PATCH', `/edges/tcp/${edge.id}`, { id: edge.id, description: 'x' })).status, 200);
    assertError(await api.request('PATCH', `/edges/tcp/${edge.id}`, { id: 'edgtcp_other' }), 400, 215, /^id: must equal the id in the path/);
  });
});

describe('hostports', () => {
  test('are host:port with a port from 1 to 65535, stored with the host lower-cased', async () => {
    const edge = await created('POST', '/edges/tls', { hostports: ['App.Example.com:443', '[2001:db8::1]:8443', '10.0.0.1:1'] });
    assert.deepEqual(edge.hostports, ['app.example.com:443', '[2001:db8::1]:8443', '10.0.0.1:1']);
    assertError(await api.request('POST', '/edges/tcp', { hostports: ['a.example.com:0'] }), 400, 7112, /^hostports\[0\]: the port of "a\.example\.com:0" is not in range 1-65535/);
    assertError(await api.request('POST', '/edges/tcp', { hostports: ['a.example.com:65536'] }), 400, 7112, /not in range 1-65535/);
    for (const bad of ['a.example.com', 'a example.com:80', ':80', 'a.example.com:http']) {
      assertError(await api.request('POST', '/edges/tcp', { hostports: [bad] }), 400, 215, /^hostports\[0\]: must be host:port/);
    }
  });

  test('HTTPS edges serve port 443 only', async () => {
    assertError(await api.request('POST', '/edges/https', { hostports: ['app.example.com:8443'] }), 400, 7116, /^hostports\[0\]: HTTPS edges serve port 443 only/);
  });

  test('are unique across the account\'s edges of every kind (409 naming the holder)', async () => {
    const tls = await created('POST', '/edges/tls', { hostports: ['app.example.com:443'] });
    const res = await api.request('POST', '/edges/https', { hostports: ['APP.example.com:443'] });
    assertError(res, 409, 7122, new RegExp(`^hostports\\[0\\]: app\\.example\\.com:443 is already used by TLS edge '${tls.id}'`));
    assert.equal(res.body.details.used_by, tls.id);
    const tcp = await created('POST', '/edges/tcp', {});
    assertError(await api.request('PATCH', `/edges/tcp/${tcp.id}`, { hostports: ['app.example.com:443'] }), 409, 7122, /already used by TLS edge/);
  });

  test('a hostport listed twice is refused', async () => {
    assertError(await api.request('POST', '/edges/tcp', { hostports: ['a.example.com:1', 'A.example.com:1'] }), 400, 215, /^hostports\[1\]: a\.example\.com:1 is listed twice/);
  });

  test('are released by an update that drops them and by deleting the edge', async () => {
    const first = await created('POST', '/edges/tcp', { hostports: ['a.example.com:1', 'b.example.com:2'] });
    await created('PATCH', `/edges/tcp/${first.id}`, { hostports: ['b.example.com:2'] });
    await created('POST', '/edges/tcp', { hostports: ['a.example.com:1'] });
    assert.equal((await api.request('DELETE', `/edges/tcp/${first.id}`)).status, 204);
    await created('POST', '/edges/tcp', { hostports: ['b.example.com:2'] });
  });

  test('an edge may keep its own hostports in an update', async () => {
    const edge = await created('POST', '/edges/tcp', { hostports: ['a.example.com:1'] });
    assert.deepEqual((await created('PATCH', `/edges/tcp/${edge.id}`, { hostports: ['a.example.com:1', 'c.example.com:3'] })).hostports, ['a.example.com:1', 'c.example.com:3']);
  });

  test('are unique in the instance: another account is refused without learning which edge holds one, until it is released', async () => {
    const edge = await created('POST', '/edges/tcp', { hostports: ['a.example.com:1'] });
    const other = await api.burrow.createAccount({ name: 'other' });
    const refused = await api.request('POST', '/edges/tls', { hostports: ['b.example.com:443', 'A.example.com:1'] }, { token: other.token });
    assertError(refused, 409, 7122, /^hostports\[1\]: a\.example\.com:1 is already used by an edge of another account$/);
    assert.equal(refused.body.details.used_by, undefined);
    assert.equal((await api.request('GET', '/edges/tls', undefined, { token: other.token })).body.tls_edges.length, 0, 'nothing of the refused create was kept');
    await created('PATCH', `/edges/tcp/${edge.id}`, { hostports: [] });
    assert.equal((await api.request('POST', '/edges/tcp', { hostports: ['a.example.com:1'] }, { token: other.token })).status, 201);
    assertError(await api.request('POST', '/edges/tcp', { hostports: ['a.example.com:1'] }), 409, 7122, /^hostports\[0\]: a\.example\.com:1 is already used by an edge of another account$/);
  });

  test("a reset of the account that holds a hostport releases it for others", async () => {
    await created('POST', '/edges/https', { hostports: ['shop.example.com:443'] });
    const other = await api.burrow.createAccount({ name: 'other' });
    assert.equal((await api.request('POST', '/edges/https', { hostports: ['shop.example.com:443'] }, { token: other.token })).status, 409);
    await api.burrow.reset(api.accountId);
    assert.equal((await api.request('POST', '/edges/https', { hostports: ['shop.example.com:443'] }, { token: other.token })).status, 201);
  });
});

describe('/edges/tls', () => {
  test('create answers all six module keys and the TLS modules resolved', async () => {
    const c = await ca();
    const edge = await created('POST', '/edges/tls', { mutual_tls: { certificate_authority_ids: [c] }, tls_termination: { terminate_at: 'edge', min_version: '1.3' } });
    assert.match(edge.id, /^edgtls_/);
    assert.deepEqual(Object.keys(edge).sort(), ['backend', 'created_at', 'description', 'hostports', 'id', 'ip_restriction', 'metadata', 'mutual_tls', 'policy', 'tls_termination', 'traffic_policy', 'uri']);
    assert.deepEqual(edge.mutual_tls, { enabled: true, certificate_authorities: [ref('/certificate_authorities', c)] });
    assert.deepEqual(edge.tls_termination, { enabled: true, terminate_at: 'edge', min_version: '1.3' });
    assert.deepEqual((await api.request('GET', '/edges/tls')).body.tls_edges.map((e: any) => e.id), [edge.id]);
  });

  test('tls_termination defaults terminate_at to edge and min_version to null', async () => {
    const edge = await created('POST', '/edges/tls', { tls_termination: {} });
    assert.deepEqual(edge.tls_termination, { enabled: true, terminate_at: 'edge', min_version: null });
  });

  test('refuses an unknown terminate_at (224) and TLS version (219)', async () => {
    assertError(await api.request('POST', '/edges/tls', { tls_termination: { terminate_at: 'agent' } }), 400, 224, /^tls_termination\.terminate_at: "agent" is not valid; must be either 'edge' or 'upstream'/);
    assertError(await api.request('POST', '/edges/tls', { tls_termination: { min_version: '1.1' } }), 400, 219, /^tls_termination\.min_version: "1\.1" is not a supported TLS version; supported: 1\.2, 1\.3/);
  });

  test('an unknown CA is a 404 (7072)', async () => {
    assertError(await api.request('POST', '/edges/tls', { mutual_tls: { certificate_authority_ids: ['ca_missing'] } }), 404, 7072, /^mutual_tls\.certificate_authority_ids\[0\]: certificate authority 'ca_missing' was not found/);
  });

  test('a CA that an edge uses is not deleted', async () => {
    const c = await ca();
    const edge = await created('POST', '/edges/tls', { mutual_tls: { certificate_authority_ids: [c] } });
    assertError(await api.request('DELETE', `/certificate_authorities/${c}`), 409, 9007, new RegExp(`still used by TLS edge '${edge.id}'`));
    assert.equal((await api.request('DELETE', `/edges/tls/${edge.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/certificate_authorities/${c}`)).status, 204);
  });
});

describe('TLS termination at upstream', () => {
  test('requires min_version null', async () => {
    assertError(await api.request('POST', '/edges/tls', { tls_termination: { terminate_at: 'upstream', min_version: '1.2' } }), 400, 215, /^tls_termination\.min_version: must be null when terminate_at is upstream/);
    const edge = await created('POST', '/edges/tls', { tls_termination: { terminate_at: 'upstream', min_version: null } });
    assert.deepEqual(edge.tls_termination, { enabled: true, terminate_at: 'upstream', min_version: null });
  });

  test('refuses mutual_tls and policy in the same create', async () => {
    const res = await api.request('POST', '/edges/tls', { tls_termination: { terminate_at: 'upstream' }, mutual_tls: { certificate_authority_ids: [await ca()] } });
    assertError(res, 400, 7002, /^mutual_tls: needs the decrypted traffic, but this TLS edge terminates TLS upstream/);
    assertError(await api.request('POST', '/edges/tls', { tls_termination: { terminate_at: 'upstream' }, policy: { inbound: [] } }), 400, 7002, /^policy: needs the decrypted traffic/);
  });

  test('refuses upstream termination on an edge that has mutual_tls, by PATCH and by module PUT', async () => {
    const edge = await created('POST', '/edges/tls', { mutual_tls: { certificate_authority_ids: [await ca()] } });
    assertError(await api.request('PATCH', `/edges/tls/${edge.id}`, { tls_termination: { terminate_at: 'upstream' } }), 400, 7002, /^tls_termination: terminate_at upstream .* mutual_tls/);
    assertError(await api.request('PUT', `/edges/tls/${edge.id}/tls_termination`, { terminate_at: 'upstream' }), 400, 7002, /delete mutual_tls first/);
    assert.equal((await api.request('GET', `/edges/tls/${edge.id}`)).body.tls_termination, null);
  });

  test('refuses adding policy to an edge that terminates upstream', async () => {
    const edge = await created('POST', '/edges/tls', { tls_termination: { terminate_at: 'upstream' } });
    assertError(await api.request('PUT', `/edges/tls/${edge.id}/policy`, { inbound: [] }), 400, 7002, /^policy: needs the decrypted traffic/);
  });

  test('disabled modules do not count', async () => {
    const edge = await created('POST', '/edges/tls', { tls_termination: { terminate_at: 'upstream', enabled: false }, mutual_tls: { certificate_authority_ids: [await ca()] } });
    assert.equal((await api.request('PATCH', `/edges/tls/${edge.id}`, { tls_termination: { terminate_at: 'upstream' }, mutual_tls: { enabled: false, certificate_authority_ids: [] } })).status, 200);
  });

  test('backend and ip_restriction work with upstream termination', async () => {
    const edge = await created('POST', '/edges/tls', { tls_termination: { terminate_at: 'upstream' }, backend: { backend_id: await backend() }, ip_restriction: { ip_policy_ids: [await policy()] } });
    assert.equal(edge.backend.enabled, true);
  });
});

describe('/edges/https', () => {
  test('create answers hostports, the two TLS modules and routes []', async () => {
    const edge = await created('POST', '/edges/https', { hostports: ['app.example.com:443'], tls_termination: { min_version: '1.2' } });
    assert.match(edge.id, /^edghts_/);
    assert.deepEqual(edge, {
      id: edge.id,
      uri: `${BASE}/edges/https/${edge.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: '',
      metadata: '',
      hostports: ['app.example.com:443'],
      mutual_tls: null,
      tls_termination: { enabled: true, terminate_at: 'edge', min_version: '1.2' },
      routes: [],
    });
    assert.deepEqual((await api.request('GET', '/edges/https')).body.https_edges.map((e: any) => e.id), [edge.id]);
  });

  test('refuses terminate_at (7109) and route modules on the edge itself', async () => {
    assertError(await api.request('POST', '/edges/https', { tls_termination: { terminate_at: 'edge' } }), 400, 7109, /^tls_termination\.terminate_at: may not be set on an HTTPS edge/);
    assertError(await api.request('POST', '/edges/https', { backend: { backend_id: 'x' } }), 400, 214, /^backend: unknown field/);
  });
});

describe('modules turned off without ids, as the Go client v8 sends them', () => {
  // EndpointMutualTLSMutate / EndpointIPPolicyMutate (omitempty): an empty id list is left out.
  const asGo = (method: string, path: string, body: unknown) => api.request(method, path, body, { headers: GO_CLIENT_HEADERS });
  const off = { enabled: false, certificate_authorities: [] };

  test('an HTTPS edge created and updated with mutual_tls {"enabled": false} reads back with no CAs', async () => {
    const res = await asGo('POST', '/edges/https', { mutual_tls: { enabled: false } });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.mutual_tls, off);
    assert.deepEqual((await api.request('GET', `/edges/https/${res.body.id}/mutual_tls`)).body, off);
    const withCa = await asGo('PATCH', `/edges/https/${res.body.id}`, { mutual_tls: { certificate_authority_ids: [await ca()] } });
    assert.equal(withCa.body.mutual_tls.enabled, true);
    const updated = await asGo('PATCH', `/edges/https/${res.body.id}`, { description: 'off again', mutual_tls: { enabled: false } });
    assert.deepEqual(updated.body.mutual_tls, off);
  });

  test('the module PUT (the Go client sends the bare module) on HTTPS and TLS edges; ip_restriction likewise', async () => {
    const https = await created('POST', '/edges/https', {});
    const tls = await created('POST', '/edges/tls', {});
    for (const path of [`/edges/https/${https.id}/mutual_tls`, `/edges/tls/${tls.id}/mutual_tls`]) {
      const put = await asGo('PUT', path, { enabled: false });
      assert.equal(put.status, 200, `${path}: ${put.text}`);
      assert.deepEqual(put.body, off);
    }
    assert.deepEqual((await asGo('PUT', `/edges/tls/${tls.id}/ip_restriction`, { enabled: false })).body, { enabled: false, ip_policies: [] });
    assert.deepEqual((await api.request('GET', `/edges/tls/${tls.id}`)).body.mutual_tls, off);
  });

  test('the Python client sends the module as given, with its "" defaults around it', async () => {
    const res = await api.request('POST', '/edges/https', { description: '', metadata: '', mutual_tls: { enabled: false, certificate_authority_ids: [] } }, { headers: PYTHON_CLIENT_HEADERS });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.mutual_tls, off);
  });
});

describe('/edges/https/{edge_id}/routes', () => {
  let edgeId: string;
  beforeEach(async () => {
    edgeId = (await created('POST', '/edges/https', {})).id;
  });
  const routes = () => `/edges/https/${edgeId}/routes`;

  test('create answers the route with every module key, and the edge lists it', async () => {
    const b = await backend();
    const route = await created('POST', routes(), { match_type: 'path_prefix', match: '/api', description: 'api', backend: { backend_id: b } });
    assert.match(route.id, /^edghtsrt_[0-9A-Za-z]{27}$/);
    assert.deepEqual(route, {
      id: route.id,
      uri: `${BASE}/edges/https/${edgeId}/routes/${route.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'api',
      metadata: '',
      edge_id: edgeId,
      match_type: 'path_prefix',
      match: '/api',
      backend: { enabled: true, backend: ref('/backends/http_response', b) },
      ip_restriction: null,
      circuit_breaker: null,
      compression: null,
      request_headers: null,
      response_headers: null,
      webhook_verification: null,
      oauth: null,
      saml: null,
      oidc: null,
      websocket_tcp_converter: null,
      user_agent_filter: null,
      policy: null,
      traffic_policy: null,
    });
    assert.deepEqual((await api.request('GET', `/edges/https/${edgeId}`)).body.routes, [route]);
    assert.deepEqual((await api.request('GET', `${routes()}/${route.id}`)).body, route);
  });

  test('update changes what is sent; the edge answers the new route; delete removes it', async () => {
    const route = await created('POST', routes(), { match_type: 'exact_path', match: '/' });
    const updated = await created('PATCH', `${routes()}/${route.id}`, { id: route.id, edge_id: edgeId, metadata: 'm', compression: {} });
    assert.deepEqual([updated.metadata, updated.match, updated.compression], ['m', '/', { enabled: true }]);
    assert.deepEqual((await api.request('GET', `/edges/https/${edgeId}`)).body.routes, [updated]);
    assert.equal((await api.request('DELETE', `${routes()}/${route.id}`)).status, 204);
    assertError(await api.request('GET', `${routes()}/${route.id}`), 404, 7124, /HTTPS edge route '.+' was not found on HTTPS edge/);
    assert.deepEqual((await api.request('GET', `/edges/https/${edgeId}`)).body.routes, []);
  });

  test('keeps routes in creation order', async () => {
    const a = await created('POST', routes(), { match_type: 'path_prefix', match: '/a' });
    const b = await created('POST', routes(), { match_type: 'path_prefix', match: '/b' });
    assert.deepEqual((await api.request('GET', `/edges/https/${edgeId}`)).body.routes.map((r: any) => r.id), [a.id, b.id]);
  });

  test('match_type must be exact_path or path_prefix (7130)', async () => {
    assertError(await api.request('POST', routes(), { match_type: 'regex', match: '/' }), 400, 7130, /^match_type: must be exact_path or path_prefix \(got "regex"\)/);
    assertError(await api.request('POST', routes(), { match: '/' }), 400, 7130, /^match_type: is required/);
  });

  test('match is required (7123) and must start with / (7131)', async () => {
    assertError(await api.request('POST', routes(), { match_type: 'exact_path' }), 400, 7123, /^match: is required/);
    assertError(await api.request('POST', routes(), { match_type: 'exact_path', match: 'api' }), 400, 7131, /^match: must be a path starting with "\/" \(got "api"\)/);
  });

  test('a selector is unique per edge (7126), by create and by update', async () => {
    const first = await created('POST', routes(), { match_type: 'path_prefix', match: '/' });
    assertError(await api.request('POST', routes(), { match_type: 'path_prefix', match: '/' }), 409, 7126, new RegExp(`already has a path_prefix route for "/" \\('${first.id}'\\)`));
    const exact = await created('POST', routes(), { match_type: 'exact_path', match: '/' });
    assertError(await api.request('PATCH', `${routes()}/${exact.id}`, { match_type: 'path_prefix' }), 409, 7126, /already has a path_prefix route/);
    const otherEdge = (await created('POST', '/edges/https', {})).id;
    assert.equal((await api.request('POST', `/edges/https/${otherEdge}/routes`, { match_type: 'path_prefix', match: '/' })).status, 201);
  });

  test('an edge_id in the body must be the path\'s (7110)', async () => {
    assertError(await api.request('POST', routes(), { edge_id: 'edghts_other', match_type: 'exact_path', match: '/' }), 400, 7110, /^edge_id: "edghts_other" is not this route's edge/);
    assert.equal((await api.request('POST', routes(), { edge_id: edgeId, match_type: 'exact_path', match: '/' })).status, 201);
  });

  test('unknown edges (7000) and routes of another edge (7124) are 404s', async () => {
    assertError(await api.request('POST', '/edges/https/edghts_missing/routes', { match_type: 'exact_path', match: '/' }), 404, 7000, /HTTPS edge 'edghts_missing' was not found/);
    const route = await created('POST', routes(), { match_type: 'exact_path', match: '/' });
    const otherEdge = (await created('POST', '/edges/https', {})).id;
    assertError(await api.request('GET', `/edges/https/${otherEdge}/routes/${route.id}`), 404, 7124, /was not found/);
  });

  test('a backend or policy a route uses is not deleted, and the 409 names the route', async () => {
    const [b, p] = [await backend(), await policy()];
    const route = await created('POST', routes(), { match_type: 'exact_path', match: '/', backend: { backend_id: b }, ip_restriction: { ip_policy_ids: [p] } });
    assertError(await api.request('DELETE', `/backends/http_response/${b}`), 409, 6502, new RegExp(`still used by HTTPS edge route '${route.id}'`));
    assertError(await api.request('DELETE', `/ip_policies/${p}`), 409, 1420, new RegExp(`HTTPS edge route '${route.id}'`));
  });

  test('deleting the edge deletes its routes and releases what they used', async () => {
    const b = await backend();
    await created('POST', routes(), { match_type: 'exact_path', match: '/', backend: { backend_id: b } });
    assert.equal((await api.request('DELETE', `/edges/https/${edgeId}`)).status, 204);
    assert.equal((await api.request('DELETE', `/backends/http_response/${b}`)).status, 204);
  });

  test('deleting a route releases what it used', async () => {
    const b = await backend();
    const route = await created('POST', routes(), { match_type: 'exact_path', match: '/', backend: { backend_id: b } });
    assert.equal((await api.request('DELETE', `${routes()}/${route.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/backends/http_response/${b}`)).status, 204);
  });

  test('PATCH leaves absent modules unchanged and refuses null', async () => {
    const route = await created('POST', routes(), { match_type: 'exact_path', match: '/', compression: {}, websocket_tcp_converter: { enabled: false } });
    const updated = await created('PATCH', `${routes()}/${route.id}`, { compression: { enabled: false } });
    assert.deepEqual([updated.compression, updated.websocket_tcp_converter], [{ enabled: false }, { enabled: false }]);
    assertError(await api.request('PATCH', `${routes()}/${route.id}`, { compression: null }), 400, 215, new RegExp(`^compression: .*use DELETE /edges/https/${edgeId}/routes/${route.id}/compression`));
  });

  test('there is no route list: the edge answers its routes', async () => {
    assert.equal((await api.request('GET', routes())).status, 405);
  });
});
