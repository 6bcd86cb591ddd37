import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { allOperations, RESOURCES } from '../lib/index.ts';

const root = new URL('..', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

const imports = (file: string) => [...readFileSync(join(root, file), 'utf8').matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]!);

describe('architecture', () => {
  test('lib/ never imports adapters, node:fs, node:http, lowdb or itty-router', () => {
    for (const file of sources('lib')) {
      for (const spec of imports(file)) {
        assert.ok(!/adapters\/|^node:(fs|http|https|net)|^(fs|http)$|^lowdb|^itty-router/.test(spec), `${file} imports ${spec}`);
      }
    }
  });

  test('each third-party library is imported by one module only', () => {
    const owners: Record<string, string> = {
      'ipaddr.js': 'lib/resources/ip-policies/cidr.ts',
      sshpk: 'lib/resources/ssh/ssh-keys.ts',
      lowdb: 'adapters/json-file-store.ts',
      'itty-router': 'adapters/http/router.ts',
      '@valibot/to-json-schema': 'lib/openapi.ts',
      re2js: 'lib/conventions/patterns.ts',
    };
    for (const file of [...sources('lib'), ...sources('adapters'), ...sources('bin')]) {
      for (const spec of imports(file)) {
        const pkg = Object.keys(owners).find((name) => spec === name || spec.startsWith(`${name}/`));
        if (pkg) assert.equal(relative(root, join(root, file)), owners[pkg], `${file} imports ${pkg}`);
      }
    }
  });

  test('every resource kind has a unique prefix, path and operation ids', () => {
    const prefixes = RESOURCES.map((r) => r.prefix);
    assert.equal(new Set(prefixes).size, prefixes.length);
    const paths = RESOURCES.map((r) => r.path);
    assert.equal(new Set(paths).size, paths.length);
    const ids = allOperations().map((op) => op.id);
    assert.equal(new Set(ids).size, ids.length);
    const routes = allOperations().map((op) => `${op.method} ${op.path}`);
    assert.equal(new Set(routes).size, routes.length);
  });
});
