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
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PG_ADMIN_URL_ENV, PG_URL_ENV, POSTGRES_MISSING, postgresBinDir, startPostgresCluster, type PostgresCluster } from './fixtures/postgres-cluster.ts';

const root = new URL('.', import.meta.url).pathname;
const SKIPPED_DIRS = new Set(['stress', 'bench', 'fixtures']);
/** The API suite (`*.http.test.ts`, beside each family's other tests) that the second pass runs on the PostgreSQL store. */
const POSTGRES_PASS = /\.http\.test\.ts$/;

function findTests(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return SKIPPED_DIRS.has(name) ? [] : findTests(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

/**
 * Runs `files` in one node:test process. With `held`, its output is kept until `held` resolves,
 * then printed and followed live, so two passes can run at once without mixing their reports.
 */
const children = new Set<ChildProcess>();

/** Where the spec reporter starts its list of failures, at the end of a pass. */
const FAILING = '\u2716 failing tests:';
/** Each pass's list of failures, printed again once every pass is over: CI shows a run's last lines. */
const failures: string[] = [];

function runFiles(label: string, files: string[], env: NodeJS.ProcessEnv, held?: Promise<unknown>, concurrency = 1): Promise<number> {
  const heading = `${label}: running ${files.length} test files, ${concurrency} at a time: ${files.map((f) => relative(root, f)).join(' ')}\n`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files], { stdio: ['ignore', 'pipe', 'pipe'], env });
  children.add(child);
  const kept: [NodeJS.WriteStream, Buffer][] = [];
  let live = held === undefined;
  if (live) process.stdout.write(heading);
  void held?.then(() => {
    process.stdout.write(heading);
    for (const [stream, chunk] of kept.splice(0)) stream.write(chunk);
    live = true;
  });
  const forward = (stream: NodeJS.WriteStream) => (chunk: Buffer) => (live ? stream.write(chunk) : kept.push([stream, chunk]));
  child.stdout!.on('data', forward(process.stdout));
  // The last 64 KiB of the report hold its list of failures, if any.
  let tail = Buffer.alloc(0);
  child.stdout!.on('data', (chunk: Buffer) => (tail = Buffer.concat([tail, chunk]).subarray(-65_536)));
  child.stderr!.on('data', forward(process.stderr));
  const exited = new Promise<number>((resolve) =>
    child.on('close', (code, signal) => {
      const report = tail.toString();
      if (report.includes(FAILING)) failures.push(`${label}: ${report.slice(report.lastIndexOf(FAILING))}`);
      resolve(signal ? 1 : (code ?? 1));
    }),
  );
  return held ? Promise.all([exited, held]).then(([code]) => code) : exited;
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
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const child of children) child.kill(signal);
      void cluster!.stop().then(() => process.exit(1));
    });
  }
} else {
  console.warn(`\n${'!'.repeat(100)}\n!!! ${POSTGRES_MISSING}\n${'!'.repeat(100)}\n`);
}

let code = 1;
try {
  // Two files at a time in the first pass, and the second pass beside it: most files wait on
  // processes, sockets and the database more than they compute, so three at once keep two cores busy.
  const postgresFiles = files.filter((file) => POSTGRES_PASS.test(file));
  const first = runFiles('memory and file stores', files, env, undefined, 2);
  const second = cluster && postgresFiles.length > 0
    ? runFiles('the HTTP API suite on PostgreSQL', postgresFiles, { ...env, BURROW_TEST_STORE: 'postgres' }, first)
    : Promise.resolve(0);
  code = Math.max(await first, await second);
  if (failures.length > 0) process.stdout.write(`\n${'='.repeat(100)}\nthe failures of every pass, again:\n\n${failures.join('\n')}`);
  if (!cluster && process.env.CI) {
    console.error(`CI=true: ${POSTGRES_MISSING}`);
    code = 1;
  }
} finally {
  await cluster?.stop();
}
process.exit(code);
