import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { parseCli } from '../../bin/burrow.ts';
import { exchange } from '../fixtures/raw-http.ts';
import { startServer } from '../helpers.ts';

const run = promisify(execFile);
const BIN = new URL('../../bin/burrow.ts', import.meta.url).pathname;

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'burrow-cli-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('burrow serve', () => {
  test('--help lists every flag and exits 0', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', BIN, '--help']);
    for (const flag of ['--host', '--port', '--data', '--api-key', '--base-url', '--journal-size', '--trust-proxy', '--error-prefix', 'BURROW_JOURNAL_SIZE', 'BURROW_HOST', 'BURROW_PORT', 'BURROW_DATA', 'BURROW_API_KEY', 'BURROW_TRUST_PROXY', 'BURROW_ERROR_PREFIX']) {
      assert.ok(stdout.includes(flag), flag);
    }
  });

  test('a bad flag value exits 2 with a message', async () => {
    await assert.rejects(run(process.execPath, ['--import', 'tsx', BIN, 'serve', '--port', 'abc']), (error: any) => {
      assert.equal(error.code, 2);
      assert.match(error.stderr, /--port must be a whole number/);
      return true;
    });
  });

  test('in memory by default: prints the base URL and a generated admin key once, serves it', async () => {
    const server = await startServer();
    try {
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.match(server.token ?? '', /^[0-9A-Za-z]{27}_/);
      const res = await server.request('POST', '/api_keys', { description: 'x' });
      assert.equal(res.status, 201);
      assert.ok(res.body.uri.startsWith(`${server.url}/api_keys/`));
      assert.ok(server.output.some((line) => line.includes('store: memory')));
    } finally {
      assert.equal(await server.stop('SIGTERM'), 0);
    }
  });

  test("prints the inspector's URL and serves the page there; --journal-size bounds the request journal", async () => {
    const server = await startServer(['--operator-token', 'cli-operator-token-1', '--journal-size', '2']);
    try {
      const line = server.output.find((l) => l.startsWith('inspector: '));
      assert.match(line ?? '', new RegExp(`^inspector: ${server.url.replace(/[.]/g, '\\.')}/_burrow/\\?token=[\\w-]{32} \\(a one-time sign-in link; after it, sign in at ${server.url.replace(/[.]/g, '\\.')}/_burrow/ with the operator token\\)$`));
      // The link's code opens the inspector once: exchanged for the operator token, then refused.
      const code = /\?token=([\w-]+) /.exec(line!)![1]!;
      const exchange = () => fetch(`${server.url}/_burrow/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) });
      assert.deepEqual(await (await exchange()).json(), { operator_token: 'cli-operator-token-1' });
      const refused = await exchange();
      assert.equal(refused.status, 403);
      assert.match((await refused.json()).msg, /used already/);
      const page = await fetch(`${server.url}/_burrow/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<title>Burrow inspector<\/title>/);
      for (let i = 0; i < 3; i++) await server.request('GET', '/credentials');
      const journal = await server.request('GET', '/_burrow/requests', undefined, { token: 'cli-operator-token-1' });
      assert.equal(journal.body.size, 2);
      assert.equal(journal.body.requests.length, 2);
    } finally {
      assert.equal(await server.stop('SIGTERM'), 0);
    }
  });

  test('--api-key makes TOKEN an admin key and prints no key; --base-url shapes uris', async () => {
    const server = await startServer(['--api-key', 'my-secret-admin-token', '--base-url', 'https://api.example.test']);
    try {
      assert.equal(server.token, undefined);
      const res = await server.request('POST', '/credentials', {}, { token: 'my-secret-admin-token' });
      assert.equal(res.status, 201);
      assert.ok(res.body.uri.startsWith('https://api.example.test/credentials/'));
      assert.ok(!server.output.join('\n').includes('my-secret-admin-token'), 'the token is never printed');
    } finally {
      assert.equal(await server.stop('SIGINT'), 0);
    }
  });

  test('reads BURROW_API_KEY from the environment', async () => {
    const server = await startServer([], { BURROW_API_KEY: 'env-admin-token' });
    try {
      assert.equal((await server.request('GET', '/api_keys', undefined, { token: 'env-admin-token' })).status, 200);
    } finally {
      await server.stop();
    }
  });

  test('--data keeps every acknowledged write across a SIGKILL, and the key across restarts', async () => {
    const file = join(dir, 'state.json');
    const first = await startServer(['--data', file, '--api-key', 'file-admin', '--quiet']);
    const acknowledged: string[] = [];
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const res = await first.request('POST', i % 2 ? '/api_keys' : '/credentials', { description: `w${i}` }, { token: 'file-admin' });
        assert.equal(res.status, 201);
        acknowledged.push(res.body.uri.replace(first.url, ''));
      }),
    );
    await first.stop('SIGKILL');
    const raw = readFileSync(file, 'utf8');
    assert.ok(!raw.includes('file-admin'), 'tokens are stored only as hashes');
    const second = await startServer(['--data', file, '--api-key', 'file-admin', '--quiet']);
    try {
      for (const path of acknowledged) {
        assert.equal((await second.request('GET', path, undefined, { token: 'file-admin' })).status, 200, path);
      }
    } finally {
      await second.stop();
    }
  });

  test('secret values: the data file never holds one; --secrets-key-file keeps only a check value and is needed after restarts', async () => {
    const file = join(dir, 'vault.json');
    const keyFile = join(dir, 'secrets.key');
    const key = Buffer.alloc(32, 9).toString('hex');
    writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    const plaintext = 'cli-plaintext-value-7f3a';
    const first = await startServer(['--data', file, '--api-key', 'k', '--secrets-key-file', keyFile]);
    let secretId: string;
    try {
      const vault = await first.request('POST', '/vaults', { name: 'v' }, { token: 'k' });
      const stray = await first.request('POST', `/vault_secrets?value=${plaintext}`, { name: 'Q', value: plaintext, vault_id: vault.body.id }, { token: 'k' });
      assert.equal(stray.status, 201, 'a create ignores its query, and the log masks a `value` sent there');
      const created = await first.request('POST', '/vault_secrets', { name: 'S', value: plaintext, vault_id: vault.body.id }, { token: 'k' });
      assert.equal(created.status, 201, created.text);
      secretId = created.body.id;
      const lines = await first.outputUntil((seen) => seen.some((line) => line.includes('secrets.create') && line.includes(' 201 ')));
      assert.ok(!lines.join('\n').includes(plaintext), 'the request log never shows a value');
    } finally {
      await first.stop();
    }
    const raw = readFileSync(file, 'utf8');
    assert.ok(!raw.includes(plaintext) && !raw.includes(key), 'neither the value nor the key is in the data file');
    assert.match(raw, /A256GCM/);
    const keyed = await startServer(['--data', file, '--api-key', 'k', '--quiet'], { BURROW_SECRETS_KEY: Buffer.alloc(32, 9).toString('base64') });
    try {
      assert.equal((await keyed.request('PATCH', `/vault_secrets/${secretId}`, { value: 'rotated' }, { token: 'k' })).status, 200, 'the same key, from the environment');
    } finally {
      await keyed.stop();
    }
    const keyless = await startServer(['--data', file, '--api-key', 'k', '--quiet']);
    try {
      const refused = await keyless.request('PATCH', `/vault_secrets/${secretId}`, { value: 'again' }, { token: 'k' });
      assert.equal(refused.status, 500);
      assert.equal(refused.body.error_code, 'ERR_BURROW_9008');
      assert.equal((await keyless.request('GET', `/vault_secrets/${secretId}`, undefined, { token: 'k' })).status, 200, 'reads need no key');
    } finally {
      await keyless.stop();
    }
    writeFileSync(keyFile, 'too-short');
    await assert.rejects(run(process.execPath, ['--import', 'tsx', BIN, 'serve', '--secrets-key-file', keyFile]), (error: any) => {
      assert.equal(error.code, 2);
      assert.match(error.stderr, /--secrets-key-file .*: secretsKey must be 32 bytes/);
      assert.ok(!error.stderr.includes('too-short'));
      return true;
    });
  });

  test('a second server on the same data file refuses to start, naming the process', async () => {
    const file = join(dir, 'shared.json');
    const first = await startServer(['--data', file, '--api-key', 'k', '--quiet']);
    try {
      const pid = JSON.parse(readFileSync(`${file}.lock`, 'utf8')).pid;
      await assert.rejects(startServer(['--data', file, '--api-key', 'k']), new RegExp(`exited with 1: burrow: data file .* is in use by another Burrow process \\(pid ${pid} on .*\\); stop it or use another file`));
    } finally {
      await first.stop();
    }
  });

  test('the operator token is generated and printed once at start; no admin key opens /_burrow/', async () => {
    const server = await startServer(['--quiet']);
    const restarted = await startServer(['--quiet']);
    try {
      assert.match(server.operatorToken ?? '', /^[\w-]{43}$/);
      assert.notEqual(server.operatorToken, restarted.operatorToken, 'a new one at every start');
      assert.equal(server.output.filter((line) => line.includes(server.operatorToken!)).length, 1, 'printed once');
      const withAdminKey = await server.request('POST', '/_burrow/reset', {});
      assert.equal(withAdminKey.status, 403, 'the bootstrap admin key is not the operator token');
      assert.equal(withAdminKey.body.error_code, 'ERR_BURROW_9006');
      assert.equal((await server.request('POST', '/_burrow/reset', {}, { token: server.operatorToken! })).status, 200);
      assert.equal((await server.request('GET', '/api_keys', undefined, { token: server.operatorToken! })).status, 401, 'the operator token is no API key');
    } finally {
      await Promise.all([server.stop(), restarted.stop()]);
    }
  });

  test('--operator-token and BURROW_OPERATOR_TOKEN replace it and are never printed', async () => {
    const chosen = await startServer(['--quiet', '--operator-token', 'op-secret-token']);
    const fromEnv = await startServer(['--quiet'], { BURROW_OPERATOR_TOKEN: 'env-operator-token' });
    try {
      assert.equal(chosen.operatorToken, undefined);
      assert.equal((await chosen.request('POST', '/_burrow/reset', {})).status, 403, 'the admin key is not the chosen operator token');
      assert.equal((await chosen.request('POST', '/_burrow/reset', {}, { token: 'op-secret-token' })).status, 200);
      assert.equal((await fromEnv.request('POST', '/_burrow/reset', {}, { token: 'env-operator-token' })).status, 200);
      assert.ok(!chosen.output.join('\n').includes('op-secret-token'));
      assert.ok(!fromEnv.output.join('\n').includes('env-operator-token'));
    } finally {
      await Promise.all([chosen.stop(), fromEnv.stop()]);
    }
  });

  test('an operator token that is an account\'s API key is refused at start', async () => {
    const file = join(dir, 'operator-key.json');
    const first = await startServer(['--quiet', '--data', file, '--api-key', 'same-secret-token']);
    await first.stop();
    await assert.rejects(
      startServer(['--quiet', '--data', file, '--operator-token', 'same-secret-token']),
      /exited with 2: burrow: the operator token is an API key of account ac_\w+; choose an operator token that is no account's key/,
    );
  });

  test('--seed and --clock make two runs give the same keys, ids and times', async () => {
    const results = [];
    for (let i = 0; i < 2; i++) {
      const server = await startServer(['--quiet', '--seed', '7', '--clock', '2026-05-01T00:00:00Z', '--base-url', 'http://seeded.test']);
      try {
        const created = await server.request('POST', '/credentials', { description: 'same' });
        await server.request('POST', '/_burrow/clock', { advance_seconds: 60 }, { token: server.operatorToken! });
        const later = await server.request('POST', '/ip_policies', {});
        results.push({ token: server.token, operatorToken: server.operatorToken, credential: created.body, policy: later.body });
      } finally {
        await server.stop();
      }
    }
    assert.deepEqual(results[0], results[1]);
    assert.match(results[0]!.operatorToken ?? '', /^[\w-]{43}$/, 'the operator token is derived from the seed');
    assert.notEqual(results[0]!.operatorToken, results[0]!.token);
    assert.equal(results[0]!.credential.created_at, '2026-05-01T00:00:00Z');
    assert.equal(results[0]!.policy.created_at, '2026-05-01T00:01:00Z');
  });

  test('--log-format json writes one JSON line per request without secrets', async () => {
    const server = await startServer(['--log-format', 'json']);
    try {
      await server.request('POST', '/api_keys', { description: 'logged' });
      await server.request('GET', '/nowhere');
      await server.request('GET', '/api_keys?limit=0');
      const output = await server.outputUntil((lines) => lines.filter((line) => line.startsWith('{') && line.includes('"method"')).length >= 3);
      const lines = output.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
      const banner = lines.filter((l) => l.msg !== undefined);
      assert.deepEqual(banner.map((l) => Object.keys(l).slice(0, 2)), banner.map(() => ['time', 'msg']));
      assert.equal(banner.at(-1).url, server.url);
      assert.equal(banner.find((l) => l.admin_api_key).admin_api_key, server.token);
      const requests = lines.filter((l) => l.method !== undefined);
      assert.deepEqual(requests.map((l) => [l.method, l.path, l.query, l.status, l.errorCode]), [
        ['POST', '/api_keys', '', 201, undefined],
        ['GET', '/nowhere', '', 404, 'ERR_BURROW_9002'],
        ['GET', '/api_keys', '?limit=0', 400, 'ERR_BURROW_233'],
      ]);
      assert.match(requests[0].time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.match(requests[0].operationId, /^op_/);
      assert.equal(requests[0].operation, 'api_keys.create');
      assert.equal(typeof requests[0].ms, 'number');
      const logged = output.filter((line) => line.startsWith('{') && !line.includes('"admin_api_key"')).join('\n');
      assert.ok(!logged.includes(server.token!), 'no token in the log');
    } finally {
      await server.stop();
    }
  });

  test('--cors answers preflights with the path methods and echoes the Origin', async () => {
    const server = await startServer(['--quiet', '--cors']);
    const plain = await startServer(['--quiet']);
    try {
      const preflight = await fetch(`${server.url}/api_keys/ak_x`, {
        method: 'OPTIONS',
        headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'PATCH', 'Access-Control-Request-Headers': 'authorization, content-type' },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
      assert.deepEqual(preflight.headers.get('access-control-allow-methods')!.split(', ').sort(), ['DELETE', 'GET', 'PATCH']);
      assert.equal(preflight.headers.get('access-control-allow-headers'), 'authorization, content-type');
      assert.equal(preflight.headers.get('access-control-allow-credentials'), 'true');
      assert.equal(preflight.headers.get('access-control-max-age'), '600');
      const get = await server.request('GET', '/api_keys', undefined, { headers: { Origin: 'https://app.example' } });
      assert.equal(get.headers.get('access-control-allow-origin'), 'https://app.example');
      const off = await fetch(`${plain.url}/api_keys`, { method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET' } });
      assert.equal(off.headers.get('access-control-allow-origin'), null, 'off unless --cors');
    } finally {
      await Promise.all([server.stop(), plain.stop()]);
    }
  });

  test('--version prints the version; a stray argument, an unknown command and a directory as --data exit 2', async () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal((await run(process.execPath, ['--import', 'tsx', BIN, '--version'])).stdout, `${manifest.version}\n`);
    const refusals: [string[], RegExp][] = [
      [['serve', 'extra', '--port', '0'], /unexpected argument 'extra'/],
      [['start', '--port', '0'], /unknown command 'start'; the commands are serve and policy/],
      [['--port', '0', '--data', dir], new RegExp(`--data names a file to keep the state in, and ${dir} is a directory`)],
    ];
    for (const [args, message] of refusals) {
      await assert.rejects(run(process.execPath, ['--import', 'tsx', BIN, ...args]), (error: any) => {
        assert.equal(error.code, 2, args.join(' '));
        assert.match(error.stderr, message);
        assert.doesNotMatch(error.stderr, /EISDIR|at .*\.ts:\d+/);
        return true;
      });
    }
  });

  test('a text log line has the ISO time, method, path with query, status, error code, time and operation', async () => {
    const server = await startServer();
    try {
      await server.request('GET', '/api_keys?limit=500');
      await server.request('GET', '/api_keys?limit=5');
      const output = await server.outputUntil((lines) => lines.filter((line) => / GET \/api_keys/.test(line)).length >= 2);
      const [failed, ok] = output.filter((line) => / GET \/api_keys/.test(line));
      assert.match(failed!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z GET \/api_keys\?limit=500 400 ERR_BURROW_233 [\d.]+ms op_\w{27} api_keys\.list$/);
      assert.match(ok!, /^\S+Z GET \/api_keys\?limit=5 200 [\d.]+ms op_\w{27} api_keys\.list$/);
    } finally {
      await server.stop();
    }
  });

  test('the server accepts connections only once its request handler is attached', async () => {
    // A preload reports (on stdout, where the test waits for it) how many request listeners the
    // server has at the moment it starts to listen.
    const probe = `import { Server } from 'node:http';
const listen = Server.prototype.listen;
Server.prototype.listen = function (...args) { process.stdout.write('request listeners at listen: ' + this.listenerCount('request') + '\\n'); return listen.apply(this, args); };`;
    const server = await startServer(['--quiet'], { NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(probe)}` });
    try {
      const lines = await server.outputUntil((seen) => seen.some((line) => line.startsWith('request listeners at listen: ')));
      assert.equal(lines.find((line) => line.startsWith('request listeners at listen: ')), 'request listeners at listen: 1');
    } finally {
      await server.stop();
    }
  });

  test('--trust-proxy takes an optional value: alone it means loopback; BURROW_TRUST_PROXY sets it too', () => {
    const trusted = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseCli(argv, env).trustProxy;
    assert.equal(trusted([]), undefined);
    assert.equal(trusted(['--trust-proxy']), 'loopback');
    assert.equal(trusted(['--trust-proxy', '--port', '0']), 'loopback');
    assert.equal(trusted(['serve', '--trust-proxy', '2', '--port', '0']), '2');
    assert.equal(trusted(['--trust-proxy=127.0.0.1,203.0.113.0/24']), '127.0.0.1,203.0.113.0/24');
    assert.equal(trusted([], { BURROW_TRUST_PROXY: '10.0.0.0/8' }), '10.0.0.0/8');
    assert.equal(trusted(['--trust-proxy', '1'], { BURROW_TRUST_PROXY: '10.0.0.0/8' }), '1', 'the flag wins');
    assert.throws(() => trusted([], { BURROW_TRUST_PROXY: 'yes' }), /^Error: --trust-proxy: "yes" is not a hop count, an IP address, a CIDR or one of loopback, linklocal, uniquelocal$/);
  });

  test('--error-prefix or BURROW_ERROR_PREFIX: A-Z, 0-9 and _, starting with a letter; the flag wins', () => {
    const prefix = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseCli(argv, env).errorPrefix;
    assert.equal(prefix([]), undefined);
    assert.equal(prefix(['--error-prefix', 'ERR_NGROK_']), 'ERR_NGROK_');
    assert.equal(prefix([], { BURROW_ERROR_PREFIX: 'E' }), 'E');
    assert.equal(prefix(['--error-prefix=ERR_NGROK_'], { BURROW_ERROR_PREFIX: 'OTHER_' }), 'ERR_NGROK_');
    for (const bad of ['', 'err_ngrok_', '_ERR', '9ERR', 'ERR NGROK', 'ERR-NGROK-', `E${'X'.repeat(32)}`]) {
      assert.throws(() => prefix(['--error-prefix', bad]), /^Error: --error-prefix must be 1 to 32 characters of A-Z, 0-9 and _, starting with a letter, such as ERR_NGROK_ \(got ".*"\)$/, bad);
    }
    assert.throws(() => prefix([], { BURROW_ERROR_PREFIX: 'ngrok' }), /--error-prefix must be/);
  });

  test('--error-prefix on a live server: every error envelope, malformed requests too, carries the prefix', async () => {
    const server = await startServer(['--quiet', '--error-prefix', 'ERR_NGROK_']);
    try {
      const missing = await server.request('GET', '/api_keys/ak_missing');
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error_code, 'ERR_NGROK_9001');
      assert.equal((await server.request('GET', '/api_keys', undefined, { token: null })).body.error_code, 'ERR_NGROK_200');
      const raw = await exchange(Number(new URL(server.url).port), ['GET /api_keys HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n']);
      assert.match(raw.toString('latin1'), /^HTTP\/1\.1 400 [^]*"error_code":"ERR_NGROK_9050"/);
    } finally {
      await server.stop();
    }
  });

  test('--trust-proxy on a live server: the rightmost entry no trusted proxy wrote is the caller', async () => {
    const server = await startServer(['--quiet', '--trust-proxy']);
    try {
      const policy = await server.request('POST', '/ip_policies', {});
      await server.request('POST', '/ip_policy_rules', { ip_policy_id: policy.body.id, cidr: '10.0.0.0/8', action: 'allow' });
      await server.request('POST', '/ip_restrictions', { type: 'api', enforced: true, ip_policy_ids: [policy.body.id] });
      const spoofed = await server.request('GET', '/api_keys', undefined, { headers: { 'X-Forwarded-For': '10.0.0.1, 203.0.113.9' } });
      assert.equal(spoofed.status, 403);
      assert.match(spoofed.body.msg, /denies 203\.0\.113\.9/);
      assert.equal((await server.request('GET', '/api_keys', undefined, { headers: { 'X-Forwarded-For': '203.0.113.9, 10.0.0.1' } })).status, 200);
      assert.equal((await server.request('GET', '/api_keys', undefined, { headers: { 'X-Forwarded-For': '10.0.0.1%lo' } })).status, 400);
    } finally {
      await server.stop();
    }
  });

  test('SIGTERM to `npm start` stops the server it started', async () => {
    const npm = spawn('npm', ['start', '--', '--port', '0', '--quiet'], { cwd: new URL('../..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        npm.once('exit', (code) => reject(new Error(`npm start exited with ${code}`)));
        createInterface({ input: npm.stdout }).on('line', (line) => {
          const listening = /listening on (\S+)/.exec(line);
          if (listening) resolve(listening[1]!);
        });
      });
      assert.equal((await fetch(`${url}/_burrow/health`)).status, 200);
      npm.kill('SIGTERM');
      await exited;
      await assert.rejects(fetch(`${url}/_burrow/health`), (error: any) => error.cause?.code === 'ECONNREFUSED');
    } finally {
      npm.kill('SIGKILL');
    }
  });
});
