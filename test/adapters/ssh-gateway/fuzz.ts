import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import ssh2 from 'ssh2';
import { sshKeygen, tempDir } from '../../fixtures/openssh.ts';
import { EVENT_LOOP_MONITOR, eventLoopReport, startHealthProber, type EventLoopFigures, type ProberFigures } from '../../fixtures/raw-socket-fuzz.ts';
import { startServer, type RunningServer } from '../../helpers.ts';

/**
 * A raw fuzz of the SSH gateway and of the ingress's TCP ports of a CLI server (`burrow serve
 * --ssh-addr … --http-ingress-addr …`, started with EVENT_LOOP_MONITOR), while the health prober
 * (test/fixtures/health-prober.ts) asks /_burrow/health every 10 ms from a process of its own and a
 * real tunnel (an ssh2 client bound with `-R 0:… tcp`, echoing what it is sent) is in use.
 *
 * SSH cases: garbage before or instead of the version line, a valid version line then random bytes
 * or random packet framings, a version line dribbled in pieces, an authenticated client making
 * random requests (commands of random bytes and deep quotes, forwards, channels, env, signals,
 * direct-tcpip) and leaving. TCP cases on the tunnel's port: random bytes in, a client that
 * vanishes mid-stream, one that sends a lot and never reads. Each case leaves nothing open.
 */

export interface SshTcpFuzzTarget {
  readonly server: RunningServer;
  readonly sshPort: number;
  /** The private key of the SSH credential (OpenSSH format). */
  readonly privateKey: Buffer;
  /** The real tunnel's TCP port on the ingress. */
  readonly tcpPort: number;
  /** One round trip through the real tunnel (rejects if it does not echo). */
  echo(text: string): Promise<void>;
  /** The server's resident memory now, in bytes (from /proc). */
  rss(): number;
  stop(): Promise<void>;
}

/** The server, an SSH credential, and an ssh2 client bound with a TCP endpoint that echoes its connections. */
export async function startSshTcpTarget(): Promise<SshTcpFuzzTarget> {
  const dir = tempDir('burrow-ssh-fuzz-');
  const server = await startServer(['--quiet', '--ssh-addr', '127.0.0.1:0', '--http-ingress-addr', '127.0.0.1:0'], EVENT_LOOP_MONITOR);
  const key = sshKeygen(dir.path, 'fuzz', 'ed25519');
  const privateKey = readFileSync(key.file);
  const created = await server.request('POST', '/ssh_credentials', { public_key: key.publicKey });
  assert.equal(created.status, 201, created.text);
  const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
  const sshPort = Number(String(health.body.listeners.ssh).split(':')[1]);
  const client = new ssh2.Client();
  client.on('error', () => {});
  client.on('tcp connection', (_info, accept) => {
    const channel = accept();
    channel.on('data', (chunk: Buffer) => channel.write(chunk));
    channel.on('error', () => {});
  });
  client.connect({ host: '127.0.0.1', port: sshPort, username: 'v2', privateKey, readyTimeout: 30_000 });
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve);
    client.once('close', () => reject(new Error('the tunnel client closed')));
  });
  // The gateway answers the forward once the command has bound the tunnel.
  const forwarded = new Promise<number>((resolve, reject) => client.forwardIn('localhost', 0, (error, port) => (error ? reject(error) : resolve(port))));
  const banner = await new Promise<string>((resolve, reject) =>
    client.exec('tcp', (error, stream) => {
      if (error) return reject(error);
      let out = '';
      stream.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (/Forwarding {2}\S+\n/.test(out)) resolve(out);
      });
    }),
  );
  const tcpPort = await forwarded;
  assert.match(banner, new RegExp(`Forwarding {2}tcp://localhost:${tcpPort}\\n`));
  const target: SshTcpFuzzTarget = {
    server,
    privateKey,
    sshPort,
    tcpPort,
    async echo(text) {
      const socket = connect(tcpPort, '127.0.0.1');
      let got = '';
      await new Promise<void>((resolve, reject) => {
        socket.on('error', reject);
        socket.on('close', () => reject(new Error(`the tunnel closed after echoing ${JSON.stringify(got)}`)));
        socket.on('data', (chunk: Buffer) => {
          got += chunk.toString();
          if (got === text) resolve();
        });
        socket.write(text);
      }).finally(() => socket.destroy());
    },
    rss() {
      const status = readFileSync(`/proc/${server.process.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    async stop() {
      client.end();
      await server.stop('SIGKILL');
      dir.remove();
    },
  };
  return target;
}

/** A socket to `port` that ignores its errors; `closed` settles when it closes. */
function open(port: number): { socket: Socket; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.on('data', () => {});
  return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve())) };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((array) => Buffer.from(array));
const VERSION = Buffer.from('SSH-2.0-fuzz_1.0\r\n');

/** A packet framing (RFC 4253 §6) around random content: lengths true, short, huge or zero. */
const packet = fc.tuple(fc.constantFrom('true', 'huge', 'zero', 'random'), fc.integer({ min: 0, max: 255 }), bytes(300)).map(([length, padding, body]) => {
  const head = Buffer.alloc(5);
  const declared = length === 'true' ? body.length + 1 : length === 'huge' ? 0xffff_fff0 : length === 'zero' ? 0 : (padding << 16) | body.length;
  head.writeUInt32BE(declared >>> 0, 0);
  head[4] = padding;
  return Buffer.concat([head, body]);
});

type SshCase =
  | { readonly kind: 'garbage'; readonly data: Buffer; readonly wait: boolean }
  | { readonly kind: 'after-version'; readonly data: Buffer[] }
  | { readonly kind: 'dribble'; readonly cuts: number }
  | { readonly kind: 'authenticated'; readonly steps: readonly AuthStep[] };

type AuthStep =
  | { readonly kind: 'exec'; readonly command: string }
  | { readonly kind: 'forward'; readonly address: string; readonly port: number }
  | { readonly kind: 'direct'; readonly port: number }
  | { readonly kind: 'shell-env'; readonly name: string; readonly value: string }
  | { readonly kind: 'sessions'; readonly count: number };

const command = fc.oneof(
  fc.constantFrom('http', 'tcp', 'tls', 'help', '--help', 'http --url', 'tcp --remote-addr x:0', ''),
  fc.string({ maxLength: 200 }),
  fc.integer({ min: 1, max: 2000 }).map((depth) => `http ${'"\'\\'.repeat(depth)}`),
  fc.integer({ min: 1, max: 3000 }).map((n) => `http ${'--basic-auth a:b '.repeat(n)}`.slice(0, 8000)),
  fc.integer({ min: 1, max: 120 }).map((n) => `http --url https://${'a.'.repeat(n)}!`),
);
const authStep: fc.Arbitrary<AuthStep> = fc.oneof(
  command.map((text) => ({ kind: 'exec' as const, command: text })),
  fc.tuple(fc.constantFrom('localhost', '', '*', 'app.example.com', 'x'.repeat(300), '\u00e9'), fc.constantFrom(0, 80, 443, 1, 65535)).map(([address, port]) => ({ kind: 'forward' as const, address, port })),
  fc.integer({ min: 1, max: 65535 }).map((port) => ({ kind: 'direct' as const, port })),
  fc.tuple(fc.string({ maxLength: 40 }), fc.string({ maxLength: 400 })).map(([name, value]) => ({ kind: 'shell-env' as const, name, value })),
  fc.integer({ min: 1, max: 40 }).map((count) => ({ kind: 'sessions' as const, count })),
);
const sshCase: fc.Arbitrary<SshCase> = fc.oneof(
  fc.tuple(bytes(3000), fc.boolean()).map(([data, wait]) => ({ kind: 'garbage' as const, data, wait })),
  fc.array(fc.oneof(bytes(2000), packet), { minLength: 1, maxLength: 6 }).map((data) => ({ kind: 'after-version' as const, data })),
  fc.integer({ min: 2, max: 12 }).map((cuts) => ({ kind: 'dribble' as const, cuts })),
  fc.array(authStep, { minLength: 1, maxLength: 5 }).map((steps) => ({ kind: 'authenticated' as const, steps })),
);

type TcpCase =
  | { readonly kind: 'bytes'; readonly data: Buffer[] }
  | { readonly kind: 'vanish'; readonly data: Buffer }
  | { readonly kind: 'never-reads'; readonly megabytes: number };

const tcpCase: fc.Arbitrary<TcpCase> = fc.oneof(
  fc.array(bytes(4000), { minLength: 1, maxLength: 5 }).map((data) => ({ kind: 'bytes' as const, data })),
  bytes(60_000).map((data) => ({ kind: 'vanish' as const, data })),
  fc.integer({ min: 1, max: 8 }).map((megabytes) => ({ kind: 'never-reads' as const, megabytes })),
);

async function runSshCase(target: SshTcpFuzzTarget, one: SshCase): Promise<void> {
  if (one.kind === 'authenticated') return runAuthenticated(target, one.steps);
  const { socket, closed } = open(target.sshPort);
  if (one.kind === 'garbage') {
    socket.write(one.data);
    // The gateway closes garbage it can read as no SSH; whatever it could not judge yet is left by the client.
    await Promise.race([closed, pause(one.wait ? 50 : 0)]);
  } else if (one.kind === 'after-version') {
    socket.write(VERSION);
    for (const piece of one.data) socket.write(piece);
    await Promise.race([closed, pause(20)]);
  } else {
    const text = Buffer.concat([VERSION, Buffer.alloc(64, 0)]);
    for (let i = 0; i < one.cuts; i++) {
      socket.write(text.subarray(Math.floor((i * text.length) / one.cuts), Math.floor(((i + 1) * text.length) / one.cuts)));
      await pause(2);
    }
  }
  socket.destroy();
  await closed;
}

async function runAuthenticated(target: SshTcpFuzzTarget, steps: readonly AuthStep[]): Promise<void> {
  const client = new ssh2.Client();
  client.on('error', () => {});
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  client.connect({ host: '127.0.0.1', port: target.sshPort, username: 'v2', privateKey: target.privateKey, readyTimeout: 30_000 });
  const ready = await Promise.race([new Promise<boolean>((resolve) => client.once('ready', () => resolve(true))), closed.then(() => false)]);
  if (ready) {
    const settled: Promise<unknown>[] = [];
    const answered = (start: (done: (...args: unknown[]) => void) => void) =>
      settled.push(Promise.race([new Promise((resolve) => start((...args) => resolve(args))), closed]));
    for (const step of steps) {
      if (step.kind === 'exec') answered((done) => client.exec(step.command, (error, stream) => (error ? done() : stream.on('data', () => {}).stderr.on('data', () => {}).on('close', done))));
      else if (step.kind === 'forward') answered((done) => client.forwardIn(step.address, step.port, done));
      else if (step.kind === 'direct') answered((done) => client.forwardOut('127.0.0.1', 1, '127.0.0.1', step.port, (error, stream) => (error ? done() : (stream.destroy(), done()))));
      else if (step.kind === 'shell-env') answered((done) => client.exec('http', { env: { [step.name || 'X']: step.value } }, (error, stream) => (error ? done() : stream.on('data', () => {}).on('close', done))));
      else for (let i = 0; i < step.count; i++) answered((done) => client.shell(false, (error, stream) => (error ? done() : (stream.on('data', () => {}), done()))));
    }
    await Promise.race([Promise.all(settled), pause(200)]);
  }
  client.end();
  await closed;
}

async function runTcpCase(target: SshTcpFuzzTarget, one: TcpCase): Promise<void> {
  const { socket, closed } = open(target.tcpPort);
  if (one.kind === 'bytes') {
    for (const piece of one.data) socket.write(piece);
    await Promise.race([closed, pause(20)]);
  } else if (one.kind === 'vanish') {
    socket.write(one.data);
    socket.resetAndDestroy();
  } else {
    // The echo comes back and is not read: the tunnel and the ingress must push back, not buffer.
    socket.pause();
    socket.removeAllListeners('data');
    const chunk = Buffer.alloc(64 * 1024, 0x62);
    for (let i = 0; i < one.megabytes * 16 && !socket.destroyed; i++) {
      if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed, pause(100)]);
    }
  }
  socket.destroy();
  await closed;
}

export interface SshTcpFuzzFigures {
  readonly cases: number;
  readonly probes: ProberFigures;
  readonly loop: EventLoopFigures;
  /** The server's resident memory before the storm, at its end (its connections still closing), and once the tunnel answered again, in MB. */
  readonly rssMb: { readonly before: number; readonly after: number };
}

/** Runs `cases` cases (each one to eight connections at once, SSH and TCP mixed) under the health prober. */
export async function fuzzSshAndTcp(target: SshTcpFuzzTarget, cases: number, seed: number): Promise<SshTcpFuzzFigures> {
  await target.echo('warm-up');
  const before = target.rss();
  await eventLoopReport(target.server);
  const prober = await startHealthProber(target.server.url);
  const one = fc.oneof(sshCase.map((c) => ({ ssh: c })), tcpCase.map((c) => ({ tcp: c })));
  const storm = fc.assert(
    fc.asyncProperty(fc.array(one, { minLength: 1, maxLength: 8 }), async (connections) => {
      await Promise.all(connections.map((c) => ('ssh' in c ? runSshCase(target, c.ssh) : runTcpCase(target, c.tcp))));
      await target.echo('still serving');
    }),
    { numRuns: cases, seed, endOnFailure: true },
  );
  const probes = await storm.then(
    () => prober.stop(),
    async (error) => {
      await prober.stop();
      throw error;
    },
  );
  const loop = await eventLoopReport(target.server);
  await target.echo('after the storm');
  const mb = (n: number) => Math.round(n / 1024 / 1024);
  return { cases, probes, loop, rssMb: { before: mb(before), after: mb(target.rss()) } };
}
