import type { Socket } from 'node:net';
import { remoteAddress, type RemoteAddress } from '../addresses.ts';
import { REAL_TIMERS, type Timers } from './timers.ts';

/**
 * One gateway connection's lifecycle, the same for the agent and the SSH gateway (as undici's
 * DispatcherBase carries close and destroy for every client): a handshake deadline armed at
 * accept, handler calls tracked while in flight, an end where the first reason wins, a linger
 * before the socket is cut, the session's end reported once every call of it has settled, and the
 * shutdown of a closing gateway. A gateway supplies its protocol: how to close politely and how
 * its refusals read.
 */

/** After the gateway ends a connection, how long the peer may take to close before it is cut. */
const CLOSE_GRACE_MS = 5_000;

/** The ends every gateway has, which the lifecycle makes itself. */
type LifecycleEndKind = 'disconnected' | 'gateway-closed';

/** Why a connection ended: one of its gateway's kinds (docs of its SessionEndReason), and what happened. */
export interface EndReason<Kind extends string> {
  readonly kind: Kind | LifecycleEndKind;
  readonly message: string;
}

/** What the lifecycle needs of the session a connection authenticated. */
export interface EndingSession<Reason> {
  readonly ended: Reason | undefined;
  markEnded(reason: Reason): void;
}

/** What every gateway's options say of its connections' lifecycle. */
export interface ConnectionOptions<Handler> {
  /** What the gateway asks of the core (or of a test). */
  readonly handler: Handler;
  /** Time source of every timeout (tests drive it by hand). */
  readonly timers?: Timers;
  /** How long a connection has from accept to the end of its handshake (default: the gateway's limit). */
  readonly handshakeTimeoutMs?: number;
  /** Called with a handler failure that was no refusal (the peer was told "internal error"), and with a fault of the gateway. */
  readonly onError?: (error: unknown) => void;
}

/** ConnectionOptions with their defaults in place. */
export interface ConnectionSettings<Handler> {
  readonly handler: Handler;
  readonly timers: Timers;
  readonly handshakeTimeoutMs: number;
  readonly onError: (error: unknown) => void;
}

/** `options` with their defaults in place, `handshakeTimeoutMs` the gateway's limit. */
export function connectionSettings<Handler>(options: ConnectionOptions<Handler>, handshakeTimeoutMs: number): ConnectionSettings<Handler> {
  return {
    handler: options.handler,
    timers: options.timers ?? REAL_TIMERS,
    handshakeTimeoutMs: options.handshakeTimeoutMs ?? handshakeTimeoutMs,
    onError: options.onError ?? (() => {}),
  };
}

/** The handler as the lifecycle calls it. */
interface EndedSessionHandler<Reason, Session> {
  sessionEnded(session: Session, reason: Reason): void | Promise<void>;
}

/**
 * A gateway connection over `socket`, from accept until it closed and its session's end was
 * reported. `Farewell` is what a protocol can tell its peer on the way out besides the reason
 * (the SSH user's stderr line and exit status).
 */
export abstract class GatewayConnection<Kind extends string, Session extends EndingSession<EndReason<Kind>>, Farewell = never> {
  protected readonly socket: Socket;
  protected readonly remote: RemoteAddress;
  readonly #settings: ConnectionSettings<EndedSessionHandler<EndReason<Kind>, Session>>;
  readonly #inflight = new Set<Promise<unknown>>();
  readonly #closed: Promise<void>;
  #handshakeTimer: { cancel(): void } | undefined;
  #endReason: EndReason<Kind> | undefined;
  #reported: Promise<void> = Promise.resolve();
  #session: Session | undefined;

  /** `forget` is called once the socket closed, for the gateway to stop tracking the connection. */
  protected constructor(socket: Socket, settings: ConnectionSettings<EndedSessionHandler<EndReason<Kind>, Session>>, forget: () => void) {
    this.socket = socket;
    this.#settings = settings;
    this.remote = remoteAddress(socket);
    socket.on('error', () => {});
    this.#closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.#closed.then(() => {
      this.end({ kind: 'disconnected', message: 'the connection closed' });
      forget();
    });
  }

  /** Closes the protocol politely for `reason` (GOAWAY, channel exit…); the lifecycle cuts the socket if that takes too long. */
  protected abstract closePolitely(reason: EndReason<Kind>, farewell: Farewell | undefined): void;
  /** The gateway's own refusal in the words the peer reads; undefined for any other failure. */
  protected abstract describeRefusal(error: unknown): string | undefined;
  /** What the peer reads for a failure that is no refusal. */
  protected abstract describeInternalError(): string;

  /** What the peer is told besides the reason when the gateway shuts down. */
  protected farewellAtShutdown(): Farewell | undefined {
    return undefined;
  }

  /** The authenticated session, once there is one. */
  get session(): Session | undefined {
    return this.#session;
  }

  /** Why the connection ended; undefined while it lives. */
  protected get endReason(): EndReason<Kind> | undefined {
    return this.#endReason;
  }

  /** Ends the connection with `expire` unless handshakeDone() comes within `ms` (armed at accept, so it covers every phase before). */
  protected armHandshakeDeadline(ms: number, expire: () => void): void {
    this.#handshakeTimer = this.#settings.timers.setTimeout(expire, ms);
  }

  protected handshakeDone(): void {
    this.#handshakeTimer?.cancel();
  }

  /**
   * Makes `session` the connection's once the handler authenticated it. False when the connection
   * ended while the handler was deciding: the handler still learns of the session, as ended.
   */
  protected adopt(session: Session): boolean {
    this.#session = session;
    if (!this.#endReason) return true;
    this.#report(session, this.#endReason);
    return false;
  }

  /** Ends the connection (idempotent; the first reason wins). */
  end(reason: EndReason<Kind>, farewell?: Farewell): void {
    if (this.#endReason) return;
    this.#endReason = reason;
    this.#handshakeTimer?.cancel();
    this.closePolitely(reason, farewell);
    const linger = this.#settings.timers.setTimeout(() => this.destroy(), CLOSE_GRACE_MS);
    void this.#closed.then(() => linger.cancel());
    if (this.#session) this.#report(this.#session, reason);
  }

  /** Cuts the connection at once. */
  protected destroy(): void {
    this.socket.destroy();
  }

  /** Calls sessionEnded once every handler call of the session has settled. */
  #report(session: Session, reason: EndReason<Kind>): void {
    session.markEnded(reason);
    this.#reported = Promise.allSettled([...this.#inflight]).then(async () => {
      try {
        await this.#settings.handler.sessionEnded(session, reason);
      } catch (error) {
        this.#settings.onError(error);
      }
    });
  }

  /** The gateway is closing: end now, cut the connection, wait for the report. */
  async shutdown(): Promise<void> {
    this.end({ kind: 'gateway-closed', message: 'the gateway is shutting down' }, this.farewellAtShutdown());
    this.destroy();
    await this.#closed;
    await Promise.allSettled([...this.#inflight]);
    await this.#reported;
  }

  /** Runs a handler call, tracked so sessionEnded waits for it. */
  protected call<T>(work: () => Promise<T>): Promise<T> {
    const call = work();
    this.#inflight.add(call);
    void call.then(
      () => this.#inflight.delete(call),
      () => this.#inflight.delete(call),
    );
    return call;
  }

  /** A handler's failure as the peer reads it: a refusal in the gateway's words; any other failure is reported and answered vaguely. */
  protected refusal(error: unknown): string {
    const described = this.describeRefusal(error);
    if (described !== undefined) return described;
    this.#settings.onError(error);
    return this.describeInternalError();
  }
}
