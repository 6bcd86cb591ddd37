import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { addPair, claimUnique, findUnique, membersOf, releaseUnique, removePair } from '../../../lib/engine/indexes.ts';
import { getMany, readMany, type Store, type StoredRecord } from '../../../lib/store.ts';

/**
 * The shared store suite: every Store runs it unchanged (adding a store = one call of this plus
 * its own extras). Ids are compared as strings, so `ak_0002` > `ak_0001`.
 */
export interface StoreFactory {
  create(): Promise<Store>;
  cleanup?(store: Store): Promise<void>;
  /** Why accounts, kinds and ids holding U+0000 are out of this store's contract, if they are. */
  noNulInKeys?: string;
}

const KEYS = { account: 'ac_1', kind: 'api_key' };
const id = (n: number) => `ak_${String(n).padStart(4, '0')}`;

async function putAll(store: Store, scope: typeof KEYS, records: StoredRecord[]) {
  await store.transaction(async (tx) => {
    for (const record of records) await tx.put(scope, record);
  });
}

export function runStoreConformance(name: string, factory: StoreFactory): void {
  describe(`${name}: Store conformance`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await factory.create();
    });
    afterEach(async () => {
      await store.close();
      await factory.cleanup?.(store);
    });

    test('put then get returns an equal record', async () => {
      const record = { id: id(1), description: 'x', nested: { list: [1, 'two', null], flag: true }, text: 'héllo ✓' };
      await putAll(store, KEYS, [record]);
      assert.deepEqual(await store.get(KEYS, id(1)), record);
    });

    test('strings keep every character: NUL, a lone surrogate, escapes, emoji', async () => {
      const record = { id: id(1), description: 'a\u0000b', metadata: '\\u0000 is not NUL', nested: { text: '\u0000', lone: 'x\ud800y', emoji: '🦡', quote: '"\\' } };
      await putAll(store, KEYS, [record]);
      assert.deepEqual(await store.get(KEYS, id(1)), record);
      assert.deepEqual(await store.page(KEYS, { limit: 1 }), [record]);
    });

    test('a missing id is undefined', async () => {
      assert.equal(await store.get(KEYS, id(9)), undefined);
    });

    test('readMany (where a store has it) answers records and pages in the order asked, undefined or [] where none, in and out of a transaction', async () => {
      const other = { account: 'ac_2', kind: 'api_key' };
      const empty = { account: 'ac_3', kind: 'api_key' };
      await putAll(store, KEYS, [{ id: id(1), n: 1 }, { id: id(2), n: 2, odd: 'a\u0000b' }, { id: id(3), n: 3 }]);
      await putAll(store, other, [{ id: id(1), n: 4 }]);
      const [one, two, three, four] = [{ id: id(1), n: 1 }, { id: id(2), n: 2, odd: 'a\u0000b' }, { id: id(3), n: 3 }, { id: id(1), n: 4 }];
      const keys = [{ scope: KEYS, id: id(2) }, { scope: KEYS, id: id(9) }, { scope: other, id: id(1) }, { scope: KEYS, id: id(1) }, { scope: KEYS, id: id(2) }];
      assert.deepEqual(await getMany(store, keys), [two, undefined, four, one, two]);
      assert.deepEqual(await getMany(store, []), []);
      const reads = [
        { scope: KEYS, page: { limit: 2 } },
        { scope: other, id: id(1) },
        { scope: KEYS, page: { beforeId: id(3), limit: 5 } },
        { scope: empty, page: { limit: 5 } },
        { scope: KEYS, id: id(9) },
        { scope: other, page: { beforeId: id(1), limit: 5 } },
      ] as const;
      assert.deepEqual(await readMany(store, reads), [[three, two], four, [two, one], [], undefined, []]);
      await store.transaction(async (tx) => {
        await tx.put(KEYS, { id: id(9), n: 9 });
        assert.deepEqual(await getMany(tx, keys), [two, { id: id(9), n: 9 }, four, one, two]);
        assert.deepEqual(await readMany(tx, reads), [[{ id: id(9), n: 9 }, three], four, [two, one], [], { id: id(9), n: 9 }, []]);
      });
    });

    test('changing an object after put, or one that get returned, never changes the stored record', async () => {
      const record = { id: id(1), list: ['a'], inner: { n: 1 } };
      await putAll(store, KEYS, [record]);
      record.list.push('b');
      record.inner.n = 2;
      const got = (await store.get(KEYS, id(1))) as any;
      try {
        got.inner.n = 3;
        got.list.push('c');
      } catch {
        // frozen records throw in strict mode: also isolation
      }
      assert.deepEqual(await store.get(KEYS, id(1)), { id: id(1), list: ['a'], inner: { n: 1 } });
    });

    test('scopes are isolated by account and by kind', async () => {
      await putAll(store, KEYS, [{ id: id(1), owner: 'a' }]);
      await putAll(store, { account: 'ac_2', kind: 'api_key' }, [{ id: id(1), owner: 'b' }]);
      await putAll(store, { account: 'ac_1', kind: 'credential' }, [{ id: id(1), owner: 'c' }]);
      assert.equal((await store.get(KEYS, id(1)))?.owner, 'a');
      assert.equal((await store.get({ account: 'ac_2', kind: 'api_key' }, id(1)))?.owner, 'b');
      assert.equal((await store.get({ account: 'ac_1', kind: 'credential' }, id(1)))?.owner, 'c');
      assert.deepEqual((await store.page(KEYS, { limit: 10 })).map((r) => r.owner), ['a']);
    });

    test('page returns newest first, honours limit and the beforeId cursor', async () => {
      await putAll(store, KEYS, [3, 1, 5, 2, 4].map((n) => ({ id: id(n) })));
      assert.deepEqual((await store.page(KEYS, { limit: 10 })).map((r) => r.id), [5, 4, 3, 2, 1].map(id));
      assert.deepEqual((await store.page(KEYS, { limit: 2 })).map((r) => r.id), [id(5), id(4)]);
      assert.deepEqual((await store.page(KEYS, { beforeId: id(4), limit: 2 })).map((r) => r.id), [id(3), id(2)]);
      assert.deepEqual((await store.page(KEYS, { beforeId: id(1), limit: 2 })), []);
    });

    test('a beforeId that is not stored still pages by string order', async () => {
      await putAll(store, KEYS, [1, 2, 4].map((n) => ({ id: id(n) })));
      assert.deepEqual((await store.page(KEYS, { beforeId: id(3), limit: 10 })).map((r) => r.id), [id(2), id(1)]);
      assert.deepEqual((await store.page(KEYS, { beforeId: 'zz', limit: 1 })).map((r) => r.id), [id(4)]);
    });

    test('an empty scope pages to nothing', async () => {
      assert.deepEqual(await store.page({ account: 'nobody', kind: 'x' }, { limit: 10 }), []);
    });

    test('delete reports whether the record existed and removes it from get and page', async () => {
      await putAll(store, KEYS, [1, 2, 3].map((n) => ({ id: id(n) })));
      const results = await store.transaction(async (tx) => [await tx.delete(KEYS, id(2)), await tx.delete(KEYS, id(7))]);
      assert.deepEqual(results, [true, false]);
      assert.equal(await store.get(KEYS, id(2)), undefined);
      assert.deepEqual((await store.page(KEYS, { limit: 10 })).map((r) => r.id), [id(3), id(1)]);
    });

    test('a record put again after delete is back, once', async () => {
      await putAll(store, KEYS, [{ id: id(1) }]);
      await store.transaction(async (tx) => void (await tx.delete(KEYS, id(1))));
      await putAll(store, KEYS, [{ id: id(1), again: true }]);
      assert.deepEqual(await store.page(KEYS, { limit: 10 }), [{ id: id(1), again: true }]);
    });

    test('a transaction that throws keeps nothing and passes the error on', async () => {
      await putAll(store, KEYS, [{ id: id(1), v: 1 }]);
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.put(KEYS, { id: id(1), v: 2 });
          await tx.put(KEYS, { id: id(2) });
          await tx.delete(KEYS, id(1));
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.deepEqual(await store.get(KEYS, id(1)), { id: id(1), v: 1 });
      assert.equal(await store.get(KEYS, id(2)), undefined);
    });

    test("reads inside a transaction see its own puts and deletes, in get and page", async () => {
      await putAll(store, KEYS, [1, 2, 3].map((n) => ({ id: id(n), v: 0 })));
      await store.transaction(async (tx) => {
        await tx.put(KEYS, { id: id(4), v: 1 });
        await tx.put(KEYS, { id: id(2), v: 1 });
        await tx.delete(KEYS, id(3));
        assert.deepEqual(await tx.get(KEYS, id(2)), { id: id(2), v: 1 });
        assert.equal(await tx.get(KEYS, id(3)), undefined);
        assert.deepEqual((await tx.page(KEYS, { limit: 10 })).map((r) => [r.id, r.v]), [[id(4), 1], [id(2), 1], [id(1), 0]]);
        assert.deepEqual((await tx.page(KEYS, { limit: 2 })).map((r) => r.id), [id(4), id(2)]);
        assert.deepEqual((await tx.page(KEYS, { beforeId: id(4), limit: 1 })).map((r) => r.id), [id(2)]);
        assert.equal(await store.get(KEYS, id(4)), undefined, 'not visible outside before commit');
      });
      assert.deepEqual((await store.page(KEYS, { limit: 10 })).map((r) => r.id), [id(4), id(2), id(1)]);
    });

    test('insert puts a record only when its id is free, as the transaction sees it', async () => {
      await putAll(store, KEYS, [{ id: id(1), v: 'old' }]);
      const answers = await store.transaction(async (tx) => [
        await tx.insert(KEYS, { id: id(1), v: 'new' }),
        await tx.insert(KEYS, { id: id(2), v: 'first' }),
        await tx.insert(KEYS, { id: id(2), v: 'second' }),
        await tx.insert({ ...KEYS, kind: 'other' }, { id: id(1), v: 'other kind' }),
        await tx.delete(KEYS, id(1)),
        await tx.insert(KEYS, { id: id(1), v: 'after delete' }),
        (await tx.get(KEYS, id(2)))?.v,
      ]);
      assert.deepEqual(answers, [false, true, false, true, true, true, 'first']);
      assert.deepEqual(await store.page(KEYS, { limit: 10 }), [{ id: id(2), v: 'first' }, { id: id(1), v: 'after delete' }]);
      await assert.rejects(
        store.transaction(async (tx) => {
          assert.equal(await tx.insert(KEYS, { id: id(3) }), true);
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await store.get(KEYS, id(3)), undefined, 'an insert in a failed transaction is not kept');
    });

    test('of parallel inserts of one id exactly one wins; the others see it taken', async () => {
      const wins = await Promise.all(
        Array.from({ length: 20 }, (_, n) => store.transaction((tx) => tx.insert(KEYS, { id: id(1), by: n }))),
      );
      assert.equal(wins.filter(Boolean).length, 1);
      assert.equal((await store.get(KEYS, id(1)))?.by, wins.indexOf(true));
    });

    test('parallel read-modify-write transactions lose no update', async () => {
      await putAll(store, KEYS, [{ id: id(1), count: 0 }]);
      await Promise.all(
        Array.from({ length: 100 }, () =>
          store.transaction(async (tx) => {
            const current = (await tx.get(KEYS, id(1)))!;
            await new Promise((resolve) => setImmediate(resolve));
            await tx.put(KEYS, { ...current, count: (current.count as number) + 1 });
          }),
        ),
      );
      assert.equal((await store.get(KEYS, id(1)))?.count, 100);
    });

    test('200 parallel creates are all kept', async () => {
      await Promise.all(Array.from({ length: 200 }, (_, n) => putAll(store, KEYS, [{ id: id(n + 1) }])));
      const page = await store.page(KEYS, { limit: 500 });
      assert.equal(page.length, 200);
    });

    test('deleteAccount removes every kind of one account only', async () => {
      await putAll(store, KEYS, [{ id: id(1) }]);
      await putAll(store, { account: 'ac_1', kind: 'credential' }, [{ id: 'cr_1' }]);
      await putAll(store, { account: 'ac_2', kind: 'api_key' }, [{ id: id(1) }]);
      await store.transaction((tx) => tx.deleteAccount('ac_1'));
      assert.deepEqual(await store.page(KEYS, { limit: 10 }), []);
      assert.equal(await store.get({ account: 'ac_1', kind: 'credential' }, 'cr_1'), undefined);
      assert.ok(await store.get({ account: 'ac_2', kind: 'api_key' }, id(1)));
      const scopes = (await store.scopes()).map((s) => `${s.account}/${s.kind}`);
      assert.deepEqual(scopes, ['ac_2/api_key']);
    });

    test('scopes lists the scopes that hold records', async () => {
      await putAll(store, KEYS, [{ id: id(1) }]);
      await putAll(store, { account: '_instance', kind: 'account' }, [{ id: 'ac_1' }]);
      const scopes = (await store.scopes()).map((s) => `${s.account}/${s.kind}`).sort();
      assert.deepEqual(scopes, ['_instance/account', 'ac_1/api_key']);
    });

    test('ids order by UTF-16 code unit (SQL: COLLATE "C"), so an id range selects one key prefix', async () => {
      const ids = ['kx', 'k0', 'k!', 'k y', 'k x', 'k', 'ak_a', 'ak_B', 'ak_A', 'K z'];
      await putAll(store, KEYS, [...ids].reverse().map((text) => ({ id: text })));
      assert.deepEqual((await store.page(KEYS, { limit: 20 })).map((r) => r.id), ids);
      assert.deepEqual((await store.page(KEYS, { beforeId: 'k!', limit: 20 })).map((r) => r.id), ['k y', 'k x', 'k', 'ak_a', 'ak_B', 'ak_A', 'K z']);
    });

    test("a transaction's reads see one state, even while another transaction waits to write", async () => {
      await putAll(store, KEYS, [{ id: id(1), v: 0 }]);
      let writer: Promise<unknown> | undefined;
      const [first, second] = await store.transaction(async (tx) => {
        const before = (await tx.get(KEYS, id(1)))?.v;
        writer ??= store.transaction((other) => other.put(KEYS, { id: id(1), v: 1 }));
        for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
        return [before, (await tx.get(KEYS, id(1)))?.v, (await tx.page(KEYS, { limit: 1 }))[0]?.v];
      }).then(([a, b, c]) => {
        assert.equal(c, a, 'page agrees with get inside one transaction');
        return [a, b];
      });
      assert.equal(second, first);
      await writer;
      assert.equal((await store.get(KEYS, id(1)))?.v, 1);
    });

    test('a callback run more than once keeps only the writes and result of the run that commits', async () => {
      await putAll(store, KEYS, [{ id: id(1), count: 0 }]);
      const runs = new Map<number, number>();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          store.transaction(async (tx) => {
            const run = (runs.get(n) ?? 0) + 1;
            runs.set(n, run);
            const counter = (await tx.get(KEYS, id(1)))!;
            await tx.put(KEYS, { ...counter, count: (counter.count as number) + 1 });
            await tx.put({ account: 'ac_1', kind: 'run' }, { id: `t${String(n).padStart(2, '0')}`, run });
            return run;
          }),
        ),
      );
      assert.equal((await store.get(KEYS, id(1)))?.count, 20);
      const kept = await store.page({ account: 'ac_1', kind: 'run' }, { limit: 50 });
      assert.equal(kept.length, 20);
      for (const record of kept) assert.equal(record.run, runs.get(Number(record.id.slice(1))));
      assert.deepEqual(results, Array.from({ length: 20 }, (_, n) => runs.get(n)));
    });

    test('unique indexes (lib/engine/indexes.ts) claim, refuse and release a value', async () => {
      const held = await store.transaction(async (tx) => [
        await claimUnique(tx, 'ac_1', 'ssh_credential', 'fingerprint', 'SHA256:x', 'sshcr_1'),
        await claimUnique(tx, 'ac_1', 'ssh_credential', 'fingerprint', 'SHA256:x', 'sshcr_2'),
        await claimUnique(tx, 'ac_2', 'ssh_credential', 'fingerprint', 'SHA256:x', 'sshcr_3'),
      ]);
      assert.deepEqual(held, [undefined, 'sshcr_1', undefined]);
      assert.equal(await findUnique(store, 'ac_1', 'ssh_credential', 'fingerprint', 'SHA256:x'), 'sshcr_1');
      await store.transaction((tx) => releaseUnique(tx, 'ac_1', 'ssh_credential', 'fingerprint', 'SHA256:x', 'sshcr_1'));
      assert.equal(await findUnique(store, 'ac_1', 'ssh_credential', 'fingerprint', 'SHA256:x'), undefined);
      assert.equal(await findUnique(store, 'ac_2', 'ssh_credential', 'fingerprint', 'SHA256:x'), 'sshcr_3');
    });

    test('pair indexes (lib/engine/indexes.ts) keep one record per pair and list one key, across pages', async () => {
      const index = { account: 'ac_1', kind: '_test_pairs' };
      const member = (n: number) => `ipr_${String(n).padStart(4, '0')}`;
      await store.transaction(async (tx) => {
        for (let n = 0; n < 450; n++) await addPair(tx, index, 'ipp_1', member(n));
        await addPair(tx, index, 'ipp_10', member(9000));
        await addPair(tx, index, 'ipp_0', member(9001));
        await addPair(tx, index, 'type.v0 a/b', member(9002));
      });
      const members = await membersOf(store, index, 'ipp_1');
      assert.deepEqual(members, Array.from({ length: 450 }, (_, n) => member(n)));
      assert.deepEqual(await membersOf(store, index, 'ipp_10'), [member(9000)]);
      assert.deepEqual(await membersOf(store, index, 'type.v0 a/b'), [member(9002)]);
      assert.deepEqual(await membersOf(store, index, 'ipp_1', 2), [member(448), member(449)]);
      assert.equal(await store.transaction((tx) => removePair(tx, index, 'ipp_1', member(7))), true);
      assert.equal((await membersOf(store, index, 'ipp_1')).length, 449);
    });

    test('accounts, kinds and ids with odd characters are names like any other', async () => {
      const names = ['__proto__', 'constructor', 'toString', 'a b', 'a/b', 'a:b', '1:a', '%00', '\u0001', '\u001f', '🦡', 'é'];
      const scopes = names.flatMap((account) => names.map((kind) => ({ account, kind })));
      // Every scope holds one record, under a name that differs from scope to scope; one holds them all.
      const idIn = (n: number) => names[n % names.length]!;
      await store.transaction(async (tx) => {
        for (const [n, scope] of scopes.entries()) await tx.put(scope, { id: idIn(n), at: `${scope.account}|${scope.kind}` });
        for (const name of names) await tx.put(KEYS, { id: name });
      });
      for (const [n, scope] of scopes.entries()) {
        assert.equal((await store.get(scope, idIn(n)))?.at, `${scope.account}|${scope.kind}`);
        assert.deepEqual((await store.page(scope, { limit: 10 })).map((r) => r.id), [idIn(n)]);
      }
      for (const name of names) assert.deepEqual(await store.get(KEYS, name), { id: name });
      assert.deepEqual((await store.page(KEYS, { limit: 100 })).map((r) => r.id), [...names].sort().reverse());
      const listed = (await store.scopes()).map((scope) => JSON.stringify([scope.account, scope.kind])).sort();
      assert.deepEqual(listed, [...scopes, KEYS].map((scope) => JSON.stringify([scope.account, scope.kind])).sort());
      await store.transaction((tx) => tx.deleteAccount('a'));
      await store.transaction((tx) => tx.deleteAccount('__proto__'));
      assert.equal((await store.scopes()).length, (names.length - 1) * names.length + 1);
      assert.equal(({} as Record<string, unknown>).at, undefined, 'nothing reached Object.prototype');
    });

    test('a NUL in an account or kind never makes two scopes one (the token index stays whole)', { skip: factory.noNulInKeys ?? false }, async () => {
      const token = { account: '_instance', kind: 'token' };
      await putAll(store, token as typeof KEYS, [{ id: 'hash', record_id: 'ak_1' }]);
      const neighbours = [
        { account: '_instance\u0000token', kind: 'x' },
        { account: '_instance', kind: 'token\u0000x' },
        { account: '_instance\u0000', kind: 'token' },
        { account: '', kind: '_instance\u0000token' },
      ];
      for (const scope of neighbours) await putAll(store, scope as typeof KEYS, [{ id: 'hash', record_id: 'other' }]);
      assert.equal((await store.get(token, 'hash'))?.record_id, 'ak_1');
      assert.deepEqual((await store.page(token, { limit: 10 })).map((r) => r.record_id), ['ak_1']);
      assert.equal((await store.scopes()).length, 5);
      await store.transaction((tx) => tx.deleteAccount('_instance\u0000'));
      await store.transaction((tx) => tx.deleteAccount('_instance\u0000token'));
      assert.equal((await store.get(token, 'hash'))?.record_id, 'ak_1');
      await store.transaction(async (tx) => {
        for (const scope of neighbours) await tx.put(scope, { id: 'hash2' });
      });
      assert.equal(await store.get(token, 'hash2'), undefined);
    });

    test('close is idempotent', async () => {
      await store.close();
      await store.close();
    });
  });
}
