import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock, RESOURCES } from '../../lib/index.ts';
import { tempDir } from '../fixtures/openssh.ts';
import { createRepresentatives } from '../fixtures/representative-records.ts';
import { generateTlsFixtures } from '../fixtures/tls.ts';
import { createTestInstance, OPERATOR_TOKEN, startServer, type TestInstance } from '../helpers.ts';

const dir = tempDir('burrow-security-');
after(() => dir.remove());
const tls = generateTlsFixtures();

/** A concrete path for an operation, with placeholder ids. */
const concrete = (path: string) => path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => (name === 'type' ? 'api_key_created.v0' : `${name}_placeholder`));

describe('authentication on every API endpoint', () => {
  let api: TestInstance;
  let deletedToken: string;
  before(async () => {
    api = await createTestInstance();
    const key = await api.request('POST', '/api_keys', {});
    deletedToken = key.body.token;
    await api.request('DELETE', `/api_keys/${key.body.id}`);
  });

  test('missing, malformed, unknown and deleted keys are refused with 401 on each operation', async () => {
    const cases: [string, Record<string, string>, number][] = [
      ['missing', {}, 200],
      ['malformed', { Authorization: 'Basic dXNlcjpwYXNz' }, 201],
      ['unknown', { Authorization: 'Bearer 2ft0OJTh21NetHp1AlCMJNAcsEo_notakey' }, 203],
      ['deleted', { Authorization: `Bearer ${deletedToken}` }, 203],
    ];
    let checked = 0;
    for (const op of api.burrow.operations) {
      for (const [name, headers, code] of cases) {
        const res = await api.request(op.method, concrete(op.path), op.body ? {} : undefined, { token: null, headers });
        assert.equal(res.status, 401, `${name} key on ${op.method} ${op.path}`);
        assert.equal(res.body.error_code, `ERR_BURROW_${code}`, `${name} key on ${op.method} ${op.path}`);
        checked++;
      }
    }
    assert.ok(checked >= api.burrow.operations.length * 4);
  });
});

describe('account isolation', () => {
  test("a key of account B never reads, lists, changes or deletes account A's resources", async () => {
    const api = await createTestInstance();
    const other = await api.burrow.createAccount({ name: 'B' });
    const representatives = await createRepresentatives(api.request, api.accountId, dir.path);
    const created = representatives.ids;
    const served = new Set(api.burrow.operations.map((op) => `${op.method} ${op.path}`));
    for (const kind of RESOURCES.filter((def) => served.has(`GET ${def.path}/:id`))) assert.ok(kind.path in created, `the sweep covers ${kind.path}`);
    const asB = { token: other.token };
    for (const { path, id } of representatives.records) {
      assert.match(id, /_/, `${path} was created`);
      assert.equal((await api.request('GET', `${path}/${id}`, undefined, asB)).status, 404, `GET ${path}`);
      const list = await api.request('GET', path, undefined, asB);
      assert.ok(!list.text.includes(id), `list ${path}`);
      if (served.has(`PATCH ${path}/:id`)) assert.equal((await api.request('PATCH', `${path}/${id}`, { description: 'stolen' }, asB)).status, 404, `PATCH ${path}`);
      if (served.has(`DELETE ${path}/:id`)) assert.equal((await api.request('DELETE', `${path}/${id}`, undefined, asB)).status, 404, `DELETE ${path}`);
      const mine = await api.request('GET', `${path}/${id}`);
      assert.equal(mine.status, 200, `A still has ${path}`);
      assert.notEqual(mine.body.description, 'stolen');
    }
    for (const name of ['stop', 'restart', 'update']) {
      assert.equal((await api.request('POST', `/tunnel_sessions/${created['/tunnel_sessions']}/${name}`, {}, asB)).status, 404);
    }
    assert.equal((await api.request('GET', `/event_subscriptions/${representatives.subscription}/sources`, undefined, asB)).status, 404);
    for (const part of ['certificate', 'certificate_management_policy']) {
      assert.equal((await api.request('DELETE', `/reserved_domains/${created['/reserved_domains']}/${part}`, undefined, asB)).status, 404);
    }
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'b.example.net', certificate_id: created['/tls_certificates'] }, asB)).status, 404, 'no foreign certificates');
    assert.equal((await api.request('GET', `/vaults/${representatives.vault}/secrets`, undefined, asB)).status, 404);
    assert.equal((await api.request('POST', '/vault_secrets', { name: 'S', value: 'v', vault_id: representatives.vault }, asB)).status, 404, 'no secrets in a foreign vault');
    assert.equal((await api.request('POST', '/vault_secrets', { name: 'S', value: 'v', vault_name: 'representative' }, asB)).status, 404, 'nor by its name');
    assert.equal((await api.request('POST', '/ip_policy_rules', { ip_policy_id: representatives.policy, cidr: '10.0.0.0/8', action: 'allow' }, asB)).status, 404, 'no referencing foreign ids');
  });

  test('non-admins cannot act for other owners', async () => {
    const api = await createTestInstance();
    const member = await api.burrow.createOwner(api.accountId, { name: 'member' });
    const bot = await api.burrow.createOwner(api.accountId, { kind: 'bot' });
    const memberKey = await api.burrow.issueApiKey(api.accountId, member.id);
    const res = await api.request('POST', '/credentials', { owner_id: bot.id }, { token: memberKey.token });
    assert.equal(res.status, 403);
    assert.equal(res.body.error_code, 'ERR_BURROW_628');
    assert.equal((await api.request('POST', '/credentials', {}, { token: memberKey.token })).body.owner_id, member.id);
  });
});

describe('secrets', () => {
  test('tokens, CA and TLS private keys appear in no response after creation and in no log line', async () => {
    const server = await startServer(['--log-format', 'json']);
    try {
      const secrets: string[] = [server.token!];
      const key = await server.request('POST', '/api_keys', {});
      const credential = await server.request('POST', '/credentials', {});
      secrets.push(key.body.token, credential.body.token);
      await server.request('POST', '/ssh_certificate_authorities', { private_key_type: 'ecdsa' });
      assert.equal((await server.request('POST', '/tls_certificates', { certificate_pem: tls.leaf.cert, private_key_pem: tls.leaf.key })).status, 201);
      assert.equal((await server.request('POST', '/tls_certificates', { certificate_pem: tls.ecdsa.cert, private_key_pem: tls.leaf.key })).status, 400);
      secrets.push(tls.leaf.key.split('\n')[1]!);
      await server.request('POST', '/event_destinations', { format: 'json', target: { stream: { auth: { creds: { cloud_access_key_id: 'id', cloud_secret_access_key: 'cloud-secret-value' } }, stream_ref: 's' } } });
      secrets.push('cloud-secret-value');
      const reads = [];
      for (const path of ['/api_keys', '/credentials', '/ssh_certificate_authorities', '/event_destinations', '/tls_certificates']) {
        const list = await server.request('GET', path);
        reads.push(list.text);
        for (const item of Object.values(list.body).find(Array.isArray) as { id: string }[]) reads.push((await server.request('GET', `${path}/${item.id}`)).text);
      }
      // The operator's snapshot is the state at rest: token hashes only, but CA keys must be in it
      // for an imported CA to keep signing (docs/control-plane.md says to guard snapshots like the data file).
      const snapshot = (await server.request('GET', '/_burrow/snapshot', undefined, { token: server.operatorToken! })).text;
      for (const token of secrets.slice(0, 3)) assert.ok(!snapshot.includes(token), 'no token plaintext at rest');
      // The start-up banner shows the generated admin key once, by design; request logs never do.
      const logLines = server.output.filter((line) => line.startsWith('{') && !line.includes('"msg":'));
      assert.ok(logLines.length >= 10);
      const everything = [...reads, ...logLines].join('\n');
      for (const secret of secrets) assert.ok(!everything.includes(secret), `a secret leaked: ${secret.slice(0, 6)}…`);
      assert.ok(!reads.join('\n').includes('PRIVATE KEY'), 'no CA private key in any response');
      assert.ok(!server.output.join('\n').includes('PRIVATE KEY'), 'no CA private key in the log');
    } finally {
      await server.stop();
    }
  });

  test('oversized and deeply nested bodies are refused before parsing', async () => {
    const api = await createTestInstance();
    const big = await api.request('POST', '/api_keys', undefined, { rawBody: JSON.stringify({ description: 'x'.repeat(2 * 1024 * 1024) }) });
    assert.equal(big.status, 413);
    const deep = await api.request('POST', '/api_keys', undefined, { rawBody: `${'['.repeat(100_000)}${']'.repeat(100_000)}` });
    assert.equal(deep.status, 400);
    assert.equal(deep.body.error_code, 'ERR_BURROW_213');
  });
});

describe('rate limiting', () => {
  test('off by default; with a limit, 429 with Retry-After once an account exceeds it, per account', async () => {
    const clock = new ManualClock('2026-03-01T12:00:00Z');
    const api = await createTestInstance({ clock, rateLimit: { requests: 3, windowSeconds: 60 } });
    const other = await api.burrow.createAccount({ name: 'other' });
    for (let i = 0; i < 3; i++) assert.equal((await api.request('GET', '/api_keys')).status, 200);
    const limited = await api.request('GET', '/api_keys');
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error_code, 'ERR_BURROW_226');
    assert.equal(limited.headers.get('retry-after'), '60');
    assert.equal((await api.request('GET', '/api_keys', undefined, { token: other.token })).status, 200, 'other accounts have their own budget');
    clock.advance(61);
    assert.equal((await api.request('GET', '/api_keys')).status, 200, 'the window rolls');
    const unlimited = await createTestInstance();
    for (let i = 0; i < 150; i++) assert.equal((await unlimited.request('GET', '/api_keys')).status, 200);
  });

  test('--rate-limit 120/60s on the CLI', async () => {
    const server = await startServer(['--quiet', '--rate-limit', '2/60s']);
    try {
      await server.request('GET', '/api_keys');
      await server.request('GET', '/api_keys');
      assert.equal((await server.request('GET', '/api_keys')).status, 429);
    } finally {
      await server.stop();
    }
  });
});
