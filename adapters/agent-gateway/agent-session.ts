import type { Duplex } from 'node:stream';
import { limitNote } from '../../lib/limits.ts';
import type { MuxadoSession } from './muxado/session.ts';
import type { MuxadoStream } from './muxado/stream.ts';
import { openTypedStream } from './muxado/typed.ts';
import {
  COMMAND_STREAM_TYPES,
  decodeCommandReply,
  encodeCommand,
  encodeProxyHeader,
  encodeStopTunnel,
  STREAM_TYPES,
  type CommandKind,
  type ProtocolVersion,
  type UpdateArguments,
} from './protocol.ts';
import { AGENT_MESSAGE_BOUNDS, readMessage, writeMessage } from './rpc.ts';
import { AgentRelayError, type AgentSession, type AgentSessionAuth, type AgentTunnel, type CommandReply, type ProxyOptions, type RemoteAddress, type SessionEndReason } from './session-handler.ts';
import type { Timers } from '../gateway-connection/timers.ts';

/**
 * Replies by which a vendor's agent refuses a command it has no way to run, though its Auth did not
 * say so: the v2 CLI agent (2.3.41) with `update_check: false` answers Update "updates disabled".
 * They are the vendor's "unsupported" outcome (806), not a failure (809).
 */
const UNSUPPORTED_REPLIES: Readonly<Record<CommandKind, readonly string[]>> = { stop: [], restart: [], update: ['updates disabled'] };

/** What a live session needs from its gateway. */
export interface LiveSessionSettings {
  readonly timers: Timers;
  readonly commandTimeoutMs: number;
  readonly proxyAcceptMs: number;
  readonly errorCodePrefix: string;
}

/** The AgentSession the gateway gives its handler, over one authenticated muxado session. */
export class LiveAgentSession<C> implements AgentSession<C> {
  readonly #tunnels = new Map<string, AgentTunnel>();
  #ended: SessionEndReason | undefined;

  constructor(
    readonly id: string,
    readonly context: C,
    readonly auth: AgentSessionAuth,
    readonly remote: RemoteAddress,
    readonly protocolVersion: ProtocolVersion,
    private readonly mux: MuxadoSession,
    private readonly settings: LiveSessionSettings,
    private readonly closeSession: (reason: SessionEndReason) => void,
  ) {}

  get ended(): SessionEndReason | undefined {
    return this.#ended;
  }

  markEnded(reason: SessionEndReason): void {
    this.#ended ??= reason;
  }

  tunnels(): readonly AgentTunnel[] {
    return [...this.#tunnels.values()];
  }

  addTunnel(tunnel: AgentTunnel): void {
    this.#tunnels.set(tunnel.tunnelId, tunnel);
  }

  removeTunnel(tunnelId: string): void {
    this.#tunnels.delete(tunnelId);
  }

  tunnelByBindId(bindId: string): AgentTunnel | undefined {
    return [...this.#tunnels.values()].find((tunnel) => tunnel.bindId === bindId);
  }

  #open(type: number): MuxadoStream {
    if (this.#ended) throw new AgentRelayError(`session ${this.id} has ended (${this.#ended.message})`);
    return openTypedStream(this.mux, type);
  }

  command(kind: 'update', args: UpdateArguments): Promise<CommandReply>;
  command(kind: Exclude<CommandKind, 'update'>): Promise<CommandReply>;
  async command(kind: CommandKind, args?: UpdateArguments): Promise<CommandReply> {
    const support = this.auth.commands[kind];
    // An agent that predates remote commands is not asked; one without a handler answers for itself.
    if (support.state === 'not-stated') return { outcome: 'unsupported', message: `the agent (${this.auth.agentVersion || 'unknown version'}) does not support remote ${kind}` };
    const stream = this.#open(COMMAND_STREAM_TYPES[kind]);
    stream.on('error', () => {});
    writeMessage(stream, encodeCommand(kind, args));
    let timer: { cancel(): void } | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.settings.timers.setTimeout(() => reject(new AgentRelayError(`the agent did not answer ${kind} within ${this.settings.commandTimeoutMs} ms ${limitNote('agent_command_answer_ms')}`)), this.settings.commandTimeoutMs);
    });
    let error: string;
    try {
      ({ error } = decodeCommandReply(await Promise.race([readMessage(stream, AGENT_MESSAGE_BOUNDS), timeout])));
    } catch (failure) {
      stream.destroy();
      throw failure instanceof AgentRelayError ? failure : new AgentRelayError(`relaying ${kind} to session ${this.id} failed: ${(failure as Error).message}`);
    } finally {
      timer?.cancel();
    }
    // Read on to the agent's FIN, so the stream closes cleanly on both sides.
    stream.resume();
    if (error === '') return { outcome: 'ok' };
    const unsupported = (support.state === 'unsupported' && error === support.reason) || UNSUPPORTED_REPLIES[kind].includes(error);
    return unsupported ? { outcome: 'unsupported', message: error } : { outcome: 'failed', message: error };
  }

  openProxy(tunnelId: string, options: ProxyOptions): Duplex {
    const tunnel = this.#tunnels.get(tunnelId);
    if (!tunnel) throw new AgentRelayError(`session ${this.id} has no tunnel ${tunnelId}`);
    const request = tunnel.request;
    const endpoint = request.kind === 'endpoint' ? request : undefined;
    const stream = this.#open(STREAM_TYPES.proxy);
    stream.write(
      encodeProxyHeader({
        id: tunnel.bindId,
        clientAddr: options.clientAddr,
        proto: options.proto ?? endpoint?.proto ?? '',
        edgeType: options.edgeType ?? 'undefined',
        passthroughTls: options.passthroughTls ?? (endpoint?.proto === 'tls' && endpoint.options.tlsTermination === null),
      }),
    );
    this.#expectTaken(stream);
    return stream;
  }

  /**
   * An agent takes a proxy stream by acknowledging its first bytes, within milliseconds; one that
   * does not within proxyAcceptMs no longer serves (the SDK's session.close() stops taking streams
   * but leaves its connection open, silent, until the heartbeat would notice ~25 s later). The
   * stream fails, so the client gets the offline page at once, and the session ends, so its
   * endpoints go offline for everyone.
   */
  #expectTaken(stream: MuxadoStream): void {
    const ms = this.settings.proxyAcceptMs;
    const timer = this.settings.timers.setTimeout(() => {
      if (stream.heard) return;
      const message = `the agent did not take a proxied connection within ${ms} ms ${limitNote('agent_proxy_accept_ms')}`;
      stream.destroy(new AgentRelayError(`session ${this.id}: ${message}`));
      this.closeSession({ kind: 'heartbeat-timeout', message });
    }, ms);
    const cancel = () => timer.cancel();
    stream.once('heard', cancel).once('close', cancel);
  }

  stopTunnel(tunnelId: string, options: { readonly message?: string; readonly code?: number } = {}): void {
    const tunnel = this.#tunnels.get(tunnelId);
    if (!tunnel) throw new AgentRelayError(`session ${this.id} has no tunnel ${tunnelId}`);
    const stream = this.#open(STREAM_TYPES.stopTunnel);
    stream.on('error', () => {});
    const code = options.code === undefined ? null : `${this.settings.errorCodePrefix}${options.code}`;
    writeMessage(stream, encodeStopTunnel(tunnel.bindId, options.message ?? 'the tunnel was stopped by the server', code));
    stream.resume();
    this.#tunnels.delete(tunnelId);
  }

  close(message = 'the session was closed by the server'): void {
    this.closeSession({ kind: 'closed-by-server', message });
  }
}
