import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { ApiError } from '../../../lib/index.ts';
import { createNodeListener } from '../../../adapters/http/index.ts';
import { callerAddress, compileTrustProxy, type TrustProxySetting } from '../../../adapters/http/trust-proxy.ts';
import { assertError, createTestInstance, type TestInstance } from '../../helpers.ts';

/** The caller's address behind reverse proxies: Express's `trust proxy`, with malformed entries refused. */

const caller = (setting: TrustProxySetting, socket: string, forwarded?: string) => callerAddress(socket, forwarded, compileTrustProxy(setting)!);

describe('callerAddress', () => {
  const cases: [TrustProxySetting, string, string | undefined, string][] = [
    // Loopback (the bare flag): only a proxy on this machine is believed, and only for its own entry.
    [true, '127.0.0.1', '10.0.0.1, 203.0.113.9', '203.0.113.9'],
    [true, '127.0.0.1', '203.0.113.9, 127.0.0.1', '203.0.113.9'],
    [true, '::ffff:127.0.0.1', '203.0.113.9', '203.0.113.9'],
    [true, '::1', '2001:db8::7', '2001:db8::7'],
    [true, '198.51.100.4', '10.0.0.1', '198.51.100.4'],
    [true, '127.0.0.1', undefined, '127.0.0.1'],
    [true, '127.0.0.1', '  ', '127.0.0.1'],
    // Hop counts: N proxies in front, the N-th entry from the right is the caller; fewer entries give the leftmost.
    [1, '198.51.100.4', '10.0.0.1, 203.0.113.9', '203.0.113.9'],
    [2, '198.51.100.4', '10.0.0.1, 203.0.113.9', '10.0.0.1'],
    [5, '198.51.100.4', '10.0.0.1, 203.0.113.9', '10.0.0.1'],
    ['1', '198.51.100.4', '10.0.0.1', '10.0.0.1'],
    // Lists: the rightmost entry not in the set.
    ['127.0.0.1,203.0.113.0/24', '127.0.0.1', '10.0.0.1, 203.0.113.9', '10.0.0.1'],
    [['loopback', 'uniquelocal'], '127.0.0.1', '198.51.100.7, 10.1.2.3, 192.168.0.9', '198.51.100.7'],
    ['10.0.0.0/8', '127.0.0.1', '10.0.0.1', '127.0.0.1'],
    ['loopback', '127.0.0.1', '::ffff:203.0.113.9', '203.0.113.9'],
    // A malformed entry beyond the caller is never reached.
    [true, '127.0.0.1', 'garbage, 10.0.0.1%lo, 203.0.113.9', '203.0.113.9'],
  ];
  for (const [setting, socket, forwarded, expected] of cases) {
    test(`trust ${JSON.stringify(setting)}, connection ${socket}, X-Forwarded-For ${JSON.stringify(forwarded)}: ${expected}`, () => {
      assert.equal(caller(setting, socket, forwarded), expected);
    });
  }

  for (const entry of ['10.0.0.1%lo', 'fe80::1%eth0', '[2001:db8::1]', '203.0.113.9:443', 'unknown', '', '010.0.0.1', '10.0.0.256', '<img src=x>']) {
    test(`the entry ${JSON.stringify(entry)}, where the walk reaches it, is a 400 and no caller`, () => {
      assert.throws(() => caller(true, '127.0.0.1', `203.0.113.9, ${entry}`), (error: unknown) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 400);
        assert.equal(error.code, 9050);
        assert.match(error.message, /^X-Forwarded-For: entry 1 from the right, ".*", is not an IP address/);
        return true;
      });
    });
  }

  test('settings that trust nothing; settings that are no setting', () => {
    for (const off of [false, 0, '0', undefined]) assert.equal(compileTrustProxy(off), undefined, String(off));
    for (const [bad, message] of [
      ['10.0.0.1/8', /"10\.0\.0\.1\/8" is not a hop count, an IP address, a CIDR or one of loopback, linklocal, uniquelocal \(did you mean 10\.0\.0\.0\/8\?\)/],
      ['127.0.0.1,,10.0.0.0/8', /"" is not a hop count/],
      ['true', /"true" is not/],
      ['10.0.0.1%lo', /"10\.0\.0\.1%lo" is not/],
      [-1, /a hop count must be a whole number of at least 0 \(got -1\)/],
      [[], /the list of trusted proxies is empty/],
    ] as const) {
      assert.throws(() => compileTrustProxy(bad as TrustProxySetting), message, String(bad));
    }
  });
});

describe('the node listener behind a proxy', () => {
  let api: TestInstance;
  let url: (trustProxy: TrustProxySetting | undefined) => Promise<string>;
  const servers: ReturnType<typeof createServer>[] = [];
  before(async () => {
    api = await createTestInstance();
    const policy = await api.request('POST', '/ip_policies', {});
    await api.request('POST', '/ip_policy_rules', { ip_policy_id: policy.body.id, cidr: '10.0.0.0/8', action: 'allow' });
    // Only 10.0.0.0/8 may use the API, enforced.
    assert.equal((await api.request('POST', '/ip_restrictions', { type: 'api', enforced: true, ip_policy_ids: [policy.body.id] })).status, 201);
    url = async (trustProxy) => {
      const server = createServer(createNodeListener(api.burrow, trustProxy === undefined ? {} : { trustProxy }));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    };
  });
  after(() => {
    for (const server of servers) server.close();
  });

  const list = (base: string, forwardedFor: string) => fetch(`${base}/api_keys`, { headers: { Authorization: `Bearer ${api.token}`, 'X-Forwarded-For': forwardedFor } });
  const decoded = async (response: Response) => ({ status: response.status, body: (await response.json()) as unknown });

  test('a client behind a loopback proxy cannot pass a 10.0.0.0/8 restriction by sending 10.0.0.1 first', async () => {
    const base = await url(true);
    assertError(await decoded(await list(base, '10.0.0.1, 203.0.113.9')), 403, 220, /denies 203\.0\.113\.9/);
    assert.equal((await list(base, '203.0.113.9, 10.0.0.1')).status, 200, 'the proxy wrote 10.0.0.1');
  });

  test('a zone id or any other malformed entry is a 400, never an address that passes', async () => {
    const base = await url(true);
    for (const entry of ['10.0.0.1%lo', '10.0.0.1:80', 'unknown']) {
      assertError(await decoded(await list(base, entry)), 400, 9050, new RegExp(`X-Forwarded-For: entry 1 from the right, "${entry}", is not an IP address`));
    }
  });

  test('two trusted hops, or a list naming the proxies, reach the entry the first proxy wrote', async () => {
    for (const setting of [2, '127.0.0.1, 203.0.113.0/24'] as const) {
      const base = await url(setting);
      assert.equal((await list(base, '198.51.100.1, 10.0.0.1, 203.0.113.9')).status, 200, String(setting));
      assertError(await decoded(await list(base, '10.0.0.1, 198.51.100.1, 203.0.113.9')), 403, 220, /denies 198\.51\.100\.1/);
    }
  });

  test('without trustProxy the header is ignored: the caller is the connection', async () => {
    assertError(await decoded(await list(await url(undefined), '10.0.0.1')), 403, 220, /denies 127\.0\.0\.1/);
  });
});
