import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openJsonFileStore } from '../../adapters/stores/json-file-store.ts';
import { diskBytes, diskState } from '../fixtures/json-file-state.ts';
import { tempDir } from '../fixtures/openssh.ts';
import { createTestInstance } from '../helpers.ts';

describe('concurrency', () => {
  test('parallel PATCHes of one resource never lose a field that only one of them changed', async () => {
    const api = await createTestInstance();
    const created = await api.request('POST', '/credentials', {});
    const id = created.body.id;
    await Promise.all([
      api.request('PATCH', `/credentials/${id}`, { description: 'from A' }),
      api.request('PATCH', `/credentials/${id}`, { metadata: 'from B' }),
      api.request('PATCH', `/credentials/${id}`, { acl: ['bind:c.example.com'] }),
    ]);
    const final = (await api.request('GET', `/credentials/${id}`)).body;
    assert.equal(final.description, 'from A');
    assert.equal(final.metadata, 'from B');
    assert.deepEqual(final.acl, ['bind:c.example.com']);
  });

  test('500 parallel creates give 500 distinct ids, all listed', async () => {
    const api = await createTestInstance();
    const results = await Promise.all(Array.from({ length: 500 }, () => api.request('POST', '/ip_policies', {})));
    const ids = new Set(results.map((r) => r.body.id));
    assert.equal(ids.size, 500);
    const listed = new Set<string>();
    let next: string | null = '/ip_policies?limit=100';
    while (next) {
      const page = await api.request('GET', next.replace('http://burrow.test', ''));
      for (const p of page.body.ip_policies) listed.add(p.id);
      next = page.body.next_page_uri;
    }
    assert.deepEqual([...listed].sort(), [...ids].sort());
  });
});

describe('a store that cannot write', () => {
  test('answers 503 in the envelope, keeps memory and file consistent, and recovers', async () => {
    const dir = tempDir('burrow-full-');
    const file = join(dir.path, 'state.json');
    let full = false;
    const store = await openJsonFileStore(file, {
      beforeWrite: () => {
        if (full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    });
    try {
      const api = await createTestInstance({ store });
      const kept = await api.request('POST', '/ip_policies', { description: 'kept' });
      const before = diskBytes(file);
      full = true;
      const refused = await api.request('POST', '/ip_policies', { description: 'lost?' });
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error_code, 'ERR_BURROW_9005');
      assert.match(refused.body.msg, /not saved: .*ENOSPC/);
      const patch = await api.request('PATCH', `/ip_policies/${kept.body.id}`, { description: 'changed?' });
      assert.equal(patch.status, 503);
      assert.equal(diskBytes(file), before, 'the file and its journal are untouched');
      const listed = (await api.request('GET', '/ip_policies')).body.ip_policies;
      assert.deepEqual(listed.map((p: any) => p.description), ['kept'], 'memory matches the file');
      full = false;
      assert.equal((await api.request('POST', '/ip_policies', { description: 'after' })).status, 201);
      assert.ok(JSON.stringify(diskState(file)).includes('after'));
    } finally {
      await store.close();
      dir.remove();
    }
  });
});
