import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { changeOnlineTunnels } from '../../../lib/families/backends/tunnel-group.ts';
import { assertError, BASE, createTestInstance, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});


async function create(kind: string, body: unknown): Promise<any> {
  const res = await api.request('POST', `/backends/${kind}`, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

const httpResponse = () => create('http_response', { body: 'hi', status_code: 200 });

describe('/backends/weighted', () => {
  test('create, get, list, update and delete with weights per child', async () => {
    const a = await httpResponse();
    const b = await httpResponse();
    const created = await create('weighted', { description: 'split', backends: { [a.id]: 9000, [b.id]: 1000 } });
    assert.match(created.id, /^bkdwd_[0-9A-Za-z]{27}$/);
    assert.deepEqual(created, {
      id: created.id,
      uri: `${BASE}/backends/weighted/${created.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'split',
      metadata: '',
      backends: { [a.id]: 9000, [b.id]: 1000 },
    });
    assert.deepEqual((await api.request('GET', `/backends/weighted/${created.id}`)).body, created);
    const list = await api.request('GET', '/backends/weighted');
    assert.deepEqual(list.body.backends.map((x: any) => x.id), [created.id]);
    assert.equal(list.body.uri, `${BASE}/backends/weighted`);
    const updated = await api.request('PATCH', `/backends/weighted/${created.id}`, { backends: { [b.id]: 0 } });
    assert.deepEqual(updated.body.backends, { [b.id]: 0 });
    assert.equal((await api.request('DELETE', `/backends/weighted/${created.id}`)).status, 204);
    assertError(await api.request('GET', `/backends/weighted/${created.id}`), 404, 6514, /weighted backend '.+' was not found/);
  });

  test('a PATCH with only metadata leaves the children as they were', async () => {
    const a = await httpResponse();
    const created = await create('weighted', { backends: { [a.id]: 5 } });
    const updated = await api.request('PATCH', `/backends/weighted/${created.id}`, { metadata: '{"team":"web"}' });
    assert.deepEqual(updated.body.backends, { [a.id]: 5 });
    assert.equal(updated.body.metadata, '{"team":"web"}');
  });

  test('weights 0 and 10000 are accepted; 10001, -1 and 1.5 are refused with 6512', async () => {
    const a = await httpResponse();
    await create('weighted', { backends: { [a.id]: 0 } });
    await create('weighted', { backends: { [a.id]: 10000 } });
    for (const weight of [10001, -1, 1.5]) {
      assertError(await api.request('POST', '/backends/weighted', { backends: { [a.id]: weight } }), 400, 6512, new RegExp(`^backends\\.${a.id}: .*0 to 10000 \\(got ${weight}\\)`));
    }
  });

  test('an unknown child is a 404 naming it; a non-backend id is a 400', async () => {
    assertError(await api.request('POST', '/backends/weighted', { backends: { bkdhr_missing: 1 } }), 404, 6501, /^backends\.bkdhr_missing: HTTP response backend 'bkdhr_missing' was not found/);
    assertError(await api.request('POST', '/backends/weighted', { backends: { ipp_x: 1 } }), 400, 6526, /^backends\.ipp_x: 'ipp_x' is not a backend id/);
  });

  test('another account\'s backend is unknown here', async () => {
    const a = await httpResponse();
    const other = await api.burrow.createAccount({ name: 'other' });
    const res = await api.request('POST', '/backends/weighted', { backends: { [a.id]: 1 } }, { token: other.token });
    assertError(res, 404, 6501, /was not found/);
  });

  test('refuses the description limit like every resource', async () => {
    assertError(await api.request('POST', '/backends/weighted', { description: 'x'.repeat(256) }), 400, 215, /^description: must be at most 255 bytes/);
  });
});

describe('/backends/failover', () => {
  test('create, get, update and delete with ordered children', async () => {
    const a = await httpResponse();
    const b = await httpResponse();
    const created = await create('failover', { backends: [b.id, a.id] });
    assert.match(created.id, /^bkdfo_/);
    assert.deepEqual(created.backends, [b.id, a.id]);
    const updated = await api.request('PATCH', `/backends/failover/${created.id}`, { backends: [a.id] });
    assert.deepEqual(updated.body.backends, [a.id]);
    assert.deepEqual((await api.request('PATCH', `/backends/failover/${created.id}`, { description: 'd' })).body.backends, [a.id]);
    assert.equal((await api.request('DELETE', `/backends/failover/${created.id}`)).status, 204);
  });

  test('a child listed twice is refused', async () => {
    const a = await httpResponse();
    assertError(await api.request('POST', '/backends/failover', { backends: [a.id, a.id] }), 400, 215, /^backends\[1\]: .* already listed at backends\[0\]/);
  });

  test('an unknown child is a 404 naming its index', async () => {
    assertError(await api.request('POST', '/backends/failover', { backends: ['bkdwd_nope'] }), 404, 6501, /^backends\[0\]: weighted backend 'bkdwd_nope' was not found/);
  });
});

describe('backend cycles', () => {
  test('a backend may not list itself', async () => {
    const w = await create('weighted', {});
    const res = await api.request('PATCH', `/backends/weighted/${w.id}`, { backends: { [w.id]: 1 } });
    assertError(res, 400, 9030, new RegExp(`^backends: ${w.id} → ${w.id} would form a cycle`));
  });

  test('a cycle through several backends is refused and named in order', async () => {
    const w = await create('weighted', {});
    const f = await create('failover', { backends: [w.id] });
    const w2 = await create('weighted', { backends: { [f.id]: 1 } });
    const res = await api.request('PATCH', `/backends/weighted/${w.id}`, { backends: { [w2.id]: 1 } });
    assertError(res, 400, 9030, new RegExp(`${w.id} → ${w2.id} → ${f.id} → ${w.id} would form a cycle`));
    assert.equal(res.body.details.cycle, [w.id, w2.id, f.id, w.id].join(','));
    assert.deepEqual((await api.request('GET', `/backends/weighted/${w.id}`)).body.backends, {});
  });

  test('sharing a child (a diamond) is not a cycle', async () => {
    const leaf = await httpResponse();
    const left = await create('failover', { backends: [leaf.id] });
    const right = await create('failover', { backends: [leaf.id] });
    const top = await create('weighted', {});
    const res = await api.request('PATCH', `/backends/weighted/${top.id}`, { backends: { [left.id]: 1, [right.id]: 1 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
});

describe('deleting a backend that is used', () => {
  test('is refused with 409 naming the parent, and allowed once the parent lets go', async () => {
    const child = await httpResponse();
    const parent = await create('failover', { backends: [child.id] });
    const res = await api.request('DELETE', `/backends/http_response/${child.id}`);
    assertError(res, 409, 6502, new RegExp(`failover backend '${parent.id}'`));
    assert.equal(res.body.details.used_by, parent.id);
    const other = await httpResponse();
    await api.request('PATCH', `/backends/failover/${parent.id}`, { backends: [other.id] });
    assert.equal((await api.request('DELETE', `/backends/http_response/${child.id}`)).status, 204);
  });

  test('deleting the parent releases the child', async () => {
    const child = await httpResponse();
    const parent = await create('weighted', { backends: { [child.id]: 1 } });
    assert.equal((await api.request('DELETE', `/backends/weighted/${parent.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/backends/http_response/${child.id}`)).status, 204);
  });
});

describe('/backends/http_response', () => {
  test('stores header names lower-cased and defaults status 200, body "" and headers {}', async () => {
    const created = await create('http_response', { body: 'maintenance', headers: { 'Content-Type': 'text/plain', 'X-Reason': 'upgrade' }, status_code: 503 });
    assert.match(created.id, /^bkdhr_/);
    assert.deepEqual(
      { body: created.body, headers: created.headers, status_code: created.status_code },
      { body: 'maintenance', headers: { 'content-type': 'text/plain', 'x-reason': 'upgrade' }, status_code: 503 },
    );
    const bare = await create('http_response', {});
    assert.deepEqual({ body: bare.body, headers: bare.headers, status_code: bare.status_code }, { body: '', headers: {}, status_code: 200 });
  });

  test('status codes 100 and 599 are accepted; 99, 600 and 200.5 are refused with 6517', async () => {
    await create('http_response', { status_code: 100 });
    await create('http_response', { status_code: 599 });
    for (const code of [99, 600, 200.5]) {
      assertError(await api.request('POST', '/backends/http_response', { status_code: code }), 400, 6517, /^status_code: must be an HTTP status code/);
    }
  });

  test('refuses header names that are not tokens, values with line breaks and names given twice', async () => {
    assertError(await api.request('POST', '/backends/http_response', { headers: { 'Bad Name': 'x' } }), 400, 215, /^headers\.Bad Name: must be an HTTP header name/);
    assertError(await api.request('POST', '/backends/http_response', { headers: { a: 'x\r\ny: z' } }), 400, 215, /^headers\.a: must not contain line breaks/);
    assertError(await api.request('POST', '/backends/http_response', { headers: { A: '1', a: '2' } }), 400, 215, /^headers: names header twice/);
  });

  test('PATCH replaces only what is sent', async () => {
    const created = await create('http_response', { body: 'a', headers: { X: '1' }, status_code: 201 });
    const updated = await api.request('PATCH', `/backends/http_response/${created.id}`, { status_code: 202 });
    assert.deepEqual({ body: updated.body.body, headers: updated.body.headers, status_code: updated.body.status_code }, { body: 'a', headers: { x: '1' }, status_code: 202 });
  });
});

describe('/backends/static', () => {
  test('stores the canonical address and defaults tls.enabled to false', async () => {
    const created = await create('static', { address: 'API.Example.com:8443', tls: {} });
    assert.match(created.id, /^bkdsc_/);
    assert.equal(created.address, 'api.example.com:8443');
    assert.deepEqual(created.tls, { enabled: false });
    assert.deepEqual((await create('static', { address: '10.0.0.1:80' })).tls, { enabled: false });
    const updated = await api.request('PATCH', `/backends/static/${created.id}`, { tls: { enabled: true } });
    assert.deepEqual(updated.body.tls, { enabled: true });
    assert.equal(updated.body.address, 'api.example.com:8443');
  });

  test('accepts bracketed IPv6 and refuses addresses that are not host:port', async () => {
    assert.equal((await create('static', { address: '[2001:db8::1]:443' })).address, '[2001:db8::1]:443');
    for (const address of ['example.com', 'example.com:0', 'example.com:65536', ':80', 'exa mple.com:80', '2001:db8::1:443', '300.1.1.1:80']) {
      assertError(await api.request('POST', '/backends/static', { address }), 400, 6505, /^address: must be host:port/);
    }
  });

  test('address is required', async () => {
    assertError(await api.request('POST', '/backends/static', {}), 400, 215, /^address: is required/);
  });
});

describe('/backends/tunnel_group', () => {
  test('stores labels and lists no tunnels while none are online', async () => {
    const created = await create('tunnel_group', { labels: { env: 'prod', app: 'web' } });
    assert.match(created.id, /^bkdtg_/);
    assert.deepEqual(created.labels, { env: 'prod', app: 'web' });
    assert.deepEqual(created.tunnels, []);
  });

  test('refuses no labels, empty keys and "=" in keys or values', async () => {
    assertError(await api.request('POST', '/backends/tunnel_group', { labels: {} }), 400, 6508, /^labels: .*at least one label/);
    assertError(await api.request('POST', '/backends/tunnel_group', { labels: { '': 'x' } }), 400, 6509, /label keys must be 1 to 255/);
    assertError(await api.request('POST', '/backends/tunnel_group', { labels: { a: '' } }), 400, 6510, /label values must be 1 to 255/);
    assertError(await api.request('POST', '/backends/tunnel_group', { labels: { 'a=b': 'c' } }), 400, 6531, /may not contain '='/);
  });

  test('lists the online tunnels whose labels include all of its labels (simulator hook)', async () => {
    const prod = await create('tunnel_group', { labels: { env: 'prod' } });
    const principal = await api.burrow.authenticate(`Bearer ${api.token}`);
    const report = (change: Parameters<typeof changeOnlineTunnels>[1]) => api.burrow.perform(principal, (ctx) => changeOnlineTunnels(ctx, change), BASE);
    await report({ online: { id: 'tn_1', labels: { env: 'prod', app: 'web' } } });
    await report({ online: { id: 'tn_2', labels: { env: 'dev' } } });
    assert.deepEqual((await api.request('GET', `/backends/tunnel_group/${prod.id}`)).body.tunnels, [{ id: 'tn_1', uri: `${BASE}/tunnels/tn_1` }]);
    const web = await create('tunnel_group', { labels: { app: 'web', env: 'prod' } });
    assert.deepEqual(web.tunnels.map((t: any) => t.id), ['tn_1']);
    await report({ goneId: 'tn_1' });
    await report({ goneId: 'tn_2' });
    assert.deepEqual((await api.request('GET', `/backends/tunnel_group/${prod.id}`)).body.tunnels, []);
  });
});
