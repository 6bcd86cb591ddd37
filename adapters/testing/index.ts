import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { createSecureContext, type ConnectionOptions, type SecureContext } from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectAgent, createBurrow, formatTime, listenersOf, ManualClock, type AgentConnect, type Burrow, type BurrowOptions, type CheckpointInfo, type FaultInput, type FaultRule, type JournalEntryDetail, type RequestFindInput, type Store, type ReplayEdits, type TrafficEntryDetail, type TrafficFindInput } from '../../lib/index.ts';
import { answerUnparsedRequests, createNodeListener } from '../http/node.ts';
import { startNetworkEdges, type NetworkEdges } from '../network-edges.ts';
import { MemoryStore } from '../stores/memory-store.ts';

/**
 * Traffic policy files checked and tried without a server, as `burrow policy check|test` do:
 * `await checkPolicy(['policy.yml'])` → `{ ok, problems: [{ file, line, col, message, code }] }`;
 * `await testPolicy('policy.yml', { request: 'GET https://app.example/x', headers: ['Accept: text/html'] })`
 * → the phases and rules that ran and the `terminal` answer or the `upstream` request.
 */
export { checkPolicyFiles as checkPolicy, testPolicyFile as testPolicy, type PolicyCheckResult, type PolicyFileProblem, type PolicyTestOptions, type PolicyTestResult } from '../policy-tool.ts';

/**
 * `burrow-tunnels/testing`: a Burrow for one test suite in one call. In-process by default (an instance
 * over a MemoryStore behind a node:http server on a free loopback port), or the `burrow` command as
 * a child process (`{ process: true }`), which waits on its `--ready-file` and exits with this
 * process. Either way the answer is the same handle: where it listens, its keys, and the test
 * controls — reset, checkpoints, faults, simulated agents, the journals' `find`, the clock — and
 * `close()`, which stops everything it started.
 *
 *   const burrow = await startBurrow();
 *   after(() => burrow.close());
 *   beforeEach(() => burrow.reset());
 */

export interface StartBurrowOptions {
  /** Run the `burrow` command as a child process instead of in this process. */
  readonly process?: boolean;
  /** The admin key's token (default: a generated one). The one rule: docs/testing.md. */
  readonly apiKey?: string;
  /** The control plane's token (default: a random one). */
  readonly operatorToken?: string;
  /** Deterministic ids, tokens and fault draws from this seed. */
  readonly seed?: number | string;
  /** A manual clock starting at this RFC 3339 time (moved with `clock.set` and `clock.advance`). */
  readonly clock?: string;
  /**
   * Start from this snapshot (`GET /_burrow/snapshot`'s document, or the path of a file holding
   * one): the whole state, which becomes every account's starting state; as a process, `--snapshot`.
   */
  readonly snapshot?: string | object;
  /** In-process only: the store (default a new MemoryStore; closed by `close()`). */
  readonly store?: Store;
  /** In-process only: any other option of `createBurrow`. */
  readonly burrowOptions?: Omit<BurrowOptions, 'store' | 'clock' | 'seed'>;
  /** As a process only: more arguments for `burrow serve` (`--data FILE`, `--rate-limit 10/1s`…). */
  readonly args?: readonly string[];
  /**
   * Also serve the vendor's agent protocol on a free loopback port (`--agent-addr`), so the real
   * agent (@ngrok/ngrok) connects: `ngrok.forward({ addr, ...(await burrow.agentConfig()) })`.
   */
  readonly agents?: boolean;
  /**
   * Also serve endpoints' traffic (`--http-ingress-addr` and `--tls-ingress-addr` on free loopback
   * ports), reached with `burrow.fetch(url)`. Implies `agents`.
   */
  readonly ingress?: boolean;
}

/** The agent's settings for this Burrow, as `ngrok.forward` and the vendor's config name them. */
export interface AgentConfig {
  /** A new tunnel credential's token of the default account. */
  readonly authtoken: string;
  /** The agent gateway, `localhost:PORT`. */
  readonly server_addr: string;
  /** PEM of Burrow's CA, which signs the agent gateway's certificate. */
  readonly session_ca_cert: string;
  /**
   * `ngrok.forward` otherwise reuses the one session it opened first (perhaps another Burrow's, or
   * another credential's): each config opens its own.
   */
  readonly force_new_session: true;
}

/** What `fetch` sends: a subset of fetch's RequestInit. */
export interface IngressRequestInit {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
}

/** Fault rules of the running Burrow (lib/simulation/faults.ts; docs/testing.md). */
export interface FaultControls {
  add(rule: FaultInput): Promise<FaultRule>;
  list(): Promise<FaultRule[]>;
  remove(id: string): Promise<void>;
  /** Removes every rule. */
  clear(): Promise<void>;
}

/** The request journal of the running Burrow (lib/journal/find.ts; docs/testing.md). */
export interface RequestJournalControls {
  /** The API requests that match every criterion given (method, path, operation, status, body…), with their detail, newest first. */
  find(criteria?: RequestFindInput): Promise<JournalEntryDetail[]>;
  /**
   * Sends a journaled API request (its `operation_id`) again, with optional edits, answering the
   * new entry. The journal keeps no API key: give one as `headers.authorization` when the original
   * sent one.
   */
  replay(operationId: string, edits?: ReplayEdits): Promise<JournalEntryDetail>;
}

/** The traffic journal of the running Burrow. */
export interface TrafficJournalControls {
  /**
   * The exchanges that match every criterion given (method, path, host, endpoint_id, status,
   * body…), with their detail, newest first; `wait_ms` waits for a first match (an exchange is
   * journaled once its answer closed, a moment after the client read it).
   */
  find(criteria?: TrafficFindInput): Promise<TrafficEntryDetail[]>;
  /** Sends a journaled HTTP exchange (its `seq`) again through the ingress and the endpoint's policy, with optional edits, answering the new exchange. */
  replay(seq: number, edits?: ReplayEdits): Promise<TrafficEntryDetail>;
}

/** The manual clock (needs `clock`): each answers the time after it, RFC 3339. */
export interface ClockControls {
  now(): Promise<string>;
  /** Jumps to `time` (never backwards). */
  set(time: string | Date): Promise<string>;
  advance(seconds: number): Promise<string>;
}

export interface RunningBurrow {
  /** Base URL of the API and the control plane (`/_burrow/`). */
  readonly url: string;
  /** Token of the default account's admin key. */
  readonly apiKey: string;
  readonly operatorToken: string;
  readonly accountId: string;
  /** PEM of Burrow's CA (`GET /_burrow/ca.pem`): it signs the agent gateway's certificate. */
  readonly ca: string;
  /** The listeners as `/_burrow/health` reports them: `host:port` by name, `null` for one that is off. */
  readonly listeners: Readonly<Record<string, string | null>>;
  /** The instance itself, when in-process (undefined as a process). */
  readonly burrow: Burrow | undefined;
  /** Returns every account to its starting state (the admin key back, everything else gone), fault rules removed. */
  reset(accountId?: string): Promise<void>;
  /** Keeps the whole state under `name`. */
  checkpoint(name: string): Promise<CheckpointInfo>;
  /** Puts the whole state back as it was at checkpoint `name`. */
  restore(name: string): Promise<CheckpointInfo>;
  /**
   * Connects a simulated agent (the body of POST /_burrow/agents, docs/control-plane.md); without a
   * `token` or `ssh_public_key`, with a new tunnel credential of the default account. Answers its
   * tunnel session.
   */
  connectAgent(input?: AgentConnect): Promise<Record<string, any>>;
  /**
   * Settings for the vendor's real agent (needs `agents` or `ingress`), each call with a new tunnel
   * credential of the default account: `ngrok.forward({ addr: 3000, ...(await burrow.agentConfig()) })`.
   */
  agentConfig(): Promise<AgentConfig>;
  /**
   * A request to an endpoint's URL through the ingress (needs `ingress`): `http://` URLs go to the
   * HTTP listener with the URL's host as `Host`, `https://` ones to the TLS listener with it as SNI,
   * trusting Burrow's CA. Answers a fetch `Response`; `init` takes `method`, `headers` and a string
   * or bytes `body`.
   */
  fetch(url: string | URL, init?: IngressRequestInit): Promise<Response>;
  readonly faults: FaultControls;
  readonly requests: RequestJournalControls;
  readonly traffic: TrafficJournalControls;
  readonly clock: ClockControls;
  /** Stops the server (and the child process) and closes the store; safe to call twice. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a Burrow for tests; see the module comment and docs/testing.md. */
export function startBurrow(options: StartBurrowOptions = {}): Promise<RunningBurrow> {
  // Over a snapshot, whose default account's keys are only hashes, the handle needs a key of its own.
  const chosen = options.apiKey === undefined && options.snapshot !== undefined ? { ...options, apiKey: randomBytes(24).toString('base64url') } : options;
  return chosen.process ? startProcess(chosen) : startInProcess(chosen);
}

/** The calls every handle makes to its server over HTTP (a process's) or in this process. */
interface Controls {
  reset(accountId?: string): Promise<unknown>;
  checkpoint(name: string): Promise<CheckpointInfo>;
  restore(name: string): Promise<CheckpointInfo>;
  connectAgent(input: AgentConnect): Promise<Record<string, any>>;
  faults: FaultControls;
  requests: Pick<RequestJournalControls, 'find'>;
  traffic: Pick<TrafficJournalControls, 'find'>;
  /** `POST /_burrow/clock`'s body and answer (`GET` without a body). */
  clock(move?: { now?: string; advance_seconds?: number }): Promise<{ now: string }>;
}

function handle(fields: Omit<RunningBurrow, 'reset' | 'checkpoint' | 'restore' | 'connectAgent' | 'agentConfig' | 'fetch' | 'faults' | 'requests' | 'traffic' | 'clock' | 'close' | typeof Symbol.asyncDispose>, controls: Controls, stop: () => Promise<void>): RunningBurrow {
  let closing: Promise<void> | undefined;
  let trustingCa: SecureContext | undefined;
  const close = () => (closing ??= stop());
  const listener = (name: string, option: string) => {
    const address = fields.listeners[name];
    if (!address) throw new Error(`burrow-tunnels/testing: start Burrow with { ${option}: true } for this (no ${name} listener)`);
    return address;
  };
  return {
    ...fields,
    reset: async (accountId) => void (await controls.reset(accountId)),
    checkpoint: (name) => controls.checkpoint(name),
    restore: (name) => controls.restore(name),
    async connectAgent(input = {}) {
      if (input.token !== undefined || input.ssh_public_key !== undefined) return controls.connectAgent(input);
      const credential = await apiCall(fields.url, fields.apiKey, 'POST', '/credentials', { description: 'simulated agent' });
      return controls.connectAgent({ ...input, token: credential.token });
    },
    async agentConfig() {
      const address = listener('agent', 'agents');
      const credential = await apiCall(fields.url, fields.apiKey, 'POST', '/credentials', { description: 'burrow-tunnels/testing agent' });
      // The gateway's certificate names localhost, which the agent verifies.
      return { authtoken: credential.token, server_addr: `localhost:${portOf(address)}`, session_ca_cert: fields.ca, force_new_session: true };
    },
    async fetch(url, init = {}) {
      const target = new URL(url);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new TypeError(`burrow-tunnels/testing fetch: ${target.protocol} URLs are not HTTP (use a socket for tcp:// and tls://)`);
      const tls = target.protocol === 'https:';
      const address = listener(tls ? 'tls_ingress' : 'http_ingress', 'ingress');
      // One context trusting Burrow's CA for all of the handle's requests (making one is ~1 ms of CPU).
      return ingressFetch(target, init, portOf(address), tls ? (trustingCa ??= createSecureContext({ ca: fields.ca })) : undefined);
    },
    faults: controls.faults,
    // Replays go through the HTTP control plane in both modes (an API replay is sent over HTTP).
    requests: { ...controls.requests, replay: (operationId, edits = {}) => apiCall(fields.url, fields.operatorToken, 'POST', `/_burrow/requests/${encodeURIComponent(operationId)}/replay`, edits) },
    traffic: { ...controls.traffic, replay: (seq, edits = {}) => apiCall(fields.url, fields.operatorToken, 'POST', `/_burrow/traffic/${seq}/replay`, edits) },
    clock: {
      now: async () => (await controls.clock()).now,
      set: async (time) => (await controls.clock({ now: typeof time === 'string' ? time : formatTime(time) })).now,
      advance: async (seconds) => (await controls.clock({ advance_seconds: seconds })).now,
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** The port of a listener's `host:port`. */
const portOf = (address: string) => Number(address.slice(address.lastIndexOf(':') + 1));

/** One request to the ingress on loopback `port`, addressed to `target`'s host (Host, and SNI with `trust`, a context trusting Burrow's CA). */
async function ingressFetch(target: URL, init: IngressRequestInit, port: number, trust: SecureContext | undefined): Promise<Response> {
  const options = { host: '127.0.0.1', port, method: init.method ?? 'GET', path: `${target.pathname}${target.search}`, headers: { host: target.host, ...init.headers }, agent: false as const };
  const req = trust === undefined ? httpRequest(options) : httpsRequest(Object.assign(options, { secureContext: trust, servername: target.hostname } satisfies ConnectionOptions));
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  req.end(init.body);
  const res = await answered;
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 0;
  // A Response cannot carry a body with these statuses.
  const body = status === 204 || status === 304 || init.method === 'HEAD' ? null : Buffer.concat(chunks);
  return new Response(body, { status, statusText: res.statusMessage ?? '', headers });
}

async function startInProcess(options: StartBurrowOptions): Promise<RunningBurrow> {
  const store = options.store ?? new MemoryStore();
  const burrow = createBurrow({
    ...options.burrowOptions,
    store,
    ...(options.clock !== undefined ? { clock: new ManualClock(options.clock) } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  const operatorToken = options.operatorToken ?? randomBytes(24).toString('base64url');
  const server = createServer({ requireHostHeader: false }, createNodeListener(burrow, { operatorToken }));
  answerUnparsedRequests(server, burrow);
  let edges: NetworkEdges | undefined;
  try {
    if (options.snapshot !== undefined) await burrow.loadSnapshot(snapshotOf(options.snapshot));
    const account = await burrow.ensureDefaultAccount(options.apiKey);
    await burrow.captureStart();
    const url = await listen(server);
    burrow.services.listeners.set('api', new URL(url).host);
    // As `burrow serve` starts them (adapters/network-edges.ts), on free loopback ports.
    edges = await startNetworkEdges(burrow, {
      ...(options.agents || options.ingress ? { agentAddr: {} } : {}),
      ...(options.ingress ? { httpIngressAddr: {}, tlsIngressAddr: {} } : {}),
    });
    const listeners = listenersOf(burrow);
    const ca = (await burrow.services.ca()).certificatePem;
    const controls: Controls = {
      reset: (accountId) => burrow.reset(accountId),
      checkpoint: (name) => burrow.checkpoint(name),
      restore: (name) => burrow.restore(name),
      connectAgent: (input) => connectAgent(burrow, input, url),
      faults: {
        add: async (rule) => burrow.faults.add(rule),
        list: async () => burrow.faults.list(),
        remove: async (id) => burrow.faults.remove(id),
        clear: async () => void (await burrow.faults.clear()),
      },
      requests: { find: async (criteria) => burrow.requests.find(criteria) },
      traffic: { find: (criteria) => burrow.traffic.find(criteria) },
      clock: async (move) => (move === undefined ? { now: formatTime(burrow.clock.now()) } : burrow.moveClock(move)),
    };
    const apiKey = account.token ?? options.apiKey!;
    const started = edges;
    return handle({ url, apiKey, operatorToken, accountId: account.accountId, ca, listeners, burrow }, controls, async () => {
      await started.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await burrow.close();
    });
  } catch (error) {
    await edges?.close();
    server.close();
    await burrow.close();
    throw error;
  }
}

/** The snapshot document of the option (read from its file when it names one). */
function snapshotOf(snapshot: string | object): unknown {
  return typeof snapshot === 'string' ? JSON.parse(readFileSync(snapshot, 'utf8')) : snapshot;
}

/** A file holding the snapshot of the option, for `--snapshot` (written into `dir` when given as a document). */
function snapshotFile(snapshot: string | object, dir: string): string {
  if (typeof snapshot === 'string') return snapshot;
  const file = join(dir, 'snapshot.json');
  writeFileSync(file, JSON.stringify(snapshot), { mode: 0o600 });
  return file;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`);
    });
  });
}

/** The `burrow` command beside this module: compiled in the package, TypeScript (through tsx) in the repository. */
function burrowCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) return ['--import', 'tsx', fileURLToPath(new URL('../../bin/burrow.ts', import.meta.url))];
  return [fileURLToPath(new URL('../../bin/burrow.js', import.meta.url))];
}

/** The ready file's fields (bin/ready-file.ts). */
interface Ready {
  url: string;
  api_key: string | null;
  operator_token: string;
  account_id: string;
  listeners: Record<string, string | null>;
  pid: number;
}

async function startProcess(options: StartBurrowOptions): Promise<RunningBurrow> {
  const dir = mkdtempSync(join(tmpdir(), 'burrow-testing-'));
  const readyFile = join(dir, 'ready.json');
  const operatorToken = options.operatorToken ?? randomBytes(24).toString('base64url');
  const args = [
    ...burrowCommand(),
    'serve',
    '--port', '0',
    '--quiet',
    // `--flag=value`: a value may start with '-' (a random base64url token does one time in 64),
    // which parseArgs would take for another option.
    `--ready-file=${readyFile}`,
    `--operator-token=${operatorToken}`,
    ...(options.apiKey !== undefined ? [`--api-key=${options.apiKey}`] : []),
    ...(options.snapshot !== undefined ? [`--snapshot=${snapshotFile(options.snapshot, dir)}`] : []),
    ...(options.seed !== undefined ? [`--seed=${options.seed}`] : []),
    ...(options.clock !== undefined ? [`--clock=${options.clock}`] : []),
    ...(options.agents || options.ingress ? ['--agent-addr=127.0.0.1:0'] : []),
    ...(options.ingress ? ['--http-ingress-addr=127.0.0.1:0', '--tls-ingress-addr=127.0.0.1:0'] : []),
    ...(options.args ?? []),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const stderr: string[] = [];
  child.stderr!.on('data', (chunk) => stderr.push(String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ready: Ready;
  try {
    ready = await waitForReadyFile(child, dir, readyFile, stderr);
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const control = <T>(method: string, path: string, body?: unknown) => apiCall(ready.url, operatorToken, method, `/_burrow${path}`, body) as Promise<T>;
  const controls: Controls = {
    reset: (accountId) => control('POST', '/reset', accountId === undefined ? {} : { account_id: accountId }),
    checkpoint: (name) => control('POST', '/checkpoints', { name }),
    restore: (name) => control('POST', `/checkpoints/${encodeURIComponent(name)}/restore`),
    connectAgent: (input) => control('POST', '/agents', input),
    faults: {
      add: (rule) => control('POST', '/faults', rule),
      list: async () => (await control<{ faults: FaultRule[] }>('GET', '/faults')).faults,
      remove: async (id) => void (await control('DELETE', `/faults/${encodeURIComponent(id)}`)),
      clear: async () => void (await control('DELETE', '/faults')),
    },
    requests: { find: async (criteria = {}) => (await control<{ requests: JournalEntryDetail[] }>('POST', '/requests/find', criteria)).requests },
    traffic: { find: async (criteria = {}) => (await control<{ traffic: TrafficEntryDetail[] }>('POST', '/traffic/find', criteria)).traffic },
    clock: (move) => (move === undefined ? control('GET', '/clock') : control('POST', '/clock', move)),
  };
  const apiKey = ready.api_key ?? options.apiKey!;
  return handle({ url: ready.url, apiKey, operatorToken, accountId: ready.account_id, ca: await caOf(ready.url), listeners: ready.listeners, burrow: undefined }, controls, async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });
}

/** Resolves with the ready file once the server wrote it (a rename into `dir`), or rejects when the server exits first. */
function waitForReadyFile(child: ChildProcess, dir: string, file: string, stderr: string[]): Promise<Ready> {
  return new Promise((resolve, reject) => {
    const watcher = watch(dir);
    const done = (settle: () => void) => {
      watcher.close();
      child.off('exit', onExit);
      settle();
    };
    const check = () => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        return;
      }
      done(() => resolve(JSON.parse(text) as Ready));
    };
    const onExit = (code: number | null) => done(() => reject(new Error(`burrow exited with ${code} before it was ready: ${stderr.join('').trim()}`)));
    watcher.on('change', check);
    watcher.on('error', (error) => done(() => reject(error)));
    child.once('exit', onExit);
    check();
  });
}

/** Burrow's CA certificate, as `GET /_burrow/ca.pem` answers it (open). */
async function caOf(url: string): Promise<string> {
  const response = await fetch(`${url}/_burrow/ca.pem`);
  if (!response.ok) throw new Error(`burrow: GET /_burrow/ca.pem: ${response.status}`);
  return response.text();
}

/** One JSON request; answers the decoded body, or throws an Error carrying the error envelope. */
async function apiCall(url: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'service-version': '2', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const answer = text === '' ? undefined : JSON.parse(text);
  if (!response.ok) throw Object.assign(new Error(`burrow: ${method} ${path}: ${response.status} ${answer?.error_code ?? ''} ${answer?.msg ?? text}`.trim()), { status: response.status, body: answer });
  return answer;
}
