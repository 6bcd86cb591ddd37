import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, test } from 'node:test';
import { openJsonFileStore, type JsonFileStore } from '../../adapters/json-file-store.ts';
import { StoreWriteError } from '../../lib/store.ts';
import { diskBytes, diskState } from '../fixtures/json-file-state.ts';
import { runStoreConformance } from './conformance.ts';

const dir = mkdtempSync(join(tmpdir(), 'burrow-json-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshPath = () => join(dir, `store-${++counter}.json`);
const KEYS = { account: 'ac_1', kind: 'api_key' };

runStoreConformance('json-file', { create: () => openJsonFileStore(freshPath()) });

describe('json-file: persistence', () => {
  test('a reopened file sees every committed write', async () => {
    const path = freshPath();
    const first = await openJsonFileStore(path);
    await first.transaction(async (tx) => {
      await tx.put(KEYS, { id: 'ak_1', v: 'é' });
      await tx.put({ account: 'ac_2', kind: 'credential' }, { id: 'cr_1' });
    });
    await first.transaction(async (tx) => void (await tx.delete(KEYS, 'ak_1')));
    await first.transaction((tx) => tx.put(KEYS, { id: 'ak_2' }));
    await first.close();
    const second = await openJsonFileStore(path);
    assert.equal(await second.get(KEYS, 'ak_1'), undefined);
    assert.deepEqual(await second.get(KEYS, 'ak_2'), { id: 'ak_2' });
    assert.deepEqual(await second.get({ account: 'ac_2', kind: 'credential' }, 'cr_1'), { id: 'cr_1' });
    await second.close();
  });

  test('a missing file starts empty and is created by the first write, with its format version', async () => {
    const path = freshPath();
    const store = await openJsonFileStore(path);
    assert.equal(existsSync(path), false);
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_1' }));
    const file = JSON.parse(readFileSync(path, 'utf8'));
    assert.equal(file.format, 'burrow-store');
    assert.equal(file.version, 1);
    await store.close();
  });

  test('a corrupt file is refused with a clear message and left byte for byte', async () => {
    const path = freshPath();
    writeFileSync(path, '{"format":"burrow-store","version":1,"scopes":{');
    await assert.rejects(openJsonFileStore(path), /data file .* is corrupt: .*left it untouched/);
    assert.equal(readFileSync(path, 'utf8'), '{"format":"burrow-store","version":1,"scopes":{');
    assert.equal(existsSync(`${path}.lock`), false, 'the lock is released');
  });

  test('a file of another format or version is refused', async () => {
    const path = freshPath();
    writeFileSync(path, JSON.stringify({ format: 'burrow-store', version: 2, scopes: {} }));
    await assert.rejects(openJsonFileStore(path), /format version 2; this Burrow reads version 1 only/);
    writeFileSync(path, JSON.stringify({ posts: [] }));
    await assert.rejects(openJsonFileStore(path), /not a Burrow data file/);
  });

  test('a missing directory is a clear error', async () => {
    await assert.rejects(openJsonFileStore(join(dir, 'nope', 'x.json')), /directory .* does not exist/);
  });
});

describe('json-file: single owner', () => {
  test('a second open while the first holds the file is refused, naming the pid', async () => {
    const path = freshPath();
    const first = await openJsonFileStore(path);
    await assert.rejects(openJsonFileStore(path), new RegExp(`in use by another Burrow process \\(pid ${process.pid}\\)`));
    await first.close();
    assert.equal(existsSync(`${path}.lock`), false);
    const again = await openJsonFileStore(path);
    await again.close();
  });

  test('a stale lock of a dead process is taken over', async () => {
    const path = freshPath();
    writeFileSync(`${path}.lock`, JSON.stringify({ pid: 2 ** 22 + 12345, host: 'x' }));
    const store = await openJsonFileStore(path);
    assert.equal(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).pid, process.pid);
    await store.close();
  });
});

describe('json-file: durability', () => {
  test('parallel transactions are grouped into few writes and all resolve after them', async () => {
    const store = await openJsonFileStore(freshPath());
    await Promise.all(Array.from({ length: 100 }, (_, n) => store.transaction((tx) => tx.put(KEYS, { id: `ak_${String(n).padStart(3, '0')}` }))));
    assert.ok(store.writes < 20, `100 transactions took ${store.writes} writes`);
    assert.equal(Object.keys(diskState(store.path).ac_1!.api_key!).length, 100);
    await store.close();
  });

  test('a failed write rejects, reverts memory, keeps the old file, and later writes succeed', async () => {
    let failing = false;
    const path = freshPath();
    const store: JsonFileStore = await openJsonFileStore(path, {
      beforeWrite: () => {
        if (failing) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      },
    });
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_1', v: 1 }));
    const before = diskBytes(path);
    failing = true;
    const results = await Promise.allSettled([
      store.transaction((tx) => tx.put(KEYS, { id: 'ak_1', v: 2 })),
      store.transaction((tx) => tx.put(KEYS, { id: 'ak_2', v: 1 })),
    ]);
    for (const result of results) {
      assert.equal(result.status, 'rejected');
      assert.ok((result as PromiseRejectedResult).reason instanceof StoreWriteError);
      assert.match((result as PromiseRejectedResult).reason.message, /could not be written \(ENOSPC\)/);
    }
    assert.deepEqual(await store.get(KEYS, 'ak_1'), { id: 'ak_1', v: 1 });
    assert.equal(await store.get(KEYS, 'ak_2'), undefined);
    assert.equal(diskBytes(path), before);
    failing = false;
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_3' }));
    assert.ok(diskState(path).ac_1!.api_key!.ak_3);
    await store.close();
  });

  test('every acknowledged write survives a SIGKILL of the writing process', async () => {
    const path = freshPath();
    const writer = spawn(process.execPath, ['--import', 'tsx', new URL('../fixtures/store-writer.ts', import.meta.url).pathname, path], { stdio: ['ignore', 'pipe', 'inherit'] });
    const acknowledged: string[] = [];
    await new Promise<void>((resolve) => {
      createInterface({ input: writer.stdout! }).on('line', (line) => {
        acknowledged.push(line);
        if (acknowledged.length === 150) writer.kill('SIGKILL');
      });
      writer.once('exit', () => resolve());
    });
    assert.ok(acknowledged.length >= 150);
    const store = await openJsonFileStore(path);
    for (const id of acknowledged) assert.ok(await store.get(KEYS, id), `${id} acknowledged but lost`);
    await store.close();
  });

  test('writes go to the journal between compactions; a clean close folds it into the file', async () => {
    const path = freshPath();
    const store = await openJsonFileStore(path);
    for (let n = 0; n < 20; n++) await store.transaction((tx) => tx.put(KEYS, { id: `ak_${n}` }));
    assert.ok(readFileSync(`${path}.journal`, 'utf8').split('\n').length > 10, 'small writes are journal appends');
    assert.equal(Object.keys(diskState(path).ac_1!.api_key!).length, 20);
    await store.close();
    assert.equal(readFileSync(`${path}.journal`, 'utf8'), '');
    assert.equal(Object.keys(JSON.parse(readFileSync(path, 'utf8')).scopes.ac_1.api_key).length, 20);
  });

  test('a large journal is folded into the file', async () => {
    const path = freshPath();
    const store = await openJsonFileStore(path);
    for (let n = 0; n < 60; n++) await store.transaction((tx) => tx.put(KEYS, { id: `ak_${n}`, pad: 'x'.repeat(8 * 1024) }));
    assert.ok(readFileSync(`${path}.journal`, 'utf8').length < 300 * 1024, 'the journal was compacted');
    assert.ok(Object.keys(JSON.parse(readFileSync(path, 'utf8')).scopes.ac_1.api_key).length > 20, 'into the file');
    await store.close();
  });

  test('a torn last journal line (a crash mid-append) is ignored; a corrupt earlier line is refused', async () => {
    const path = freshPath();
    const store = await openJsonFileStore(path);
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_1' }));
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_2' }));
    const journal = readFileSync(`${path}.journal`, 'utf8');
    // Simulate a crash: no clean close (`store` is abandoned), the lock released by hand, half a
    // line appended.
    rmSync(`${path}.lock`);
    writeFileSync(`${path}.journal`, `${journal}[["ac_1\u0000api_key","ak_3",{"id"`);
    const reopened = await openJsonFileStore(path);
    assert.ok(await reopened.get(KEYS, 'ak_2'));
    assert.equal(await reopened.get(KEYS, 'ak_3'), undefined);
    await reopened.transaction((tx) => tx.put(KEYS, { id: 'ak_4' }));
    assert.ok(diskState(path).ac_1!.api_key!.ak_4, 'appends continue after the cut-off tail');
    await reopened.close();

    const broken = freshPath();
    writeFileSync(broken, JSON.stringify({ format: 'burrow-store', version: 1, scopes: {} }));
    writeFileSync(`${broken}.journal`, 'not json\n[]\n');
    await assert.rejects(openJsonFileStore(broken), /journal .* is corrupt at line 1/);
    assert.equal(readFileSync(`${broken}.journal`, 'utf8'), 'not json\n[]\n');
    assert.equal(existsSync(`${broken}.lock`), false, 'a refused open releases the lock');
  });
});
