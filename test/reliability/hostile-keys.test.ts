import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { everyStore } from '../fixtures/every-store.ts';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../helpers.ts';

/**
 * Text that no store key can be (NUL, which PostgreSQL text refuses; an unpaired surrogate) names
 * no record, wherever it comes in: a path id, `before_id`, a body field naming another resource, a
 * control-plane account. Each answers as an unknown id does (404), `before_id` a 400 naming the
 * parameter, never a 5xx, on every store.
 */

const NUL = '%00';
const asOperator = { token: OPERATOR_TOKEN };
const concrete = (path: string, value: string) => path.replace(/:([A-Za-z_]+)/g, () => value);

for (const store of await everyStore()) {
  describe(`${store.name}: ids holding NUL or unpaired surrogates`, { skip: store.skip }, () => {
    let api: TestInstance;
    after(() => api?.burrow.close());

    test('every operation with a path id answers 404 or 400 for an id holding NUL, and the instance serves on', async () => {
      api = await createTestInstance({ store: await store.open() });
      const withIds = api.burrow.operations.filter((op) => op.path.includes(':'));
      for (const op of withIds) {
        const res = await api.request(op.method, concrete(op.path, `x${NUL}y`), op.body ? {} : undefined);
        assert.ok(res.status === 404 || res.status === 400, `${op.method} ${op.path}: ${res.status} ${res.text.slice(0, 200)}`);
      }
      for (const op of withIds.filter((op) => op.method === 'GET')) {
        const res = await api.request('GET', concrete(op.path, `ak_${NUL}`));
        assert.equal(res.status, 404, `GET ${op.path}`);
      }
      assertError(await api.request('GET', `/api_keys/ak_${NUL}`), 404, 9001, /API key 'ak_\u0000' was not found/);
      assert.equal((await api.request('GET', '/api_keys')).status, 200);
    });

    test('before_id (or beforeId) holding NUL is a 400 naming the parameter, on every list', async () => {
      for (const op of api.burrow.operations.filter((op) => op.method === 'GET' && op.query?.includes('before_id'))) {
        const path = concrete(op.path, 'x');
        const res = await api.request('GET', `${path}?before_id=ak_${NUL}`);
        // A list under a parent answers the parent's 404 before it reads the page.
        if (res.status === 404 && op.path.includes(':')) continue;
        assertError(res, 400, 230, /^before_id: must be an id, and ids never hold NUL or unpaired surrogates \(got "ak_\\u0000"\)$/);
      }
      assertError(await api.request('GET', `/credentials?beforeId=${NUL}`), 400, 230, /^beforeId: must be an id/);
    });

    test('a body field naming another resource by an id holding NUL is that resource\'s 404', async () => {
      assertError(await api.request('POST', '/ip_policy_rules', { ip_policy_id: 'ipp_\u0000', cidr: '10.0.0.0/8', action: 'allow' }), 404, 1402, /ip_policy_id: IP policy 'ipp_\u0000' was not found/);
      assert.equal((await api.request('POST', '/backends/failover', { backends: ['bkdwd_\u0000'] })).status, 404);
      assert.equal((await api.request('POST', '/event_subscriptions', { destination_ids: ['ed_\u0000'] })).status, 404);
      assert.equal((await api.request('POST', '/vault_secrets', { name: 'S', value: 'v', vault_name: 'x\u0000' })).status, 404);
      assert.deepEqual((await api.request('GET', `/endpoints?id=ep_${NUL}`)).body.endpoints, []);
    });

    test('control-plane account ids holding NUL are unknown accounts', async () => {
      assertError(await api.request('POST', `/_burrow/accounts/ac_${NUL}/application_users`, {}, asOperator), 404, 9001, /account 'ac_\u0000' was not found/);
      assertError(await api.request('POST', '/_burrow/reset', { account_id: 'ac_\u0000' }, asOperator), 404, 9001, /account 'ac_\u0000' was not found/);
      assert.equal((await api.request('GET', `/_burrow/accounts/ac_${NUL}/records/x`, undefined, asOperator)).status, 404);
    });

    test('in process, an id with an unpaired surrogate is unknown too', async () => {
      const client = api.burrow.client(api.token);
      await assert.rejects(client.resource('api_keys').get('ak_\ud800'), (error: { status?: number }) => error.status === 404);
      await assert.rejects(client.resource('api_keys').list({ before_id: 'ak_\udc00' }), (error: { status?: number; message?: string }) => error.status === 400 && /^before_id: /.test(error.message ?? ''));
      assert.equal((await client.resource('api_keys').list()).keys.length, 1);
    });
  });
}
