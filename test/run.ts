/**
 * Runs every `*.test.ts` file under test/ with the node:test runner. Node 20's `--test` neither
 * expands globs nor finds `.ts` files by itself, so the files are listed here. Arguments narrow the
 * run to files whose path contains one of them: `npm test -- stores http`.
 *
 * One throwaway PostgreSQL cluster serves the whole run (test/fixtures/postgres-cluster.ts): the
 * PostgreSQL store's own tests use it, and a second pass runs the HTTP API suite again with every
 * test instance on a PostgresStore (BURROW_TEST_STORE=postgres). Without PostgreSQL installed the
 * run says so loudly and skips those; under CI=true it fails instead.
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PG_ADMIN_URL_ENV, PG_URL_ENV, POSTGRES_MISSING, postgresBinDir, startPostgresCluster, type PostgresCluster } from './fixtures/postgres-cluster.ts';

const root = new URL('.', import.meta.url).pathname;
const SKIPPED_DIRS = new Set(['stress', 'bench', 'fixtures']);
/** The API suite that the second pass runs on the PostgreSQL store. */
const POSTGRES_PASS = /\/test\/http\//;

function findTests(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return SKIPPED_DIRS.has(name) ? [] : findTests(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

function runFiles(label: string, files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  console.log(`${label}: running ${files.length} test files: ${files.map((f) => relative(root, f)).join(' ')}`);
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], { stdio: 'inherit', env });
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ? 1 : (code ?? 1))));
}

const filters = process.argv.slice(2);
const files = findTests(root).filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
if (files.length === 0) {
  console.error(`no test files match ${filters.join(', ')}`);
  process.exit(1);
}

let cluster: PostgresCluster | undefined;
const env: NodeJS.ProcessEnv = { ...process.env };
if (postgresBinDir()) {
  cluster = await startPostgresCluster();
  env[PG_URL_ENV] = cluster.url;
  env[PG_ADMIN_URL_ENV] = cluster.adminUrl;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cluster!.stop().then(() => process.exit(1)));
} else {
  console.warn(`\n${'!'.repeat(100)}\n!!! ${POSTGRES_MISSING}\n${'!'.repeat(100)}\n`);
}

let code = 1;
try {
  code = await runFiles('memory and file stores', files, env);
  const postgresFiles = files.filter((file) => POSTGRES_PASS.test(file));
  if (cluster && postgresFiles.length > 0) {
    code = Math.max(code, await runFiles('the HTTP API suite on PostgreSQL', postgresFiles, { ...env, BURROW_TEST_STORE: 'postgres' }));
  }
  if (!cluster && process.env.CI) {
    console.error(`CI=true: ${POSTGRES_MISSING}`);
    code = 1;
  }
} finally {
  await cluster?.stop();
}
process.exit(code);
