import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { errorSpec } from '../lib/conventions/errors.ts';
import { allOperations, defineFamily, FAMILIES, Registry, REGISTRY, RESOURCES } from '../lib/index.ts';

const root = new URL('..', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The modules a file imports or re-exports from (`… from '…'`, and side-effect `import '…'`), and
 * those it loads when first needed (`await import('…')`, `createRequire(import.meta.url)('…')`).
 */
const imports = (file: string) => {
  const text = readFileSync(join(root, file), 'utf8');
  const top = [...text.matchAll(/^(?:(?:import|export)\b[^'";]*?\bfrom\s*|import\s+)['"]([^'"]+)['"]/gm)];
  const onFirstUse = [...text.matchAll(/(?:\bimport|createRequire\(import\.meta\.url\))\(['"]([^'"]+)['"]\)/g)];
  return [...top, ...onFirstUse].map((m) => m[1]!);
};

/**
 * The files of lib/, adapters/ and bin/ that import each other in a loop, type-only imports
 * included (a loop of types is still a loop of knowledge), as `a -> b -> a` strings.
 */
function importCycles(): string[] {
  const files = [...sources('lib'), ...sources('adapters'), ...sources('bin')];
  const edges = new Map(files.map((file) => [file, imports(file).filter((spec) => spec.startsWith('.')).map((spec) => join(dirname(file), spec))]));
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'open');
    for (const next of edges.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
  return cycles;
}

/**
 * The folders of lib/ in layers, outer to inner: a file imports its own folder's files and those of
 * inner layers only (the files at the top, the root's and the innermost layer's, also each other's). Families and the control plane stand side by side (neither imports the other:
 * the core imports no family, below); the policy engine reads families.
 */
const LIB_LAYERS: readonly (readonly string[])[] = [
  ['index.ts', 'burrow.ts'],
  ['policy'],
  ['families', 'control'],
  ['engine'],
  ['journal'],
  ['traffic', 'simulation', 'ca'],
  ['conventions', 'store.ts', 'limits.ts', 'version.ts'],
];

/** The layer of a path under lib/ (by its first part: a folder, or a file at the top). */
const layerOf = (path: string) => LIB_LAYERS.findIndex((layer) => layer.includes(path.split('/')[1]!));

describe('architecture', () => {
  test("lib/'s folders import one way, outer to inner: root, policy, families and control, engine, journal, traffic/simulation/ca, conventions", () => {
    for (const file of sources('lib')) {
      const from = layerOf(file);
      assert.notEqual(from, -1, `${file} is in no layer of LIB_LAYERS`);
      for (const spec of imports(file).filter((s) => s.startsWith('.'))) {
        const target = join(dirname(file), spec);
        const to = layerOf(target);
        const sameFolder = target.split('/')[1] === file.split('/')[1];
        const filesOfOneLayer = to === from && (from === 0 || from === LIB_LAYERS.length - 1);
        assert.ok(sameFolder || filesOfOneLayer || to > from, `${file} (layer ${from}) imports ${spec} (layer ${to})`);
      }
    }
  });

  test('lib/ never imports adapters, node:fs, node:http, lowdb or itty-router', () => {
    for (const file of sources('lib')) {
      for (const spec of imports(file)) {
        assert.ok(!/adapters\/|^node:(fs|http|https|net)|^(fs|http)$|^lowdb|^itty-router/.test(spec), `${file} imports ${spec}`);
      }
    }
  });

  test('the core imports no family: only the composition root (lib/index.ts), lib/families/ and the policy engine do', () => {
    const readers = (f: string) => f.startsWith('lib/families/') || f.startsWith('lib/policy/') || f === 'lib/index.ts';
    for (const file of sources('lib').filter((f) => !readers(f))) {
      for (const spec of imports(file)) assert.ok(!join(dirname(file), spec).startsWith('lib/families'), `${file} imports ${spec}`);
    }
  });

  test('the policy engine reads families only through their index.ts (the records it turns into rules)', () => {
    for (const file of sources('lib/policy')) {
      for (const spec of imports(file)) {
        const target = join(dirname(file), spec).split('/');
        if (target[1] === 'families') assert.equal(target[3], 'index.ts', `${file} imports ${spec}, an internal of family ${target[2]}`);
      }
    }
  });

  test("a family imports another family only through that family's index.ts", () => {
    for (const file of sources('lib/families').filter((f) => f.split('/').length > 3)) {
      const family = file.split('/')[2];
      for (const spec of imports(file).filter((s) => s.startsWith('.'))) {
        const target = join(dirname(file), spec).split('/');
        if (target[0] !== 'lib' || target[1] !== 'families' || target.length < 4 || target[2] === family) continue;
        assert.equal(target[3], 'index.ts', `${file} imports ${spec}, an internal of family ${target[2]}`);
      }
    }
  });

  test("each family's error conditions are its own: a name defined twice or a number of Burrow's range used twice refuses the registry", () => {
    assert.doesNotThrow(() => new Registry(FAMILIES).errors());
    const withErrors = (errors: Record<string, ReturnType<typeof errorSpec>>) => new Registry([...FAMILIES, defineFamily({ name: 'extra', kinds: {}, errors })]);
    assert.throws(() => withErrors({ NOT_FOUND: errorSpec(9099, 404) }), /error NOT_FOUND of family extra is defined twice/);
    assert.throws(() => withErrors({ EXTRA_CLASH: errorSpec(9001, 400) }), /reuses NOT_FOUND's number 9001/);
    assert.doesNotThrow(() => withErrors({ EXTRA_VENDOR_SHARED: errorSpec(215, 400) }));
  });

  test('no import cycle in lib/, adapters/ or bin/', () => {
    assert.deepEqual(importCycles(), []);
  });

  test('each third-party library is imported by one module only', () => {
    const owners: Record<string, string> = {
      'ipaddr.js': 'lib/conventions/cidr.ts',
      sshpk: 'lib/families/ssh/ssh-keys.ts',
      lowdb: 'adapters/stores/json-file-store.ts',
      pg: 'adapters/stores/postgres-store.ts',
      'itty-router': 'adapters/http/router.ts',
      '@valibot/to-json-schema': 'lib/engine/openapi.ts',
      re2js: 'lib/conventions/patterns.ts',
      '@marcbachmann/cel-js': 'lib/conventions/cel.ts',
      yaml: 'lib/conventions/traffic-policy.ts',
      ssh2: 'adapters/ssh-gateway/gateway.ts',
    };
    for (const file of [...sources('lib'), ...sources('adapters'), ...sources('bin')]) {
      for (const spec of imports(file)) {
        const pkg = Object.keys(owners).find((name) => spec === name || spec.startsWith(`${name}/`));
        if (pkg) assert.equal(relative(root, join(root, file)), owners[pkg], `${file} imports ${pkg}`);
      }
    }
  });

  test('every registry key is its definition name, and docs/embedding.md lists every resource name', () => {
    for (const [key, def] of Object.entries(REGISTRY)) assert.equal(def.name, key);
    const doc = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');
    for (const name of Object.keys(REGISTRY)) assert.ok(doc.includes(`\`${name}\``), `docs/embedding.md lists ${name}`);
  });

  test('every resource kind has a unique prefix (but one that serves the records of another), path and operation ids', () => {
    const prefixes = RESOURCES.filter((r) => r.sameRecordsAs === undefined).map((r) => r.prefix);
    for (const view of RESOURCES.filter((r) => r.sameRecordsAs)) assert.equal(view.prefix, view.sameRecordsAs!.prefix, view.name);
    assert.equal(new Set(prefixes).size, prefixes.length);
    const paths = RESOURCES.map((r) => r.path);
    assert.equal(new Set(paths).size, paths.length);
    const ids = allOperations().map((op) => op.id);
    assert.equal(new Set(ids).size, ids.length);
    const routes = allOperations().map((op) => `${op.method} ${op.path}`);
    assert.equal(new Set(routes).size, routes.length);
  });
});
