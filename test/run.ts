/**
 * Runs every `*.test.ts` file under test/ with the node:test runner. Node 20's `--test` neither
 * expands globs nor finds `.ts` files by itself, so the files are listed here. Arguments narrow the
 * run to files whose path contains one of them: `npm test -- stores http`.
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('.', import.meta.url).pathname;
const SKIPPED_DIRS = new Set(['stress', 'bench', 'fixtures']);

function findTests(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return SKIPPED_DIRS.has(name) ? [] : findTests(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

const filters = process.argv.slice(2);
const files = findTests(root).filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
if (files.length === 0) {
  console.error(`no test files match ${filters.join(', ')}`);
  process.exit(1);
}
console.log(`running ${files.length} test files: ${files.map((f) => relative(root, f)).join(' ')}`);
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
});
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
