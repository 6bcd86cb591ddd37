import { randomBytes } from 'node:crypto';
import { LIMITS, limitNote } from '../limits.ts';
import type { Store, StoreChannel } from '../store.ts';

/**
 * The agent sessions that are live connections, as opposed to simulated ones: which server holds
 * each, and how to reach it. A transport (the agent gateway, the SSH gateway) that holds a session
 * registers it here with `hold`; a command or a close for a session held by another server sharing
 * the store travels over the store's channel (PostgreSQL LISTEN/NOTIFY; lib/store.ts StoreChannel)
 * to that server, which answers over the same channel. A store without a channel has one server.
 *
 * Stored session records name their server (`server`); the agents family ends the sessions of
 * servers that `alive` no longer counts (lib/families/agents/live-sessions.ts).
 */

export type AgentCommand = 'stop' | 'restart' | 'update';

/** What the agent answered (adapters/agent-gateway's CommandReply). */
export type AgentCommandReply =
  | { readonly outcome: 'ok' }
  | { readonly outcome: 'unsupported'; readonly message: string }
  | { readonly outcome: 'failed'; readonly message: string };

/** Arguments of an update: the version to move to, and whether a new major version is allowed. */
export interface AgentUpdate {
  readonly version: string;
  readonly permitMajorVersion: boolean;
}

/** A live session as its transport gives it. */
export interface HeldSession {
  /** Relays a command and answers the agent's reply; rejects when the relay fails. */
  command(kind: AgentCommand, update?: AgentUpdate): Promise<AgentCommandReply>;
  /** Ends the session (its agent is disconnected); the transport records the end as for any disconnect. */
  close(message: string): void;
}

/** The command could not reach the agent or its answer could not come back (vendor 810). */
export class AgentRelayFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentRelayFailure';
  }
}

type Message =
  | { readonly type: 'command'; readonly to: string; readonly from: string; readonly id: string; readonly session: string; readonly kind: AgentCommand; readonly update?: AgentUpdate }
  | { readonly type: 'reply'; readonly to: string; readonly id: string; readonly reply?: AgentCommandReply; readonly failure?: string }
  | { readonly type: 'close'; readonly to: string; readonly session: string; readonly message: string };

/** How long past the agent's own answer time a relayed command waits for the holding server. */
const RELAY_MARGIN_MS = 5_000;

export class LiveAgents {
  readonly #store: Store;
  readonly #held = new Map<string, HeldSession>();
  readonly #waiting = new Map<string, { resolve(reply: AgentCommandReply): void; reject(error: Error): void }>();
  #channel: Promise<StoreChannel | undefined> | undefined;
  /** This server's id when the store has no channel (one server). */
  readonly #localId = `srv_${randomBytes(12).toString('hex')}`;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Opens the store's channel (if it has one) and listens on it; answers this server's id. */
  async serverId(): Promise<string> {
    return (await this.#open())?.serverId ?? this.#localId;
  }

  #open(): Promise<StoreChannel | undefined> {
    this.#channel ??= (async () => {
      const channel = await this.#store.openChannel?.();
      channel?.subscribe((text) => this.#receive(channel, text));
      return channel;
    })().catch((error: unknown) => {
      this.#channel = undefined;
      throw error;
    });
    return this.#channel;
  }

  /** Registers a session this server holds; answers the function that forgets it. */
  hold(sessionId: string, session: HeldSession): () => void {
    this.#held.set(sessionId, session);
    return () => {
      if (this.#held.get(sessionId) === session) this.#held.delete(sessionId);
    };
  }

  /** Whether this server holds the session. */
  holds(sessionId: string): boolean {
    return this.#held.has(sessionId);
  }

  /** Sends a command to the agent of `sessionId`, held by server `server`; rejects with AgentRelayFailure. */
  async command(server: string, sessionId: string, kind: AgentCommand, update?: AgentUpdate): Promise<AgentCommandReply> {
    const local = this.#held.get(sessionId);
    if (local) return relayLocally(local, kind, update);
    const channel = await this.#open();
    if (!channel || server === channel.serverId) throw new AgentRelayFailure(`the agent of tunnel session '${sessionId}' is not connected (it is shutting down or reconnecting)`);
    const id = randomBytes(12).toString('hex');
    const answered = new Promise<AgentCommandReply>((resolve, reject) => this.#waiting.set(id, { resolve, reject }));
    const wait = LIMITS.agent_command_answer_ms.value + RELAY_MARGIN_MS;
    const timer = setTimeout(() => this.#settle(id, { type: 'reply', to: '', id, failure: `server ${server}, which holds tunnel session '${sessionId}', did not answer within ${wait} ms ${limitNote('agent_command_answer_ms')}` }), wait);
    timer.unref();
    try {
      await channel.publish(JSON.stringify({ type: 'command', to: server, from: channel.serverId, id, session: sessionId, kind, ...(update ? { update } : {}) } satisfies Message));
      return await answered;
    } catch (error) {
      throw error instanceof AgentRelayFailure ? error : new AgentRelayFailure(`relaying ${kind} to tunnel session '${sessionId}' failed: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
      this.#waiting.delete(id);
    }
  }

  /** Ends the live session `sessionId` wherever it is held (no answer; a session already gone is no error). */
  async close(server: string, sessionId: string, message: string): Promise<void> {
    const local = this.#held.get(sessionId);
    if (local) return local.close(message);
    const channel = await this.#open();
    if (channel && server !== channel.serverId) await channel.publish(JSON.stringify({ type: 'close', to: server, session: sessionId, message } satisfies Message));
  }

  /** Of `serverIds`, those still serving (with no channel: only this one). */
  async alive(serverIds: readonly string[]): Promise<Set<string>> {
    const channel = await this.#open();
    if (!channel) return new Set(serverIds.filter((id) => id === this.#localId));
    return channel.alive(serverIds);
  }

  #receive(channel: StoreChannel, text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.to !== channel.serverId) return;
    if (message.type === 'reply') return this.#settle(message.id, message);
    if (message.type === 'close') return this.#held.get(message.session)?.close(message.message);
    const held = this.#held.get(message.session);
    const answer = (reply: Omit<Extract<Message, { type: 'reply' }>, 'type' | 'to' | 'id'>) =>
      void channel.publish(JSON.stringify({ type: 'reply', to: message.from, id: message.id, ...reply } satisfies Message)).catch(() => undefined);
    if (!held) return answer({ failure: `tunnel session '${message.session}' is not connected to server ${channel.serverId} any more` });
    relayLocally(held, message.kind, message.update).then(
      (reply) => answer({ reply }),
      (error: Error) => answer({ failure: error.message }),
    );
  }

  #settle(id: string, message: Extract<Message, { type: 'reply' }>): void {
    const waiter = this.#waiting.get(id);
    if (!waiter) return;
    this.#waiting.delete(id);
    if (message.reply) waiter.resolve(message.reply);
    else waiter.reject(new AgentRelayFailure(message.failure ?? 'no answer'));
  }
}

async function relayLocally(session: HeldSession, kind: AgentCommand, update?: AgentUpdate): Promise<AgentCommandReply> {
  try {
    return await session.command(kind, update);
  } catch (error) {
    throw error instanceof AgentRelayFailure ? error : new AgentRelayFailure((error as Error).message);
  }
}
