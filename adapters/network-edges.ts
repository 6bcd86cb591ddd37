import { isShared, type BurrowCore } from '../lib/index.ts';
import type { RunningAgentGateway } from './agent-gateway/index.ts';
import type { Ingress, ListenAddress } from './ingress/index.ts';
import type { PeerLink } from './peer/peer-link.ts';
import type { RunningSshGateway } from './ssh-gateway/index.ts';
import type { AgentSessionLog } from './session-events.ts';

/**
 * The network edges of a Burrow instance beside its API: the agent gateway, the SSH gateway and
 * the ingress over both gateways' sessions, started from one set of options by `burrow serve` and
 * by burrow/testing alike. Each edge's module is imported only when the edge is asked for (TLS,
 * the agent protocol, ssh2 and the ingress cost start-up otherwise).
 */

export interface NetworkEdgeOptions {
  /** Serve the vendor's agent protocol (TLS) here. */
  readonly agentAddr?: ListenAddress;
  /** Serve the SSH gateway here. */
  readonly sshAddr?: ListenAddress;
  /** Serve endpoints' plain HTTP here; the ingress runs when this or `tlsIngressAddr` is given. */
  readonly httpIngressAddr?: ListenAddress;
  /** Serve HTTPS and TLS endpoints here, routed by SNI. */
  readonly tlsIngressAddr?: ListenAddress;
  /** Another name agents reach the agent gateway by, and the host of TCP endpoints' URLs. */
  readonly publicHost?: string;
  /** The region of the gateways' sessions (default: the instance's first simulated region). */
  readonly region?: string;
  /**
   * Listen here for the other servers sharing the store (PostgreSQL): they relay connections to
   * this server's agents over it (adapters/peer). With a shared store this server's ingress
   * reaches the others' agents whether or not it listens itself.
   */
  readonly peerAddr?: ListenAddress;
  /** A failure while an edge served (default: ignored), with the edge's name ('agent gateway', 'SSH gateway', 'ingress'). */
  readonly onError?: (edge: string, error: unknown) => void;
  /** Each agent session either gateway opened and closed, for the server's log. */
  readonly onSession?: AgentSessionLog;
}

export interface NetworkEdges {
  readonly agentGateway: RunningAgentGateway | undefined;
  readonly sshGateway: RunningSshGateway | undefined;
  readonly ingress: Ingress | undefined;
  readonly peerLink: PeerLink | undefined;
  /**
   * Stops the ingress, then both gateways (clients' traffic stops first; sessions end while the
   * store is still open to record it). Rejects with the first failure once every edge was stopped.
   */
  close(): Promise<void>;
}

/**
 * Starts the edges `options` ask for. One that cannot start stops those started before it, and
 * the answer rejects with `cannot start <edge>: <why>`.
 */
export async function startNetworkEdges(burrow: BurrowCore<any>, options: NetworkEdgeOptions): Promise<NetworkEdges> {
  const onError = (edge: string) => (error: unknown) => options.onError?.(edge, error);
  const session = options.onSession ? { onSession: options.onSession } : {};
  let agentGateway: RunningAgentGateway | undefined;
  let sshGateway: RunningSshGateway | undefined;
  let ingress: Ingress | undefined;
  let peerLink: PeerLink | undefined;
  const close = async () => {
    const stopped = [...(await Promise.allSettled([ingress?.close(), peerLink?.close()])), ...(await Promise.allSettled([agentGateway?.close(), sshGateway?.close()]))];
    const failed = stopped.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  };
  const start = async <T>(what: string, starting: () => Promise<T>): Promise<T> => {
    try {
      return await starting();
    } catch (error) {
      await close().catch(() => undefined);
      throw new Error(`cannot start ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  const { agentAddr, sshAddr, publicHost, region } = options;
  if (agentAddr) {
    agentGateway = await start(`the agent gateway on ${where(agentAddr)}`, async () =>
      (await import('./agent-gateway/index.ts')).startAgentGateway(burrow, { ...agentAddr, publicHost, region, onError: onError('agent gateway'), ...session }),
    );
  }
  if (sshAddr) {
    sshGateway = await start(`the SSH gateway on ${where(sshAddr)}`, async () =>
      (await import('./ssh-gateway/index.ts')).startSshGateway(burrow, { ...sshAddr, region, onError: onError('SSH gateway'), ...session }),
    );
  }
  // SSH sessions serve their endpoints as agents do (adapters/ssh-gateway/routable.ts).
  const sessions = () => [...(agentGateway?.sessions() ?? []), ...(sshGateway?.routableSessions() ?? [])];
  const ingressAsked = options.httpIngressAddr !== undefined || options.tlsIngressAddr !== undefined;
  if (options.peerAddr && !isShared(burrow.store)) throw new Error(`a link between servers (peer address) needs a store servers share (PostgreSQL); ${burrow.store.name} has one server`);
  if (isShared(burrow.store) && (options.peerAddr || ingressAsked)) {
    const { peerAddr } = options;
    peerLink = await start(`the link between servers${peerAddr ? ` on ${where(peerAddr)}` : ''}`, async () =>
      (await import('./peer/peer-link.ts')).startPeerLink(burrow, { ...(peerAddr ? { listen: peerAddr } : {}), sessions, onError: onError('peer link') }),
    );
  }
  if (ingressAsked) {
    ingress = await start('the ingress', async () =>
      (await import('./ingress/index.ts')).createIngress(burrow, {
        sessions,
        accountOf: (session) => session.context.account,
        http: options.httpIngressAddr,
        tls: options.tlsIngressAddr,
        publicHost,
        onError: onError('ingress'),
        ...(peerLink ? { remote: peerLink.remote } : {}),
      }),
    );
  }
  return { agentGateway, sshGateway, ingress, peerLink, close };
}

/** `host:port` of a listen address, with its defaults (as the failure names it). */
function where(address: ListenAddress): string {
  return `${address.host ?? '127.0.0.1'}:${address.port ?? 0}`;
}
