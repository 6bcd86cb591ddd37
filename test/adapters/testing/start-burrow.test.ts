import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import ngrokApi from '@ngrok/ngrok-api';
import { startBurrow, type RunningBurrow } from '../../../adapters/testing/index.ts';

/**
 * burrow-tunnels/testing: the same handle in-process and as a child process, driven with the vendor's
 * official client; each mode's reset, checkpoints, faults, simulated agents, the journal's `find`
 * (what the tool under test sent) and the manual clock; a start from a snapshot.
 */

const { Ngrok } = ngrokApi as unknown as { Ngrok: new (config: { apiToken: string; baseUrl: string }) => any };

for (const mode of ['in-process', 'process'] as const) {
  describe(`startBurrow, ${mode}`, () => {
    let burrow: RunningBurrow;
    let client: any;
    before(async () => {
      burrow = await startBurrow({ process: mode === 'process', apiKey: 'suite-admin-key', clock: '2026-03-01T00:00:00Z' });
      client = new Ngrok({ apiToken: burrow.apiKey, baseUrl: burrow.url });
    });
    after(() => burrow?.close());
    beforeEach(() => burrow.reset());

    test('answers where it listens and its keys; the official client works against it', async () => {
      assert.match(burrow.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(burrow.apiKey, 'suite-admin-key');
      assert.match(burrow.accountId, /^ac_/);
      assert.deepEqual(burrow.listeners, { api: new URL(burrow.url).host, agent: null, ssh: null, http_ingress: null, tls_ingress: null });
      assert.match(burrow.ca, /^-----BEGIN CERTIFICATE-----/);
      assert.equal(burrow.burrow === undefined, mode === 'process');
      const created = await client.ipPolicies.create({ description: 'made by a test' });
      assert.equal((await client.ipPolicies.get(created.id)).description, 'made by a test');
    });

    test('reset: what the last test made is gone, and the admin key it deleted is back', async () => {
      const [adminKey] = await client.apiKeys.list();
      await client.ipPolicies.create({});
      await fetch(`${burrow.url}/api_keys/${adminKey.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${burrow.apiKey}` } });
      await burrow.reset();
      assert.deepEqual((await client.ipPolicies.list()).length, 0);
      assert.deepEqual((await client.apiKeys.list()).map((key: any) => key.id), [adminKey.id]);
    });

    test('checkpoint and restore', async () => {
      await client.ipPolicies.create({ description: 'fixture' });
      assert.equal((await burrow.checkpoint('fixture')).name, 'fixture');
      await client.ipPolicies.create({ description: 'test data' });
      await burrow.restore('fixture');
      assert.deepEqual((await client.ipPolicies.list()).map((p: any) => p.description), ['fixture']);
    });

    test('faults: add, list, remove, clear; a reset removes them too', async () => {
      const rule = await burrow.faults.add({ operation: 'ip_policies.list', error: { status: 503, error_code: 'ERR_NGROK_999' } });
      await assert.rejects(client.ipPolicies.list(), (error: any) => error.statusCode === 503 && error.errorCode === 'ERR_NGROK_999');
      assert.deepEqual((await burrow.faults.list()).map((f) => [f.id, f.applied]), [[rule.id, 1]]);
      await burrow.faults.remove(rule.id);
      await assert.rejects(burrow.faults.remove(rule.id), /fault rule 'flt_\w+' was not found/);
      await burrow.faults.add({ error: { status: 500 } });
      await burrow.faults.clear();
      assert.deepEqual(await burrow.faults.list(), []);
      await burrow.faults.add({ error: { status: 500 } });
      await burrow.reset();
      assert.equal((await client.ipPolicies.list()).length, 0);
    });

    test('connectAgent: with a new credential of the account, or a token given', async () => {
      const session = await burrow.connectAgent({ os: 'darwin' });
      assert.match(session.id, /^ts_/);
      assert.equal(session.os, 'darwin');
      assert.equal(session.account_id, burrow.accountId);
      const credential = await client.credentials.create({ acl: ['bind:app.example.com'] });
      const bound = await burrow.connectAgent({ token: credential.token, binds: { domains: ['app.example.com'] } });
      assert.equal(bound.credential.id, credential.id);
      assert.equal((await client.tunnelSessions.list()).length, 2);
    });

    test('requests.find: what the official client sent, by method, path, operation, status and body', async () => {
      const credential = await client.credentials.create({ description: 'ci runner', acl: ['bind:ci.example.com'], metadata: '{"team":"build"}' });
      await client.credentials.get(credential.id);
      await assert.rejects(client.credentials.create({ acl: ['bind:oops:x'] }));

      const created = await burrow.requests.find({ operation: 'credentials.create', status: 201 });
      assert.equal(created.length, 1);
      assert.equal(created[0]!.method, 'POST');
      assert.deepEqual(JSON.parse(created[0]!.request.body!.data!).acl, ['bind:ci.example.com']);
      // JSON the body contains: fields of an object, arrays element by element.
      assert.equal((await burrow.requests.find({ body: { description: 'ci runner', acl: ['bind:ci.example.com'] } })).length, 1);
      assert.equal((await burrow.requests.find({ body: { acl: ['bind:ci.example.com', 'extra'] } })).length, 0);
      assert.equal((await burrow.requests.find({ body: '"description":"ci runner"' })).length, 1, 'text the body contains');
      // A path pattern as fault rules take it; methods in any case.
      assert.deepEqual((await burrow.requests.find({ method: 'get', path: '/credentials/*' })).map((r) => r.path), [`/credentials/${credential.id}`]);
      const [failed, ...more] = await burrow.requests.find({ operation: 'credentials.*', status: 'failed' });
      assert.deepEqual(more, []);
      assert.equal(failed!.status, 400);
      assert.match(failed!.message!, /acl/);
      // Replayed with the body mended (and the key, which the journal never keeps): a new entry.
      const mended = await burrow.requests.replay(failed!.operation_id, { body: { acl: ['bind:ci.example.com'] }, headers: { authorization: `Bearer ${burrow.apiKey}` } });
      assert.equal(mended.status, 201);
      assert.notEqual(mended.operation_id, failed!.operation_id);
      await assert.rejects(burrow.requests.replay(failed!.operation_id), /authorization/, 'without a key the replay says where to give one');
      assert.equal((await burrow.requests.find({ path: '/credentials' })).length, 3, 'newest first, the creates and the replay');
      assert.equal((await burrow.requests.find({ path: '/credentials', limit: 1 })).length, 1);
      // Bad criteria are the one 400, naming the field.
      await assert.rejects(burrow.requests.find({ status: 'bad' } as never), /status/);
      await assert.rejects(burrow.requests.find({ colour: 'red' } as never), /colour: unknown field/);
    });

    test('clock: set, advance and read the manual clock; records carry its time', async () => {
      assert.equal(await burrow.clock.now(), '2026-03-01T00:00:00Z');
      assert.equal(await burrow.clock.advance(90), '2026-03-01T00:01:30Z');
      assert.equal(await burrow.clock.set('2026-04-01T12:00:00Z'), '2026-04-01T12:00:00Z');
      assert.equal((await client.ipPolicies.create({})).createdAt, '2026-04-01T12:00:00Z');
      assert.equal(await burrow.clock.set(new Date('2026-04-02T00:00:00Z')), '2026-04-02T00:00:00Z');
      await assert.rejects(burrow.clock.set('2026-01-01T00:00:00Z'), /time never goes backwards/);
    });
  });
}

test('snapshot: a Burrow starts from one, given as a document or a file, in-process and as a process', async (t) => {
  const source = await startBurrow({ apiKey: 'source-admin-key' });
  t.after(() => source.close());
  const sourceClient = new Ngrok({ apiToken: source.apiKey, baseUrl: source.url });
  const policy = await sourceClient.ipPolicies.create({ description: 'from the snapshot' });
  const snapshot = await (await fetch(`${source.url}/_burrow/snapshot`, { headers: { authorization: `Bearer ${source.operatorToken}` } })).json();
  const dir = mkdtempSync(join(tmpdir(), 'burrow-snapshot-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'snapshot.json');
  writeFileSync(file, JSON.stringify(snapshot));

  for (const [process, given] of [[false, snapshot], [true, file], [true, snapshot], [false, file]] as const) {
    const burrow = await startBurrow({ process, snapshot: given });
    try {
      const client = new Ngrok({ apiToken: burrow.apiKey, baseUrl: burrow.url });
      assert.equal(burrow.accountId, source.accountId, 'the snapshot\'s default account');
      assert.deepEqual((await client.ipPolicies.list()).map((p: any) => p.id), [policy.id]);
      // The snapshot is every account's starting state: a reset returns to it.
      await client.ipPolicies.create({});
      await burrow.reset();
      assert.deepEqual((await client.ipPolicies.list()).map((p: any) => p.description), ['from the snapshot']);
      // The source's key came along (as a hash) and still authenticates.
      assert.equal((await fetch(`${burrow.url}/ip_policies`, { headers: { authorization: 'Bearer source-admin-key', 'ngrok-version': '2' } })).status, 200);
    } finally {
      await burrow.close();
    }
  }
  writeFileSync(file, JSON.stringify({ ...snapshot, scopes: [{ account: 'ac_nobody', kind: 'ip_policy', records: [{}] }] }));
  await assert.rejects(startBurrow({ process: true, snapshot: file }), /burrow exited with 2 before it was ready: burrow: cannot load the snapshot: scopes\[0\]/);
  writeFileSync(file, '{not json');
  await assert.rejects(startBurrow({ process: true, snapshot: file }), /exited with 2.*--snapshot .*snapshot\.json: /);
});

test('close() stops everything and may be called twice; a process that cannot start rejects with its message', async () => {
  const burrow = await startBurrow({ process: true });
  await burrow.close();
  await burrow.close();
  await assert.rejects(fetch(`${burrow.url}/api_keys`), /fetch failed/);
  await assert.rejects(startBurrow({ process: true, apiKey: 'no spaces allowed' }), /burrow exited with 2 before it was ready: burrow: --api-key: must be a bearer token/);
});

test('as a process, tokens that start with a dash reach the server as given (as random base64url ones do one time in 64)', async () => {
  const burrow = await startBurrow({ process: true, operatorToken: '-operator-token-with-a-dash', apiKey: '-admin-key-with-a-dash' });
  try {
    assert.equal(burrow.apiKey, '-admin-key-with-a-dash');
    const accounts = await fetch(`${burrow.url}/_burrow/accounts`, { headers: { authorization: 'Bearer -operator-token-with-a-dash' } });
    assert.equal(accounts.status, 200);
  } finally {
    await burrow.close();
  }
});

test('in-process with a seed and a manual clock: ids and times are deterministic', async () => {
  const ids = [];
  for (let i = 0; i < 2; i++) {
    await using burrow = await startBurrow({ seed: 7, clock: '2026-01-01T00:00:00Z' });
    const client = new Ngrok({ apiToken: burrow.apiKey, baseUrl: burrow.url });
    const policy = await client.ipPolicies.create({});
    assert.equal(policy.createdAt, '2026-01-01T00:00:00Z');
    ids.push(policy.id, burrow.apiKey, burrow.accountId);
  }
  assert.deepEqual(ids.slice(3), ids.slice(0, 3));
});

/**
 * With `ingress`, the vendor's real agent connects with `agentConfig()` and `fetch` reaches its
 * endpoints, in each mode; requests for https:// names go to the TLS listener, trusting the CA.
 */
for (const mode of ['in-process', 'process'] as const) {
  test(`startBurrow({ ingress: true }), ${mode}: the real agent forwards, fetch reaches it over HTTPS and HTTP`, async (t) => {
    const { default: ngrok } = await import('@ngrok/ngrok');
    const { createServer } = await import('node:http');
    const burrow = await startBurrow({ process: mode === 'process', ingress: true });
    // node:test runs after-hooks in the order they were added: the agent closes before Burrow.
    const stops: (() => unknown)[] = [];
    t.after(async () => {
      for (const stop of stops.reverse()) await stop();
    });
    stops.push(() => burrow.close());
    for (const name of ['agent', 'http_ingress', 'tls_ingress']) assert.match(burrow.listeners[name] ?? '', /^127\.0\.0\.1:\d+$/, name);
    const app = createServer((req, res) => res.end(`${req.method} ${req.url} ${req.headers['x-test'] ?? ''}`)).listen(0);
    stops.push(() => app.close());
    await new Promise((resolve) => app.once('listening', resolve));
    const config = await burrow.agentConfig();
    assert.match(config.server_addr, /^localhost:\d+$/);
    assert.notEqual((await burrow.agentConfig()).authtoken, config.authtoken, 'each call makes a credential');
    const listener = await ngrok.forward({ addr: (app.address() as { port: number }).port, ...config, traffic_policy: 'on_http_response: [{ actions: [{ type: add-headers, config: { headers: { x-through: burrow } } }] }]' });
    stops.push(() => listener.close());
    const url = new URL(listener.url()!);
    assert.equal(url.protocol, 'https:');

    const answer = await burrow.fetch(`${url.origin}/path?q=1`, { method: 'POST', headers: { 'x-test': 'yes' }, body: 'ignored' });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-through'), 'burrow');
    assert.equal(await answer.text(), 'POST /path?q=1 yes');

    // What the agent's app was sent, found by what it looked like; the exchange is journaled once its answer closed.
    const [found, ...more] = await burrow.traffic.find({ method: 'post', path: '/path', host: url.hostname, body: 'ignored', status: 200, wait_ms: 10_000 });
    assert.deepEqual(more, []);
    assert.equal(found!.request!.url, `${url.origin}/path?q=1`);
    assert.equal(found!.request!.body!.data, 'ignored');
    assert.deepEqual(await burrow.traffic.find({ path: '/path', status: '4xx' }), []);
    // Replayed through the endpoint's policy with another path: the app answers it.
    const again = await burrow.traffic.replay(found!.seq, { path: '/again', body: 'x' });
    assert.equal(again.response?.status, 200);
    assert.equal(again.response?.body?.data, 'POST /again yes');

    const plain = await burrow.fetch(`http://${url.host}/plain`);
    assert.equal(await plain.text(), 'GET /plain ');
    const nobody = await burrow.fetch('https://nobody.burrow.internal/');
    assert.equal(nobody.status, 404, 'a name of the service zone no endpoint serves');
    // A name no account configured gets the zone's certificate, which does not name it.
    await assert.rejects(burrow.fetch('https://nobody.example.com/'), (error: Error) => /altnames/.test(`${error.message} ${String((error.cause as Error | undefined)?.message)}`));
    await assert.rejects(burrow.fetch('tcp://localhost:1/'), /not HTTP/);
  });
}

test('agentConfig and fetch without the listeners they need say which option starts them', async (t) => {
  const burrow = await startBurrow({ agents: true });
  t.after(() => burrow.close());
  assert.equal(burrow.listeners.http_ingress, null);
  assert.match((await burrow.agentConfig()).server_addr, /^localhost:\d+$/);
  await assert.rejects(burrow.fetch('http://app.example.com/'), /\{ ingress: true \}.*http_ingress/);
  const bare = await startBurrow();
  t.after(() => bare.close());
  await assert.rejects(bare.agentConfig(), /\{ agents: true \}.*agent/);
});
