import assert from 'node:assert/strict';
import { request as httpRequest, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createNodeListener } from '../../adapters/http/node.ts';
import { createRecord } from '../../lib/engine/resource.ts';
import { operatorIn } from '../../lib/engine/context.ts';
import { REGISTRY } from '../../lib/index.ts';
import { LIMITS } from '../../lib/index.ts';
import { everyStore } from '../fixtures/every-store.ts';
import { populateEveryKind } from '../fixtures/rich-state.ts';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../helpers.ts';

/**
 * Snapshot import (PUT /_burrow/snapshot) on every store: an export imports back exactly; a
 * snapshot holding anything the API would not have stored is refused whole with a 400 naming the
 * first bad record, and the instance answers exactly as before; the engine's indexes come from the
 * records, never from the snapshot; 100,000 records export and import back.
 */

const asOperator = { token: OPERATOR_TOKEN };
type Snapshot = { format: string; version: number; exported_at?: string; scopes: { account: string; kind: string; records: Record<string, any>[] }[] };

const exported = async (api: TestInstance): Promise<Snapshot> => {
  const res = await api.request('GET', '/_burrow/snapshot', undefined, asOperator);
  assert.equal(res.status, 200);
  return res.body;
};
/** A snapshot without its export time, scopes in a stable order: two states compare equal with it. */
const comparable = (snapshot: Snapshot) => ({ ...snapshot, exported_at: undefined, scopes: [...snapshot.scopes].sort((a, b) => `${a.account} ${a.kind}`.localeCompare(`${b.account} ${b.kind}`)) });
const zeros = (prefix: string) => `${prefix}_${'0'.repeat(27)}`;

/** The scope of `kind` with the most records (the populated account's) and its first record. */
function recordOf(snapshot: Snapshot, kind: string) {
  const scope = snapshot.scopes.filter((s) => s.kind === kind).sort((a, b) => b.records.length - a.records.length)[0];
  assert.ok(scope, `the snapshot has ${kind} records`);
  return { scope, record: scope.records[0]! };
}

/** Each class of bad record: how to make it from a good snapshot, and what the 400 says. */
const BAD: [string, (snapshot: Snapshot) => void, RegExp][] = [
  ["a credential whose acl is a string", (s) => void (recordOf(s, 'credential').record.acl = 'bind:x.example.com'), /kind "credential", id "cr_\w+"\): acl: must be a list \(got "bind:x\.example\.com"\)/],
  ['a credential with a rule that is not an ACL rule', (s) => void (recordOf(s, 'credential').record.acl = ['bind:*.example.com', 'nonsense']), /kind "credential".*acl: .*nonsense/],
  ['a tunnel session of garbage', (s) => void (recordOf(s, 'tunnel_session').scope.records[0] = { id: recordOf(s, 'tunnel_session').record.id, garbage: true }), /kind "tunnel_session", id "ts_\w+"\): created_at: is required/],
  ['a tunnel session whose credential is not an object', (s) => void (recordOf(s, 'tunnel_session').record.credential = 'cr_x'), /kind "tunnel_session".*credential: /],
  ['an endpoint of garbage', (s) => void recordOf(s, 'endpoint').scope.records.push({ id: zeros('ep'), created_at: '2026-03-01T12:00:00Z', description: '', metadata: '', url: 42 }), /kind "endpoint", id "ep_0+"\): .*url: must be a string/],
  ['a secret whose sealed value is plain text', (s) => void (recordOf(s, 'secret').record.sealed = 'the value'), /kind "secret".*sealed: must be an object/],
  ['an HTTPS edge whose routes cannot be answered', (s) => void (recordOf(s, 'https_edge').record.routes = 'none'), /kind "https_edge".*is not a HTTPS edge as Burrow stores one/],
  ['a description over 255 bytes', (s) => void (recordOf(s, 'ip_policy').record.description = 'é'.repeat(128)), /kind "ip_policy".*description: must be at most 255 bytes \(got 256\)/],
  ['an id of another kind', (s) => void (recordOf(s, 'credential').record.id = zeros('ak')), /kind "credential", id "ak_0+"\): id: must be an id of this kind \(cr_ and 27 letters or digits\)/],
  ['a record without an id', (s) => void recordOf(s, 'ip_policy').scope.records.push({ description: 'no id' }), /kind "ip_policy", id undefined\): id: must be a non-empty string/],
  ['an id twice in one scope', (s) => void recordOf(s, 'ip_policy').scope.records.push({ ...recordOf(s, 'ip_policy').record }), /kind "ip_policy".*id: appears twice in this scope/],
  ['a scope listed twice', (s) => void s.scopes.push({ ...recordOf(s, 'ip_policy').scope }), /^scopes\[\d+\]: account "ac_\w+", kind "ip_policy" appears twice \(also scopes\[\d+\]\)$/],
  ['an account holding NUL', (s) => void s.scopes.push({ account: `${recordOf(s, 'api_key').scope.account}\u0000`, kind: 'api_key', records: [] }), /^scopes\[\d+\]: account "ac_\w+\\u0000" is not among the snapshot's accounts/],
  ['a kind holding NUL', (s) => void s.scopes.push({ account: recordOf(s, 'api_key').scope.account, kind: 'api_key\u0000x', records: [{ id: 'x' }] }), /kind "api_key\\u0000x", id "x"\): kind: not a kind Burrow keeps/],
  ['a kind Burrow does not keep', (s) => void s.scopes.push({ account: recordOf(s, 'api_key').scope.account, kind: 'widget', records: [{ id: 'w' }] }), /kind "widget", id "w"\): kind: not a kind Burrow keeps/],
  ['a reference to a record that is not there', (s) => void (recordOf(s, 'ip_policy_rule').record.ip_policy_id = zeros('ipp')), /kind "ip_policy_rule".*references "ipp_0+", which is not in this account of the snapshot/],
  ['a key whose owner is not there', (s) => void (recordOf(s, 'api_key').record.owner_id = zeros('usr')), /kind "api_key".*references "usr_0+", which is not in this account/],
  ['two keys with one token', (s) => void (recordOf(s, 'api_key').scope.records[1]!.token_hash = recordOf(s, 'api_key').record.token_hash), /kind "api_key".*this token is already in use/],
  ['two vaults with one name', (s) => void recordOf(s, 'vault').scope.records.push({ ...recordOf(s, 'vault').record, id: zeros('vault') }), /kind "vault".*already named "rich"/],
  ['an SSH CA whose private key does not load', (s) => void (recordOf(s, 'ssh_certificate_authority').record.private_key_pem = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'), /kind "ssh_certificate_authority".*private_key_pem: /],
  ['a default account that is not in the snapshot', (s) => void s.scopes.find((x) => x.kind === 'setting')!.records.push({ id: 'default_account', value: zeros('ac') }), /kind "setting", id "default_account"\): value: account "ac_0+" is not in the snapshot/],
  ['a setting Burrow does not keep', (s) => void s.scopes.find((x) => x.kind === 'setting')!.records.push({ id: 'admin_mode', value: true }), /id "admin_mode"\): id: not a setting Burrow keeps/],
  ['an index pair whose id does not end with its member', (s) => void (recordOf(s, '_session_tunnel').record.member = zeros('tn')), /kind "_session_tunnel".*does not end with its member "tn_0+"/],
  ['an instance-wide unique value held by no record', (s) => void s.scopes.find((x) => x.account === '_instance' && x.kind === '_unique')!.records.push({ id: 'reserved_domain.domain:x.example.com', record_id: `${recordOf(s, 'api_key').scope.account}/${zeros('rd')}` }), /record_id: "ac_\w+\/rd_0+" is not a record of the snapshot/],
  ['an outbox of a destination that is not there', (s) => void recordOf(s, 'event_outbox').scope.records.push({ id: zeros('ed'), next: 0, oldest: 0, dropped: 0 }), /kind "event_outbox", id "ed_0+"\): id: event destination "ed_0+" is not in this account/],
  ['outbox events of a destination that is not there', (s) => void s.scopes.push({ account: recordOf(s, 'api_key').scope.account, kind: `event_outbox@${zeros('ed')}`, records: [{ id: '000000000000000' }] }), /kind "event_outbox@ed_0+".*kind: event destination "ed_0+" is not in this account/],
];

const STORES = await everyStore();

for (const store of STORES) {
  describe(`${store.name}: snapshot import`, { skip: store.skip }, () => {
    let api: TestInstance;
    let good: Snapshot;
    before(async () => {
      api = await createTestInstance({ store: await store.open() });
      await populateEveryKind(api);
      good = await exported(api);
    });
    after(() => api?.burrow.close());

    test('an export of every kind imports into another instance as the same state, and its keys work there', async () => {
      const other = await createTestInstance({ store: await store.open() });
      try {
        const imported = await other.request('PUT', '/_burrow/snapshot', good, asOperator);
        assert.equal(imported.status, 200, imported.text);
        assert.deepEqual(comparable(await exported(other)), comparable(good));
        const keys = await other.request('GET', '/api_keys', undefined, { token: api.token });
        assert.equal(keys.status, 200);
        assert.ok(keys.body.keys.length >= 3);
      } finally {
        await other.burrow.close();
      }
    });

    for (const [name, spoil, message] of BAD) {
      test(`refused whole, with a 400 naming it: ${name}; the instance answers exactly as before`, async () => {
        const snapshot = structuredClone(good);
        spoil(snapshot);
        const res = await api.request('PUT', '/_burrow/snapshot', snapshot, asOperator);
        try {
          assertError(res, 400, 9020, message);
          assert.match(res.body.msg, /^scopes\[\d+\]/);
          assert.deepEqual(comparable(await exported(api)), comparable(good));
          assert.equal((await api.request('GET', '/api_keys')).status, 200);
        } finally {
          // An import that wrongly went through must not spoil the cases after it.
          if (res.status === 200) await api.request('PUT', '/_burrow/snapshot', good, asOperator);
        }
      });
    }

    test("the engine's indexes come from the records: a forged token entry or reference is ignored", async () => {
      const snapshot = structuredClone(good);
      const tokens = snapshot.scopes.find((s) => s.account === '_instance' && s.kind === 'token')!;
      const mine = tokens.records.find((entry) => entry.kind === 'api_key')!;
      const victim = recordOf(snapshot, 'credential').record;
      tokens.records.push({ ...mine, id: 'f'.repeat(64), record_id: victim.id, kind: 'credential' });
      recordOf(snapshot, '_referrer').scope.records.push({ id: `${zeros('ipp')} ${recordOf(snapshot, 'ip_policy').record.id}`, member: recordOf(snapshot, 'ip_policy').record.id, label: 'IP policy' });
      const res = await api.request('PUT', '/_burrow/snapshot', snapshot, asOperator);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(comparable(await exported(api)), comparable(good));
    });
  });
}

describe('snapshot size', () => {
  let server: Server;
  let port: number;
  let api: TestInstance;
  before(async () => {
    api = await createTestInstance();
    server = createServer(createNodeListener(api.burrow, { operatorToken: OPERATOR_TOKEN }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  /** Status and body of a request that announces `length` bytes of body and sends none of them. */
  const announce = (method: string, path: string, length: number) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = httpRequest({ port, method, path, headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json', 'content-length': String(length) } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });

  test("a snapshot has a limit of its own (snapshot_body_bytes), not the API's", async () => {
    const { value } = LIMITS.snapshot_body_bytes;
    assertError(await announce('PUT', '/_burrow/snapshot', value + 1), 413, 812, new RegExp(`exceeds the maximum size of ${value} bytes \\(limit snapshot_body_bytes\\)$`));
    assertError(await announce('POST', '/_burrow/accounts', 1024 * 1024 + 1), 413, 812, /exceeds the maximum size of 1048576 bytes \(limit request_body_bytes\)$/);
  });
});

describe('100,000 records', () => {
  let text: string;
  let last: string;
  before(async () => {
    const source = await createTestInstance();
    for (let batch = 0; batch < 20; batch++) {
      await source.burrow.perform(operatorIn(source.accountId), async (ctx) => {
        for (let n = 0; n < 5000; n++) await createRecord(ctx, REGISTRY.ip_policies, { description: `policy ${batch * 5000 + n}` });
      });
    }
    text = JSON.stringify(await exported(source));
    last = 'policy 99999';
    assert.ok(Buffer.byteLength(text) > 1024 * 1024, 'more than the API body limit');
  });

  for (const store of STORES) {
    test(`${store.name}: an export of 100,000 records imports back, and the instance serves them`, { skip: store.skip }, async () => {
      const api = await createTestInstance({ store: await store.open() });
      try {
        const started = performance.now();
        const imported = await api.request('PUT', '/_burrow/snapshot', undefined, { ...asOperator, rawBody: text });
        const importMs = performance.now() - started;
        assert.equal(imported.status, 200, imported.text.slice(0, 300));
        assert.ok(imported.body.records > 100_000);
        const page = await api.request('GET', '/ip_policies?limit=100');
        assert.equal(page.status, 200);
        assert.equal(page.body.ip_policies[0].description, last);
        const exporting = performance.now();
        const again = await exported(api);
        const exportMs = performance.now() - exporting;
        assert.deepEqual(comparable(again), comparable(JSON.parse(text)));
        console.log(`# snapshot on ${store.name}: ${imported.body.records} records, ${(Buffer.byteLength(text) / 1024 / 1024).toFixed(1)} MiB; import ${importMs.toFixed(0)} ms, export ${exportMs.toFixed(0)} ms`);
      } finally {
        await api.burrow.close();
      }
    });
  }
});
