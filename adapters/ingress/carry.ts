import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { BurrowCore } from '../../lib/burrow.ts';
import type { ConnectOutcome, TlsHandshake } from '../../lib/traffic/decisions.ts';
import type { ConnectionFacts } from '../../lib/traffic/facts.ts';
import { connectionFacts, joinStreams } from './connections.ts';
import type { IngressPolicies } from './policies.ts';
import { openStream, type IngressTarget, type StreamTarget } from './routes.ts';
import { TcpTrace } from './traffic-trace.ts';

/**
 * Connections carried as bytes, the one way for every listener that has them: TCP endpoints and
 * edges (tcp-ingress.ts), TLS endpoints and edges (tls-ingress.ts). A connection is traced for the
 * traffic journal from its first byte (traffic-trace.ts), its target's on_tcp_connect runs with the
 * connection's `conn.*` facts (a refusal — deny, restrict-ips, an agent's or an edge's IP
 * restriction — closes it), then its bytes and the target's stream are joined both ways until
 * either side ends. A target that cannot open a stream (the agent went away meanwhile, no backend
 * online) closes the connection.
 */
export interface Carrier {
  /** What the policy is told of the connection on `socket`, and its trace (journaled when the socket closes). */
  start(socket: Socket, startedAt: Date, serverName: string): { readonly conn: ConnectionFacts; readonly trace: TcpTrace };
  /**
   * Runs `target`'s on_tcp_connect for the connection (`trace`d when carried as bytes); answers the
   * outcome, or undefined once a refusal closed the socket. `handshake`: terminate-tls terminates
   * TLS with it as it runs (the TLS ingress).
   */
  admit(socket: Socket, target: IngressTarget, conn: ConnectionFacts, trace?: TcpTrace, handshake?: TlsHandshake): Promise<ConnectOutcome | undefined>;
  /** Joins `client` (the socket, or the TLS session on it) to a new stream of `target`; closes the client when none opens. */
  join(client: Duplex, target: StreamTarget, conn: ConnectionFacts, trace: TcpTrace, passthroughTls?: boolean): void;
}

export function createCarrier(burrow: BurrowCore<any>, policies: IngressPolicies, onError: (error: unknown) => void): Carrier {
  return {
    start(socket, startedAt, serverName) {
      const conn = connectionFacts(socket, startedAt);
      return { conn, trace: new TcpTrace(socket, conn, serverName, (traffic) => void burrow.traffic.record(traffic).catch(onError)) };
    },
    async admit(socket, target, conn, trace, handshake) {
      trace?.routed(target.endpoint, target.account);
      const connected = await policies.engine.connect(policies.of(target), target.endpoint, conn, handshake);
      trace?.decided(connected);
      if (!connected.terminal) return connected;
      // A refusal on a connection can only close it (deny, restrict-ips, close-connection…).
      socket.destroy();
      return undefined;
    },
    join(client, target, conn, trace, passthroughTls) {
      let upstream: Duplex;
      try {
        upstream = openStream(target, conn, passthroughTls);
      } catch {
        // Offline: the agent went away meanwhile, or the edge has no upstream online.
        return void client.destroy();
      }
      trace.carried();
      joinStreams(client, upstream);
    },
  };
}
