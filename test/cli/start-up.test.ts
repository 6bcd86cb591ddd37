import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { REUSED_ACCOUNT_HINT } from '../../bin/burrow.ts';
import { startServer } from '../helpers.ts';

/**
 * Every way `burrow serve` can fail to start: one `burrow: …` line on stderr (no stack trace), exit
 * 2 for a usage error and 1 for a runtime one, and no secret printed by a server that never served.
 */

const BIN = new URL('../../bin/burrow.ts', import.meta.url).pathname;

/** Runs the CLI to its exit; resolves with its exit code and both streams, complete. */
function burrow(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', BIN, ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? (error as { code?: number }).code ?? null : 0, stdout, stderr });
    });
  });
}

const STACK_FRAME = /^\s+at |\.(ts|js):\d+:\d+/m;

/** Asserts a refused start: the exit code, one line matching `message` (before any usage text) and no secret. */
function assertRefused(result: { code: number | null; stdout: string; stderr: string }, code: number, message: RegExp): void {
  assert.equal(result.code, code, result.stderr);
  assert.match(result.stderr.split('\n')[0]!, message);
  assert.doesNotMatch(result.stderr, STACK_FRAME, result.stderr);
  const printed = `${result.stdout}${result.stderr}`;
  assert.doesNotMatch(printed, /admin API key \(shown once\)|operator token for \/_burrow/, 'no secret from a server that did not start');
}

let dir: string;
let busy: Server;
let busyPort: number;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'burrow-start-up-'));
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  busyPort = (busy.address() as { port: number }).port;
});
after(() => {
  busy.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('start-up failures', () => {
  test('usage errors exit 2 with one line, and a pointer to --help instead of the usage', async () => {
    for (const [args, message] of [
      [['--bogus'], /^burrow: unknown option --bogus$/],
      [['--prot', '1'], /^burrow: unknown option --prot; did you mean --port\?$/],
      [['--api-kye=x'], /^burrow: unknown option --api-kye; did you mean --api-key\?$/],
      [['--data'], /^burrow: --data needs a value \(--data VALUE\)$/],
      [['--cors=yes'], /^burrow: --cors takes no value$/],
      [['--port', '70000'], /^burrow: --port must be a whole number from 0 to 65535 \(got 70000\)$/],
      [['--trust-proxy', '10.0.0.1/8'], /^burrow: --trust-proxy: "10\.0\.0\.1\/8" is not a hop count, an IP address, a CIDR or one of loopback, linklocal, uniquelocal \(did you mean 10\.0\.0\.0\/8\?\)$/],
      [['--error-prefix', 'ngrok'], /^burrow: --error-prefix must be 1 to 32 characters of A-Z, 0-9 and _, starting with a letter, such as ERR_NGROK_ \(got "ngrok"\)$/],
      [['--secrets-key-file', join(dir, 'missing.key')], /^burrow: --secrets-key-file .*missing\.key: ENOENT/],
      [['--data', 'mysql://burrow@127.0.0.1/burrow'], /^burrow: --data takes a file path or a postgres:\/\/ \(postgresql:\/\/\) URL; mysql:\/\/ is not a store Burrow has$/],
      [['--ready-file', join(dir, 'no-such-dir', 'ready.json')], /^burrow: --ready-file .*ready\.json: there is no directory .*no-such-dir to write it in$/],
      [['--ready-file', dir], /^burrow: --ready-file names a file to write, and .* is a directory \(e\.g\. --ready-file .*burrow\.json\)$/],
    ] as const) {
      const result = await burrow(['--port', '0', ...args]);
      assertRefused(result, 2, message);
      assert.deepEqual(result.stderr.split('\n').slice(1), ['Run burrow --help for the options.', ''], args.join(' '));
    }
    assert.deepEqual(readdirSync(dir).filter((name) => name.endsWith('.tmp')), [], 'no temporary ready file left');
  });

  test('an empty data file starts a new state; a restart on it says how to get an admin key', async () => {
    const file = join(dir, 'empty.json');
    writeFileSync(file, '');
    const first = await startServer(['--data', file, '--quiet']);
    assert.ok(first.token, 'the new default account printed its key');
    assert.equal(await first.stop('SIGTERM'), 0);
    const second = await startServer(['--data', file, '--quiet']);
    try {
      assert.equal(second.token, undefined);
      assert.ok(second.output.includes(REUSED_ACCOUNT_HINT), second.output.join('\n'));
    } finally {
      await second.stop('SIGTERM');
    }
  });

  test('a SIGTERM sent on its first line of output shuts it down cleanly: the handlers are in place before it says anything', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, '--port', '0', '--data', join(dir, 'early.json'), '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (chunk) => {
      if (stdout === '') child.kill('SIGTERM');
      stdout += String(chunk);
    });
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.once('close', (c, s) => resolve([c, s])));
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, stdout);
    assert.match(stdout, /burrow: SIGTERM received, shutting down/);
  });

  test('a data file that is no Burrow state, and PostgreSQL that does not answer, exit 1', async () => {
    const foreign = join(dir, 'foreign.json');
    writeFileSync(foreign, '{"not":"burrow"}');
    assertRefused(await burrow(['--port', '0', '--data', foreign]), 1, /^burrow: data file .*foreign\.json is not a Burrow data file/);
    assertRefused(await burrow(['--port', '0', '--data', 'postgres://burrow@127.0.0.1:1/burrow']), 1, /^burrow: PostgreSQL at .* is unreachable/);
  });

  test('a port in use: exit 1, no key or operator token printed, and no account left behind whose key nobody saw', async () => {
    const file = join(dir, 'busy.json');
    const refused = await burrow(['--port', String(busyPort), '--data', file]);
    assertRefused(refused, 1, new RegExp(`^burrow: cannot listen on 127\\.0\\.0\\.1:${busyPort}: listen EADDRINUSE`));
    assert.equal(refused.stdout, '');
    const started = await startServer(['--data', file, '--quiet']);
    try {
      assert.match(started.token ?? '', /^\w{27}_/, 'the first start that listens creates the account and prints its key');
      assert.equal((await started.request('GET', '/api_keys')).status, 200);
    } finally {
      await started.stop();
    }
  });

  test('an address this machine does not have: exit 1, nothing printed on stdout', async () => {
    const refused = await burrow(['--port', '0', '--host', '192.0.2.1']);
    assertRefused(refused, 1, /^burrow: cannot listen on 192\.0\.2\.1:0: listen EADDRNOTAVAIL/);
    assert.equal(refused.stdout, '');
  });

  test('a default account that cannot be set up: exit 1 with the reason, no stack trace, no key', async () => {
    const file = join(dir, 'taken.json');
    const first = await startServer(['--data', file, '--api-key', 'taken-admin-token', '--quiet']);
    await first.stop();
    // The default account's setting is gone, but its key is still in the token index: setting the
    // account up again with that key finds the token taken.
    const state = JSON.parse(readFileSync(file, 'utf8'));
    delete state.scopes._instance.setting;
    writeFileSync(file, JSON.stringify(state));
    assertRefused(await burrow(['--port', '0', '--data', file, '--api-key', 'taken-admin-token']), 1, /^burrow: cannot set up the default account: this token is already in use/);
  });

  test('an operator token that is the --api-key is refused before anything is created', async () => {
    const file = join(dir, 'same.json');
    assertRefused(await burrow(['--port', '0', '--data', file, '--api-key', 'same-secret-token', '--operator-token', 'same-secret-token']), 2, /^burrow: the operator token is an API key of the default account \(--api-key\)/);
    const started = await startServer(['--data', file, '--quiet']);
    try {
      assert.ok(started.token, 'the refused start created no account');
    } finally {
      await started.stop();
    }
  });
});

describe('secrets are printed once the port is bound', () => {
  test('the admin key and the operator token come after the listener is bound, before the listening line', async () => {
    // A preload reports, on stdout, when the server's listen completes.
    const probe = `import { Server } from 'node:net';
const listen = Server.prototype.listen;
Server.prototype.listen = function (...args) { this.once('listening', () => process.stdout.write('bound\\n')); return listen.apply(this, args); };`;
    const server = await startServer([], { NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(probe)}` });
    try {
      const bound = server.output.indexOf('bound');
      const key = server.output.findIndex((line) => line.startsWith('admin API key (shown once): '));
      const operator = server.output.findIndex((line) => line.startsWith('operator token for /_burrow'));
      assert.ok(bound >= 0 && key > bound && operator > bound, server.output.join('\n'));
    } finally {
      await server.stop();
    }
  });
});

describe('the one rule for a chosen API key token', () => {
  test('--api-key must be a bearer token: refused before anything starts (exit 2)', async () => {
    assertRefused(await burrow(['--port', '0', '--api-key', 'has space']), 2, /^burrow: --api-key: must be a bearer token: letters, digits and - \. _ ~ \+ \/ \(then = padding\), at least 1 character$/);
    assertRefused(await burrow(['--port', '0'], { BURROW_API_KEY: 'x'.repeat(257) }), 2, /^burrow: --api-key: must be at most 256 characters$/);
  });
});

describe('policies stored before the write-time checker', () => {
  test('are checked again at load: each one the checker refuses now is named once (holder, field, problem, code), kept and served as stored', async () => {
    const file = join(dir, 'old-policy.json');
    const key = ['--api-key', 'stored-policies-key'];
    const auth = { token: 'stored-policies-key' };
    const first = await startServer(['--data', file, '--quiet', ...key]);
    try {
      assert.equal((await first.request('POST', '/reserved_domains', { domain: 'old.example.com' }, auth)).status, 201);
      const policy = JSON.stringify({ on_http_request: [{ expressions: ["req.method == 'MARKER'"], actions: [{ type: 'deny' }] }, { actions: [{ type: 'custom-response', config: { body: 'ok' } }] }] });
      const created = await first.request('POST', '/endpoints', { type: 'cloud', url: 'https://old.example.com', traffic_policy: policy }, auth);
      assert.equal(created.status, 201, created.text);
    } finally {
      assert.equal(await first.stop('SIGTERM'), 0);
    }
    // A state written before the checker: the stored expression reads a variable that does not exist.
    const state = readFileSync(file, 'utf8');
    assert.ok(state.includes('req.method =='), 'the policy is in the file as text');
    writeFileSync(file, state.replace('req.method ==', 'req.foo =='));
    const second = await startServer(['--data', file, '--quiet', ...key]);
    try {
      const warnings = second.output.filter((line) => line.includes('warning: the stored traffic policy'));
      assert.equal(warnings.length, 1, second.output.join('\n'));
      assert.match(warnings[0]!, /warning: the stored traffic policy of ep_\w+ \(traffic_policy, account \w+\) does not pass the write-time check: on_http_request\[0\]\.expressions\[0\]: unknown variable req\.foo at column 1 \(ERR_BURROW_2200\); it is served as stored/);
      // Kept as stored: the API answers it unchanged.
      const listed = await second.request('GET', '/endpoints', undefined, auth);
      assert.match(listed.body.endpoints[0].traffic_policy, /req\.foo == 'MARKER'/);
    } finally {
      await second.stop('SIGTERM');
    }
  });
});
