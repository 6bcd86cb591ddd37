import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { pickUpstream, type UpstreamChoice } from '../../../lib/index.ts';
import { LIMITS } from '../../../lib/limits.ts';
import { createTestInstance, type TestInstance } from '../../helpers.ts';

/**
 * Which upstream a backend sends one request to (lib/families/backends/upstream.ts), over backends
 * made through the API, with "online" and the draws given by the test.
 */

let api: TestInstance;

beforeEach(async () => {
  api = await createTestInstance();
});

async function create(kind: string, body: Record<string, unknown>): Promise<string> {
  const res = await api.request('POST', `/backends/${kind}`, body);
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

const respond = (body: string) => create('http_response', { body });

/** Draws `draws` in turn; tunnels in `online` are online. */
function choice(online: readonly string[], ...draws: number[]): UpstreamChoice {
  return { isOnline: (id) => online.includes(id), random: () => draws.shift() ?? 0 };
}

const pick = (id: string, how: UpstreamChoice) => pickUpstream(api.burrow.reader, api.accountId, id, how);

/** A stored tunnel group listing `tunnelIds` as its matched tunnels (as the agent sessions keep it). */
async function groupWith(tunnelIds: readonly string[]): Promise<string> {
  const id = await create('tunnel_group', { labels: { app: 'web' } });
  await api.burrow.store.transaction(async (tx) => {
    const record = await tx.get({ account: api.accountId, kind: 'tunnel_group_backend' }, id);
    await tx.put({ account: api.accountId, kind: 'tunnel_group_backend' }, { ...record!, tunnel_ids: [...tunnelIds] });
  });
  return id;
}

describe('pickUpstream', () => {
  test('an HTTP response backend answers itself; a static backend names its address', async () => {
    const response = await create('http_response', { status_code: 201, headers: { 'X-A': 'b' }, body: 'made' });
    assert.deepEqual(await pick(response, choice([])), { kind: 'http_response', backendId: response, status: 201, headers: { 'x-a': 'b' }, body: 'made' });
    const plain = await create('static', { address: 'App.example.com:8080' });
    assert.deepEqual(await pick(plain, choice([])), { kind: 'static', backendId: plain, host: 'app.example.com', port: 8080, tls: false });
    const v6 = await create('static', { address: '[2001:db8::1]:443', tls: { enabled: true } });
    assert.deepEqual(await pick(v6, choice([])), { kind: 'static', backendId: v6, host: '2001:db8::1', port: 443, tls: true });
  });

  test('a tunnel group draws among its online tunnels only; none online is offline', async () => {
    const group = await groupWith(['tn_a', 'tn_b', 'tn_c']);
    assert.deepEqual(await pick(group, choice(['tn_a', 'tn_c'], 0)), { kind: 'tunnel', backendId: group, tunnelId: 'tn_a' });
    assert.deepEqual(await pick(group, choice(['tn_a', 'tn_c'], 0.99)), { kind: 'tunnel', backendId: group, tunnelId: 'tn_c' });
    assert.deepEqual(await pick(group, choice([])), { kind: 'offline', reason: `tunnel group backend '${group}' has no online tunnel with its labels` });
  });

  test('a weighted backend draws a child in proportion to its weight; weights of 0 never', async () => {
    const [light, heavy, never] = [await respond('light'), await respond('heavy'), await respond('never')];
    const weighted = await create('weighted', { backends: { [never]: 0, [light]: 1, [heavy]: 3 } });
    const drawn = async (draw: number) => ((await pick(weighted, choice([], draw))) as { body: string }).body;
    assert.equal(await drawn(0), 'light');
    assert.equal(await drawn(0.24), 'light');
    assert.equal(await drawn(0.25), 'heavy');
    assert.equal(await drawn(0.999), 'heavy');
    const nothing = await create('weighted', { backends: { [never]: 0 } });
    assert.deepEqual(await pick(nothing, choice([])), { kind: 'offline', reason: `weighted backend '${nothing}' has no backend with a weight above 0` });
  });

  test('a failover backend answers with its first child that has an online upstream, else offline naming why', async () => {
    const group = await groupWith(['tn_a']);
    const fallback = await respond('fallback');
    const failover = await create('failover', { backends: [group, fallback] });
    assert.deepEqual(await pick(failover, choice(['tn_a'])), { kind: 'tunnel', backendId: group, tunnelId: 'tn_a' });
    assert.equal(((await pick(failover, choice([]))) as { body: string }).body, 'fallback');
    const only = await create('failover', { backends: [group] });
    assert.deepEqual(await pick(only, choice([])), { kind: 'offline', reason: `failover backend '${only}' has no online backend (tunnel group backend '${group}' has no online tunnel with its labels)` });
  });

  test('a backend that does not exist, a stored chain that reaches itself, and more than ingress_backend_reads backends are offline', async () => {
    assert.deepEqual(await pick('bkdhr_missing', choice([])), { kind: 'offline', reason: "backend 'bkdhr_missing' does not exist" });
    assert.deepEqual(await pick('not_a_backend', choice([])), { kind: 'offline', reason: "backend 'not_a_backend' does not exist" });

    // The API refuses cycles; a stored state may still hold one (an import, an older version).
    const a = await create('failover', {});
    const b = await create('failover', { backends: [a] });
    const scope = { account: api.accountId, kind: 'failover_backend' };
    await api.burrow.store.transaction(async (tx) => tx.put(scope, { ...(await tx.get(scope, a))!, backends: [b] }));
    const looped = await pick(a, choice([]));
    assert.equal(looped.kind, 'offline');
    assert.match((looped as { reason: string }).reason, new RegExp(`backend '${a}' reaches itself \\(${a} → ${b} → ${a}\\)`));

    const groups: string[] = [];
    for (let i = 0; i < LIMITS.ingress_backend_reads.value; i++) groups.push(await groupWith([]));
    const wide = await create('failover', {});
    await api.burrow.store.transaction(async (tx) => tx.put(scope, { ...(await tx.get(scope, wide))!, backends: groups }));
    assert.match(((await pick(wide, choice([]))) as { reason: string }).reason, /more than 64 backends to read \(limit ingress_backend_reads\)/);
  });
});
