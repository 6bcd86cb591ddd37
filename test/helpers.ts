import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createFetchHandler } from '../adapters/http/fetch-handler.ts';
import { MemoryStore } from '../adapters/stores/memory-store.ts';
import { openPostgresStore } from '../adapters/stores/postgres-store.ts';
import { createBurrow, ManualClock, type Burrow, type BurrowOptions, type Store } from '../lib/index.ts';
import { freshSchema, PG_URL_ENV } from './fixtures/postgres-cluster.ts';

/** The operator token of in-process test instances (control plane `/_burrow/…`). */
export const OPERATOR_TOKEN = 'test-operator-token';

/** The base URL in-process tests use. */
export const BASE = 'http://burrow.test';

export interface TestInstance {
  burrow: Burrow;
  clock: ManualClock;
  token: string;
  accountId: string;
  userId: string;
  fetch: (request: Request) => Promise<Response>;
  /** Sends a request as `token` (default: the account's admin key). */
  request(method: string, path: string, body?: unknown, init?: { token?: string | null; headers?: Record<string, string | null>; rawBody?: string }): Promise<TestResponse>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * The store of in-process test instances: a MemoryStore, or with BURROW_TEST_STORE=postgres (the
 * second pass of test/run.ts) a PostgresStore in a schema of its own on the test cluster, so the
 * same API suite runs on both.
 */
export async function createTestStore(): Promise<Store> {
  if (process.env.BURROW_TEST_STORE !== 'postgres') return new MemoryStore();
  const url = process.env[PG_URL_ENV];
  if (!url) throw new Error(`BURROW_TEST_STORE=postgres needs ${PG_URL_ENV} (test/run.ts sets it)`);
  return openPostgresStore({ url, schema: freshSchema(), poolSize: 3 });
}

/** A deterministic in-process instance over a fresh test store, with one account. */
export async function createTestInstance(options: Partial<BurrowOptions> = {}): Promise<TestInstance> {
  const clock = new ManualClock('2026-03-01T12:00:00Z');
  const burrow = createBurrow({ store: await createTestStore(), clock, seed: 1, baseUrl: BASE, ...options });
  const account = await burrow.createAccount({ name: 'test' });
  // In-process requests have no socket; tests name the caller's address with this header.
  const fetch = createFetchHandler(burrow, { operatorToken: OPERATOR_TOKEN, sourceIp: (request) => request.headers.get('x-test-source-ip') ?? undefined });
  return {
    burrow,
    clock,
    token: account.token,
    accountId: account.accountId,
    userId: account.userId,
    fetch,
    request: (method, path, body, init = {}) => sendRequest(fetch, `${BASE}${path}`, method, body, { ...init, token: init.token === undefined ? account.token : init.token }),
  };
}

/** Sends one JSON request through a fetch-style function and decodes the answer. */
export async function sendRequest(
  fetchFn: (request: Request) => Promise<Response>,
  url: string,
  method: string,
  body?: unknown,
  init: { token?: string | null; headers?: Record<string, string | null>; rawBody?: string } = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = Object.fromEntries(
    Object.entries({ 'Service-Version': '2', ...init.headers }).filter(([, value]) => value !== null && value !== undefined),
  ) as Record<string, string>;
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  const payload = init.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
  if (payload !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
  const response = await fetchFn(new Request(url, { method, headers, ...(payload !== undefined ? { body: payload } : {}) }));
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

export interface RunningServer {
  url: string;
  token: string | undefined;
  /** The operator token the server printed (undefined when --operator-token was given). */
  operatorToken: string | undefined;
  process: ChildProcess;
  output: string[];
  /** The output lines so far once one matches `done` (request log lines follow their responses). */
  outputUntil(done: (lines: string[]) => boolean): Promise<string[]>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  request(method: string, path: string, body?: unknown, init?: { token?: string | null; headers?: Record<string, string | null>; rawBody?: string }): Promise<TestResponse>;
}

const BIN = new URL('../bin/burrow.ts', import.meta.url).pathname;

/** Starts `bin/burrow.ts serve --port 0 …` and waits for its listening line. */
export async function startServer(args: string[] = [], env: Record<string, string> = {}): Promise<RunningServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, 'serve', '--port', '0', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const lines = createInterface({ input: child.stdout! });
  child.stderr!.on('data', (chunk) => output.push(String(chunk)));
  let token: string | undefined;
  let operatorToken: string | undefined;
  const url = await new Promise<string>((resolve, reject) => {
    // A server that never says it listens is killed, or it would keep the test process alive forever.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start: ${output.join('')}`));
    }, 60_000);
    // 'close', not 'exit': only then has everything the server wrote to stderr been read.
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}: ${output.join('')}`));
    });
    lines.on('line', (line) => {
      output.push(line);
      // With --log-format json, the start-up lines are JSON objects too; their msg reads as in text.
      const banner = line.startsWith('{') ? (JSON.parse(line) as { msg?: string; url?: string }) : undefined;
      if (banner?.url) {
        clearTimeout(timer);
        resolve(banner.url);
      }
      if (banner) line = banner.msg ?? '';
      const key = /admin API key \(shown once\): (\S+)/.exec(line);
      if (key) token = key[1];
      const operator = /operator token for \/_burrow \([^)]*\): (\S+)/.exec(line);
      if (operator) operatorToken = operator[1];
      const listening = /listening on (\S+)/.exec(line);
      if (listening) {
        clearTimeout(timer);
        resolve(listening[1]!);
      }
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    url,
    get token() {
      return token;
    },
    get operatorToken() {
      return operatorToken;
    },
    process: child,
    output,
    outputUntil: (done) =>
      new Promise<string[]>((resolve, reject) => {
        if (done(output)) return resolve(output);
        // Only a guard against a hang, generous for a loaded machine: the wait ends on the line.
        const timer = setTimeout(() => {
          lines.off('line', check);
          reject(new Error(`the expected output did not come:\n${output.join('\n')}`));
        }, 30_000);
        function check() {
          if (!done(output)) return;
          clearTimeout(timer);
          lines.off('line', check);
          resolve(output);
        }
        lines.on('line', check);
      }),
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    request: (method, path, body, init = {}) => sendRequest((r) => fetch(r), `${url}${path}`, method, body, { ...init, token: init.token === undefined ? token : init.token }),
  } as RunningServer;
}

/** Asserts an error answer: status, `ERR_BURROW_<code>`, matching status_code and a message matching `message`. */
export function assertError(res: { status: number; body: any }, status: number, code: number, message: RegExp): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error_code, `ERR_BURROW_${code}`);
  assert.equal(res.body.status_code, status);
  assert.match(res.body.msg, message);
}
