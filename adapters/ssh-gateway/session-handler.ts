import type { Duplex } from 'node:stream';
import type { RemoteAddress } from '../addresses.ts';
import type { RemoteForward, SshBindRequest } from './command.ts';

/**
 * The seam between the SSH gateway (sockets, ssh2, the command grammar) and whatever keeps
 * sessions and tunnels (Burrow's core, or a test). The gateway proves a client holds its key,
 * reads its `-R` forward and command, and calls an SshSessionHandler; the handler answers or
 * throws an SshGatewayError, whose message the ssh user reads. The gateway hands the handler
 * live SshSessions to open proxied connections on and to close. Nothing here knows storage.
 */

/** A refusal the ssh user should read (an unknown key, a bind the credential's ACL forbids…). */
export class SshGatewayError extends Error {
  override readonly name = 'SshGatewayError';
}

/** The relay of a proxied connection failed (session gone, channel refused). */
export class SshRelayError extends Error {
  override readonly name = 'SshRelayError';
}

/** A client's public key, as it offered it. */
export interface SshPublicKey {
  /** The key's type on the wire (`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`…). */
  readonly algorithm: string;
  /** RFC 4253 public key blob. */
  readonly blob: Buffer;
  /** `SHA256:<base64 without padding>`, as ssh-keygen -l prints it. */
  readonly fingerprint: string;
}

/** Who logs in: the SSH user name and the client's software. */
export interface SshLogin {
  /** The SSH user name (`v2`: the command syntax version). */
  readonly user: string;
  /** The client's software and version from its identification line (`OpenSSH_9.2p1`). */
  readonly software: string;
}

/** A successful authentication: the session's id and what the user is told. */
export interface SshAuthResult<C> {
  readonly sessionId: string;
  /** The handler's own data about the session (account, credential…), kept on the SshSession. */
  readonly context: C;
  readonly accountName?: string;
  readonly planName?: string;
  readonly region?: string;
}

/** A bind the handler accepted. */
export interface SshBindResult {
  readonly tunnelId: string;
  /** The endpoint's public URL (`https://…`, `tcp://host:port`, `tls://…`). */
  readonly url: string;
}

/** Why a session ended. */
export interface SshSessionEndReason {
  /**
   * disconnected: the connection closed or failed; keepalive-timeout: the client stopped
   * answering; protocol-error: the client broke the protocol or a limit (the message says
   * which); command-ended: the command ended the session itself (refused, or `--help`);
   * closed-by-server: SshSession.close(); gateway-closed: the gateway shut down.
   */
  readonly kind: 'disconnected' | 'keepalive-timeout' | 'protocol-error' | 'command-ended' | 'closed-by-server' | 'gateway-closed';
  readonly message: string;
}

/** The tunnel bound on a live session (one per connection, as the vendor's gateway does). */
export interface SshTunnel {
  readonly tunnelId: string;
  readonly request: SshBindRequest;
  readonly url: string;
  /** The forward as the client knows it: its bind address and the port it was told. */
  readonly forward: RemoteForward;
}

/** The connection a proxied channel carries. */
export interface SshProxyOptions {
  /** IP and port of the client connected to the endpoint (the client's `originator` address). */
  readonly clientAddr: RemoteAddress;
}

/** A live, authenticated SSH session, as the gateway gives it to the handler. */
export interface SshSession<C> {
  readonly id: string;
  readonly context: C;
  readonly login: SshLogin;
  readonly key: SshPublicKey;
  readonly remote: RemoteAddress;
  /** Set once the session ended. */
  readonly ended: SshSessionEndReason | undefined;
  tunnel(): SshTunnel | undefined;
  /**
   * Opens a `forwarded-tcpip` channel to the client for its tunnel: bytes written reach the
   * client's local service through `ssh -R`, its answer is read. Rejects with SshRelayError for
   * an unknown tunnel, an ended session or a channel the client refuses.
   */
  openProxy(tunnelId: string, options: SshProxyOptions): Promise<Duplex>;
  /** What the gateway holds unsent to the client now (at most about ssh_unsent_bytes: proxied connections wait past it). */
  unsentBytes(): number;
  /** Ends the session: the user reads `message` on stderr, then the connection closes. */
  close(message?: string): void;
}

/** What the gateway asks of the core. authenticate and bind may throw an SshGatewayError to refuse. */
export interface SshSessionHandler<C> {
  /** Whether a key could authenticate (no session made); asked before the client proves it holds the key. */
  acceptsKey(key: SshPublicKey, remote: RemoteAddress): Promise<boolean>;
  /** A client proved it holds `key`, logging in from `remote`. */
  authenticate(key: SshPublicKey, login: SshLogin, remote: RemoteAddress): Promise<SshAuthResult<C>>;
  /** The session's command asks for an endpoint. */
  bind(session: SshSession<C>, request: SshBindRequest): Promise<SshBindResult>;
  /** The session ended, once per authenticated session, after every handler call of that session has settled. */
  sessionEnded(session: SshSession<C>, reason: SshSessionEndReason): void | Promise<void>;
}
