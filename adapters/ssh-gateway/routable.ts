import { Duplex } from 'node:stream';
import type { EndpointBindRequest } from '../agent-gateway/protocol.ts';
import { AgentRelayError, type AgentTunnel, type ProxyOptions, type RoutableSession } from '../agent-gateway/session-handler.ts';
import { readThrough } from './read-through.ts';
import type { SshSession, SshTunnel } from './session-handler.ts';

/**
 * An SSH session as the ingress routes to it (a RoutableSession, as an agent's session is): an
 * `ssh -R … http` session serves its endpoint through a `forwarded-tcpip` channel instead of a
 * proxy stream. Its tunnel reads as an agent's bind: the protocol, URL, basic auth and header
 * policy under the vendor's agent option names.
 */

const views = new WeakMap<SshSession<unknown>, RoutableSession<unknown>>();

/** The ingress's view of `session`, the same object for the same session. */
export function routableSession<C>(session: SshSession<C>): RoutableSession<C> {
  let view = views.get(session) as RoutableSession<C> | undefined;
  if (!view) {
    view = {
      id: session.id,
      context: session.context,
      get ended() {
        return session.ended === undefined ? undefined : { kind: 'disconnected' as const, message: session.ended.message };
      },
      tunnels: () => {
        const tunnel = session.tunnel();
        return tunnel ? [agentTunnel(tunnel)] : [];
      },
      openProxy: (tunnelId: string, options: ProxyOptions) => new OpeningStream(openChannel(session, tunnelId, options.clientAddr)),
    };
    views.set(session, view);
  }
  return view;
}

/** The tunnel as the ingress reads an agent's bind: kind, protocol, URL and the options its policy comes from. */
function agentTunnel(tunnel: SshTunnel): AgentTunnel {
  const { proto, basicAuth, trafficPolicy } = tunnel.request;
  const raw = basicAuth.length > 0 ? { BasicAuth: { credentials: basicAuth.map(({ username, password }) => ({ username, cleartext_password: password })) } } : {};
  const request = { kind: 'endpoint', proto, raw, options: { trafficPolicy } } as unknown as EndpointBindRequest;
  return { tunnelId: tunnel.tunnelId, bindId: tunnel.tunnelId, request, url: tunnel.url };
}

/** The channel of a proxied connection; a refusal is an AgentRelayError, as an agent's closed tunnel is. */
async function openChannel(session: SshSession<unknown>, tunnelId: string, clientAddr: string): Promise<Duplex> {
  const colon = clientAddr.lastIndexOf(':');
  const ip = clientAddr.slice(0, colon).replace(/^\[|\]$/g, '');
  try {
    return await session.openProxy(tunnelId, { clientAddr: { ip, port: Number(clientAddr.slice(colon + 1)) } });
  } catch (error) {
    throw new AgentRelayError((error as Error).message);
  }
}

/**
 * A stream usable at once over one that is still opening: writes wait for it, reads come from it,
 * and a failure to open destroys this one with that error.
 */
class OpeningStream extends Duplex {
  #inner: Duplex | undefined;
  #waiting: (() => void)[] = [];

  constructor(opening: Promise<Duplex>) {
    super();
    opening.then(
      (inner) => {
        if (this.destroyed) return void inner.destroy();
        this.#inner = inner;
        readThrough(inner, this);
        for (const resume of this.#waiting.splice(0)) resume();
      },
      (error: Error) => this.destroy(error),
    );
  }

  #whenOpen(action: (inner: Duplex) => void): void {
    if (this.#inner) action(this.#inner);
    else this.#waiting.push(() => action(this.#inner!));
  }

  override _read(): void {
    this.#inner?.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#whenOpen((inner) => inner.write(chunk, callback));
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#whenOpen((inner) => inner.end(callback));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#inner?.destroy();
    callback(error);
  }
}
