import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, test } from 'node:test';
import { openJsonFileStore, type JsonFileStore } from '../../../adapters/stores/json-file-store.ts';
import { StoreWriteError } from '../../../lib/store.ts';
import { diskBytes, diskState } from '../../fixtures/json-file-state.ts';
import { runStoreConformance } from './conformance.ts';

const dir = mkdtempSync(join(tmpdir(), 'burrow-json-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshPath = () => join(dir, `store-${++counter}.json`);
const KEYS = { account: 'ac_1', kind: 'api_key' };
const HOLDER = new URL('../../fixtures/lock-holder.ts', import.meta.url).pathname;

/**
 * The files of this process open on `path` or beside it (its journal, lock, temp file), from
 * /proc: a store must close every one, or node closes it on garbage collection with a DEP0137
 * warning in the middle of a test run. Empty where there is no /proc.
 */
function openFilesOf(path: string): string[] {
  if (!existsSync('/proc/self/fd')) return [];
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(path) || target.includes(`.${path.split('/').at(-1)}.`) ? [target] : [];
    } catch {
      return [];
    }
  });
}

/** The next line a child prints (rejects if it exits first). */
function nextLine(child: ChildProcess): Promise<string> {
  const lines = ((child as ChildProcess & { lines?: AsyncIterator<string> }).lines ??= createInterface({ input: child.stdout! })[Symbol.asyncIterator]());
  return lines.next().then((next) => {
    if (next.done) throw new Error('the process ended without a line');
    return next.value;
  });
}

/** Starts test/fixtures/lock-holder.ts on `path`, optionally under a wrapper command (detached). */
function spawnHolder(path: string, args: string[] = [], wrapper: string[] = []) {
  const command = [...wrapper, process.execPath, '--import', 'tsx', HOLDER, path, ...args];
  const child = spawn(command[0]!, command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'], detached: wrapper.length > 0 });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, next: () => nextLine(child) };
}

/** The state letter in /proc/<pid>/stat (R, S, Z…), or undefined once the process is gone. */
function processState(pid: number): string | undefined {
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

function canUnshare(): boolean {
  return process.getuid?.() === 0 && spawnSync('unshare', ['--pid', '--fork', 'true']).status === 0;
}

/**
 * Closes a store a test abandoned to simulate a crash, once the test no longer reads its file: a
 * crashed process's files are closed by the OS; node would otherwise close the journal's handle on
 * garbage collection (DEP0137). Its clean-close compaction writes a state nobody reads any more.
 */
const closeAbandoned = (store: JsonFileStore) => store.close();

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
    assert.equal(file.version, 3);
    await store.close();
  });

  test('an empty file (as mktemp makes) starts a new state, written by the first write', async () => {
    const path = freshPath();
    writeFileSync(path, '');
    const store = await openJsonFileStore(path);
    assert.equal(await store.get(KEYS, 'ak_1'), undefined);
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_1' }));
    await store.close();
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).format, 'burrow-store');
    const reopened = await openJsonFileStore(path);
    assert.deepEqual(await reopened.get(KEYS, 'ak_1'), { id: 'ak_1' });
    await reopened.close();
  });

  test('a corrupt file is refused with a clear message and left byte for byte', async () => {
    const path = freshPath();
    writeFileSync(path, '{"format":"burrow-store","version":1,"scopes":{');
    await assert.rejects(openJsonFileStore(path), /data file .* is corrupt: .*left it untouched/);
    assert.equal(readFileSync(path, 'utf8'), '{"format":"burrow-store","version":1,"scopes":{');
    assert.equal(existsSync(`${path}.lock`), false, 'the lock is released');
    assert.deepEqual(openFilesOf(path), [], 'no file is left open');
  });

  test('a file of another format or version is refused', async () => {
    const path = freshPath();
    writeFileSync(path, JSON.stringify({ format: 'burrow-store', version: 4, sequence: 0, scopes: {} }));
    await assert.rejects(openJsonFileStore(path), /format version 4; this Burrow reads versions 1, 2 and 3 only/);
    writeFileSync(path, JSON.stringify({ posts: [] }));
    await assert.rejects(openJsonFileStore(path), /not a Burrow data file/);
  });

  test('records that are not objects under their own ids (a damaged token index) are refused, naming where, the file untouched', async () => {
    const token = (records: unknown) => JSON.stringify({ format: 'burrow-store', version: 3, sequence: 0, scopes: { _instance: { token: records } } });
    const cases: [string, RegExp][] = [
      [token({ ab12: 'ak_1' }), /scopes\["_instance"\]\["token"\]\["ab12"\] is not a record with that id/],
      [token({ ab12: { account: 'ac_1', record_id: 'ak_1' } }), /\["ab12"\] is not a record with that id/],
      [token({ ab12: { id: 'cd34', record_id: 'ak_1' } }), /\["ab12"\] is not a record with that id/],
      [token({ ab12: ['ab12'] }), /\["ab12"\] is not a record with that id/],
      [token([{ id: 'ab12' }]), /scopes\["_instance"\]\["token"\] is not an object of records by id/],
      [JSON.stringify({ format: 'burrow-store', version: 3, sequence: 0, scopes: { _instance: [] } }), /scopes\["_instance"\] is not an object of kinds/],
    ];
    for (const [text, message] of cases) {
      const path = freshPath();
      writeFileSync(path, text);
      await assert.rejects(openJsonFileStore(path), (error: Error) => {
        assert.match(error.message, /data file .* is corrupt: /);
        assert.match(error.message, message);
        return true;
      });
      assert.equal(readFileSync(path, 'utf8'), text);
    }
    const path = freshPath();
    writeFileSync(path, token({}));
    writeFileSync(`${path}.journal`, `${JSON.stringify({ seq: 1, changes: [['_instance', 'token', 'ab12', { id: 'other' }]] })}\n`);
    await assert.rejects(openJsonFileStore(path), /journal .* is corrupt at line 1: change 1 is not \[account, kind, id, record or null\]/);
  });

  test('accounts, kinds and ids such as __proto__ or holding NUL survive the journal and a compaction', async (t) => {
    const path = freshPath();
    const scopes = [
      { account: '__proto__', kind: 'constructor' },
      { account: 'ac_1', kind: '__proto__' },
      { account: 'ac\u0000x', kind: 'k' },
      { account: 'ac', kind: '\u0000xk' },
    ];
    const record = { id: '__proto__', nested: JSON.parse('{"__proto__": {"kept": true}}') };
    // `first` stands for a process that died before folding its journal into the file: its lock
    // is taken away and it is closed only at the end, after the others have read its journal.
    const first = await openJsonFileStore(path);
    t.after(() => first.close());
    for (const scope of scopes) await first.transaction((tx) => tx.put(scope, { ...record, at: scope.account + scope.kind }));
    rmSync(`${path}.lock`);
    for (const stage of ['journal', 'file']) {
      const store = await openJsonFileStore(path);
      for (const scope of scopes) {
        const got = await store.get(scope, '__proto__');
        assert.equal(got?.at, scope.account + scope.kind, `${stage}: ${JSON.stringify(scope)}`);
        assert.deepEqual(Object.getOwnPropertyDescriptor(got!.nested, '__proto__')?.value, { kept: true }, `${stage}: a nested __proto__ field is a field`);
      }
      assert.equal((await store.scopes()).length, scopes.length);
      await store.close();
    }
    assert.equal(({} as Record<string, unknown>).at, undefined, 'nothing reached Object.prototype');
    await first.close();
    assert.deepEqual(openFilesOf(path), [], 'no file is left open');
  });

  test('a missing directory is a clear error', async () => {
    await assert.rejects(openJsonFileStore(join(dir, 'nope', 'x.json')), /directory .* does not exist/);
  });
});

describe('json-file: single owner', () => {
  test('a second open while the first holds the file is refused, naming the pid', async () => {
    const path = freshPath();
    const first = await openJsonFileStore(path);
    await assert.rejects(openJsonFileStore(path, { lockWaitMs: 0 }), new RegExp(`in use by another Burrow process \\(pid ${process.pid} on `));
    await first.close();
    assert.equal(existsSync(`${path}.lock`), false);
    const again = await openJsonFileStore(path);
    await again.close();
  });

  test('a live holder in another process blocks; one that is shutting down is waited for', async () => {
    const path = freshPath();
    const holder = spawnHolder(path);
    try {
      const pid = Number((await holder.next()).replace('held ', ''));
      await assert.rejects(openJsonFileStore(path, { lockWaitMs: 0 }), new RegExp(`in use by another Burrow process \\(pid ${pid} on .*, since `));
      const opening = openJsonFileStore(path, { lockWaitMs: 10_000 });
      holder.child.stdin!.end();
      const store = await opening;
      assert.ok(await store.get({ account: 'ac_1', kind: 'holder' }, `pid_${pid}`), 'the holder finished its writes first');
      await store.close();
    } finally {
      holder.child.kill('SIGKILL');
    }
  });

  test('a lock file naming our own pid (a restart that got the dead one\'s pid) does not block', async () => {
    const path = freshPath();
    writeFileSync(`${path}.lock`, JSON.stringify({ pid: process.pid, host: hostname() }));
    const store = await openJsonFileStore(path, { lockWaitMs: 0 });
    await store.close();
  });

  test('a lock file naming an unrelated live process (a reused pid) does not block', async () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      for (const pid of [sleeper.pid!, 1]) {
        const path = freshPath();
        writeFileSync(`${path}.lock`, JSON.stringify({ pid, host: hostname() }));
        const store = await openJsonFileStore(path, { lockWaitMs: 0 });
        assert.match(readFileSync(`${path}.lock`, 'utf8'), new RegExp(`"pid":${process.pid}`));
        await store.close();
      }
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  test('a holder killed with kill -9 and left a zombie (never reaped) does not block', async () => {
    const path = freshPath();
    // The shell becomes `sleep`, which never reaps its child: the killed holder stays a zombie.
    const parent = spawn('sh', ['-c', `"$0" --import tsx "$1" "$2" & exec sleep 60`, process.execPath, HOLDER, path], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const pid = Number((await nextLine(parent)).replace('held ', ''));
      process.kill(pid, 'SIGKILL');
      // Z shows once the main thread is done; the other threads may still be exiting, holding the
      // descriptors (lockWaitMs covers that in real life). Wait until only the zombie is left.
      while (processState(pid) !== 'Z' || readdirSync(`/proc/${pid}/task`).length > 1) await new Promise((resolve) => setTimeout(resolve, 5));
      const store = await openJsonFileStore(path, { lockWaitMs: 0 });
      assert.equal(processState(pid), 'Z', 'the holder was still a zombie');
      assert.ok(await store.get({ account: 'ac_1', kind: 'holder' }, `pid_${pid}`));
      await store.close();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  test('processes racing for a stale lock: exactly one wins, and the others name it', async () => {
    const path = freshPath();
    const killed = spawnHolder(path);
    await killed.next();
    killed.child.kill('SIGKILL');
    await killed.exited;
    const stale = readFileSync(`${path}.lock`, 'utf8');
    for (let round = 0; round < 2; round++) {
      writeFileSync(`${path}.lock`, stale);
      const racers = Array.from({ length: 3 }, () => spawnHolder(path, ['--on-go']));
      try {
        for (const racer of racers) assert.equal(await racer.next(), 'ready');
        for (const racer of racers) racer.child.stdin!.write('go\n');
        const outcomes = await Promise.all(racers.map((racer) => racer.next()));
        const winners = outcomes.filter((line) => line.startsWith('held '));
        assert.equal(winners.length, 1, outcomes.join('\n'));
        for (const line of outcomes.filter((line) => !line.startsWith('held '))) {
          assert.match(line, new RegExp(`^refused data file .* is in use by another Burrow process \\(pid ${winners[0]!.slice(5)} on `));
        }
      } finally {
        for (const racer of racers) racer.child.stdin!.end();
        await Promise.all(racers.map((racer) => racer.exited));
      }
    }
  });

  test('pid namespaces: a restart that gets the same pid as the killed holder takes the file', { skip: canUnshare() ? false : 'needs root and unshare(1)' }, async () => {
    const path = freshPath();
    const pids: number[] = [];
    for (let run = 0; run < 2; run++) {
      const holder = spawnHolder(path, [], ['unshare', '--pid', '--fork', '--kill-child']);
      try {
        const line = await holder.next();
        assert.match(line, /^held \d+$/);
        pids.push(Number(line.slice(5)));
      } finally {
        process.kill(-holder.child.pid!, 'SIGKILL');
      }
    }
    assert.equal(pids[0], pids[1], 'both runs had the same pid');
    const store = await openJsonFileStore(path);
    assert.equal((await store.page({ account: 'ac_1', kind: 'holder' }, { limit: 10 })).length, 1, 'one record: both runs wrote the same id');
    await store.close();
  });
});

describe('json-file: journal replay exactly once', () => {
  const CRASH = new URL('../../fixtures/compaction-crash.ts', import.meta.url).pathname;
  const S = { account: 'ac_1', kind: 'thing' };
  const AFTER_2 = [{ id: 'b', v: 2 }, { id: 'a', v: 2 }];
  const AFTER_3 = [{ id: 'd', v: 1 }, { id: 'a', v: 3 }];
  // Before the rename the third transaction exists nowhere on disk; from the rename on, the file
  // holds it whole, and the journal's older lines must not be replayed over it.
  const CASES = [
    ['temp-written', AFTER_2],
    ['renamed', AFTER_3],
    ['journal-truncating', AFTER_3],
    ['journal-truncated', AFTER_3],
  ] as const;

  for (const [step, expected] of CASES) {
    test(`a crash at compaction step ${step} leaves the last acknowledged state${expected === AFTER_3 ? ' plus the compacted transaction, whole' : ''}`, async () => {
      const path = freshPath();
      const child = spawn(process.execPath, ['--import', 'tsx', CRASH, path, step], { stdio: ['ignore', 'pipe', 'inherit'] });
      const acks: string[] = [];
      createInterface({ input: child.stdout! }).on('line', (line) => acks.push(line));
      const signal = await new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      assert.equal(signal, 'SIGKILL');
      assert.deepEqual(acks, ['ack 1', 'ack 2']);
      const store = await openJsonFileStore(path);
      assert.deepEqual(await store.page(S, { limit: 10 }), expected);
      await store.transaction((tx) => tx.put(S, { id: 'e', v: 1 }));
      await store.close();
      const again = await openJsonFileStore(path);
      assert.deepEqual(await again.page(S, { limit: 10 }), [{ id: 'e', v: 1 }, ...expected], 'later writes continue the sequence');
      await again.close();
    });
  }

  test('without a crash, the compaction acknowledges the transaction and empties the journal', async () => {
    const path = freshPath();
    const child = spawn(process.execPath, ['--import', 'tsx', CRASH, path, 'none'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (chunk) => (out += chunk));
    assert.equal(await new Promise((resolve) => child.once('exit', resolve)), 0);
    assert.equal(out, 'ack 1\nack 2\nack 3\n');
    assert.equal(readFileSync(`${path}.journal`, 'utf8'), '');
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).sequence, 3);
  });

  test('a journal that does not continue the file (a gap in sequence numbers) is refused, both untouched', async () => {
    const path = freshPath();
    writeFileSync(path, JSON.stringify({ format: 'burrow-store', version: 3, sequence: 4, scopes: {} }));
    const journal = `${JSON.stringify({ seq: 4, changes: [] })}\n${JSON.stringify({ seq: 6, changes: [['ac_1', 'thing', 'x', { id: 'x' }]] })}\n`;
    writeFileSync(`${path}.journal`, journal);
    const before = diskBytes(path);
    await assert.rejects(openJsonFileStore(path), /journal .* does not continue data file .*: line 2 has sequence 6, expected 5/);
    assert.equal(diskBytes(path), before);
  });

  test('a version 1 file and its journal (no sequence numbers) are read and rewritten as version 3', async () => {
    const path = freshPath();
    writeFileSync(path, JSON.stringify({ format: 'burrow-store', version: 1, scopes: { ac_1: { thing: { a: { id: 'a', v: 1 } } } } }));
    writeFileSync(`${path}.journal`, `${JSON.stringify([['ac_1\u0000thing', 'a', null], ['ac_1\u0000thing', 'b', { id: 'b' }]])}\n`);
    const store = await openJsonFileStore(path);
    assert.deepEqual(await store.page(S, { limit: 10 }), [{ id: 'b' }]);
    const file = JSON.parse(readFileSync(path, 'utf8'));
    assert.equal(file.version, 3);
    assert.deepEqual(file.scopes, { ac_1: { thing: { b: { id: 'b' } } } });
    assert.equal(readFileSync(`${path}.journal`, 'utf8'), '');
    await store.close();
  });
});

describe('json-file: file modes', () => {
  test('the data file, its journal and its lock are created 0600 (they hold CA private keys)', async () => {
    const path = freshPath();
    const store = await openJsonFileStore(path);
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_1' }));
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_2' }));
    const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
    assert.deepEqual([mode(path), mode(`${path}.journal`), mode(`${path}.lock`)], ['600', '600', '600']);
    await store.close();
    assert.equal(mode(path), '600', 'also after the compaction on close');
  });

  test('an existing data file and journal readable by others are made 0600 on open (token hashes, sealed secrets)', async () => {
    const path = freshPath();
    const store = await openJsonFileStore(path);
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_1' }));
    await store.transaction((tx) => tx.put(KEYS, { id: 'ak_2' }));
    rmSync(`${path}.lock`);
    chmodSync(path, 0o644);
    chmodSync(`${path}.journal`, 0o644);
    const reopened = await openJsonFileStore(path);
    const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
    assert.deepEqual([mode(path), mode(`${path}.journal`)], ['600', '600'], 'before any write');
    assert.ok(await reopened.get(KEYS, 'ak_2'));
    await reopened.close();
    await closeAbandoned(store);
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
    const writer = spawn(process.execPath, ['--import', 'tsx', new URL('../../fixtures/store-writer.ts', import.meta.url).pathname, path], { stdio: ['ignore', 'pipe', 'inherit'] });
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
    await closeAbandoned(store);

    const broken = freshPath();
    writeFileSync(broken, JSON.stringify({ format: 'burrow-store', version: 1, scopes: {} }));
    writeFileSync(`${broken}.journal`, 'not json\n[]\n');
    await assert.rejects(openJsonFileStore(broken), /journal .* is corrupt at line 1/);
    assert.equal(readFileSync(`${broken}.journal`, 'utf8'), 'not json\n[]\n');
    assert.equal(existsSync(`${broken}.lock`), false, 'a refused open releases the lock');
  });
});
