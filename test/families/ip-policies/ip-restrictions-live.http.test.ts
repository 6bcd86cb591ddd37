import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startServer, type RunningServer } from '../../helpers.ts';

/** API IP restrictions against a real server: the caller is 127.0.0.1 on a loopback socket. */

async function restrictApi(server: RunningServer, enforced: boolean, cidr: string, action: 'allow' | 'deny') {
  const policy = await server.request('POST', '/ip_policies', { description: 'loopback' });
  assert.equal((await server.request('POST', '/ip_policy_rules', { ip_policy_id: policy.body.id, cidr, action })).status, 201);
  const restriction = await server.request('POST', '/ip_restrictions', { type: 'api', enforced, ip_policy_ids: [policy.body.id] });
  assert.equal(restriction.status, 201);
  return restriction.body.id as string;
}

describe('api IP restrictions on a live server', () => {
  test('an enforced deny-all restriction blocks every API request from 127.0.0.1', async () => {
    const server = await startServer(['--quiet']);
    try {
      const restriction = await restrictApi(server, true, '0.0.0.0/0', 'deny');
      const res = await server.request('GET', '/api_keys');
      assert.equal(res.status, 403);
      assert.equal(res.body.error_code, 'ERR_BURROW_220');
      assert.match(res.body.msg, new RegExp(`IP restriction '${restriction}' denies (::ffff:)?127\\.0\\.0\\.1`));
      assert.equal((await server.request('POST', '/credentials', {})).status, 403);
    } finally {
      await server.stop();
    }
  });

  test('an unenforced one lets the request through with a Warning header and logs it', async () => {
    const server = await startServer();
    try {
      const restriction = await restrictApi(server, false, '127.0.0.1/32', 'deny');
      const res = await server.request('GET', '/api_keys');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('warning') ?? '', new RegExp(`${restriction}.*not enforced`));
      const isWarning = (line: string) => / GET \/api_keys 200 /.test(line) && line.includes('warning:');
      const logged = (await server.outputUntil((lines) => lines.some(isWarning))).find(isWarning);
      assert.ok(logged, `no warning in the server log:\n${server.output.join('\n')}`);
      assert.ok(logged!.includes(restriction));
    } finally {
      await server.stop();
    }
  });

  test('X-Forwarded-For is the caller only with --trust-proxy', async () => {
    const trusting = await startServer(['--quiet', '--trust-proxy']);
    const ignoring = await startServer(['--quiet']);
    try {
      for (const server of [trusting, ignoring]) await restrictApi(server, true, '127.0.0.0/8', 'allow');
      const forwarded = { headers: { 'X-Forwarded-For': '203.0.113.7, 127.0.0.1' } };
      assert.equal((await trusting.request('GET', '/api_keys', undefined, forwarded)).status, 403);
      assert.equal((await trusting.request('GET', '/api_keys')).status, 200);
      assert.equal((await ignoring.request('GET', '/api_keys', undefined, forwarded)).status, 200, 'a spoofed header changes nothing');
    } finally {
      await Promise.all([trusting.stop(), ignoring.stop()]);
    }
  });
});
