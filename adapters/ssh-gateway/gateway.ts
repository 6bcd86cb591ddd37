import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import type { AuthContext, ClientInfo, Connection, KeyboardAuthContext, ParsedKey, PublicKeyAuthContext, ServerChannel, Session, TcpipBindInfo } from 'ssh2';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import type { RemoteAddress } from '../addresses.ts';
import { connectionSettings, GatewayConnection, type ConnectionOptions, type ConnectionSettings } from '../gateway-connection/gateway-connection.ts';
import { createGatewayListener, type GatewayAddress, type GatewayListener } from '../gateway-connection/gateway-listener.ts';
import { parseTunnelCommand, SshCommandError, type RemoteForward } from './command.ts';
import { readThrough } from './read-through.ts';
import {
  SshGatewayError,
  SshRelayError,
  type SshAuthResult,
  type SshLogin,
  type SshProxyOptions,
  type SshPublicKey,
  type SshSession,
  type SshSessionEndReason,
  type SshSessionHandler,
  type SshTunnel,
} from './session-handler.ts';

/**
 * The SSH gateway: OpenSSH clients (`ssh -R 0:localhost:8080 v2@host http`) connect here and get
 * an endpoint, the way the vendor's SSH reverse tunnel works (docs/ssh-gateway.md). ssh2 speaks
 * the protocol; this module proves keys, reads the `-R` forward and the command, and turns them
 * into calls on an SshSessionHandler. One connection is one session with one tunnel; whatever a
 * client does wrong (garbage, bad keys, floods, silence) ends that connection only.
 */

/**
 * ssh2 is an optional peer dependency, which only this gateway needs: installed with Burrow, its
 * install scripts (an optional native build, which it works without) made npm warn on every
 * user's install. So a user who serves SSH installs it, and without it the gateway fails to start
 * with a message that says so (docs/ssh-gateway.md).
 */
const ssh2 = loadSsh2();

function loadSsh2(): typeof import('ssh2') {
  try {
    return createRequire(import.meta.url)('ssh2') as typeof import('ssh2');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && (error as Error).message.includes("'ssh2'")) {
      throw new Error('the SSH gateway needs the ssh2 package, an optional peer dependency of burrow-tunnels: npm install ssh2');
    }
    throw error;
  }
}
/** How often an idle client is asked to answer, and how many unanswered asks end it (ssh2's keepalive). */
const KEEPALIVE_INTERVAL_MS = 15_000;
const KEEPALIVE_COUNT_MAX = 3;

export interface SshGatewayOptions<C> extends ConnectionOptions<SshSessionHandler<C>> {
  /** Host private keys (OpenSSH or PEM; one per key type). */
  readonly hostKeys: readonly (string | Buffer)[];
  /** The name on the first line users read ("burrow (via SSH)"). */
  readonly serviceName?: string;
  /** Default: 15 s (the handshake's default: the limit ssh_handshake_ms). */
  readonly keepaliveIntervalMs?: number;
}

export type SshGatewayAddress = GatewayAddress;

export interface SshGateway<C> extends GatewayListener<SshSession<C>> {
  /** The host keys clients see, as known_hosts lines without the host (`ssh-ed25519 AAAA…`). */
  hostKeys(): string[];
}

interface Settings<C> extends ConnectionSettings<SshSessionHandler<C>> {
  readonly serviceName: string;
}

export function createSshGateway<C>(options: SshGatewayOptions<C>): SshGateway<C> {
  const settings: Settings<C> = {
    ...connectionSettings(options, LIMITS.ssh_handshake_ms.value),
    serviceName: options.serviceName ?? 'burrow',
  };
  // ssh2 runs the protocol on sockets this module accepts (injectSocket), so each connection's
  // socket, bytes and lifetime stay ours; its 'connection' event names the peer it speaks with.
  const protocol = new ssh2.Server({
    hostKeys: [...options.hostKeys],
    ident: settings.serviceName,
    keepaliveInterval: options.keepaliveIntervalMs ?? KEEPALIVE_INTERVAL_MS,
    keepaliveCountMax: KEEPALIVE_COUNT_MAX,
  });
  const publicHostKeys = options.hostKeys.map((key) => {
    const parsed = ssh2.utils.parseKey(key);
    const one = Array.isArray(parsed) ? parsed[0] : parsed;
    if (!one || one instanceof Error) throw new Error(`a host key cannot be read: ${one instanceof Error ? one.message : 'empty'}`);
    return `${one.type} ${one.getPublicSSH().toString('base64')}`;
  });
  /** Connections by their peer's address, which ssh2's 'connection' event names. */
  const byPeer = new Map<string, SshConnection<C>>();
  /** Connections whose tunnel is not bound yet (ssh_unbound_connections). */
  const unbound = new Set<SshConnection<C>>();
  protocol.on('connection', (client: Connection, info: ClientInfo) => byPeer.get(peerKey(info.ip, info.port))?.attach(client, info.header.versions.software));
  const listener = createGatewayListener<LiveSshSession<C>>('the SSH gateway', {}, (socket, forget) => {
    // Each connection is held until its handshake deadline at most; the cap bounds what clients
    // that connect and wait make the gateway hold in total (closed at once, as OpenSSH's MaxStartups does).
    if (unbound.size >= LIMITS.ssh_unbound_connections.value) return void socket.destroy();
    const key = peerKey(socket.remoteAddress, socket.remotePort);
    const connection: SshConnection<C> = new SshConnection(socket, settings, () => unbound.delete(connection), () => {
      forget();
      byPeer.delete(key);
      unbound.delete(connection);
    });
    byPeer.set(key, connection);
    unbound.add(connection);
    protocol.injectSocket(socket);
    connection.countBytes();
    return connection;
  });
  return { ...listener, hostKeys: () => publicHostKeys };
}

function peerKey(ip: string | undefined, port: number | undefined): string {
  return `${ip ?? ''}|${port ?? 0}`;
}


/** `SHA256:<base64 without padding>` of a key blob, as ssh-keygen -l prints it. */
export function keyFingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The port a URL names, or its scheme's usual one. */
function urlPort(url: string): number {
  const parsed = new URL(url);
  if (parsed.port !== '') return Number(parsed.port);
  return parsed.protocol === 'http:' ? 80 : 443;
}

/** The live session the handler sees. */
class LiveSshSession<C> implements SshSession<C> {
  #tunnel: SshTunnel | undefined;
  #ended: SshSessionEndReason | undefined;

  constructor(
    readonly id: string,
    readonly context: C,
    readonly login: SshLogin,
    readonly key: SshPublicKey,
    readonly remote: RemoteAddress,
    /** What the handler said the user should read about the account. */
    readonly told: Pick<SshAuthResult<C>, 'accountName' | 'planName' | 'region'>,
    private readonly connection: SshConnection<C>,
  ) {}

  get ended() {
    return this.#ended;
  }

  markEnded(reason: SshSessionEndReason): void {
    this.#ended ??= reason;
  }

  tunnel() {
    return this.#tunnel;
  }

  setTunnel(tunnel: SshTunnel): void {
    this.#tunnel = tunnel;
  }

  openProxy(tunnelId: string, options: SshProxyOptions): Promise<Duplex> {
    if (this.#ended) return Promise.reject(new SshRelayError(`session ${this.id} has ended`));
    const tunnel = this.#tunnel;
    if (!tunnel || tunnel.tunnelId !== tunnelId) return Promise.reject(new SshRelayError(`session ${this.id} has no tunnel ${tunnelId}`));
    return this.connection.forwardOut(tunnel.forward, options.clientAddr);
  }

  unsentBytes(): number {
    return this.connection.unsentBytes();
  }

  close(message = 'the server closed the session'): void {
    this.connection.end({ kind: 'closed-by-server', message }, { message, exitCode: 0 });
  }
}

/** The auth methods a client is told it may still try. */
const PUBLIC_KEY_ONLY: AuthContext['method'][] = ['publickey'];
const WITH_EXPLANATION: AuthContext['method'][] = ['publickey', 'keyboard-interactive'];

/** What the user reads as the connection ends: `message` on stderr of the command's channel, which then exits with `exitCode` (default 1). */
interface SshFarewell {
  readonly message?: string;
  readonly exitCode?: number;
}

/** One SSH connection: key exchange, a proven key, a `-R` forward, a command, then the tunnel until it ends. */
class SshConnection<C> extends GatewayConnection<SshSessionEndReason['kind'], LiveSshSession<C>, SshFarewell> {
  readonly #settings: Settings<C>;
  #client: Connection | undefined;
  #software = '';
  #bytesBeforeBind = 0;
  #bound = false;
  #authAttempts = 0;
  /** Why each key offered was refused, shown through keyboard-interactive once the client runs out of keys. */
  readonly #refusals = new Set<string>();
  #explained = false;
  #forward: { readonly info: TcpipBindInfo; readonly accept: ((port?: number) => void) | undefined } | undefined;
  #channel: ServerChannel | undefined;
  #pty = false;
  #openChannels = 0;

  readonly #whenBound: () => void;
  /** Proxied connections' writes waiting for the client to read what it was sent (ssh_unsent_bytes). */
  #waitingWrites: (() => void)[] = [];

  constructor(socket: Socket, settings: Settings<C>, whenBound: () => void, forget: () => void) {
    super(socket, settings, forget);
    this.#settings = settings;
    this.#whenBound = whenBound;
    this.armHandshakeDeadline(settings.handshakeTimeoutMs, () =>
      this.end(
        { kind: 'protocol-error', message: `no tunnel bound within ${settings.handshakeTimeoutMs} ms ${limitNote('ssh_handshake_ms')}` },
        { message: `no tunnel was bound within ${settings.handshakeTimeoutMs} ms ${limitNote('ssh_handshake_ms')}` },
      ),
    );
  }

  /** Counts what the client sends until its tunnel is bound (after ssh2 attached its own reader, so no byte is missed or read early). */
  countBytes(): void {
    const onData = (chunk: Buffer) => {
      if (this.#bound) return this.socket.off('data', onData);
      this.#bytesBeforeBind += chunk.length;
      if (this.#bytesBeforeBind > LIMITS.ssh_handshake_bytes.value) {
        const message = `more than ${LIMITS.ssh_handshake_bytes.value} bytes before a tunnel was bound ${limitNote('ssh_handshake_bytes')}`;
        this.end({ kind: 'protocol-error', message }, { message });
      }
    };
    this.socket.on('data', onData);
  }

  /** ssh2 recognised an SSH client on this socket (`software`: its identification). */
  attach(client: Connection, software: string): void {
    this.#client = client;
    this.#software = software;
    if (this.endReason) {
      this.destroy();
      return;
    }
    client.on('error', (error: Error & { level?: string; code?: unknown; syscall?: string }) => {
      if (error.level === 'client-timeout') this.end({ kind: 'keepalive-timeout', message: 'the client stopped answering keepalives' });
      // The socket's own errors (a reset when a killed ssh's kernel closes the connection) do not
      // always come labelled client-socket; a system call failed all the same.
      else if (error.level === 'client-socket' || error.syscall !== undefined) this.end({ kind: 'disconnected', message: `connection error: ${error.message}` });
      // ssh2 reports a client's SSH_MSG_DISCONNECT with a reason other than "by application" as an
      // error whose code is that reason: the client left.
      else if (typeof error.code === 'number') this.end({ kind: 'disconnected', message: `the client disconnected: ${error.message}` });
      else this.end({ kind: 'protocol-error', message: `SSH protocol error: ${error.message}` });
    });
    client.on('close', () => this.end({ kind: 'disconnected', message: 'the connection closed' }));
    client.on('authentication', (context: AuthContext) => {
      this.#authenticate(context).catch((error: unknown) => this.#fault(error));
    });
    client.on('request', (accept: ((port?: number) => void) | undefined, reject: (() => void) | undefined, name: string, info: TcpipBindInfo) =>
      this.#globalRequest(accept, reject, name, info),
    );
    client.on('session', (accept: () => Session, reject: () => void) => this.#openSession(accept, reject));
  }

  /** A fault of the gateway itself: reported, and only this connection pays for it. */
  #fault(error: unknown): void {
    this.#settings.onError(error);
    this.end({ kind: 'protocol-error', message: 'internal error of the gateway' }, { message: 'internal error of the gateway' });
  }

  /** The user reads the farewell on the command's channel, if there is one yet; its close ends the connection. */
  protected closePolitely(_reason: SshSessionEndReason, farewell: SshFarewell | undefined): void {
    const channel = this.#channel;
    if (channel && !channel.destroyed) {
      if (farewell?.message !== undefined) channel.stderr.write(`${this.#settings.serviceName}: ${farewell.message}${this.#newline()}`);
      channel.exit(farewell?.exitCode ?? 1);
      channel.end();
      // The client leaves once its session channel closes; the connection goes with it.
      channel.once('close', () => this.#client?.end());
    } else if (this.#client) {
      this.#client.end();
    } else {
      this.destroy();
    }
    this.#waitingWrites = [];
  }

  protected override farewellAtShutdown(): SshFarewell {
    return { message: 'the gateway is shutting down' };
  }

  protected describeRefusal(error: unknown): string | undefined {
    return error instanceof SshGatewayError || error instanceof SshCommandError ? error.message : undefined;
  }

  protected describeInternalError(): string {
    return 'internal server error';
  }

  #newline(): string {
    return this.#pty ? '\r\n' : '\n';
  }

  async #authenticate(context: AuthContext): Promise<void> {
    if (++this.#authAttempts > LIMITS.ssh_auth_attempts.value) {
      context.reject();
      this.end({ kind: 'protocol-error', message: `more than ${LIMITS.ssh_auth_attempts.value} authentication attempts ${limitNote('ssh_auth_attempts')}` });
      return;
    }
    const methods = this.#explained ? PUBLIC_KEY_ONLY : WITH_EXPLANATION;
    if (context.method === 'keyboard-interactive' && !this.#explained) return this.#explain(context);
    if (context.method !== 'publickey') return context.reject(methods);
    const offered = this.#publicKey(context);
    if (!offered) return context.reject(methods);
    if (!context.signature || !context.blob) {
      // The client asks whether the key would do before it proves it holds it (a security key would need a touch).
      const accepted = await this.call(() => this.#settings.handler.acceptsKey(offered.key, this.remote));
      if (this.endReason) return;
      if (accepted) return context.accept();
      this.#refusals.add(`no SSH credential has the key ${offered.key.fingerprint}: register your public key as an SSH credential (POST /ssh_credentials) and connect again`);
      return context.reject(methods);
    }
    if (offered.parsed.verify(context.blob, context.signature, context.hashAlgo) !== true) return context.reject(methods);
    let result;
    let login: SshLogin;
    try {
      login = { user: context.username, software: this.#software };
      result = await this.call(() => this.#settings.handler.authenticate(offered.key, login, this.remote));
    } catch (error) {
      this.#refusals.add(this.refusal(error));
      if (!this.endReason) context.reject(methods);
      return;
    }
    if (this.adopt(new LiveSshSession(result.sessionId, result.context, login, offered.key, this.remote, result, this))) context.accept();
  }

  /** The offered key, parsed; undefined for keys ssh2 cannot read (certificates, unknown types). */
  #publicKey(context: PublicKeyAuthContext): { readonly key: SshPublicKey; readonly parsed: ParsedKey } | undefined {
    const parsed = ssh2.utils.parseKey(context.key.data);
    if (parsed instanceof Error || Array.isArray(parsed)) return undefined;
    return { key: { algorithm: parsed.type, blob: context.key.data, fingerprint: keyFingerprint(context.key.data) }, parsed };
  }

  /**
   * The client ran out of keys: keyboard-interactive is offered only to tell the user why (OpenSSH
   * prints the instruction), with no prompt, and always fails. BatchMode clients skip it.
   */
  #explain(context: KeyboardAuthContext): void {
    this.#explained = true;
    const reasons = this.#refusals.size > 0 ? [...this.#refusals] : ['no public key was offered'];
    const text = `${reasons.join('; ')}.`;
    context.prompt([], `${this.#settings.serviceName}: authentication failed`, text, () => context.reject(PUBLIC_KEY_ONLY));
  }

  #globalRequest(accept: ((port?: number) => void) | undefined, reject: (() => void) | undefined, name: string, info: TcpipBindInfo): void {
    if (name === 'tcpip-forward' && !this.#forward && !this.endReason) {
      // Answered once the command has bound the tunnel, with the endpoint's port when the client said 0.
      this.#forward = { info, accept };
      return;
    }
    if (name === 'cancel-tcpip-forward' && this.#forward && this.#forward.info.bindAddr === info.bindAddr && this.session?.tunnel()?.forward.port === info.bindPort) {
      accept?.();
      this.end({ kind: 'command-ended', message: 'the client cancelled its forward' }, { message: 'the forward was cancelled', exitCode: 0 });
      return;
    }
    // A second forward: one endpoint per connection, as the vendor's gateway does.
    reject?.();
  }

  #openSession(accept: () => Session, reject: () => void): void {
    if (this.#channel || this.#openChannels >= LIMITS.ssh_channels.value || this.endReason) return reject();
    const session = accept();
    this.#openChannels++;
    session.once('close', () => this.#openChannels--);
    session.on('pty', (acceptPty) => {
      this.#pty = true;
      acceptPty?.();
    });
    session.on('exec', (acceptExec, rejectExec, info) => (this.#channel ? rejectExec?.() : this.#run(acceptExec(), info.command)));
    session.on('shell', (acceptShell, rejectShell) => (this.#channel ? rejectShell?.() : this.#run(acceptShell(), '')));
  }

  /** The session's command: read it with the forward, bind, tell the user. */
  #run(channel: ServerChannel, command: string): void {
    this.#channel = channel;
    channel.on('error', () => {});
    // Input is not read as commands; with a terminal, Ctrl+C or Ctrl+D ends the session (the vendor's "Ctrl+C to quit").
    channel.on('data', (data: Buffer) => {
      if (this.#pty && (data.includes(3) || data.includes(4))) this.end({ kind: 'disconnected', message: 'the user quit' }, { exitCode: 0 });
    });
    this.#bind(channel, command).catch((error: unknown) => this.#fault(error));
  }

  async #bind(channel: ServerChannel, command: string): Promise<void> {
    const session = this.session!;
    const forward = this.#forward;
    if (!forward) return this.#refuse('no remote forward was asked for: run ssh -R 0:localhost:<local port> … so the endpoint has somewhere to send connections');
    let parsed;
    try {
      parsed = parseTunnelCommand(session.login.user, command, { address: forward.info.bindAddr, port: forward.info.bindPort });
    } catch (error) {
      return this.#refuse(this.refusal(error));
    }
    if (parsed.kind === 'help') {
      channel.write(`${parsed.text.replaceAll('\n', this.#newline())}${this.#newline()}`);
      this.end({ kind: 'command-ended', message: 'the user asked for help' }, { exitCode: 0 });
      return;
    }
    let result;
    try {
      result = await this.call(() => this.#settings.handler.bind(session, parsed.request));
    } catch (error) {
      return this.#refuse(this.refusal(error));
    }
    const port = forward.info.bindPort !== 0 ? forward.info.bindPort : urlPort(result.url);
    session.setTunnel({ tunnelId: result.tunnelId, request: parsed.request, url: result.url, forward: { address: forward.info.bindAddr, port } });
    if (this.endReason) return;
    this.#bound = true;
    this.#whenBound();
    this.handshakeDone();
    forward.accept?.(port);
    channel.write(this.#banner(session, result.url));
  }

  #refuse(message: string): void {
    this.end({ kind: 'command-ended', message: `refused: ${message}` }, { message });
  }

  /** What the vendor's gateway prints once the endpoint is up (layout as it prints it). */
  #banner(session: LiveSshSession<C>, url: string): string {
    const { accountName, planName, region } = session.told;
    const lines = ['', `${this.#settings.serviceName} (via SSH) (Ctrl+C to quit)`, ''];
    if (accountName) lines.push(`Account     ${accountName}${planName ? ` (Plan: ${planName})` : ''}`);
    if (region) lines.push(`Region      ${region}`);
    lines.push(`Forwarding  ${url}`);
    return lines.join(this.#newline()) + this.#newline();
  }

  /** Opens a forwarded-tcpip channel on the client's forward, as OpenSSH matches it (its bind address and the port it was told). */
  forwardOut(forward: RemoteForward, clientAddr: RemoteAddress): Promise<Duplex> {
    const client = this.#client;
    if (!client || this.endReason) return Promise.reject(new SshRelayError('the session has ended'));
    if (this.#openChannels >= LIMITS.ssh_channels.value) {
      return Promise.reject(new SshRelayError(`${LIMITS.ssh_channels.value} channels are open on this session ${limitNote('ssh_channels')}`));
    }
    this.#openChannels++;
    return new Promise((resolve, reject) => {
      client.forwardOut(forward.address, forward.port, clientAddr.ip, clientAddr.port, (error, channel) => {
        if (error) {
          this.#openChannels--;
          reject(new SshRelayError(`the client refused the connection: ${error.message}`));
          return;
        }
        channel.once('close', () => this.#openChannels--);
        resolve(new PacedChannel(channel, (write) => this.#whenUnsentBelowLimit(write)));
      });
    });
  }

  /**
   * Runs `write` now if the socket holds at most ssh_unsent_bytes, else once it has drained. ssh2
   * writes every packet to the socket whatever it holds, up to the window the client announced
   * (2 MiB a channel from OpenSSH, up to 4 GiB from a client that chooses), so without this a
   * client that stops reading makes the gateway buffer whatever the ingress sends it.
   */
  #whenUnsentBelowLimit(write: () => void): void {
    if (this.socket.writableLength <= LIMITS.ssh_unsent_bytes.value || this.endReason) return write();
    this.#waitingWrites.push(write);
    // Past the limit the socket asked for a drain (its high-water mark is far below the limit), so 'drain' comes once it is empty.
    if (this.#waitingWrites.length === 1) this.socket.once('drain', () => this.#releaseWrites());
  }

  /** Lets waiting writes go one by one while the socket stays below the limit (each write reaches the socket at once). */
  #releaseWrites(): void {
    while (this.#waitingWrites.length > 0 && (this.socket.writableLength <= LIMITS.ssh_unsent_bytes.value || this.endReason)) this.#waitingWrites.shift()!();
    if (this.#waitingWrites.length > 0) this.socket.once('drain', () => this.#releaseWrites());
  }

  /** What the gateway holds unsent to this client now: the socket's buffer, which ssh2's packets go to. */
  unsentBytes(): number {
    return this.socket.writableLength;
  }
}

/**
 * A proxied connection's channel, whose writes reach ssh2 one at a time and only while the
 * connection's socket is below ssh_unsent_bytes (`pace`), so a client that does not read pushes
 * back on the ingress instead of growing the gateway's buffers. Reads come straight from the channel.
 */
class PacedChannel extends Duplex {
  readonly #channel: ServerChannel;
  readonly #pace: (write: () => void) => void;

  constructor(channel: ServerChannel, pace: (write: () => void) => void) {
    super({ allowHalfOpen: true });
    this.#channel = channel;
    this.#pace = pace;
    readThrough(channel, this);
  }

  override _read(): void {
    this.#channel.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#pace(() => (this.#channel.destroyed ? callback() : this.#channel.write(chunk, callback)));
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#channel.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#channel.destroy();
    callback(error);
  }
}
