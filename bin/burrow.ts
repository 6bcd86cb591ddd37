#!/usr/bin/env node
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { createServer, ServerResponse, type OutgoingHttpHeader, type OutgoingHttpHeaders, type RequestListener } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { answerUnparsedRequests, createNodeListener } from '../adapters/http/node.ts';
import { compileTrustProxy } from '../adapters/http/trust-proxy.ts';
import { createHash, randomBytes } from 'node:crypto';
import { isPostgresUrl, openStore } from '../adapters/stores/index.ts';
import { startNetworkEdges, type NetworkEdges } from '../adapters/network-edges.ts';
import { hostPort } from '../adapters/addresses.ts';
import { ApiError, checkCertificateAuthority, checkChosenToken, createBurrow, DEFAULT_SIMULATION, ERRORS, limitNote, LIMITS, listenersOf, ManualClock, parseRateLimit, storedPolicyIssuesOf, type CertificateAuthority, type Store } from '../lib/index.ts';
import { captureLauncher, type Launcher } from './launcher-watch.ts';
import { removeReadyFile, writeReadyFile } from './ready-file.ts';
import { createServerLog } from './server-log.ts';
import { isRfc3339 } from '../lib/conventions/fields.ts';
import { errorPrefixProblem } from '../lib/conventions/errors.ts';
import { nearestName } from '../lib/conventions/nearest.ts';
import { parseSecretsKey } from '../lib/families/vaults/index.ts';
import { VERSION } from '../lib/version.ts';

const HELP = `Usage: burrow [serve] [options]      (in a clone of the repository: npm start -- [options])
       burrow policy check|test …        (traffic policy files, without a server: burrow policy --help)

Runs the Burrow API server (serve, the default command).

Options:
  --host HOST        address to listen on (default 127.0.0.1; env BURROW_HOST)
  --port PORT        port to listen on, 0 for any free port (default 8080; env BURROW_PORT)
  --data FILE        keep state in this JSON file (default: in memory; env BURROW_DATA)
  --data postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?schema=NAME]
                     keep state in PostgreSQL, shared by every server given the same URL
  --api-key TOKEN    make TOKEN an admin API key of the default account (env BURROW_API_KEY);
                     without it, a key is generated and printed once, when the account is created
  --base-url URL     base of the uri fields in responses (env BURROW_BASE_URL); by default the
                     origin each request was sent to (its Host header)
  --trust-proxy [TRUSTED]
                     take the caller's address from X-Forwarded-For, as far as trusted proxies
                     wrote it (env BURROW_TRUST_PROXY): TRUSTED is a hop count (1: whatever
                     connects is a proxy) or a comma-separated list of addresses, CIDRs and
                     loopback, linklocal, uniquelocal; alone, the flag means loopback
  --error-prefix PREFIX
                     prefix of every error_code (default ERR_BURROW_; env BURROW_ERROR_PREFIX),
                     e.g. ERR_NGROK_ for tools that match the vendor's codes; A-Z, 0-9 and _
  --rate-limit N/Ws  at most N API requests per W seconds per account, then 429 (off by default;
                     env BURROW_RATE_LIMIT), e.g. 120/60s as the vendor does
  --cors             answer CORS preflights and echo the Origin (for browser clients)
  --operator-token TOKEN
                     token of the control plane /_burrow/… (env BURROW_OPERATOR_TOKEN);
                     without it, a new one is generated and printed once at every start
                     (with --seed it is derived from the seed). It is its own secret: no
                     account's API key, admin or not, is accepted under /_burrow/
  --journal-size N   API requests kept per account in the request journal (default 1000,
                     0 turns it off; env BURROW_JOURNAL_SIZE)
  --clock TIME       deterministic mode: a manual clock starting at this RFC 3339 time, moved
                     only through POST /_burrow/clock (env BURROW_CLOCK); --rate-limit windows
                     and Retry-After then count this clock's seconds
  --snapshot FILE    start from this snapshot (GET /_burrow/snapshot's JSON): it replaces the
                     whole state (in --data too) and becomes every account's starting state
  --seed SEED        deterministic ids, tokens and key material from this seed (env BURROW_SEED);
                     they depend only on the order of successful creates in each account
  --secrets-key-file FILE
                     seal secret values with the 32-byte key in FILE (64 hex digits or base64;
                     env BURROW_SECRETS_KEY holds the key itself); without it the state keeps a
                     key of its own. Every server of one state needs the same key
  --ready-file FILE  once the server answers, write one JSON object to FILE (url, api_key,
                     operator_token, account_id, listeners, pid) for tools to wait on; removed
                     when the server stops
  --keep-running     keep serving when the process that launched the server exits (by default
                     the server stops then: a killed npx burrow or test runner leaves none behind)
  --agent-addr HOST:PORT
                     also serve the vendor's agent protocol (TLS) here, port 0 for any free
                     port (env BURROW_AGENT_ADDR; off unless given): the ngrok agent connects
                     with server_addr HOST:PORT, a tunnel credential's token as its authtoken,
                     and Burrow's CA (GET /_burrow/ca.pem) as its root CA
  --ssh-addr HOST:PORT
                     also serve the SSH gateway here, port 0 for any free port (env
                     BURROW_SSH_ADDR; off unless given): ssh -R 0:localhost:8080 -p PORT
                     v2@HOST http, with a public key registered as an SSH credential
                     (needs the optional package ssh2: npm install ssh2)
  --http-ingress-addr HOST:PORT
                     also serve endpoints' traffic here: plain HTTP routed by Host to the
                     endpoint of that name, port 0 for any free port (env
                     BURROW_HTTP_INGRESS_ADDR; off unless given); see docs/ingress.md
  --tls-ingress-addr HOST:PORT
                     also serve HTTPS and TLS endpoints here, routed by SNI, port 0 for any
                     free port (env BURROW_TLS_INGRESS_ADDR; off unless given): HTTPS with the
                     domain's certificate, else one Burrow's CA signs (GET /_burrow/ca.pem)
  --peer-addr HOST:PORT
                     with --data postgres://…: listen here for the other servers of the
                     database (env BURROW_PEER_ADDR), so their ingress reaches the agents
                     connected to this one (mutual TLS with Burrow's CA); see docs/cluster.md
  --public-host NAME another name or IP agents reach the agent gateway by (env BURROW_PUBLIC_HOST);
                     its certificate is valid for it too; also the host of TCP endpoints' URLs
  --region REGION    the region of real agents' sessions (default us; env BURROW_REGION)
  --ca-cert FILE, --ca-key FILE
                     Burrow's CA (PEM certificate and private key) instead of the one it keeps
                     in the state, generated on first start
  --quiet            no per-request log lines (API requests, ingress traffic); agent sessions,
                     the store lost and regained, and the start-up lines stay
  --log-format FMT   text (default) or json: every log line, one JSON object each
  --version          print the version and exit
  -h, --help         show this help
`;

/** The command's options, for node's parseArgs: those that take a value, then the flags (and -h). */
const VALUE_OPTIONS = ['host', 'port', 'data', 'api-key', 'base-url', 'trust-proxy', 'error-prefix', 'rate-limit', 'operator-token', 'clock', 'journal-size', 'seed', 'snapshot', 'secrets-key-file', 'agent-addr', 'ssh-addr', 'http-ingress-addr', 'tls-ingress-addr', 'peer-addr', 'public-host', 'region', 'ca-cert', 'ca-key', 'ready-file', 'log-format'] as const;
const FLAG_OPTIONS = ['cors', 'quiet', 'keep-running', 'version'] as const;
type Options = { readonly [K in (typeof VALUE_OPTIONS)[number]]: { readonly type: 'string' } } & { readonly [K in (typeof FLAG_OPTIONS)[number]]: { readonly type: 'boolean' } } & { readonly help: { readonly type: 'boolean'; readonly short: 'h' } };
const OPTIONS = Object.fromEntries([
  ...VALUE_OPTIONS.map((name) => [name, { type: 'string' }]),
  ...FLAG_OPTIONS.map((name) => [name, { type: 'boolean' }]),
  ['help', { type: 'boolean', short: 'h' }],
]) as Options;

/**
 * parseArgs over OPTIONS, with its errors made one line that says what to type instead: an
 * unknown option names the nearest known one (`--prot` → `--port`), a missing value says so.
 */
function parseOptions(argv: string[]) {
  try {
    return parseArgs({ args: withBareTrustProxy(argv), allowPositionals: true, options: OPTIONS });
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const option = /'(-[^' ]*)/.exec(message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) {
      const name = option.replace(/^-+/, '').replace(/=.*$/, '');
      const nearest = nearestName(name, Object.keys(OPTIONS));
      throw new Error(`unknown option ${option.replace(/=.*$/, '')}${nearest ? `; did you mean --${nearest}?` : ''}`);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
      const name = option.replace(/^-+/, '').split(/[ =]/)[0]!;
      const takesValue = (VALUE_OPTIONS as readonly string[]).includes(name);
      throw new Error(takesValue ? `--${name} needs a value (--${name} VALUE)` : `--${name} takes no value`);
    }
    throw error;
  }
}

/** What follows a usage error's line, instead of the whole help. */
const USAGE_HINT = 'Run burrow --help for the options.';

/** Parses argv and environment into server settings; exported for tests. */
export function parseCli(argv: string[], env: NodeJS.ProcessEnv) {
  const { values, positionals } = parseOptions(argv);
  const [command = 'serve', ...extra] = positionals;
  if (command !== 'serve') throw new Error(`unknown command '${command}'; the commands are serve and policy`);
  if (extra.length > 0) throw new Error(`unexpected argument '${extra[0]}'; options start with --`);
  const port = Number(values.port ?? env.BURROW_PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a whole number from 0 to 65535 (got ${values.port ?? env.BURROW_PORT})`);
  const logFormat = values['log-format'] ?? 'text';
  if (logFormat !== 'text' && logFormat !== 'json') throw new Error(`--log-format must be text or json (got ${logFormat})`);
  const baseUrl = values['base-url'] ?? env.BURROW_BASE_URL;
  if (baseUrl !== undefined && !/^https?:\/\/[^/]+/.test(baseUrl)) throw new Error(`--base-url must be an http(s) URL (got ${baseUrl})`);
  const data = values.data ?? env.BURROW_DATA;
  if (data !== undefined && isPostgresUrl(data) && !URL.canParse(data)) throw new Error(`--data must be postgres://USER@HOST:PORT/DATABASE (got an unparsable URL)`);
  // A URL of another database would otherwise be taken for a relative file path (`mysql:/…`).
  const scheme = data === undefined || isPostgresUrl(data) ? undefined : /^([A-Za-z][A-Za-z0-9+.-]+):\/\//.exec(data)?.[1];
  if (scheme !== undefined) throw new Error(`--data takes a file path or a postgres:// (postgresql://) URL; ${scheme}:// is not a store Burrow has`);
  const readyFile = values['ready-file'];
  if (readyFile !== undefined) checkReadyFilePath(readyFile);
  const clock = values.clock ?? env.BURROW_CLOCK;
  const apiKey = values['api-key'] ?? env.BURROW_API_KEY;
  if (apiKey !== undefined) checkChosenToken(apiKey, '--api-key');
  const rateLimitText = values['rate-limit'] ?? env.BURROW_RATE_LIMIT;
  const journalSizeText = values['journal-size'] ?? env.BURROW_JOURNAL_SIZE;
  const journalSize = journalSizeText === undefined ? undefined : /^\d{1,9}$/.test(journalSizeText) ? Number(journalSizeText) : Number.NaN;
  if (Number.isNaN(journalSize)) throw new Error(`--journal-size must be a whole number of at least 0 (got ${journalSizeText})`);
  const secretsKeyFile = values['secrets-key-file'];
  let secretsKey: Uint8Array | undefined;
  try {
    const text = secretsKeyFile !== undefined ? readFileSync(secretsKeyFile, 'utf8') : env.BURROW_SECRETS_KEY;
    secretsKey = text === undefined ? undefined : parseSecretsKey(text);
  } catch (error) {
    const source = secretsKeyFile !== undefined ? `--secrets-key-file ${secretsKeyFile}` : 'BURROW_SECRETS_KEY';
    throw new Error(`${source}: ${(error as Error).message.replace(/^burrow: /, '')}`);
  }
  const snapshot = values.snapshot === undefined ? undefined : readSnapshot(values.snapshot);
  if (clock !== undefined && !isRfc3339(clock)) throw new Error(`--clock must be an RFC 3339 time such as 2026-01-01T00:00:00Z (got ${clock})`);
  const trustProxy = values['trust-proxy'] ?? env.BURROW_TRUST_PROXY;
  try {
    compileTrustProxy(trustProxy);
  } catch (error) {
    throw new Error(`--trust-proxy: ${(error as Error).message.replace(/^trust proxy: /, '')}`);
  }
  const errorPrefix = values['error-prefix'] ?? env.BURROW_ERROR_PREFIX;
  const prefixProblem = errorPrefix === undefined ? undefined : errorPrefixProblem(errorPrefix);
  if (prefixProblem) throw new Error(`--error-prefix ${prefixProblem}`);
  const agentAddrText = values['agent-addr'] ?? env.BURROW_AGENT_ADDR;
  const agentAddr = agentAddrText === undefined ? undefined : parseHostPort(agentAddrText, '--agent-addr');
  const sshAddrText = values['ssh-addr'] ?? env.BURROW_SSH_ADDR;
  const sshAddr = sshAddrText === undefined ? undefined : parseHostPort(sshAddrText, '--ssh-addr');
  const httpIngressAddrText = values['http-ingress-addr'] ?? env.BURROW_HTTP_INGRESS_ADDR;
  const httpIngressAddr = httpIngressAddrText === undefined ? undefined : parseHostPort(httpIngressAddrText, '--http-ingress-addr');
  const tlsIngressAddrText = values['tls-ingress-addr'] ?? env.BURROW_TLS_INGRESS_ADDR;
  const tlsIngressAddr = tlsIngressAddrText === undefined ? undefined : parseHostPort(tlsIngressAddrText, '--tls-ingress-addr');
  const peerAddrText = values['peer-addr'] ?? env.BURROW_PEER_ADDR;
  const peerAddr = peerAddrText === undefined ? undefined : parseHostPort(peerAddrText, '--peer-addr');
  if (peerAddr && !(data !== undefined && isPostgresUrl(data))) throw new Error('--peer-addr links the servers of one PostgreSQL database: give --data postgres://…');
  const region = values.region ?? env.BURROW_REGION;
  if (region !== undefined && !DEFAULT_SIMULATION.regions.includes(region)) throw new Error(`--region must be one of ${DEFAULT_SIMULATION.regions.join(', ')} (got ${region})`);
  const publicHost = values['public-host'] ?? env.BURROW_PUBLIC_HOST;
  if (publicHost !== undefined && !/^[A-Za-z0-9.-]+$|^[0-9A-Fa-f:.]+$/.test(publicHost)) throw new Error(`--public-host must be a DNS name or an IP address (got ${publicHost})`);
  if ((values['ca-cert'] === undefined) !== (values['ca-key'] === undefined)) throw new Error('--ca-cert and --ca-key go together: the CA certificate and its private key');
  let certificateAuthority: CertificateAuthority | undefined;
  if (values['ca-cert'] !== undefined) {
    const read = (option: string, file: string) => {
      try {
        return readFileSync(file, 'utf8');
      } catch (error) {
        throw new Error(`${option} ${file}: ${(error as Error).message}`);
      }
    };
    certificateAuthority = { certificatePem: read('--ca-cert', values['ca-cert']), privateKeyPem: read('--ca-key', values['ca-key']!) };
    try {
      checkCertificateAuthority(certificateAuthority);
    } catch (error) {
      throw new Error(`--ca-cert/--ca-key: ${(error as Error).message}`);
    }
  }
  return {
    agentAddr,
    sshAddr,
    httpIngressAddr,
    tlsIngressAddr,
    peerAddr,
    publicHost,
    region,
    certificateAuthority,
    help: values.help === true,
    version: values.version === true,
    operatorToken: values['operator-token'] ?? env.BURROW_OPERATOR_TOKEN,
    clock,
    seed: values.seed ?? env.BURROW_SEED,
    journalSize,
    snapshot,
    secretsKey,
    host: values.host ?? env.BURROW_HOST ?? '127.0.0.1',
    port,
    data,
    apiKey,
    baseUrl,
    trustProxy,
    errorPrefix,
    cors: values.cors === true,
    rateLimit: rateLimitText === undefined ? undefined : parseRateLimit(rateLimitText),
    quiet: values.quiet === true,
    readyFile,
    keepRunning: values['keep-running'] === true,
    logFormat,
  };
}

/**
 * Refuses at start a ready file that could never be written (its directory missing, or the path a
 * directory): found only when the server is up, it would come after the secrets were printed.
 */
function checkReadyFilePath(path: string): void {
  if (statSync(path, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`--ready-file names a file to write, and ${path} is a directory (e.g. --ready-file ${join(path, 'burrow.json')})`);
  const directory = dirname(path);
  if (!statSync(directory, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`--ready-file ${path}: there is no directory ${directory} to write it in`);
}

/** The snapshot document in FILE (at most `snapshot_body_bytes`, as `PUT /_burrow/snapshot` takes), parsed; its records are checked when it is loaded. */
function readSnapshot(file: string): unknown {
  const size = statSync(file, { throwIfNoEntry: false })?.size;
  if (size === undefined) throw new Error(`--snapshot ${file}: no such file`);
  const limit = LIMITS.snapshot_body_bytes.value;
  if (size > limit) throw new Error(`--snapshot ${file}: ${size} bytes is more than the ${limit} a snapshot may have ${limitNote('snapshot_body_bytes')}`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`--snapshot ${file}: ${describeError(error)}`);
  }
}

/** `HOST:PORT` (IPv6 hosts in brackets), port 0 for any free one. */
function parseHostPort(text: string, option: string): { host: string; port: number } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65535) throw new Error(`${option} must be HOST:PORT, e.g. 127.0.0.1:4443 or [::1]:0 (got ${text})`);
  return { host: match[1] ?? match[2]!, port };
}

/** What `--trust-proxy` alone means: a proxy on the same machine (its connection comes from loopback). */
const BARE_TRUST_PROXY = 'loopback';

/**
 * `--trust-proxy` takes an optional value, which parseArgs cannot express: alone (last, or before
 * another option) it is given its default value.
 */
function withBareTrustProxy(argv: string[]): string[] {
  return argv.map((arg, i) => (arg === '--trust-proxy' && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('-')) ? `--trust-proxy=${BARE_TRUST_PROXY}` : arg));
}

/** The operator token of deterministic mode: the same for the same seed, unguessable without it. */
export function seededOperatorToken(seed: string): string {
  return createHash('sha256').update(`burrow operator token\u0000${seed}`).digest('base64url');
}

/** How long a stopping server lets requests already running finish before it cuts their connections. */
const SHUTDOWN_GRACE_MS = 2000;

/** Start-up failures are one `burrow: …` line, never a stack trace. */
const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error)).replace(/^burrow: /, '');

async function main(): Promise<void> {
  if (process.argv[2] === 'policy') {
    // Loaded only for this command: a server's start-up does not pay for it.
    const { runPolicyCommand } = await import('../adapters/policy-tool.ts');
    process.exitCode = await runPolicyCommand(process.argv.slice(3), { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) });
    return;
  }
  // Before anything slow: a launcher that dies while the server starts still counts (launcher-watch.ts).
  const launcher = captureLauncher();
  let settings: ReturnType<typeof parseCli>;
  try {
    settings = parseCli(process.argv.slice(2), process.env);
  } catch (error) {
    console.error(`burrow: ${describeError(error)}\n${USAGE_HINT}`);
    process.exit(2);
  }
  if (settings.help) {
    process.stdout.write(HELP);
    return;
  }
  if (settings.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (settings.data !== undefined && statSync(settings.data, { throwIfNoEntry: false })?.isDirectory()) {
    console.error(`burrow: --data names a file to keep the state in, and ${settings.data} is a directory (e.g. --data ${join(settings.data, 'burrow.json')})`);
    process.exit(2);
  }
  let store: Store;
  try {
    store = await openStore(settings.data);
  } catch (error) {
    console.error(`burrow: ${describeError(error)}`);
    process.exit(1);
  }
  const code = await serve(settings, store, launcher).then(
    () => undefined,
    (error) => {
      console.error(`burrow: ${describeError(error)}`);
      return error instanceof UsageError ? 2 : 1;
    },
  );
  if (code !== undefined) {
    await store.close().catch(() => undefined);
    process.exit(code);
  }
}

/** Said at a start on a store whose default account exists, where no admin key is printed. */
export const REUSED_ACCOUNT_HINT =
  'admin API key: none printed, the default account was created on an earlier run and its key shown then; restart with --api-key TOKEN to make TOKEN one, or POST /_burrow/accounts with the operator token for a new account and key';

/** A start-up refusal that is the caller's choice of settings (exit 2). */
class UsageError extends Error {}

/** Stored policies the checker refuses that the start-up names one by one (the rest are counted). */
const STALE_POLICIES_NAMED = 20;

/**
 * Serves until a signal stops the process. Binds the port before it creates the default account
 * and before it prints any secret: a server that cannot listen prints no key and creates no
 * account whose generated key nobody saw. Connections accepted meanwhile are answered once the
 * account exists.
 */
async function serve(settings: ReturnType<typeof parseCli>, store: Store, launcher: Launcher): Promise<void> {
  const log = createServerLog({ format: settings.logFormat === 'json' ? 'json' : 'text', quiet: settings.quiet, out: process.stdout });
  const say = log.say;
  // Without --base-url, uris use the origin each request was sent to (its Host header), so the
  // instance is ready before it listens and serves from its first connection.
  const burrow = createBurrow({
    store,
    ...(settings.baseUrl ? { baseUrl: settings.baseUrl } : {}),
    ...(settings.errorPrefix !== undefined ? { errorPrefix: settings.errorPrefix } : {}),
    ...(settings.clock ? { clock: new ManualClock(settings.clock) } : {}),
    ...(settings.seed !== undefined ? { seed: settings.seed } : {}),
    ...(settings.rateLimit ? { rateLimit: settings.rateLimit } : {}),
    ...(settings.journalSize !== undefined ? { requestJournalSize: settings.journalSize } : {}),
    ...(settings.secretsKey !== undefined ? { secretsKey: settings.secretsKey } : {}),
    ...(settings.certificateAuthority ? { certificateAuthority: settings.certificateAuthority } : {}),
  });
  // The operator can reset or export every account, so no account's key may double as its token.
  const operatorToken = settings.operatorToken ?? (settings.seed !== undefined ? seededOperatorToken(settings.seed) : randomBytes(32).toString('base64url'));
  const keyHolder = await burrow.authenticate(`Bearer ${operatorToken}`).catch(() => undefined);
  if (keyHolder || operatorToken === settings.apiKey) {
    throw new UsageError(`the operator token is an API key of ${keyHolder ? `account ${keyHolder.account}` : 'the default account (--api-key)'}; choose an operator token that is no account's key`);
  }
  // The inspector's one-time sign-in link (printed below), as Jupyter's token link.
  const signInCode = randomBytes(24).toString('base64url');
  const listener = createNodeListener(burrow, {
    signInCode,
    ...(settings.trustProxy !== undefined ? { trustProxy: settings.trustProxy } : {}),
    cors: settings.cors,
    operatorToken,
    onError: (error) => console.error('burrow: internal error', error),
    ...(log.request ? { log: log.request } : {}),
  });
  let stopping = false;
  // Once stopping, every answer closes its connection (see `stop`). Checked as its head is written,
  // so nothing is kept per request (a set of responses and a close listener on each cost a tenth
  // of a GET's CPU time).
  class ClosingWhenStopping extends ServerResponse {
    override writeHead(statusCode: number, statusMessage?: string, headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this;
    override writeHead(statusCode: number, headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this;
    override writeHead(statusCode: number, ...rest: unknown[]): this {
      if (stopping) this.shouldKeepAlive = false;
      return Reflect.apply(super.writeHead, this, [statusCode, ...rest]);
    }
  }
  let ready: () => void;
  const accountReady = new Promise<void>((resolve) => (ready = resolve));
  let answer: RequestListener = (req, res) => void accountReady.then(() => listener(req, res));
  const onRequest: RequestListener = (req, res) => answer(req, res);
  // The listener refuses a request without Host itself, in the error envelope.
  const server = createServer({ requireHostHeader: false, ServerResponse: ClosingWhenStopping }, onRequest);
  // An Expect other than 100-continue is ignored, as RFC 9110 §10.1.1 allows, rather than answered
  // with node's bare 417.
  server.on('checkExpectation', onRequest);
  answerUnparsedRequests(server, burrow);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(settings.port, settings.host, resolve);
    });
  } catch (error) {
    throw new Error(`cannot listen on ${settings.host}:${settings.port}: ${describeError(error)}`);
  }
  if (settings.snapshot !== undefined) {
    try {
      await burrow.loadSnapshot(settings.snapshot);
    } catch (error) {
      server.close();
      server.closeAllConnections();
      // A snapshot the checks refuse is the caller's input (exit 2); a store that fails is not.
      const message = `cannot load the snapshot: ${describeError(error)}`;
      throw error instanceof ApiError && error.status < 500 ? new UsageError(message) : new Error(message);
    }
  }
  let account: Awaited<ReturnType<typeof burrow.ensureDefaultAccount>>;
  try {
    account = await burrow.ensureDefaultAccount(settings.apiKey);
    // Every account as it is now (before the first request is answered) is what POST /_burrow/reset returns to.
    await burrow.captureStart({ missingOnly: true });
  } catch (error) {
    server.close();
    server.closeAllConnections();
    throw new Error(`cannot set up the default account: ${describeError(error)}`);
  }
  // Policies stored before the write-time checker (or one of its rules) existed are kept and
  // served as stored; each that it refuses now is named once below (lib/policy/stored.ts).
  const stalePolicies = await storedPolicyIssuesOf(burrow).catch((error: unknown) => describeError(error));
  // The network edges beside the API (adapters/network-edges.ts). One that cannot start closes
  // those started before it, and the API server closes too.
  let edges: NetworkEdges;
  try {
    edges = await startNetworkEdges(burrow, {
      agentAddr: settings.agentAddr,
      sshAddr: settings.sshAddr,
      httpIngressAddr: settings.httpIngressAddr,
      tlsIngressAddr: settings.tlsIngressAddr,
      ...(settings.peerAddr ? { peerAddr: settings.peerAddr } : {}),
      publicHost: settings.publicHost,
      region: settings.region,
      onError: (edge, error) => console.error(`burrow: ${edge} error`, error),
      onSession: log.session,
    });
  } catch (error) {
    server.close();
    server.closeAllConnections();
    throw error;
  }
  const { agentGateway, sshGateway, ingress, peerLink } = edges;
  // One line per exchange the ingress carried, and the store lost and regained, once each.
  if (ingress) burrow.traffic.watch((traffic) => log.traffic(traffic));
  store.watchAvailability?.((available, reason) => log.store(available, reason));
  answer = listener;
  ready!();
  // The handlers are in place before any line says the server is ready: a signal to a process
  // with no handler for it ends it at once, so a SIGTERM sent on reading the line would otherwise
  // kill a server that had not yet installed them (exit by signal, no shutdown).
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.flush();
    say(`burrow: ${reason}, shutting down`, { reason });
    if (settings.readyFile !== undefined) removeReadyFile(settings.readyFile);
    // Requests already running finish against an open store (a closed one would answer 500), and
    // their answers close their connections, so keep-alive clients send nothing more here and the
    // server's close completes; connections still busy after the grace period are cut.
    let closing: Promise<void> | undefined;
    const closeStore = () =>
      (closing ??= store.close().then(
        () => process.exit(0),
        (error) => {
          console.error(`burrow: ${describeError(error)}`);
          process.exit(1);
        },
      ));
    // Clients' traffic stops first; agents' sessions end with the gateways, while the store is still open to record it.
    const closeGateway = edges.close().catch(() => undefined);
    server.close(() => void closeGateway.then(closeStore));
    server.closeIdleConnections();
    setTimeout(() => {
      server.closeAllConnections();
      void closeGateway.then(closeStore);
    }, SHUTDOWN_GRACE_MS).unref();
  };
  process.on('SIGINT', () => stop('SIGINT received'));
  process.on('SIGTERM', () => stop('SIGTERM received'));
  if (!settings.keepRunning) launcher.watch(() => stop('the process that launched it exited'));
  if (account.token) say(`admin API key (shown once): ${account.token}`, { admin_api_key: account.token });
  // The default account's first key was shown only on the run that created it.
  else if (settings.apiKey === undefined) say(REUSED_ACCOUNT_HINT);
  if (!settings.operatorToken) {
    const source = settings.seed !== undefined ? 'derived from --seed' : 'shown once';
    say(`operator token for /_burrow (${source}): ${operatorToken}`, { operator_token: operatorToken });
  }
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
  const listenUrl = `http://${host}:${port}`;
  burrow.services.listeners.set('api', `${host}:${port}`);
  const signInUrl = `${listenUrl}/_burrow/?token=${signInCode}`;
  say(`inspector: ${signInUrl} (a one-time sign-in link; after it, sign in at ${listenUrl}/_burrow/ with the operator token)`, { inspector: `${listenUrl}/_burrow/`, sign_in_url: signInUrl });
  if (agentGateway) {
    // Where it listens first; the public host is only how agents dial it.
    say(`agent gateway: ${hostPort(agentGateway.address.host, agentGateway.address.port)} (ngrok agent: server_addr ${agentGateway.serverAddr}, root CA ${listenUrl}/_burrow/ca.pem, a tunnel credential's token as authtoken)`, {
      agent_gateway: agentGateway.serverAddr,
    });
  }
  if (peerLink?.address) say(`peer link: ${hostPort(peerLink.address.host, peerLink.address.port)} (the other servers of the database relay to this one's agents here)`, { peer_link: hostPort(peerLink.address.host, peerLink.address.port) });
  if (sshGateway) {
    const { host: sshHost, port: sshPort } = sshGateway.address;
    say(`ssh gateway: ${sshGateway.serverAddr} (ssh -R 0:localhost:8080 -p ${sshPort} v2@${sshHost} http, with a key registered as an SSH credential; host key ${sshGateway.hostKey})`, {
      ssh_gateway: sshGateway.serverAddr,
      ssh_host_key: sshGateway.hostKey,
    });
  }
  // The ingress's addresses as it entered them in the listeners (host:port, IPv6 in brackets).
  const listening = listenersOf(burrow);
  if (ingress?.http) {
    const address = listening.http_ingress!;
    say(`http ingress: ${address} (requests by Host to the endpoint of that name, e.g. curl -H 'Host: NAME' http://${address}/)`, { http_ingress: address });
  }
  if (ingress?.tls) {
    const address = listening.tls_ingress!;
    say(`tls ingress: ${address} (HTTPS and TLS endpoints by SNI, e.g. curl --cacert ca.pem --connect-to NAME:443:${address} https://NAME/)`, { tls_ingress: address });
  }
  if (typeof stalePolicies === 'string') say(`warning: the stored traffic policies could not be checked again: ${stalePolicies}`);
  else {
    for (const { account: owner, holder, field, issue } of stalePolicies.slice(0, STALE_POLICIES_NAMED)) {
      const code = issue.code ? ` (${burrow.errorPrefix}${ERRORS[issue.code].code})` : '';
      say(`warning: the stored traffic policy of ${holder} (${field}, account ${owner}) does not pass the write-time check: ${issue.message}${code}; it is served as stored (what cannot run answers 5xx naming the problem) until it is written again`, { stale_policy: { account: owner, holder, field, message: issue.message } });
    }
    if (stalePolicies.length > STALE_POLICIES_NAMED) say(`warning: ${stalePolicies.length - STALE_POLICIES_NAMED} more stored traffic policies do not pass the write-time check`);
  }
  if (settings.readyFile !== undefined) {
    writeReadyFile(settings.readyFile, { url: listenUrl, api_key: account.token ?? settings.apiKey ?? null, operator_token: operatorToken, account_id: account.accountId, listeners: listenersOf(burrow), pid: process.pid });
  }
  // Last: tests and scripts wait for this line.
  const data = store.location;
  const uris = settings.baseUrl ? ` (uris use ${settings.baseUrl})` : '';
  say(`Burrow listening on ${listenUrl}${uris} (store: ${store.name}${data ? ` ${data}` : ''}, account ${account.accountId})`, {
    url: listenUrl,
    ...(settings.baseUrl ? { base_url: settings.baseUrl } : {}),
    store: store.name,
    ...(data ? { data } : {}),
    account: account.accountId,
  });
}

// Run only as the program (npm installs the bin as a symlink), not when a test imports parseCli.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main().catch((error) => {
    console.error(`burrow: ${describeError(error)}`);
    process.exit(1);
  });
}
