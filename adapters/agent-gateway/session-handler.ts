import type { Duplex } from 'node:stream';
import type { AgentCommandReply } from '../../lib/index.ts';
import type { RemoteAddress } from '../addresses.ts';
import type { AgentAuth, BindRequest, CommandKind, EdgeType, ProtocolVersion, UpdateArguments } from './protocol.ts';

/**
 * The seam between the agent gateway (sockets, TLS, the vendor's protocol) and whatever keeps
 * sessions and tunnels (Burrow's core, or a test). The gateway decodes what agents send and
 * calls an AgentSessionHandler; the handler answers or throws an AgentGatewayError, which the
 * agent receives as the vendor's errors look (message and code). The gateway hands the handler
 * live AgentSessions to send commands and open proxy streams on. Nothing here knows storage.
 */

/** A refusal the agent should see: `code` is printed with the gateway's prefix (`ERR_BURROW_105`). */
export class AgentGatewayError extends Error {
  override readonly name = 'AgentGatewayError';

  constructor(
    readonly code: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** The relay of a command or proxy stream failed (session gone, stream reset, no reply in time). */
export class AgentRelayError extends Error {
  override readonly name = 'AgentRelayError';
}

export type { RemoteAddress } from '../addresses.ts';

/** A successful authentication: the session's id and what the agent is told. */
export interface AuthResult<C> {
  /** The session id (the agent keeps it and sends it back when it reconnects). */
  readonly sessionId: string;
  /** The handler's own data about the session (account, credential…), kept on the AgentSession. */
  readonly context: C;
  readonly region?: string;
  readonly accountName?: string;
  readonly planName?: string;
  /** Text the agent shows on connecting. */
  readonly banner?: string;
  /** Opaque text the agent sends back on its next Auth. */
  readonly cookie?: string;
}

/** A bind the handler accepted. */
export interface BindResult {
  readonly tunnelId: string;
  /** The public URL of an endpoint bind (`https://…`, `tcp://host:port`, `tls://…`); unused for labeled binds. */
  readonly url?: string;
  /** What the agent sends back when it binds again after reconnecting (BindResp `Extra.Token`), if anything. */
  readonly token?: string;
}

/** Why a session ended. */
export interface SessionEndReason {
  /**
   * disconnected: the connection closed or failed; agent-closed: the agent sent GOAWAY;
   * heartbeat-timeout: no heartbeat answer, or no proxied connection taken, in time; protocol-error: the agent broke the
   * protocol (the message says how); peer-not-reading: it left too much unread;
   * closed-by-server: AgentSession.close(); gateway-closed: the gateway shut down.
   */
  readonly kind: 'disconnected' | 'agent-closed' | 'heartbeat-timeout' | 'protocol-error' | 'peer-not-reading' | 'closed-by-server' | 'gateway-closed';
  readonly message: string;
}

/** A tunnel bound on a live session. */
export interface AgentTunnel {
  readonly tunnelId: string;
  /** The id the agent knows the bind by (in proxy headers, Unbind, StopTunnel). */
  readonly bindId: string;
  readonly request: BindRequest;
  readonly url: string | undefined;
  /** The bind token the agent was told (BindResult.token), '' when none. */
  readonly token?: string;
}

/** What the agent answered to a command: ok, unsupported (it has no handler) or failed, with the agent's message. */
export type CommandReply = AgentCommandReply;

/** The connection a proxy stream carries. */
export interface ProxyOptions {
  /** `ip:port` of the client connected to the endpoint. */
  readonly clientAddr: string;
  /** The endpoint protocol the agent is told; default: the bind's (`http`, `https`, `tcp`, `tls`), '' for labeled binds. */
  readonly proto?: string;
  /** For labeled tunnels, the kind of edge the connection came through; default 'undefined'. */
  readonly edgeType?: EdgeType;
  /** True when the bytes are TLS the agent must terminate; default: a tls bind without termination at the edge. */
  readonly passthroughTls?: boolean;
}

/** What a live session keeps of the agent's Auth: all but its secrets (authtoken, cookie). */
export type AgentSessionAuth = Omit<AgentAuth, 'authtoken' | 'cookie'>;

/** A live, authenticated agent session, as the gateway gives it to the handler. */
export interface AgentSession<C> {
  readonly id: string;
  readonly context: C;
  readonly auth: AgentSessionAuth;
  readonly remote: RemoteAddress;
  readonly protocolVersion: ProtocolVersion;
  /** Set once the session ended. */
  readonly ended: SessionEndReason | undefined;
  tunnels(): readonly AgentTunnel[];
  /**
   * Sends Stop, Restart or Update and answers the agent's reply. An agent that said at Auth it
   * cannot run the command at all (too old) is answered 'unsupported' without asking it.
   * Rejects with AgentRelayError if the session ends or the agent does not answer in time.
   */
  command(kind: 'update', args: UpdateArguments): Promise<CommandReply>;
  command(kind: Exclude<CommandKind, 'update'>): Promise<CommandReply>;
  /**
   * Opens a proxy stream to the agent for a tunnel: bytes written reach the agent's local
   * service, its answer is read. A stream reset by the agent is destroyed with an error, so
   * listen for 'error' (or use stream.pipeline). Throws AgentRelayError for an unknown tunnel
   * or an ended session.
   */
  openProxy(tunnelId: string, options: ProxyOptions): Duplex;
  /** Tells the agent the server closed a tunnel (StopTunnel), with a message and an optional code. */
  stopTunnel(tunnelId: string, options?: { readonly message?: string; readonly code?: number }): void;
  /** Ends the session (GOAWAY); sessionEnded follows with 'closed-by-server'. */
  close(message?: string): void;
}

/**
 * What traffic needs of a live session: its id, context, end, tunnels and proxy streams. The
 * ingress routes to these; an agent's session is one, and the SSH gateway shows its sessions as
 * ones (adapters/ssh-gateway/routable.ts).
 */
export type RoutableSession<C> = Pick<AgentSession<C>, 'id' | 'context' | 'ended' | 'tunnels' | 'openProxy'>;

/** What the gateway asks of the core. Each call may throw an AgentGatewayError to refuse. */
export interface AgentSessionHandler<C> {
  /** An agent's Auth, from `remote`. */
  authenticate(auth: AgentAuth, remote: RemoteAddress): Promise<AuthResult<C>>;
  /** A Bind (endpoint) or StartTunnelWithLabel (labeled) on a live session. */
  bind(session: AgentSession<C>, request: BindRequest): Promise<BindResult>;
  /** The agent closed a tunnel (Unbind). */
  unbind(session: AgentSession<C>, tunnelId: string): Promise<void>;
  /**
   * The session ended, once per authenticated session, after every handler call of that
   * session has settled. Its tunnels are still listed on it.
   */
  sessionEnded(session: AgentSession<C>, reason: SessionEndReason): void | Promise<void>;
}
