import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openJsonFileStore } from '../../adapters/json-file-store.ts';
import { startServer } from '../helpers.ts';
import { crashCycles, startNpmServer } from '../fixtures/crash-cycles.ts';
import { tempDir } from '../fixtures/openssh.ts';

function processState(pid: number): string | undefined {
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/** Short crash runs for every `npm test`; `npm run test:stress` runs the long ones. */
describe('crash safety (short run)', () => {
  test('SIGKILLs during concurrent writes lose no acknowledged write, and the file always opens', async () => {
    const figures = await crashCycles(3, 60);
    assert.ok(figures.acknowledged > 0);
    console.log(`# crash: ${JSON.stringify(figures)}`);
  });

  test('kill -9 of the whole `npm start` process group, restarted at once: no restart refused, nothing acknowledged lost', async () => {
    const figures = await crashCycles(2, 40, { npmGroup: true });
    assert.ok(figures.acknowledged > 0);
    assert.equal(figures.refusedRestarts, 0);
    console.log(`# crash (npm start group): ${JSON.stringify(figures)}`);
  });

  test('the data file can be opened within 100 ms of a kill -9 of the `npm start` process group', async () => {
    const dir = tempDir('burrow-restart-');
    const file = join(dir.path, 'state.json');
    const server = await startNpmServer(['--quiet', '--data', file, '--api-key', 'restart-token']);
    try {
      const created = await server.request('POST', '/credentials', { description: 'before the kill' }, { token: 'restart-token' });
      assert.equal(created.status, 201);
      const serverPid = JSON.parse(readFileSync(`${file}.lock`, 'utf8')).pid as number;
      assert.notEqual(serverPid, server.pid, 'the lock names the node server, not npm');
      server.killGroup();
      const killed = performance.now();
      const store = await openJsonFileStore(file, { lockWaitMs: 100 });
      const ms = performance.now() - killed;
      const left = processState(serverPid);
      console.log(`# data file opened ${ms.toFixed(1)} ms after the kill; the killed server was then in state ${left ?? 'gone'}`);
      await store.close();
      const restarted = await startServer(['--quiet', '--data', file, '--api-key', 'restart-token']);
      try {
        assert.equal((await restarted.request('GET', new URL(created.body.uri).pathname, undefined, { token: 'restart-token' })).status, 200);
      } finally {
        await restarted.stop();
      }
    } finally {
      server.killGroup();
      dir.remove();
    }
  });
});
