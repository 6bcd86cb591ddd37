import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { holdConnection, whenFileExists } from '../fixtures/waits.ts';
import { startServer } from '../helpers.ts';
import { writeReadyFile } from '../../bin/ready-file.ts';

/**
 * `--ready-file FILE` (what tools in any language wait on) and the launcher watch: the server stops
 * when the process that launched it goes away, even through a shell (npx runs npm → sh → node).
 */

const BIN = new URL('../../bin/burrow.ts', import.meta.url).pathname;
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'burrow-ready-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('--ready-file', () => {
  test('holds url, the generated admin key, operator token, account, listeners and pid, for the owner only; removed when the server stops', async () => {
    const file = join(dir, 'generated.json');
    const server = await startServer(['--quiet', '--ready-file', file]);
    const ready = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(Object.keys(ready), ['url', 'api_key', 'operator_token', 'account_id', 'listeners', 'pid']);
    assert.equal(ready.url, server.url);
    assert.equal(ready.api_key, server.token);
    assert.equal(ready.operator_token, server.operatorToken);
    assert.match(ready.account_id, /^ac_/);
    assert.deepEqual(ready.listeners, { api: new URL(server.url).host, agent: null, ssh: null, http_ingress: null, tls_ingress: null });
    assert.equal(ready.pid, server.process.pid);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal((await server.request('GET', '/api_keys', undefined, { token: ready.api_key })).status, 200);
    assert.equal((await server.request('GET', '/_burrow/faults', undefined, { token: ready.operator_token })).status, 200);
    assert.equal(await server.stop(), 0);
    assert.equal(existsSync(file), false);
  });

  test('names the --api-key key it was given', async () => {
    const file = join(dir, 'given.json');
    const server = await startServer(['--quiet', '--ready-file', file, '--api-key', 'given-key', '--operator-token', 'given-operator']);
    const ready = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(ready.api_key, 'given-key');
    assert.equal(ready.operator_token, 'given-operator');
    await server.stop();
  });
});

describe('writing the ready file', () => {
  test('a write that fails leaves no temporary file holding the secrets', () => {
    const place = join(dir, 'occupied');
    mkdirSync(place);
    writeFileSync(join(place, 'inside'), '');
    const contents = { url: 'http://127.0.0.1:1', api_key: 'secret-key', operator_token: 'secret-operator', account_id: 'ac_1', listeners: {}, pid: process.pid };
    assert.throws(() => writeReadyFile(place, contents));
    assert.deepEqual(readdirSync(dir).filter((name) => name.endsWith('.tmp')), []);
  });
});

describe('the launcher watch', () => {
  // The timeout only guards against a hang (a server that never stops); the test waits on the close.
  test('killing the process that launched the server through a shell stops the server', { timeout: 120_000 }, async () => {
    const file = join(dir, 'launched.json');
    // The launcher runs the server through `sh -c` (as npm does); the trailing command keeps the shell from exec-ing node.
    const command = `'${process.execPath}' --import tsx '${BIN}' --port 0 --quiet --ready-file '${file}'; true`;
    const launcher = spawn(process.execPath, ['-e', `require('node:child_process').spawn('sh', ['-c', ${JSON.stringify(command)}], { stdio: 'inherit' }); setInterval(() => {}, 1 << 30);`], { stdio: 'ignore' });
    const launcherExited = new Promise((resolve) => launcher.once('exit', resolve));
    try {
      await whenFileExists(file);
      const ready = JSON.parse(readFileSync(file, 'utf8'));
      assert.notEqual(ready.pid, launcher.pid);
      const { closed } = await holdConnection(ready.url);
      launcher.kill('SIGKILL');
      await launcherExited;
      await closed;
      assert.equal(existsSync(file), false, 'the server stopped as on a signal: it removed its ready file');
    } finally {
      launcher.kill('SIGKILL');
    }
  });
  // The timeout only guards against a hang (a watch that never fires); the test waits on the lines.
  test('a launcher killed while the server is still starting counts too: the chain is read at the start, not when it serves', { timeout: 120_000 }, async () => {
    const fixture = new URL('../fixtures/launcher-capture.ts', import.meta.url).pathname;
    const command = `'${process.execPath}' --import tsx '${fixture}'; true`;
    const launcher = spawn(process.execPath, ['-e', `require('node:child_process').spawn('sh', ['-c', ${JSON.stringify(command)}], { stdio: 'inherit' }); setInterval(() => {}, 1 << 30);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const launcherExited = new Promise((resolve) => launcher.once('exit', resolve));
    // The stand-in's stdout is the launcher's, inherited: it stays open after the launcher dies.
    const lines = createInterface({ input: launcher.stdout! })[Symbol.asyncIterator]();
    let pid = 0;
    try {
      const captured = (await lines.next()).value as string;
      assert.match(captured, /^captured \d+$/);
      pid = Number(captured.split(' ')[1]);
      launcher.kill('SIGKILL');
      await launcherExited;
      // Only now does it start watching, as a server that became ready after its launcher died.
      process.kill(pid, 'SIGUSR2');
      assert.equal((await lines.next()).value, 'gone');
    } finally {
      launcher.kill('SIGKILL');
      if (pid) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
});
