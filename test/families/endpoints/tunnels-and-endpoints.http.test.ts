import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, BASE, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
  assert.equal((await api.request('POST', '/reserved_domains', { domain: '*.example.com' })).status, 201);
});

async function agent(binds: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const credential = await api.request('POST', '/credentials', {});
  const res = await api.request('POST', '/_burrow/agents', { token: credential.body.token, binds, ...extra }, { token: OPERATOR_TOKEN });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string };
}

const ksuid = (id: string) => id.slice(id.indexOf('_') + 1);
const ids = (list: any[]) => list.map((item) => item.id);
const POLICY = '{"on_http_request":[{"actions":[{"type":"custom-response","config":{"status_code":200}}]}]}';
const TCP_POLICY = '{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}';
/** A cloud endpoint with a policy of its url's phases (tcp and tls endpoints carry connections only). */
const cloud = (body: Record<string, unknown>, token?: string) =>
  api.request('POST', '/endpoints', { type: 'cloud', traffic_policy: /^(tcp|tls):/.test(String(body.url)) ? TCP_POLICY : POLICY, ...body }, token === undefined ? {} : { token });

describe('GET /tunnels', () => {
  test('an agent runs one tunnel per bound domain and address, and one labeled tunnel', async () => {
    const session = await agent({ domains: ['App.example.com'], addresses: ['1.tcp.example.net:20001'], labels: { env: 'prod' } }, { region: 'eu', metadata: 'ci', forwards_to: 'http://localhost:3000' });
    const list = (await api.request('GET', '/tunnels')).body;
    assert.equal(list.uri, `${BASE}/tunnels`);
    assert.equal(list.next_page_uri, null);
    assert.equal(list.tunnels.length, 3);
    const [tcp, https, labeled] = list.tunnels;
    const sessionRef = { id: session.id, uri: `${BASE}/tunnel_sessions/${session.id}` };
    assert.deepEqual(https, {
      id: https.id,
      public_url: 'https://app.example.com',
      started_at: '2026-03-01T12:00:00Z',
      metadata: 'ci',
      proto: 'https',
      region: 'eu',
      tunnel_session: sessionRef,
      endpoint: { id: `ep_${ksuid(https.id)}`, uri: `${BASE}/endpoints/ep_${ksuid(https.id)}` },
      labels: {},
      backends: [],
      forwards_to: 'http://localhost:3000',
    });
    assert.equal(tcp.public_url, 'tcp://1.tcp.example.net:20001');
    assert.equal(tcp.proto, 'tcp');
    assert.deepEqual(labeled, {
      id: `tn_${ksuid(session.id)}`,
      public_url: '',
      started_at: '2026-03-01T12:00:00Z',
      metadata: 'ci',
      proto: '',
      region: 'eu',
      tunnel_session: sessionRef,
      endpoint: null,
      labels: { env: 'prod' },
      backends: [],
      forwards_to: 'http://localhost:3000',
    });
    assert.deepEqual((await api.request('GET', `/tunnels/${https.id}`)).body, https);
  });

  test('forwards_to defaults per protocol', async () => {
    await agent({ domains: ['a.example.com'], addresses: ['1.tcp.example.net:2'] });
    assert.deepEqual((await api.request('GET', '/tunnels')).body.tunnels.map((t: any) => t.forwards_to), ['localhost:80', 'http://localhost:80']);
  });

  test('tunnels and their agent endpoints go when the session stops, and come back under new ids on restart', async () => {
    const session = await agent({ domains: ['a.example.com'], labels: { app: 'web' } });
    const before = ids((await api.request('GET', '/tunnels')).body.tunnels);
    assert.equal((await api.request('POST', `/tunnel_sessions/${session.id}/restart`, {})).status, 204);
    const after = (await api.request('GET', '/tunnels')).body.tunnels;
    assert.equal(after.length, 2);
    for (const id of ids(after)) assert.ok(!before.includes(id));
    const newSession = after[0].tunnel_session.id;
    assert.notEqual(newSession, session.id);
    assertError(await api.request('GET', `/tunnels/${before[0]}`), 404, 9001, /tunnel/);
    assert.equal((await api.request('DELETE', `/_burrow/accounts/${api.accountId}/tunnel_sessions/${newSession}`, undefined, { token: OPERATOR_TOKEN })).status, 204);
    assert.deepEqual((await api.request('GET', '/tunnels')).body.tunnels, []);
    assert.deepEqual((await api.request('GET', '/endpoints')).body.endpoints, []);
  });

  test('deleting the credential takes the tunnels down with its agents', async () => {
    const credential = await api.request('POST', '/credentials', {});
    await api.request('POST', '/_burrow/agents', { token: credential.body.token, binds: { domains: ['a.example.com'] } }, { token: OPERATOR_TOKEN });
    assert.equal((await api.request('GET', '/tunnels')).body.tunnels.length, 1);
    assert.equal((await api.request('DELETE', `/credentials/${credential.body.id}`)).status, 204);
    assert.deepEqual((await api.request('GET', '/tunnels')).body.tunnels, []);
    assert.deepEqual((await api.request('GET', '/endpoints')).body.endpoints, []);
  });

  test('pages newest first like every list', async () => {
    await agent({ domains: ['a.example.com', 'b.example.com', 'c.example.com'] });
    const all = ids((await api.request('GET', '/tunnels')).body.tunnels);
    const first = (await api.request('GET', '/tunnels?limit=2')).body;
    assert.deepEqual(ids(first.tunnels), all.slice(0, 2));
    assert.equal(first.next_page_uri, `${BASE}/tunnels?limit=2&before_id=${all[1]}`);
    const second = (await api.request('GET', first.next_page_uri.slice(BASE.length))).body;
    assert.deepEqual(ids(second.tunnels), all.slice(2));
    assert.equal(second.next_page_uri, null);
  });

  test('are read-only', async () => {
    assert.equal((await api.request('POST', '/tunnels', {})).status, 405);
    assert.equal((await api.request('DELETE', '/tunnels/tn_x')).status, 405);
  });
});

describe('tunnels and tunnel group backends agree', () => {
  test("a labeled tunnel lists the backends whose labels it has, and each backend's tunnels list it", async () => {
    const early = (await api.request('POST', '/backends/tunnel_group', { labels: { env: 'prod' } })).body;
    const session = await agent({ labels: { env: 'prod', app: 'web' } });
    const tunnelId = `tn_${ksuid(session.id)}`;
    const late = (await api.request('POST', '/backends/tunnel_group', { labels: { app: 'web' } })).body;
    const other = (await api.request('POST', '/backends/tunnel_group', { labels: { app: 'api' } })).body;
    assert.deepEqual(late.tunnels, [{ id: tunnelId, uri: `${BASE}/tunnels/${tunnelId}` }]);
    assert.deepEqual(other.tunnels, []);
    const backendsOf = async () => ids((await api.request('GET', `/tunnels/${tunnelId}`)).body.backends);
    assert.deepEqual(await backendsOf(), [early.id, late.id]);
    assert.deepEqual((await api.request('GET', `/tunnels/${tunnelId}`)).body.backends[0], { id: early.id, uri: `${BASE}/backends/tunnel_group/${early.id}` });

    assert.equal((await api.request('PATCH', `/backends/tunnel_group/${other.id}`, { labels: { app: 'web' } })).status, 200);
    assert.equal((await api.request('PATCH', `/backends/tunnel_group/${early.id}`, { labels: { env: 'dev' } })).status, 200);
    assert.deepEqual(await backendsOf(), [late.id, other.id]);
    assert.equal((await api.request('DELETE', `/backends/tunnel_group/${late.id}`)).status, 204);
    assert.deepEqual(await backendsOf(), [other.id]);

    assert.equal((await api.request('POST', `/tunnel_sessions/${session.id}/stop`, {})).status, 204);
    assert.deepEqual((await api.request('GET', `/backends/tunnel_group/${other.id}`)).body.tunnels, []);
    assert.equal((await api.request('GET', `/tunnels/${tunnelId}`)).status, 404);
  });
});

describe('agent endpoints', () => {
  test('each domain or address tunnel has a read-only agent endpoint with its KSUID', async () => {
    const session = await agent({ domains: ['app.example.com'] }, { region: 'ap', metadata: 'm', forwards_to: 'http://localhost:8080' });
    const tunnel = (await api.request('GET', '/tunnels')).body.tunnels[0];
    const list = (await api.request('GET', '/endpoints')).body;
    assert.equal(list.endpoints.length, 1);
    const endpoint = list.endpoints[0];
    assert.deepEqual(endpoint, {
      id: `ep_${ksuid(tunnel.id)}`,
      region: 'ap',
      created_at: '2026-03-01T12:00:00Z',
      updated_at: '2026-03-01T12:00:00Z',
      public_url: 'https://app.example.com',
      proto: 'https',
      scheme: 'https',
      hostport: 'app.example.com:443',
      host: 'app.example.com',
      port: 443,
      type: 'agent',
      metadata: 'm',
      description: '',
      domain: null,
      tcp_addr: null,
      tunnel: { id: tunnel.id, uri: `${BASE}/tunnels/${tunnel.id}` },
      edge: null,
      upstream_url: 'http://localhost:8080',
      upstream_protocol: 'http1',
      url: 'https://app.example.com',
      principal: { id: api.userId, uri: `${BASE}/users/${api.userId}` },
      traffic_policy: '',
      bindings: ['public'],
      tunnel_session: { id: session.id, uri: `${BASE}/tunnel_sessions/${session.id}` },
      uri: `${BASE}/endpoints/${endpoint.id}`,
      name: '',
      pooling_enabled: false,
    });
    assert.deepEqual((await api.request('GET', `/endpoints/${endpoint.id}`)).body, endpoint);
    assertError(await api.request('PATCH', `/endpoints/${endpoint.id}`, { description: 'x' }), 400, 9040, /is an agent endpoint.*only cloud endpoints can be updated/);
    assertError(await api.request('DELETE', `/endpoints/${endpoint.id}`), 400, 9040, /only cloud endpoints can be deleted/);
    assert.equal((await api.request('GET', `/endpoints/${endpoint.id}`)).body.description, '');
  });

  test('a labeled tunnel has no endpoint', async () => {
    await agent({ labels: { a: 'b' } });
    assert.deepEqual((await api.request('GET', '/endpoints')).body.endpoints, []);
  });
});

describe('POST /endpoints (cloud endpoints)', () => {
  test('creates a cloud endpoint with a canonical url and the defaults', async () => {
    const res = await cloud({ url: 'HTTPS://API.Example.com:443', description: 'front door', metadata: '{"team":"a"}' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.match(res.body.id, /^ep_/);
    const wildcard = (await api.request('GET', '/reserved_domains')).body.reserved_domains[0];
    assert.deepEqual(res.body, {
      id: res.body.id,
      region: 'global',
      created_at: '2026-03-01T12:00:00Z',
      updated_at: '2026-03-01T12:00:00Z',
      public_url: 'https://api.example.com',
      proto: 'https',
      scheme: 'https',
      hostport: 'api.example.com:443',
      host: 'api.example.com',
      port: 443,
      type: 'cloud',
      metadata: '{"team":"a"}',
      description: 'front door',
      domain: { id: wildcard.id, uri: `${BASE}/reserved_domains/${wildcard.id}` },
      tcp_addr: null,
      tunnel: null,
      edge: null,
      upstream_url: '',
      upstream_protocol: '',
      url: 'https://api.example.com',
      principal: { id: api.userId, uri: `${BASE}/users/${api.userId}` },
      traffic_policy: POLICY,
      bindings: ['public'],
      tunnel_session: null,
      uri: `${BASE}/endpoints/${res.body.id}`,
      name: '',
      pooling_enabled: false,
    });
    assert.deepEqual((await api.request('GET', `/endpoints/${res.body.id}`)).body, res.body);
  });

  test('takes tcp, tls, http, wildcard, internal and kubernetes urls', async () => {
    const addr = (await api.request('POST', '/reserved_addrs', {})).body;
    assert.equal((await api.request('POST', '/reserved_domains', { domain: '*.example.org' })).status, 201);
    const cases: Array<[Record<string, unknown>, string, string, number]> = [
      [{ url: `tcp://${addr.addr}` }, `tcp://${addr.addr}`, 'public', Number(addr.addr.split(':')[1])],
      [{ url: 'tls://secure.example.com' }, 'tls://secure.example.com', 'public', 443],
      [{ url: 'http://plain.example.com:8080' }, 'http://plain.example.com:8080', 'public', 8080],
      [{ url: 'https://*.example.org' }, 'https://*.example.org', 'public', 443],
      [{ url: 'https://service.internal' }, 'https://service.internal', 'internal', 443],
      [{ url: 'tcp://ssh.internal:22', bindings: ['internal'] }, 'tcp://ssh.internal:22', 'internal', 22],
      [{ url: 'http://svc.namespace', bindings: ['kubernetes'], upstream_protocol: 'http2', pooling_enabled: true }, 'http://svc.namespace', 'kubernetes', 80],
    ];
    for (const [body, url, binding, port] of cases) {
      const res = await cloud(body);
      assert.equal(res.status, 201, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.url, url);
      assert.deepEqual(res.body.bindings, [binding]);
      assert.equal(res.body.port, port);
      assert.equal(res.body.public_url, binding === 'public' ? url : '');
    }
    const k8s = (await api.request('GET', '/endpoints?url=http://svc.namespace')).body.endpoints[0];
    assert.equal(k8s.upstream_protocol, 'http2');
    assert.equal(k8s.pooling_enabled, true);
  });

  test('refuses bad urls, types, bindings and policies with the vendor codes', async () => {
    assertError(await cloud({ url: 'app.example.com' }), 400, 18022, /^url: must start with a scheme/);
    assertError(await cloud({ url: 'ftp://app.example.com' }), 400, 18022, /scheme must be one of http, https, tls, tcp/);
    assertError(await cloud({ url: 'https://app.example.com/path' }), 400, 18001, /without a path/);
    assertError(await cloud({ url: 'https://app.example.com?q=1' }), 400, 18001, /without a path, query/);
    assertError(await cloud({ url: 'https://user@app.example.com' }), 400, 18001, /credentials/);
    assertError(await cloud({ url: 'https://bad_host!.com' }), 400, 18001, /DNS name/);
    assertError(await cloud({ url: 'https://10.0.0.1' }), 400, 18001, /DNS name/);
    assertError(await cloud({ url: 'tcp://1.tcp.example.net' }), 400, 18003, /a tcp URL needs a port/);
    assertError(await cloud({ url: 'tcp://1.tcp.example.net:0' }), 400, 18003, /port must be a number from 1 to 65535/);
    assertError(await cloud({ url: 'tcp://1.tcp.example.net:70000' }), 400, 18003, /port/);
    assertError(await cloud({ url: 'https://a.example.com', type: 'agent' }), 400, 248, /^type: only cloud endpoints can be created \(got "agent"\)/);
    assertError(await cloud({ url: 'https://a.example.com', bindings: ['public', 'internal'] }), 400, 215, /exactly one binding/);
    assertError(await cloud({ url: 'https://a.example.com', bindings: ['private'] }), 400, 215, /bindings\[0\]: must be one of public, internal, kubernetes/);
    assertError(await cloud({ url: 'https://a.example.com', bindings: ['internal'] }), 400, 9029, /internal binding needs a url whose host ends in \.internal/);
    assertError(await cloud({ url: 'https://a.internal', bindings: ['public'] }), 400, 9029, /only reachable with the internal binding/);
    assertError(await cloud({ url: 'https://a.example.com', upstream_protocol: 'http3' }), 400, 215, /upstream_protocol: must be one of http1, http2/);
    assertError(await cloud({ url: 'https://a.example.com', traffic_policy: '' }), 400, 18002, /needs a traffic policy/);
    assertError(await cloud({ url: 'https://a.example.com', traffic_policy: '{"on_http_request": [' }), 400, 18002, /^traffic_policy: is neither JSON nor YAML/);
    assertError(await cloud({ url: 'https://a.example.com', traffic_policy: '[]' }), 400, 18002, /^traffic_policy: must be a traffic policy document: a mapping of phases/);
    assertError(await cloud({ url: 'https://a.example.com', traffic_policy: 'just words' }), 400, 18002, /must be a traffic policy document/);
    assertError(await cloud({ url: 'https://a.example.com', traffic_policy: '{"on_http_request":[{"actions":[{"type":"teleport"}]}]}' }), 400, 2201, /^traffic_policy: on_http_request\[0\]\.actions\[0\]\.type: unknown action "teleport"/);
    assertError(await cloud({ url: 'https://a.example.com', traffic_policy: '{"on_http_request":[{"expressions":["req.url.path =="],"actions":[{"type":"deny"}]}]}' }), 400, 2200, /on_http_request\[0\]\.expressions\[0\]: not a CEL expression/);
    assertError(await cloud({ url: 'tcp://1.tcp.example.net:20000', traffic_policy: POLICY }), 400, 2230, /^traffic_policy: on_http_request: not a phase of this traffic \(it has on_tcp_connect\)/);
    assertError(await api.request('POST', '/endpoints', { url: 'https://a.example.com', type: 'cloud' }), 400, 215, /traffic_policy: is required/);
    assertError(await api.request('POST', '/endpoints', { type: 'cloud', traffic_policy: POLICY }), 400, 215, /url: is required/);
    assertError(await cloud({ url: 'https://a.example.com', name: 'x' }), 400, 214, /name: unknown field/);
    assertError(await cloud({ url: 'https://a.example.com', description: 'x'.repeat(256) }), 400, 215, /description: must be at most 255 bytes/);
    assert.deepEqual((await api.request('GET', '/endpoints')).body.endpoints, []);
  });

  test('takes a YAML traffic policy', async () => {
    const yaml = 'on_http_request:\n  - actions:\n      - type: deny\n';
    const res = await cloud({ url: 'https://yaml.example.com', traffic_policy: yaml });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.traffic_policy, yaml);
  });

  test('a url is unique in the account; a public one in the instance, an internal one per account', async () => {
    const first = await cloud({ url: 'https://one.example.com' });
    assertError(await cloud({ url: 'https://ONE.example.com:443' }), 409, 18009, new RegExp(`already has cloud endpoint '${first.body.id}' on https://one.example.com`));
    assert.equal((await cloud({ url: 'http://one.example.com' })).status, 201, 'another scheme is another url');
    const other = await api.burrow.createAccount({ name: 'B' });
    assertError(await cloud({ url: 'https://one.example.com' }, other.token), 400, 9041, /one\.example\.com is not a reserved domain of this account/);
    assert.equal((await cloud({ url: 'https://svc.internal' })).status, 201);
    assert.equal((await cloud({ url: 'https://svc.internal' }, other.token)).status, 201, 'internal urls are per account');
    assert.equal((await api.request('DELETE', `/endpoints/${first.body.id}`)).status, 204);
    assert.equal((await cloud({ url: 'https://one.example.com' })).status, 201, 'a deleted endpoint frees its url');
  });

  test('an agent endpoint on the same url does not block a cloud endpoint', async () => {
    await agent({ domains: ['shared.example.com'] });
    assert.equal((await cloud({ url: 'https://shared.example.com' })).status, 201);
    assert.equal((await api.request('GET', '/endpoints?url=https://shared.example.com')).body.endpoints.length, 2);
  });
});

describe('cloud endpoints and reserved domains and addresses', () => {
  test('a public endpoint needs a reserved domain of the account, and the domain is not deleted while it is used (446)', async () => {
    assertError(await cloud({ url: 'https://free.example.org' }), 400, 9041, /^url: free\.example\.org is not a reserved domain of this account; a public endpoint needs one/);
    const domain = (await api.request('POST', '/reserved_domains', { domain: 'free.example.org' })).body;
    const created = await cloud({ url: 'https://free.example.org' });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.domain, { id: domain.id, uri: `${BASE}/reserved_domains/${domain.id}` });
    assertError(await api.request('DELETE', `/reserved_domains/${domain.id}`), 409, 446, new RegExp(`still used by endpoint '${created.body.id}'`));
    const wildcard = (await api.request('GET', '/reserved_domains')).body.reserved_domains.find((d: any) => d.domain === '*.example.com');
    const covered = (await cloud({ url: 'tls://deep.example.com' })).body;
    assert.equal(covered.domain.id, wildcard.id, 'a wildcard domain covers the names one label down');
    assert.equal((await api.request('DELETE', `/endpoints/${created.body.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/reserved_domains/${domain.id}`)).status, 204);
  });

  test("another account's reserved domain is not this account's", async () => {
    const other = await api.burrow.createAccount({ name: 'B' });
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'theirs.example.net' }, { token: other.token })).status, 201);
    assertError(await cloud({ url: 'https://theirs.example.net' }), 400, 9041, /not a reserved domain of this account/);
  });

  test('a public tcp endpoint needs a reserved address; it is referenced as tcp_addr', async () => {
    assertError(await cloud({ url: 'tcp://1.tcp.example.net:20002' }), 400, 9041, /1\.tcp\.example\.net:20002 is not a reserved address of this account/);
    const addr = (await api.request('POST', '/reserved_addrs', {})).body;
    const created = await cloud({ url: `tcp://${addr.addr}` });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.tcp_addr, { id: addr.id, uri: `${BASE}/reserved_addrs/${addr.id}` });
    assert.equal(created.body.domain, null);
    assert.equal((await api.request('DELETE', `/reserved_addrs/${addr.id}`)).status, 409);
  });

  test("names in the service's own zone are public, not internal", async () => {
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'app.burrow.internal' })).status, 201);
    const created = await cloud({ url: 'https://app.burrow.internal' });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.bindings, ['public']);
  });

  test('internal and kubernetes endpoints need no reservation; moving one to a public url does', async () => {
    const internal = (await cloud({ url: 'https://svc.internal' })).body;
    assert.equal(internal.domain, null);
    assertError(await api.request('PATCH', `/endpoints/${internal.id}`, { url: 'https://nowhere.example.org', bindings: ['public'] }), 400, 9041, /not a reserved domain/);
    assert.equal((await api.request('GET', `/endpoints/${internal.id}`)).body.url, 'https://svc.internal');
  });
});

describe('edge endpoints', () => {
  test("each hostport of an edge is a read-only edge endpoint that follows the edge's hostports", async () => {
    const edge = (await api.request('POST', '/edges/tcp', { hostports: ['1.tcp.example.net:20001'] })).body;
    const [endpoint] = (await api.request('GET', '/endpoints')).body.endpoints;
    assert.equal(endpoint.type, 'edge');
    assert.equal(endpoint.url, 'tcp://1.tcp.example.net:20001');
    assert.equal(endpoint.hostport, '1.tcp.example.net:20001');
    assert.deepEqual(endpoint.edge, { id: edge.id, uri: `${BASE}/edges/tcp/${edge.id}` });
    assert.equal(endpoint.tunnel, null);
    assertError(await api.request('PATCH', `/endpoints/${endpoint.id}`, { description: 'x' }), 400, 9040, new RegExp(`is an edge endpoint: it exists while edge '${edge.id}' has hostport`));
    assertError(await api.request('DELETE', `/endpoints/${endpoint.id}`), 400, 9040, /only cloud endpoints can be deleted/);

    assert.equal((await api.request('PATCH', `/edges/tcp/${edge.id}`, { hostports: ['1.tcp.example.net:20001', '2.tcp.example.net:20002'] })).status, 200);
    const two = (await api.request('GET', '/endpoints')).body.endpoints;
    assert.deepEqual(two.map((e: any) => e.url), ['tcp://2.tcp.example.net:20002', 'tcp://1.tcp.example.net:20001']);
    assert.equal(two[1].id, endpoint.id, 'a kept hostport keeps its endpoint');
    const https = (await api.request('POST', '/edges/https', { hostports: ['www.example.com:443'] })).body;
    assert.deepEqual((await api.request('GET', '/endpoints?url=https://www.example.com')).body.endpoints.map((e: any) => e.edge.id), [https.id]);
    assert.equal((await api.request('PATCH', `/edges/tcp/${edge.id}`, { hostports: [] })).status, 200);
    assert.equal((await api.request('DELETE', `/edges/https/${https.id}`)).status, 204);
    assert.deepEqual((await api.request('GET', '/endpoints')).body.endpoints, []);
  });
});

describe('PATCH /endpoints/{id}', () => {
  test('changes only the fields sent and stamps updated_at', async () => {
    const created = (await cloud({ url: 'https://edit.example.com', description: 'd', pooling_enabled: true })).body;
    api.clock.advance(60);
    const res = await api.request('PATCH', `/endpoints/${created.id}`, { id: created.id, url: 'https://moved.example.com', traffic_policy: 'on_http_request:\n  - actions:\n      - type: deny\n' });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      ...created,
      url: 'https://moved.example.com',
      public_url: 'https://moved.example.com',
      host: 'moved.example.com',
      hostport: 'moved.example.com:443',
      traffic_policy: 'on_http_request:\n  - actions:\n      - type: deny\n',
      updated_at: '2026-03-01T12:01:00Z',
    });
    assert.equal((await cloud({ url: 'https://edit.example.com' })).status, 201, 'the old url is free again');
    assertError(await cloud({ url: 'https://moved.example.com' }), 409, 18009, /already has cloud endpoint/);
  });

  test('pooling_enabled false counts as not sent (the Python client sends it on every update); true turns pooling on', async () => {
    const created = (await cloud({ url: 'https://pool.example.com', pooling_enabled: true })).body;
    assert.equal((await api.request('PATCH', `/endpoints/${created.id}`, { description: 'x', pooling_enabled: false })).body.pooling_enabled, true);
    const plain = (await cloud({ url: 'https://plain.example.com' })).body;
    assert.equal((await api.request('PATCH', `/endpoints/${plain.id}`, { pooling_enabled: true })).body.pooling_enabled, true);
  });

  test('re-checks bindings against the url and refuses bad values without changing anything', async () => {
    const created = (await cloud({ url: 'https://svc.internal' })).body;
    assertError(await api.request('PATCH', `/endpoints/${created.id}`, { url: 'https://public.example.com' }), 400, 9029, /only reachable|needs a url whose host ends in \.internal/);
    const moved = await api.request('PATCH', `/endpoints/${created.id}`, { url: 'https://public.example.com', bindings: ['public'] });
    assert.equal(moved.status, 200, moved.text);
    assert.deepEqual(moved.body.bindings, ['public']);
    assertError(await api.request('PATCH', `/endpoints/${created.id}`, { traffic_policy: '' }), 400, 18002, /needs a traffic policy/);
    assertError(await api.request('PATCH', `/endpoints/${created.id}`, { url: 'nope' }), 400, 18022, /scheme/);
    assertError(await api.request('PATCH', `/endpoints/${created.id}`, { type: 'cloud' }), 400, 214, /type: unknown field/);
    assertError(await api.request('PATCH', `/endpoints/${created.id}`, { id: 'ep_other' }), 400, 215, /must equal the id in the path/);
    assert.equal((await api.request('GET', `/endpoints/${created.id}`)).body.url, 'https://public.example.com');
    assertError(await api.request('PATCH', '/endpoints/ep_missing', { description: 'x' }), 404, 9001, /endpoint/);
  });
});

describe('GET /endpoints with id and url filters', () => {
  test('filters by repeated or comma-separated ids and urls, and pages with the filters kept', async () => {
    const made: string[] = [];
    for (const name of ['a', 'b', 'c', 'd']) made.push((await cloud({ url: `https://${name}.example.com` })).body.id);
    const [a, b, c, d] = made as [string, string, string, string];
    const get = async (query: string) => (await api.request('GET', `/endpoints?${query}`)).body;
    assert.deepEqual(ids((await get(`id=${a}&id=${c}`)).endpoints), [c, a]);
    assert.deepEqual(ids((await get(`id=${a},${d}`)).endpoints), [d, a]);
    assert.deepEqual(ids((await get('url=https://b.example.com&url=https%3A%2F%2FD.example.com%3A443')).endpoints), [d, b]);
    assert.deepEqual(ids((await get(`url=https://b.example.com&id=${b}&id=${c}`)).endpoints), [b], 'both filters: an endpoint must match both');
    assert.deepEqual((await get('url=https://none.example.com')).endpoints, []);
    assert.deepEqual((await get('id=ep_unknown')).endpoints, []);
    assert.equal((await get('id=')).endpoints.length, 4, 'an empty filter is no filter');

    const page1 = await get(`id=${a}&id=${b}&id=${c}&limit=2`);
    assert.deepEqual(ids(page1.endpoints), [c, b]);
    const next = new URL(page1.next_page_uri);
    assert.equal(next.searchParams.get('before_id'), b);
    assert.deepEqual(next.searchParams.getAll('id'), [a, b, c]);
    const page2 = (await api.request('GET', `${next.pathname}${next.search}`)).body;
    assert.deepEqual(ids(page2.endpoints), [a]);
    assert.equal(page2.next_page_uri, null);

    const byUrl = await get('url=https://a.example.com,https://b.example.com,https://c.example.com&limit=1');
    assert.deepEqual(ids(byUrl.endpoints), [c]);
    assert.deepEqual(new URL(byUrl.next_page_uri).searchParams.getAll('url'), ['https://a.example.com', 'https://b.example.com', 'https://c.example.com']);
    assertError(await api.request('GET', '/endpoints?ids=x'), 400, 231, /unknown query parameter 'ids'; supported: before_id, limit, filter, id, url/);
    assertError(await api.request('GET', '/endpoints?limit=0&id=x'), 400, 233, /limit/);
  });

  test('the CEL filter works alone and together with id/url, and pages keep it', async () => {
    const made: Record<string, string> = {};
    for (const name of ['a', 'b', 'c']) made[name] = (await cloud({ url: `https://${name}.example.com`, description: name === 'b' ? 'skip' : 'keep' })).body.id;
    await agent({ domains: ['agent.example.com'] });
    const get = async (query: string) => (await api.request('GET', `/endpoints?${query}`)).body;
    const filter = encodeURIComponent('obj.type == "cloud" && obj.description == "keep"');
    assert.deepEqual(ids((await get(`filter=${filter}`)).endpoints), [made.c, made.a]);
    const page1 = await get(`filter=${filter}&limit=1`);
    assert.deepEqual(ids(page1.endpoints), [made.c]);
    const next = new URL(page1.next_page_uri);
    assert.equal(next.searchParams.get('filter'), 'obj.type == "cloud" && obj.description == "keep"');
    const page2 = (await api.request('GET', `${next.pathname}${next.search}`)).body;
    assert.deepEqual(ids(page2.endpoints), [made.a]);
    assert.equal(page2.next_page_uri, null);
    assert.deepEqual(ids((await get(`filter=${filter}&id=${made.a},${made.b}`)).endpoints), [made.a], 'both: an endpoint must match the ids and the filter');
    const withIds = await get(`filter=${filter}&id=${made.a},${made.b},${made.c}&limit=1`);
    assert.deepEqual(ids(withIds.endpoints), [made.c]);
    assert.equal(new URL(withIds.next_page_uri).searchParams.get('filter'), 'obj.type == "cloud" && obj.description == "keep"');
    assert.deepEqual((await get(`filter=${encodeURIComponent('obj.type == "agent"')}`)).endpoints.map((e: any) => e.url), ['https://agent.example.com']);
    assertError(await api.request('GET', `/endpoints?filter=${encodeURIComponent('obj.type ==')}`), 400, 250, /^filter: invalid CEL query/);
    assertError(await api.request('GET', `/endpoints?id=${made.a}&filter=${encodeURIComponent('obj.type + 1 == 2')}`), 400, 250, /^filter: invalid CEL query/);
  });

  test('a url filter finds agent endpoints too', async () => {
    await agent({ domains: ['agent.example.com'] });
    await cloud({ url: 'https://other.example.com' });
    const found = (await api.request('GET', '/endpoints?url=https://agent.example.com')).body.endpoints;
    assert.deepEqual(found.map((e: any) => e.type), ['agent']);
  });
});

describe('DELETE /endpoints/{id}', () => {
  test('deletes a cloud endpoint', async () => {
    const created = (await cloud({ url: 'https://gone.example.com' })).body;
    assert.equal((await api.request('DELETE', `/endpoints/${created.id}`)).status, 204);
    assertError(await api.request('GET', `/endpoints/${created.id}`), 404, 9001, /endpoint/);
    assert.deepEqual((await api.request('GET', '/endpoints?url=https://gone.example.com')).body.endpoints, []);
  });
});

describe('in-process client', () => {
  test('reaches tunnels and endpoints by name', async () => {
    const client = api.burrow.client(api.token);
    await agent({ domains: ['in.example.com'] });
    const tunnelList = await client.resource('tunnels').list();
    assert.equal(tunnelList.tunnels.length, 1);
    const created = await client.resource('endpoints').create({ url: 'https://inproc.example.com', type: 'cloud', traffic_policy: POLICY });
    assert.equal(created.type, 'cloud');
    assert.deepEqual(ids((await client.resource('endpoints').list({ url: 'https://inproc.example.com' })).endpoints), [created.id]);
    assert.equal((await client.resource('endpoints').update(created.id, { description: 'x' })).description, 'x');
    await client.resource('endpoints').delete(created.id);
    assert.equal((await client.resource('endpoints').list()).endpoints.length, 1);
  });
});

describe('OpenAPI document', () => {
  test('describes the endpoint filters (id and url deprecated in favour of filter) and the cloud endpoint body', async () => {
    const doc = (await api.request('GET', '/openapi.json', undefined, { token: null })).body;
    const list = doc.paths['/endpoints'].get;
    assert.deepEqual(list.parameters.map((p: any) => p.name), ['limit', 'before_id', 'filter', 'id', 'url']);
    assert.deepEqual(list.parameters[2].schema, { type: 'string', maxLength: 2048 });
    assert.deepEqual(list.parameters[3].schema, { type: 'array', items: { type: 'string' } });
    assert.deepEqual(list.parameters.map((p: any) => p.deprecated ?? false), [false, false, false, true, true]);
    assert.match(list.parameters[4].description, /Deprecated: use filter\.$/);
    const create = doc.paths['/endpoints'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(create.required.sort(), ['traffic_policy', 'url']);
    assert.equal(create.additionalProperties, false);
    assert.ok(doc.paths['/tunnels/{id}'].get);
    assert.equal(doc.paths['/tunnels'].post, undefined);
  });
});
