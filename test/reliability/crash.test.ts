import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openJsonFileStore } from '../../adapters/stores/json-file-store.ts';
import { startServer } from '../helpers.ts';
import { crashCycles, startNpmServer } from '../fixtures/crash-cycles.ts';
import { tempDir } from '../fixtures/openssh.ts';

/** Whether a process has exited: gone, or a zombie whose threads have all finished. */
function hasExited(pid: number): boolean {
  const state = processState(pid);
  if (state !== 'Z') return state === undefined;
  try {
    return readdirSync(`/proc/${pid}/task`).length <= 1;
  } catch {
    return true;
  }
}

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

  test('the data file opens as soon as the killed `npm start` server has exited, reaped or not', async () => {
    const dir = tempDir('burrow-restart-');
    const file = join(dir.path, 'state.json');
    const server = await startNpmServer(['--quiet', '--data', file, '--api-key', 'restart-token']);
    try {
      const created = await server.request('POST', '/credentials', { description: 'before the kill' }, { token: 'restart-token' });
      assert.equal(created.status, 201);
      const serverPid = JSON.parse(readFileSync(`${file}.lock`, 'utf8')).pid as number;
      assert.notEqual(serverPid, server.pid, 'the lock names the node server, not npm');
      server.killGroup();
      // The event the lock depends on: the server's last thread is gone (a zombie, re-parented and
      // not yet reaped, or reaped). No pid check and no reaping is needed for the file to open at once.
      while (!hasExited(serverPid)) await new Promise((resolve) => setTimeout(resolve, 2));
      const left = processState(serverPid);
      const store = await openJsonFileStore(file, { lockWaitMs: 0 });
      console.log(`# data file opened at once after the kill; the killed server was then in state ${left ?? 'gone'}`);
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
