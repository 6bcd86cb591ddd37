import type { Socket } from 'node:net';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import { ERRORS } from '../../lib/conventions/errors.ts';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import { LiveAgentSession } from './agent-session.ts';
import { MUXADO_ERRORS } from './muxado/frames.ts';
import { echoHeartbeats, startHeartbeat } from './muxado/heartbeat.ts';
import { MuxadoSession, type MuxadoCloseReason, type MuxadoSessionBounds } from './muxado/session.ts';
import type { MuxadoStream } from './muxado/stream.ts';
import { HEARTBEAT_STREAM_TYPE, readStreamType } from './muxado/typed.ts';
import {
  decodeAuth,
  decodeBind,
  decodeLabeledBind,
  decodeUnbind,
  encodeAuthError,
  encodeAuthReply,
  encodeBindError,
  encodeBindReply,
  encodeLabeledBindReply,
  encodeServerInfo,
  encodeUnbindReply,
  errorText,
  MessageError,
  PROTOCOL_VERSIONS,
  STREAM_TYPES,
  STREAM_WINDOW_BYTES,
  type AgentAuth,
  type EndpointBindRequest,
  type ProtocolVersion,
} from './protocol.ts';
import { AGENT_MESSAGE_BOUNDS, MessageTooLargeError, readMessage, writeMessage } from './rpc.ts';
import { AgentGatewayError, type AgentSession, type AgentSessionHandler, type SessionEndReason } from './session-handler.ts';
import { connectionSettings, GatewayConnection, type ConnectionOptions, type ConnectionSettings } from '../gateway-connection/gateway-connection.ts';
import { createGatewayListener, type GatewayAddress, type GatewayListener } from '../gateway-connection/gateway-listener.ts';

/**
 * The agent gateway: a TLS listener that speaks the vendor's agent protocol (muxado framing,
 * heartbeats, typed RPC streams; docs/agent-protocol.md) and turns what agents do into calls on
 * an AgentSessionHandler. One connection is one session; whatever a peer does wrong (garbage
 * instead of TLS, bad frames, oversized messages, silence) ends that connection only.
 */

/** Time between the gateway's heartbeats (the vendor's agent beats every 10 s too). */
const HEARTBEAT_INTERVAL_MS = 10_000;

export interface AgentGatewayOptions<C> extends ConnectionOptions<AgentSessionHandler<C>> {
  /** PEM certificate chain and private key the gateway presents. */
  readonly tls: { readonly cert: string; readonly key: string };
  /** Prefix of error codes the agent sees (`ERR_BURROW_`); the vendor's agent recognises `ERR_NGROK_`. */
  readonly errorCodePrefix?: string;
  /** The server version told to agents after Auth. */
  readonly serverVersion?: string;
  /** Defaults: the limits agent_heartbeat_answer_ms, agent_command_answer_ms and agent_proxy_accept_ms; 10 s between heartbeats (agent_handshake_ms bounds the handshake). */
  readonly heartbeatIntervalMs?: number;
  readonly heartbeatToleranceMs?: number;
  readonly commandTimeoutMs?: number;
  readonly proxyAcceptMs?: number;
}

export type AgentGatewayAddress = GatewayAddress;

export type AgentGateway<C> = GatewayListener<AgentSession<C>>;

interface Settings<C> extends ConnectionSettings<AgentSessionHandler<C>> {
  readonly secureContext: SecureContext;
  readonly errorCodePrefix: string;
  readonly serverVersion: string;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatToleranceMs: number;
  readonly commandTimeoutMs: number;
  readonly proxyAcceptMs: number;
}

export function createAgentGateway<C>(options: AgentGatewayOptions<C>): AgentGateway<C> {
  const settings: Settings<C> = {
    ...connectionSettings(options, LIMITS.agent_handshake_ms.value),
    secureContext: createSecureContext({ cert: options.tls.cert, key: options.tls.key }),
    errorCodePrefix: options.errorCodePrefix ?? 'ERR_BURROW_',
    serverVersion: options.serverVersion ?? 'burrow',
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS,
    heartbeatToleranceMs: options.heartbeatToleranceMs ?? LIMITS.agent_heartbeat_answer_ms.value,
    commandTimeoutMs: options.commandTimeoutMs ?? LIMITS.agent_command_answer_ms.value,
    proxyAcceptMs: options.proxyAcceptMs ?? LIMITS.agent_proxy_accept_ms.value,
  };
  // Frames are small and a proxied request is several of them: Nagle's algorithm would hold each
  // after the first until the agent acknowledged it (up to its delayed-ACK time, 40 ms on Linux).
  return createGatewayListener('the agent gateway', { noDelay: true }, (socket, forget) => new AgentConnection(socket, settings, forget));
}


/**
 * Until its Auth succeeds a peer is nobody: it may open the streams the SDK opens then (heartbeat
 * and Auth) and make the gateway hold little more than its Auth message. 512 streams echoing
 * heartbeats into windows never granted held 128 MiB per connection, without a token.
 */
const BOUNDS_BEFORE_AUTH: MuxadoSessionBounds = {
  maxStreams: LIMITS.agent_streams_before_auth.value,
  maxHeldBytes: LIMITS.agent_held_bytes_before_auth.value,
  heldNote: limitNote('agent_held_bytes_before_auth'),
};
const BOUNDS_AFTER_AUTH: MuxadoSessionBounds = {
  maxStreams: LIMITS.agent_streams.value,
  maxHeldBytes: LIMITS.agent_held_bytes.value,
  heldNote: limitNote('agent_held_bytes'),
};

/** What an RPC did: its reply, and how to take back what it did if that reply cannot be sent. */
interface RpcAnswer {
  readonly reply: unknown;
  readonly undo?: () => Promise<void>;
}

const MUXADO_END_KINDS: Record<MuxadoCloseReason['kind'], SessionEndReason['kind']> = {
  'remote-goaway': 'agent-closed',
  'local-close': 'closed-by-server',
  'protocol-error': 'protocol-error',
  'socket-closed': 'disconnected',
  'peer-not-reading': 'peer-not-reading',
};

/** One agent connection: TLS, then muxado, then Auth, then the session's RPCs until it ends. */
class AgentConnection<C> extends GatewayConnection<SessionEndReason['kind'], LiveAgentSession<C>> {
  readonly #settings: Settings<C>;
  readonly #tls: TLSSocket;
  #mux: MuxadoSession | undefined;
  #authStarted = false;
  #heartbeat: { stop(): void } | undefined;
  /** The region the handler gave at Auth, for SrvInfo. */
  #region = '';
  #settleAuth!: (session: LiveAgentSession<C> | undefined) => void;
  /** The session once Auth succeeded and was answered; undefined once the connection ended without one. */
  readonly #authOutcome = new Promise<LiveAgentSession<C> | undefined>((resolve) => (this.#settleAuth = resolve));
  /** Binds being served, by the `Id` the agent chose: a Bind repeating one waits for it. */
  readonly #bindsInFlight = new Map<string, Promise<RpcAnswer>>();

  constructor(raw: Socket, settings: Settings<C>, forget: () => void) {
    super(raw, settings, forget);
    this.#settings = settings;
    this.armHandshakeDeadline(settings.handshakeTimeoutMs, () =>
      this.end({ kind: 'protocol-error', message: `no successful Auth within ${settings.handshakeTimeoutMs} ms ${limitNote('agent_handshake_ms')}` }),
    );
    this.#tls = new TLSSocket(raw, { isServer: true, secureContext: settings.secureContext });
    this.#tls.on('error', (error: Error) => this.end({ kind: 'disconnected', message: `connection error: ${error.message}` }));
    this.#tls.on('close', () => this.end({ kind: 'disconnected', message: 'the connection closed' }));
    this.#tls.once('secure', () => this.#startMuxado());
  }

  #startMuxado(): void {
    if (this.endReason) return;
    const mux = new MuxadoSession(this.#tls, {
      role: 'server',
      window: STREAM_WINDOW_BYTES,
      maxFrameBytes: LIMITS.agent_frame_bytes.value,
      frameNote: limitNote('agent_frame_bytes'),
      maxReorder: LIMITS.agent_stream_reorder.value,
      reorderNote: limitNote('agent_stream_reorder'),
      ...BOUNDS_BEFORE_AUTH,
    });
    this.#mux = mux;
    mux.on('stream', (stream: MuxadoStream) =>
      this.#accept(stream).catch((error: unknown) => {
        // A fault of the gateway itself: reported, and only this session pays for it.
        this.#settings.onError(error);
        this.end({ kind: 'protocol-error', message: 'internal error of the gateway' });
      }),
    );
    mux.on('close', (reason: MuxadoCloseReason) => this.end({ kind: MUXADO_END_KINDS[reason.kind], message: reason.message }));
  }

  protected closePolitely(reason: SessionEndReason): void {
    this.#settleAuth(undefined);
    this.#heartbeat?.stop();
    if (this.#mux && !this.#mux.closed) {
      // A GOAWAY only tells a peer that broke the protocol why; every other end closes the
      // connection (MuxadoSession.end says why the vendor's agent needs that).
      if (reason.kind === 'protocol-error') this.#mux.close(MUXADO_ERRORS.protocol, reason.message);
      else this.#mux.end(reason.message);
    } else {
      this.#tls.end();
    }
  }

  protected override destroy(): void {
    this.#tls.destroy();
    super.destroy();
  }

  protected describeRefusal(error: unknown): string | undefined {
    if (error instanceof AgentGatewayError) return errorText(error.message, this.#code(error.code));
    if (error instanceof MessageError) return errorText(error.message, this.#code(ERRORS.INVALID_FIELD.code));
    return undefined;
  }

  protected describeInternalError(): string {
    return errorText('internal server error', this.#code(ERRORS.INTERNAL.code));
  }

  #code(code: number | undefined): string | undefined {
    return code === undefined ? undefined : `${this.#settings.errorCodePrefix}${code}`;
  }

  async #accept(stream: MuxadoStream): Promise<void> {
    stream.on('error', () => {});
    let type: number;
    try {
      type = await readStreamType(stream);
    } catch {
      stream.destroy();
      return;
    }
    if (type === HEARTBEAT_STREAM_TYPE) return echoHeartbeats(stream);
    if (type === STREAM_TYPES.auth) return this.#authenticate(stream);
    // The vendor's v2 agent sends its Binds without waiting for the Auth reply: they wait for
    // Auth's outcome, held within the bounds before Auth (its streams, its bytes, its deadline).
    const session = this.session ?? (await this.#authOutcome);
    if (!session) {
      stream.destroy();
      return;
    }
    switch (type) {
      case STREAM_TYPES.bind:
        return this.#rpc(stream, (message) => this.#bind(session, decodeBind(message)), encodeBindError);
      case STREAM_TYPES.bindLabeled:
        return this.#rpc(stream, (message) => this.#bindLabeled(session, message), (error) => encodeLabeledBindReply('', error));
      case STREAM_TYPES.unbind:
        return this.#rpc(stream, async (message) => ({ reply: await this.#unbind(session, message) }), (error) => encodeUnbindReply(error));
      case STREAM_TYPES.serverInfo:
        return this.#rpc(stream, async () => ({ reply: encodeServerInfo(this.#region) }), (error) => ({ Region: '', Error: error }));
      default:
        // Server-to-agent types (proxy, commands, StopTunnel) and unknown ones are refused.
        stream.destroy();
    }
  }

  /** One request of the agent's, read within the bounds, its bytes counted as the session's. */
  #read(stream: MuxadoStream): Promise<unknown> {
    return readMessage(stream, { ...AGENT_MESSAGE_BOUNDS, retain: (delta) => stream.retain(delta) });
  }

  /**
   * Reads one request, answers with `serve`'s reply or, when it throws, `refuse`'s. Every request
   * read is answered: a reply that cannot be encoded is a failure of the gateway, and what the
   * request did is undone before the agent is told so (it would otherwise hold a tunnel it never
   * heard of).
   */
  async #rpc(stream: MuxadoStream, serve: (message: unknown) => Promise<RpcAnswer>, refuse: (error: string) => unknown): Promise<void> {
    let message: unknown;
    try {
      message = await this.#read(stream);
    } catch (error) {
      this.#unreadable(stream, error, refuse);
      return;
    }
    try {
      const answer = await serve(message);
      try {
        writeMessage(stream, answer.reply);
      } catch (error) {
        await answer.undo?.();
        throw error;
      }
    } catch (error) {
      writeMessage(stream, refuse(this.refusal(error)));
    }
    // Read on to the agent's FIN (nothing else is expected), so the stream closes on both sides.
    stream.resume();
  }

  /** A request that could not be read: too large ends the session; malformed (or too deep) is answered. */
  #unreadable(stream: MuxadoStream, error: unknown, refuse: (error: string) => unknown): void {
    if (error instanceof MessageTooLargeError) this.end({ kind: 'protocol-error', message: `${error.message} ${limitNote('agent_message_bytes')}` });
    else if (error instanceof MessageError) {
      writeMessage(stream, refuse(this.refusal(error)));
      // The rest of the request is read and dropped, not left in the stream's window.
      stream.resume();
    } else stream.destroy();
  }

  async #authenticate(stream: MuxadoStream): Promise<void> {
    if (this.#authStarted) {
      this.end({ kind: 'protocol-error', message: 'a second Auth on one session' });
      return;
    }
    this.#authStarted = true;
    let auth: AgentAuth;
    try {
      auth = decodeAuth(await this.#read(stream));
    } catch (error) {
      this.#unreadable(stream, error, encodeAuthError);
      this.end({ kind: 'protocol-error', message: `unreadable Auth: ${(error as Error).message}` });
      return;
    }
    const version = PROTOCOL_VERSIONS.find((supported) => auth.versions.includes(supported));
    if (!version) {
      const message = `the agent speaks protocol versions ${JSON.stringify(auth.versions)}; this server speaks ${PROTOCOL_VERSIONS.join(' and ')}`;
      return this.#refuseAuth(stream, errorText(message, this.#code(ERRORS.VERSION_UNSUPPORTED.code)));
    }
    let result;
    try {
      result = await this.call(() => this.#settings.handler.authenticate(auth, this.remote));
    } catch (error) {
      return this.#refuseAuth(stream, this.refusal(error));
    }
    this.#region = result.region ?? '';
    const { authtoken: _authtoken, cookie: _cookie, ...kept } = auth;
    const session = new LiveAgentSession(result.sessionId, result.context, kept, this.remote, version as ProtocolVersion, this.#mux!, this.#settings, (reason) => this.end(reason));
    if (!this.adopt(session)) return;
    this.handshakeDone();
    this.#mux!.setBounds(BOUNDS_AFTER_AUTH);
    writeMessage(
      stream,
      encodeAuthReply(version, result.sessionId, {
        serverVersion: this.#settings.serverVersion,
        region: this.#region,
        cookie: result.cookie ?? '',
        accountName: result.accountName ?? '',
        planName: result.planName ?? '',
        banner: result.banner ?? '',
      }),
    );
    this.#heartbeat = startHeartbeat(this.#mux!, {
      interval: this.#settings.heartbeatIntervalMs,
      tolerance: this.#settings.heartbeatToleranceMs,
      timers: this.#settings.timers,
      limitNote: limitNote('agent_heartbeat_answer_ms'),
      onFailure: (message) => this.end({ kind: 'heartbeat-timeout', message }),
    });
    this.#settleAuth(session);
  }

  /** The agent learns why, then the session ends (the agent does not retry a refused Auth). */
  #refuseAuth(stream: MuxadoStream, error: string): void {
    writeMessage(stream, encodeAuthError(error));
    this.end({ kind: 'protocol-error', message: `Auth refused: ${error.trim()}` });
  }

  /**
   * A Bind repeating the `Id` of a tunnel the session holds is answered with that tunnel, as the
   * vendor's service does (the v2 agent repeats a Bind it is not sure went through); what else it
   * asks is not looked at. Only an `Id` the session holds for a labeled tunnel is a conflict.
   */
  async #bind(session: LiveAgentSession<C>, request: EndpointBindRequest): Promise<RpcAnswer> {
    const bindId = request.clientId;
    if (bindId === '') return this.#bindNew(session, request);
    for (let pending = this.#bindsInFlight.get(bindId); pending; pending = this.#bindsInFlight.get(bindId)) await pending.catch(() => undefined);
    const held = session.tunnelByBindId(bindId);
    if (held) {
      if (held.request.kind !== 'endpoint' || held.url === undefined) throw new AgentGatewayError(ERRORS.CONFLICT.code, `this session already has a labeled tunnel with id '${bindId}'`);
      return { reply: encodeBindReply(held.request, bindId, held.url, held.tunnelId, held.token) };
    }
    const bound = this.#bindNew(session, request);
    this.#bindsInFlight.set(bindId, bound);
    try {
      return await bound;
    } finally {
      this.#bindsInFlight.delete(bindId);
    }
  }

  async #bindNew(session: LiveAgentSession<C>, request: EndpointBindRequest): Promise<RpcAnswer> {
    const result = await this.call(() => this.#settings.handler.bind(session, request));
    if (!result.url) throw new Error(`the session handler bound ${request.proto} tunnel ${result.tunnelId} without a URL`);
    const bindId = request.clientId || result.tunnelId;
    session.addTunnel({ tunnelId: result.tunnelId, bindId, request, url: result.url, token: result.token ?? '' });
    return { reply: encodeBindReply(request, bindId, result.url, result.tunnelId, result.token), undo: () => this.#unbindTunnel(session, result.tunnelId) };
  }

  async #bindLabeled(session: LiveAgentSession<C>, message: unknown): Promise<RpcAnswer> {
    const request = decodeLabeledBind(message);
    const result = await this.call(() => this.#settings.handler.bind(session, request));
    session.addTunnel({ tunnelId: result.tunnelId, bindId: result.tunnelId, request, url: undefined });
    return { reply: encodeLabeledBindReply(result.tunnelId), undo: () => this.#unbindTunnel(session, result.tunnelId) };
  }

  async #unbind(session: LiveAgentSession<C>, message: unknown): Promise<unknown> {
    const { id } = decodeUnbind(message);
    const tunnel = session.tunnelByBindId(id);
    if (!tunnel) throw new AgentGatewayError(ERRORS.NOT_FOUND.code, `this session has no tunnel with id '${id}'`);
    await this.#unbindTunnel(session, tunnel.tunnelId);
    return encodeUnbindReply();
  }

  async #unbindTunnel(session: LiveAgentSession<C>, tunnelId: string): Promise<void> {
    await this.call(() => this.#settings.handler.unbind(session, tunnelId));
    session.removeTunnel(tunnelId);
  }
}
