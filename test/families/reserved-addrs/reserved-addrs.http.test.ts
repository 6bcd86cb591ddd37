import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, BASE, createTestInstance, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const ADDR = (region: string) => new RegExp(`^[1-9]\\.tcp\\.${region}\\.burrow\\.internal:(\\d+)$`);

describe('POST /reserved_addrs', () => {
  test('allocates a host:port in the region (default us)', async () => {
    const res = await api.request('POST', '/reserved_addrs', { description: 'SSH for device #001' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.match(res.body.id, /^ra_[0-9A-Za-z]{27}$/);
    const port = Number(ADDR('us').exec(res.body.addr)?.[1]);
    assert.ok(port >= 10000 && port <= 29999, res.body.addr);
    assert.deepEqual(res.body, {
      id: res.body.id,
      uri: `${BASE}/reserved_addrs/${res.body.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'SSH for device #001',
      metadata: '',
      addr: res.body.addr,
      region: 'us',
    });
    assert.deepEqual((await api.request('GET', `/reserved_addrs/${res.body.id}`)).body, res.body);
    assert.deepEqual((await api.request('GET', '/reserved_addrs')).body.reserved_addrs, [res.body]);
    const eu = await api.request('POST', '/reserved_addrs', { region: 'eu' });
    assert.match(eu.body.addr, ADDR('eu'));
    assert.equal((await api.request('POST', '/reserved_addrs', { region: '' })).body.region, 'us', '"" counts as not sent');
  });

  test('refuses an unknown region with 500 listing the regions', async () => {
    assertError(await api.request('POST', '/reserved_addrs', { region: 'mars' }), 400, 500, /^region: must be one of us, eu, ap, au, sa, jp, in, us-cal-1 \(got "mars"\)/);
  });

  test('addresses are unique across the accounts of the instance until the region is full (503)', async () => {
    const small = await createTestInstance({ simulation: { regions: ['us'], reservedAddrPorts: { first: 40000, last: 40001 } } });
    const other = await small.burrow.createAccount({ name: 'other' });
    const held: { id: string; addr: string }[] = [];
    for (let i = 0; i < 18; i++) {
      const res = await small.request('POST', '/reserved_addrs', {}, { token: i % 2 ? other.token : small.token });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      held.push(res.body);
    }
    const expected = [1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((host) => [40000, 40001].map((port) => `${host}.tcp.us.burrow.internal:${port}`));
    assert.deepEqual(held.map((a) => a.addr).sort(), expected.sort());
    assertError(await small.request('POST', '/reserved_addrs', {}), 409, 503, /no free reserved addresses are left in region us/);
    assert.equal((await small.request('DELETE', `/reserved_addrs/${held[0]!.id}`)).status, 204);
    assert.equal((await small.request('POST', '/reserved_addrs', {}, { token: other.token })).body.addr, held[0]!.addr);
  });
});

describe('PATCH and DELETE /reserved_addrs/{id}', () => {
  test('region and addr are fixed; description and metadata change; an address a TCP edge uses is not deleted', async () => {
    const created = (await api.request('POST', '/reserved_addrs', {})).body;
    assertError(await api.request('PATCH', `/reserved_addrs/${created.id}`, { region: 'eu' }), 400, 215, /^region: cannot be changed/);
    assertError(await api.request('PATCH', `/reserved_addrs/${created.id}`, { addr: '1.tcp.us.burrow.internal:10000' }), 400, 215, /^addr: is allocated by the service/);
    const patched = await api.request('PATCH', `/reserved_addrs/${created.id}`, { id: created.id, metadata: '{"device":1}' });
    assert.deepEqual(patched.body, { ...created, metadata: '{"device":1}' });
    const edge = (await api.request('POST', '/edges/tcp', { hostports: [created.addr] })).body;
    assertError(await api.request('DELETE', `/reserved_addrs/${created.id}`), 409, 9007, new RegExp(`reserved address '${created.id}' is still used by TCP edge '${edge.id}'`));
    assert.equal((await api.request('DELETE', `/edges/tcp/${edge.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/reserved_addrs/${created.id}`)).status, 204);
    assertError(await api.request('GET', `/reserved_addrs/${created.id}`), 404, 9001, /reserved address 'ra_.*' was not found/);
  });
});
