import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import {
  createSshGateway,
  keyFingerprint,
  SshGatewayError,
  type SshBindRequest,
  type SshBindResult,
  type SshGateway,
  type SshGatewayOptions,
  type SshLogin,
  type SshPublicKey,
  type SshSession,
  type SshSessionEndReason,
  type SshSessionHandler,
} from '../../../adapters/ssh-gateway/index.ts';
import type { Timers } from '../../../adapters/agent-gateway/index.ts';
import { manualTimers, Recorder } from '../agent-gateway/helpers.ts';
import { sshKeygen, tempDir } from '../../fixtures/openssh.ts';

/** Real OpenSSH is needed; without it the tests say so loudly and skip. */
export const OPENSSH_MISSING = spawnSync('ssh', ['-V']).error !== undefined || spawnSync('ssh-keygen', ['--help']).error !== undefined;
if (OPENSSH_MISSING) console.error('\n*** OpenSSH (ssh, ssh-keygen) is not installed: the SSH gateway tests are SKIPPED. Install openssh-client. ***\n');

export interface TestSessionContext {
  readonly fingerprint: string;
}

export type SshGatewayEvent =
  | { readonly kind: 'auth'; readonly key: SshPublicKey; readonly login: SshLogin; readonly ip: string }
  | { readonly kind: 'bind'; readonly session: SshSession<TestSessionContext>; readonly request: SshBindRequest; readonly result: SshBindResult }
  | { readonly kind: 'ended'; readonly session: SshSession<TestSessionContext>; readonly reason: SshSessionEndReason };

export interface SshKey {
  readonly file: string;
  readonly publicKey: string;
  readonly fingerprint: string;
}

export interface SshGatewayFixture {
  readonly gateway: SshGateway<TestSessionContext>;
  readonly port: number;
  readonly events: Recorder<SshGatewayEvent>;
  /** The handler's behaviour; tests replace methods. */
  readonly handler: SshSessionHandler<TestSessionContext>;
  readonly errors: unknown[];
  readonly timers: Timers;
  /** A key the handler knows (registered) and one it does not. */
  readonly key: SshKey;
  readonly unknownKey: SshKey;
  /** Where test files go (removed when the test ends). */
  readonly dir: string;
  /** `[127.0.0.1]:port <host key>`: the gateway's host key, for StrictHostKeyChecking. */
  readonly knownHosts: string;
}

function fingerprintOf(publicKey: string): string {
  return keyFingerprint(Buffer.from(publicKey.split(' ')[1]!, 'base64'));
}

/**
 * A gateway on 127.0.0.1:0 with an ed25519 host key and a recording handler that knows one
 * client key: sessions ss_1, ss_2…; binds become tunnels st_1, st_2… with URLs under
 * burrow.test (or the name asked for). Its timers are manual unless given, so no handshake
 * timeout fires unless the test advances time. Closed, and its files removed, when the test ends.
 */
export async function startSshGateway(t: TestContext, options: Partial<Omit<SshGatewayOptions<TestSessionContext>, 'handler' | 'hostKeys' | 'onError'>> = {}): Promise<SshGatewayFixture> {
  const dir = tempDir('burrow-ssh-gateway-');
  t.after(() => dir.remove());
  const hostKey = sshKeygen(dir.path, 'host', 'ed25519');
  const make = (name: string): SshKey => {
    const generated = sshKeygen(dir.path, name, 'ed25519');
    return { ...generated, fingerprint: fingerprintOf(generated.publicKey) };
  };
  const key = make('client');
  const unknownKey = make('stranger');
  const events = new Recorder<SshGatewayEvent>();
  let sessions = 0;
  let tunnels = 0;
  const handler: SshSessionHandler<TestSessionContext> = {
    async acceptsKey(offered) {
      return offered.fingerprint === key.fingerprint;
    },
    async authenticate(offered, login, remote) {
      events.push({ kind: 'auth', key: offered, login, ip: remote.ip });
      if (offered.fingerprint !== key.fingerprint) throw new SshGatewayError(`no SSH credential has the key ${offered.fingerprint}`);
      sessions += 1;
      return { sessionId: `ss_${sessions}`, context: { fingerprint: offered.fingerprint }, accountName: 'Test Account', planName: 'Free', region: 'eu' };
    },
    async bind(session, request) {
      tunnels += 1;
      const url =
        request.proto === 'tcp' ? `tcp://${request.name || `tcp.burrow.test:${20000 + tunnels}`}` : `${request.proto}://${request.name || `t${tunnels}.burrow.test`}`;
      const result = { tunnelId: `st_${tunnels}`, url };
      events.push({ kind: 'bind', session, request, result });
      return result;
    },
    sessionEnded(session, reason) {
      events.push({ kind: 'ended', session, reason });
    },
  };
  const errors: unknown[] = [];
  const timers = options.timers ?? manualTimers();
  const gateway = createSshGateway<TestSessionContext>({
    handler: {
      acceptsKey: (...args) => handler.acceptsKey(...args),
      authenticate: (...args) => handler.authenticate(...args),
      bind: (...args) => handler.bind(...args),
      sessionEnded: (...args) => handler.sessionEnded(...args),
    },
    hostKeys: [readFileSync(hostKey.file)],
    ...options,
    timers,
    onError: (error) => errors.push(error),
  });
  const { port } = await gateway.listen('127.0.0.1', 0);
  t.after(() => gateway.close());
  return { gateway, port, events, handler, errors, timers, key, unknownKey, dir: dir.path, knownHosts: `[127.0.0.1]:${port} ${hostKey.publicKey}` };
}

/** Where `ssh` connects: a gateway's port, its pinned host key, a directory for files, the identity to use by default. */
export type SshTarget = Pick<SshGatewayFixture, 'port' | 'dir' | 'knownHosts' | 'key'>;

/** A running `ssh` client: its output so far, waits on it, and its exit. */
export interface SshClient {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout matches. */
  waitForStdout(pattern: RegExp): Promise<RegExpExecArray>;
  /** Resolves once stderr matches. */
  waitForStderr(pattern: RegExp): Promise<RegExpExecArray>;
  /** Resolves with the exit code once the process has exited and its output is read. */
  readonly exited: Promise<number | null>;
}

/**
 * Runs the real OpenSSH client against a gateway: `ssh -p <port> <args…>` with the given identity
 * (the target's by default), no agent, no user config, and the gateway's host key pinned. Killed
 * when the test ends.
 */
export function runSsh(t: TestContext, fixture: SshTarget, args: readonly string[], options: { key?: SshKey; batch?: boolean } = {}): SshClient {
  const knownHostsFile = join(fixture.dir, 'known_hosts');
  writeFileSync(knownHostsFile, `${fixture.knownHosts}\n`);
  const sshArgs = [
    '-F', '/dev/null', '-p', String(fixture.port), '-i', (options.key ?? fixture.key).file,
    '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'PasswordAuthentication=no',
    '-o', `BatchMode=${options.batch === false ? 'no' : 'yes'}`, '-o', 'StrictHostKeyChecking=yes',
    '-o', `UserKnownHostsFile=${knownHostsFile}`, '-o', 'GlobalKnownHostsFile=/dev/null',
    '-o', 'ExitOnForwardFailure=yes', '-o', 'ConnectTimeout=10',
    ...args,
  ];
  const child = spawn('ssh', sshArgs, { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: { stream: 'out' | 'err'; pattern: RegExp; resolve: (match: RegExpExecArray) => void }[] = [];
  const check = () => {
    for (const waiter of [...waiters]) {
      const match = waiter.pattern.exec(waiter.stream === 'out' ? out : err);
      if (match) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(match);
      }
    }
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    check();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    check();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const wait = (stream: 'out' | 'err', pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      waiters.push({ stream, pattern, resolve });
      check();
      void exited.then(() => {
        check();
        if (waiters.some((waiter) => waiter.pattern === pattern)) reject(new Error(`ssh exited without printing ${pattern} on std${stream}.\nstdout: ${out}\nstderr: ${err}`));
      });
    });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return exited.then(() => undefined);
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitForStdout: (pattern) => wait('out', pattern),
    waitForStderr: (pattern) => wait('err', pattern),
    exited,
  };
}
