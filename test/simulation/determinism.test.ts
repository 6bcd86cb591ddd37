import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { createFetchHandler } from '../../adapters/http/index.ts';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { createBurrow, ManualClock } from '../../lib/index.ts';

/**
 * Deterministic mode: with a seed and a manual clock, ids, tokens, serials and Ed25519/ECDSA key
 * material depend only on the order of successful writes in each account. The same script runs
 * twice, the second time with reads, readiness probes, failed requests, control-plane calls and
 * another account's writes interleaved; what the script itself sees must be byte for byte equal.
 */

const OPERATOR = 'operator-token-for-determinism';
const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl determinism@test';

async function run(noisy: boolean): Promise<string> {
  const burrow = createBurrow({ store: new MemoryStore(), clock: new ManualClock('2026-03-01T00:00:00Z'), seed: 'snapshot-suite' });
  const handle = createFetchHandler(burrow, { operatorToken: OPERATOR });
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await handle(
      new Request(`http://burrow.test${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    return { status: response.status, text: await response.text() };
  };
  const noise = async (token: string) => {
    if (!noisy) return;
    await call('', 'GET', '/_burrow/health');
    await call(token, 'GET', '/api_keys');
    await call(token, 'GET', '/credentials/cr_doesnotexist');
    await call(token, 'POST', '/credentials', { acl: ['not an acl'] });
    await call(token, 'POST', '/ip_policy_rules', { cidr: '10.0.0.0/8', action: 'allow', ip_policy_id: 'ipp_missing' });
    await call('wrong-token', 'POST', '/api_keys', {});
    await call(OPERATOR, 'GET', '/_burrow/accounts');
    const other = await burrow.createAccount({ name: 'bystander' });
    await call(other.token, 'POST', '/credentials', { description: 'elsewhere' });
  };
  const transcript: string[] = [];
  const { token } = await burrow.createAccount({ name: 'mine' });
  transcript.push(token);
  const steps: [string, string, unknown][] = [
    ['POST', '/credentials', { description: 'ci', acl: ['bind:*.example.com'] }],
    ['POST', '/api_keys', { description: 'second' }],
    ['POST', '/ip_policies', { description: 'office' }],
    ['POST', '/ssh_certificate_authorities', { private_key_type: 'ed25519' }],
    ['POST', '/ssh_certificate_authorities', { private_key_type: 'ecdsa', elliptic_curve: 'P-384' }],
    ['GET', '/credentials', undefined],
  ];
  let edCa = '';
  for (const [method, path, body] of steps) {
    await noise(token);
    const result = await call(token, method, path, body);
    transcript.push(`${method} ${path} ${result.status} ${result.text}`);
    if (path === '/ssh_certificate_authorities' && !edCa) edCa = (JSON.parse(result.text) as { id: string }).id;
  }
  await noise(token);
  const cert = await call(token, 'POST', '/ssh_user_certificates', { ssh_certificate_authority_id: edCa, public_key: SSH_KEY, principals: ['deploy'] });
  transcript.push(`POST /ssh_user_certificates ${cert.status} ${cert.text}`);
  return transcript.join('\n');
}

describe('deterministic mode', () => {
  test('ids, tokens, SSH keys and certificates depend only on the successful writes of the account', async () => {
    const quiet = await run(false);
    const noisy = await run(true);
    assert.match(quiet, /POST \/ssh_user_certificates 201 .*"certificate":"ssh-ed25519-cert-v01@openssh.com /);
    assert.equal(createHash('sha256').update(noisy).digest('hex'), createHash('sha256').update(quiet).digest('hex'), `${quiet}\n---\n${noisy}`);
  });
});
