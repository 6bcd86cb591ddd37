import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { spawnServer } from '../fixtures/first-answer.ts';
import { holdConnection, whenFileExists } from '../fixtures/waits.ts';
import { installPackedBurrow, REPO, type PackedInstall } from './packed.ts';

/**
 * Burrow as a user gets it: `npm pack`, installed into an empty project, used with plain `node`
 * (no loader) from ESM, CommonJS and TypeScript, and its `burrow` command.
 */

const run = promisify(execFile);
const TSC = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
const ENTRY_POINTS = ['burrow-tunnels', 'burrow-tunnels/memory', 'burrow-tunnels/json-file', 'burrow-tunnels/postgres', 'burrow-tunnels/http', 'burrow-tunnels/testing'];
/** The inspector page's files, which the compiler does not emit: the build copies them beside the bundled adapter. */
const INSPECTOR_FILES = ['index.html', 'inspector.css', 'inspector.js'];

let app: PackedInstall;
before(async () => {
  app = await installPackedBurrow();
});
after(() => app?.remove());

// Without node:test's own variable, a nested `node --test` reports as a plain run would.
const { NODE_TEST_CONTEXT: _, ...ENV } = process.env;
const node = (args: string[]) => run(process.execPath, args, { cwd: app.dir, env: ENV });

/** A consumer script's scenario: one instance over each store, an account, a key created through HTTP. */
const SCENARIO = `
const burrow = createBurrow({ store: new MemoryStore() });
const { token } = await burrow.createAccount();
const handle = createFetchHandler(burrow);
const response = await handle(new Request('http://burrow.test/api_keys', { method: 'POST', headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' }, body: '{"description":"packed"}' }));
const key = await response.json();
const file = await openJsonFileStore(join(process.cwd(), 'state-' + process.pid + '.json'));
const durable = createBurrow({ store: file });
const second = await durable.createAccount();
const listed = await durable.client(second.token).resource('api_keys').list();
await file.close();
const postgres = new PostgresStore({ url: 'postgres://burrow@127.0.0.1:1/burrow' });
await postgres.close();
console.log(JSON.stringify({ status: response.status, description: key.description, uri: key.uri, keys: listed.keys.length, listener: typeof createNodeListener, postgres: postgres.location }));
`;

function checkScenario(stdout: string) {
  const result = JSON.parse(stdout) as { status: number; description: string; uri: string; keys: number; listener: string; postgres: string };
  assert.equal(result.status, 201);
  assert.equal(result.description, 'packed');
  assert.match(result.uri, /^http:\/\/burrow\.test\/api_keys\/ak_/);
  assert.equal(result.keys, 1);
  assert.equal(result.listener, 'function');
  assert.equal(result.postgres, 'burrow@127.0.0.1:1/burrow');
}

/** Libraries only some requests need: the installed server loads none of them before its first answer. */
const LAZY_LIBRARIES = ['pg', 'yaml', '@marcbachmann/cel-js', 're2js', 'sshpk', 'ssh2', 'lowdb', '@valibot/to-json-schema', 'ipaddr.js'];
const TOKEN = 'packed-admin-token-0123456789';
const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl packed@test';

/**
 * A module for `node --import` that appends to `file` every package Burrow's own code loads: by
 * import (a module resolve hook) and by require() (Module._load), the way its lazy seams load them.
 */
function recordLoadsHook(file: string): string {
  const record = `(specifier, parent) => { if (parent?.includes('/node_modules/burrow-tunnels/') && !specifier.startsWith('.') && !specifier.startsWith('node:')) appendFileSync(${JSON.stringify(file)}, specifier + '\\n'); }`;
  const resolveHook = `import { appendFileSync } from 'node:fs'; const record = ${record}; export async function resolve(specifier, context, next) { record(specifier, context.parentURL); return next(specifier, context); }`;
  return `import Module, { register } from 'node:module';
import { appendFileSync } from 'node:fs';
const record = ${record};
const load = Module._load;
Module._load = function (request, parent, isMain) { record(request, parent?.filename); return load.call(this, request, parent, isMain); };
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(resolveHook)}));
`;
}

describe('the npm package', () => {
  test('ships the compiled code and its types, and no tests or TypeScript sources', () => {
    for (const file of ['dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/bin/burrow.js', 'dist/adapters/http/index.js', 'package.json', 'README.md']) {
      assert.ok(app.files.includes(file), `the tarball lacks ${file}`);
    }
    for (const name of INSPECTOR_FILES) assert.equal(app.files.filter((file) => file.endsWith(`/inspector/${name}`)).length, 1, `the tarball holds the inspector's ${name} once`);
    assert.deepEqual(app.files.filter((file) => file.startsWith('test/') || (file.endsWith('.ts') && !file.endsWith('.d.ts'))), []);
  });

  test('unpacks to less than 1.75 MB of code and types (dist/), and 2.1 MB with the docs the README links to', () => {
    const installed = join(app.dir, 'node_modules', 'burrow-tunnels');
    const code = app.files.filter((file) => file.startsWith('dist/')).reduce((sum, file) => sum + statSync(join(installed, file)).size, 0);
    const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB (${bytes} bytes)`;
    assert.ok(code < 1_750_000, `dist/ unpacks to ${mb(code)}, over 1.75 MB`);
    assert.ok(app.unpackedSize < 2_100_000, `the tarball unpacks to ${mb(app.unpackedSize)}, over 2.1 MB`);
  });

  test('stands alone: a LICENSE that is the "license" named, where the repository and its issues are, and README links that resolve inside the package', () => {
    const installed = join(app.dir, 'node_modules', 'burrow-tunnels');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { license: string; repository?: { url: string }; homepage?: string; bugs?: { url: string } };
    assert.equal(manifest.license, 'MIT');
    assert.match(readFileSync(join(installed, 'LICENSE'), 'utf8'), /^MIT License\n/);
    assert.match(manifest.repository?.url ?? '', /^git\+https:\/\/github\.com\/.+\.git$/);
    assert.match(manifest.homepage ?? '', /^https:\/\//);
    assert.match(manifest.bugs?.url ?? '', /^https:\/\/.+\/issues$/);
    const links = [...readFileSync(join(installed, 'README.md'), 'utf8').matchAll(/\]\(((?!https?:)[^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
    assert.ok(links.length > 10, `the README links to ${links.length} local files`);
    assert.deepEqual(links.filter((link) => !existsSync(join(installed, link))), [], 'README links that lead nowhere in node_modules/burrow-tunnels');
  });

  test('the tarball npm pack writes into a clone is ignored by git', () => {
    assert.equal(spawnSync('git', ['check-ignore', '-q', basename(app.tarball)], { cwd: REPO }).status, 0);
  });

  test('ships no dependency twice: the compiled code embeds none and takes each from node_modules', () => {
    const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; peerDependencies: Record<string, string>; exports: Record<string, string | { import: string }> };
    const installed = join(app.dir, 'node_modules', 'burrow-tunnels');
    const code = app.files.filter((file) => file.endsWith('.js')).map((file) => ({ file, text: readFileSync(join(installed, file), 'utf8') }));
    // A CommonJS dependency bundled would come wrapped in esbuild's __commonJS helper; an ESM one
    // would no longer be imported (the check of valibot, pg, yaml and cel-js below).
    assert.deepEqual(code.filter(({ text }) => text.includes('__commonJS(')).map(({ file }) => file), []);
    // Static imports, and loads on first use (`import("…")`, `createRequire(import.meta.url)("…")`).
    const specifiers = code.flatMap(({ text }) => [...text.matchAll(/(?:\bfrom\s*|\bimport\(|createRequire\d*\(import\.meta\.url\)\()"([@\w./:-]+)"/g)].map((m) => m[1]!));
    const packages = new Set(specifiers.filter((name) => !name.startsWith('.') && !name.startsWith('node:')).map((name) => name.split('/').slice(0, name.startsWith('@') ? 2 : 1).join('/')));
    assert.deepEqual([...packages].filter((name) => !(name in manifest.dependencies) && !(name in manifest.peerDependencies)), [], 'packages the compiled code loads that are not dependencies');
    assert.ok(['valibot', 'pg', 'yaml', '@marcbachmann/cel-js'].every((name) => packages.has(name)), `the compiled code loads ${[...packages].join(', ')}`);
    for (const target of Object.values(manifest.exports)) {
      if (typeof target === 'object') assert.ok(app.files.includes(target.import.replace(/^\.\//, '')), `the tarball lacks the export ${target.import}`);
    }
  });

  test('installs with no npm warning at all: no deprecated release, no install script, no engine mismatch', () => {
    assert.deepEqual(app.installWarnings, []);
  });

  test('passes publint and arethetypeswrong (an ESM package that require() loads on Node >= 20.19)', async () => {
    const bin = (name: string) => join(REPO, 'node_modules', '.bin', name);
    await run(bin('publint'), ['run', app.tarball, '--strict']).catch((error: { stdout: string; stderr: string }) => assert.fail(`publint:\n${error.stdout}${error.stderr}`));
    await run(bin('attw'), [app.tarball, '--profile', 'esm-only', '--format', 'ascii']).catch((error: { stdout: string; stderr: string }) => assert.fail(`attw:\n${error.stdout}${error.stderr}`));
  });

  test('the repository resolves its own name to the sources that the package compiles', () => {
    const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { exports: Record<string, string | { import: string }> };
    const tsconfig = JSON.parse(readFileSync(join(REPO, 'tsconfig.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } };
    const fromExports = Object.fromEntries(
      Object.entries(manifest.exports)
        .filter(([, target]) => typeof target === 'object')
        .map(([subpath, target]) => [subpath.replace(/^\./, 'burrow-tunnels'), [(target as { import: string }).import.replace(/^\.\/dist\//, './').replace(/\.js$/, '.ts')]]),
    );
    assert.deepEqual(tsconfig.compilerOptions.paths, fromExports);
  });

  test('plain node imports every entry point as ESM', async () => {
    const script = `import { join } from 'node:path';
import { createBurrow } from 'burrow-tunnels';
import { MemoryStore } from 'burrow-tunnels/memory';
import { openJsonFileStore } from 'burrow-tunnels/json-file';
import { PostgresStore } from 'burrow-tunnels/postgres';
import { createFetchHandler, createNodeListener } from 'burrow-tunnels/http';
${SCENARIO}`;
    writeFileSync(join(app.dir, 'esm.mjs'), script);
    checkScenario((await node(['esm.mjs'])).stdout);
  });

  test('plain node requires every entry point from CommonJS', async () => {
    const script = `const { join } = require('node:path');
const { createBurrow } = require('burrow-tunnels');
const { MemoryStore } = require('burrow-tunnels/memory');
const { openJsonFileStore } = require('burrow-tunnels/json-file');
const { PostgresStore } = require('burrow-tunnels/postgres');
const { createFetchHandler, createNodeListener } = require('burrow-tunnels/http');
(async () => {${SCENARIO}})().catch((error) => { console.error(error); process.exit(1); });`;
    writeFileSync(join(app.dir, 'cjs.cjs'), script);
    checkScenario((await node(['cjs.cjs'])).stdout);
  });

  describe("the README's examples in TypeScript", () => {
    before(() => {
      for (const name of ['in-process.test.ts', 'node-http.ts']) copyFileSync(join(REPO, 'test', 'examples', name), join(app.dir, name));
      writeFileSync(
        join(app.dir, 'use-node-http.ts'),
        `import { start } from './node-http.js';
const server = await start();
const hello = await (await fetch(server.url + '/hello')).text();
const keys = await fetch(server.url + '/api_keys', { headers: { authorization: 'Bearer ' + server.token } });
console.log(JSON.stringify({ hello, status: keys.status }));
server.close();
`,
      );
    });
    const typecheck = async (compilerOptions: Record<string, unknown>) => {
      const config = `tsconfig.${String(compilerOptions.moduleResolution)}.json`;
      writeFileSync(
        join(app.dir, config),
        JSON.stringify({
          compilerOptions: { target: 'ES2022', lib: ['ES2023'], strict: true, types: ['node'], typeRoots: [join(REPO, 'node_modules', '@types')], ...compilerOptions },
          files: ['in-process.test.ts', 'node-http.ts', 'use-node-http.ts'],
        }),
      );
      await node([TSC, '-p', config]).catch((error: { stdout: string }) => assert.fail(`tsc -p ${config}:\n${error.stdout}`));
    };

    test('typecheck under moduleResolution node16, and run compiled with plain node', async () => {
      // skipLibCheck off once: Burrow's .d.ts files must themselves be valid.
      await typecheck({ module: 'node16', moduleResolution: 'node16', outDir: 'out', skipLibCheck: false });
      const { stdout } = await node(['out/use-node-http.js']);
      assert.deepEqual(JSON.parse(stdout), { hello: 'hello from my app', status: 200 });
      const tests = await node(['--test', 'out/in-process.test.js']);
      assert.match(tests.stdout, /# pass 2\n/);
      assert.match(tests.stdout, /# fail 0\n/);
    });

    test('typecheck under moduleResolution bundler', async () => {
      await typecheck({ module: 'preserve', moduleResolution: 'bundler', noEmit: true, skipLibCheck: true });
    });
  });

  describe('the burrow command', () => {
    test('--version prints the package version', async () => {
      const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
      assert.equal((await run(app.bin, ['--version'])).stdout, `${manifest.version}\n`);
    });

    test('outside any project, `npx --package=<tarball> burrow` runs this package (a bare `npx burrow` would fetch the registry\'s unrelated `burrow`)', async () => {
      const elsewhere = mkdtempSync(join(tmpdir(), 'burrow-npx-'));
      try {
        const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
        const { stdout } = await run('npx', ['--yes', '--prefer-offline', `--package=${app.tarball}`, 'burrow', '--version'], { cwd: elsewhere, env: ENV });
        assert.equal(stdout, `${manifest.version}\n`);
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
    });

    test('--ssh-addr without ssh2 installed (an optional peer dependency) says to install it', async () => {
      const failed = await run(app.bin, ['--port', '0', '--ssh-addr', '127.0.0.1:0'], { env: ENV }).then(
        () => assert.fail('burrow started an SSH gateway without ssh2'),
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
      assert.equal(failed.code, 1);
      assert.equal(failed.stderr, 'burrow: cannot start the SSH gateway on 127.0.0.1:0: the SSH gateway needs the ssh2 package, an optional peer dependency of burrow-tunnels: npm install ssh2\n');
      assert.doesNotMatch(failed.stdout, /API key|operator token/, 'no secret was printed for a server that never started');
    });

    test('policy check and policy test work on files, without a server', async () => {
      const file = join(app.dir, 'policy.yml');
      writeFileSync(file, 'on_http_request:\n  - expressions: ["req.url.path == \'/old\'"]\n    actions: [{type: redirect, config: {to: "/new"}}]\n');
      assert.equal((await run(app.bin, ['policy', 'check', file])).stdout, '');
      writeFileSync(join(app.dir, 'bad.yml'), 'on_http_request:\n  - actions: [{type: nope}]\n');
      await assert.rejects(run(app.bin, ['policy', 'check', 'bad.yml'], { cwd: app.dir }), (error: { code: number; stdout: string }) => error.code === 1 && error.stdout === 'bad.yml:2:22: on_http_request[0].actions[0].type: unknown action "nope" (ERR_NGROK_2201)\n');
      assert.match((await run(app.bin, ['policy', 'test', file, '--request', 'GET https://app.example/old'])).stdout, /rule 0: matched\n    redirect \(ended the phase\)[^\n]*\nanswer: 30\d\n  location: https:\/\/app\.example\/new\n/i);
    });

    test('--help prints the usage', async () => {
      assert.match((await run(app.bin, ['--help'])).stdout, /^Usage: burrow \[serve\] \[options\]/);
    });

    test('starts without loading the PostgreSQL client, YAML, CEL, RE2, SSH or IP address libraries, and loads each when a request first needs it', async () => {
      const loads = join(app.dir, 'loads.txt');
      writeFileSync(loads, '');
      const hooks = join(app.dir, 'record-loads.mjs');
      writeFileSync(hooks, recordLoadsHook(loads));
      const server = await spawnServer(process.execPath, ['--import', hooks, app.bin, '--port', '0', '--api-key', TOKEN], { env: ENV });
      try {
        assert.equal((await fetch(`${server.url}/_burrow/health`)).status, 200);
        const atStart = new Set(readFileSync(loads, 'utf8').split('\n'));
        assert.deepEqual(LAZY_LIBRARIES.filter((name) => atStart.has(name)), [], `loaded before the first answer: ${[...atStart].join(', ')}`);
        const send = (method: string, path: string, body?: unknown) =>
          fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
        const policy = "on_http_request:\n  - expressions: [\"req.url.path.matches('^/admin')\"]\n    actions: [{type: deny}]\n  - actions: [{type: custom-response, config: {status_code: 200}}]\n";
        assert.equal((await send('POST', '/endpoints', { url: 'https://lazy.internal', type: 'cloud', traffic_policy: policy })).status, 201);
        assert.equal((await send('POST', '/ssh_credentials', { public_key: SSH_KEY })).status, 201);
        const filtered = await send('GET', `/api_keys?filter=${encodeURIComponent("obj.description.startsWith('x')")}`);
        assert.equal(filtered.status, 200);
        const ipPolicy = (await (await send('POST', '/ip_policies', {})).json()) as { id: string };
        assert.equal((await send('POST', '/ip_policy_rules', { ip_policy_id: ipPolicy.id, cidr: '10.0.0.0/8', action: 'allow' })).status, 201);
        const loaded = new Set(readFileSync(loads, 'utf8').split('\n'));
        assert.deepEqual(['yaml', '@marcbachmann/cel-js', 're2js', 'sshpk', 'ipaddr.js'].filter((name) => !loaded.has(name)), []);
      } finally {
        await server.stop();
      }
    });

    for (const args of [['--port', '0'], ['serve', '--port', '0']]) {
      test(`burrow ${args.join(' ')} serves the API`, async () => {
        const child = spawn(app.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
        try {
          const lines = createInterface({ input: child.stdout });
          let token: string | undefined;
          const url = await new Promise<string>((resolve, reject) => {
            child.once('exit', (code) => reject(new Error(`burrow exited with ${code}`)));
            lines.on('line', (line) => {
              token ??= /admin API key \(shown once\): (\S+)/.exec(line)?.[1];
              const listening = /listening on (\S+)/.exec(line);
              if (listening) resolve(listening[1]!);
            });
          });
          const response = await fetch(`${url}/api_keys`, { headers: { authorization: `Bearer ${token}` } });
          assert.equal(response.status, 200);
          assert.deepEqual(((await response.json()) as { keys: unknown[] }).keys.length, 1);
          const inspector = await fetch(`${url}/_burrow/`);
          assert.equal(inspector.status, 200);
          assert.match(await inspector.text(), /<title>Burrow inspector<\/title>/);
          assert.equal((await fetch(`${url}/_burrow/inspector.js`)).status, 200, 'the page finds its script in the installed package');
        } finally {
          child.kill('SIGTERM');
        }
        assert.equal(await exited, 0);
      });
    }
  });

  describe('testing tooling offline (docs/testing.md)', () => {
    before(() => {
      // The vendor's client, as the user's project would have it (with its own dependencies).
      mkdirSync(join(app.dir, 'node_modules', '@ngrok'), { recursive: true });
      // And the vendor's agent SDK with its native binary for this machine.
      for (const name of readdirSync(join(REPO, 'node_modules', '@ngrok'))) {
        if (name !== 'ngrok-api') symlinkSync(join(REPO, 'node_modules', '@ngrok', name), join(app.dir, 'node_modules', '@ngrok', name));
      }
      symlinkSync(join(REPO, 'node_modules', '@ngrok', 'ngrok-api'), join(app.dir, 'node_modules', '@ngrok', 'ngrok-api'));
    });

    test("the README's traffic policy example: the vendor's agent through burrow-tunnels/testing's ingress", async () => {
      copyFileSync(join(REPO, 'test', 'examples', 'traffic-policy.test.mjs'), join(app.dir, 'traffic-policy.test.mjs'));
      const { stdout } = await node(['--test', 'traffic-policy.test.mjs']);
      assert.match(stdout, /# pass 2\n/);
      assert.match(stdout, /# fail 0\n/);
    });

    test("the quick start: the official client against burrow-tunnels/testing, in plain JavaScript under node:test", async () => {
      copyFileSync(join(REPO, 'test', 'examples', 'quick-start.test.mjs'), join(app.dir, 'quick-start.test.mjs'));
      const { stdout } = await node(['--test', 'quick-start.test.mjs']);
      assert.match(stdout, /# pass 3\n/);
      assert.match(stdout, /# fail 0\n/);
    });

    test('the vendor client against in-process Burrow, with the embedding API alone', async () => {
      copyFileSync(join(REPO, 'test', 'examples', 'vendor-client.mjs'), join(app.dir, 'vendor-client.mjs'));
      const result = JSON.parse((await node(['vendor-client.mjs'])).stdout) as { id: string; keys: number };
      assert.match(result.id, /^cr_/);
      assert.equal(result.keys, 1);
    });

    // The timeout only guards against a hang (a server that never stops); the test waits on the close.
    test('killing `npx burrow` stops the server it started (npm → sh → node): its connection closes', { timeout: 120_000 }, async () => {
      const readyFile = join(app.dir, 'npx-ready.json');
      const npx = spawn('npx', ['burrow', '--port', '0', '--quiet', '--ready-file', readyFile], { cwd: app.dir, env: ENV, stdio: 'ignore' });
      const npxExited = new Promise((resolve) => npx.once('exit', resolve));
      try {
        await whenFileExists(readyFile);
        const ready = JSON.parse(readFileSync(readyFile, 'utf8')) as { url: string; pid: number };
        assert.notEqual(ready.pid, npx.pid, 'the server is not npm itself');
        const { closed } = await holdConnection(ready.url);
        npx.kill('SIGKILL');
        await npxExited;
        await closed;
        assert.equal(existsSync(readyFile), false, 'the server stopped as on a signal and removed its ready file');
      } finally {
        npx.kill('SIGKILL');
      }
    });

    const pytest = spawnSync('python3', ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0;
    test('the pytest recipe (Python standard library and pytest): npx burrow --ready-file, reset, faults', { skip: pytest ? false : 'pytest is not installed for python3 (pip install pytest)' }, async () => {
      mkdirSync(join(app.dir, 'pytest'), { recursive: true });
      for (const name of ['conftest.py', 'test_tooling.py']) copyFileSync(join(REPO, 'test', 'examples', 'pytest', name), join(app.dir, 'pytest', name));
      const { stdout } = await run('python3', ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'pytest'], { cwd: app.dir, env: ENV }).catch((error: { stdout: string; stderr: string }) => assert.fail(`pytest:\n${error.stdout}${error.stderr}`));
      assert.match(stdout, /3 passed/);
    });
  });
});
