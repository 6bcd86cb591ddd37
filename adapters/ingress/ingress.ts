import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import type { BurrowCore } from '../../lib/burrow.ts';
import { LIMITS } from '../../lib/limits.ts';
import type { RoutableSession } from '../agent-gateway/index.ts';
import { hostPort } from '../addresses.ts';
import type { Connections } from './connections.ts';
import { createIngressCertificates } from './certificates.ts';
import { replaySender } from './replay-sender.ts';
import { createHttpIngress } from './http-ingress.ts';
import { createCarrier } from './carry.ts';
import { InternalRequests } from './internal-requests.ts';
import { createIngressPolicies } from './policies.ts';
import { IngressRoutes, type RemoteAgents } from './routes.ts';
import { createTcpIngress } from './tcp-ingress.ts';
import { createTlsIngress } from './tls-ingress.ts';

/**
 * The ingress of a Burrow instance: the listeners clients' traffic enters by (docs/ingress.md),
 * over one routing table (routes.ts) and one policy engine (policies.ts). Each listener it opens is
 * named in the instance's listeners (`GET /_burrow/health`). Its TCP ports (tcp-ingress.ts: one
 * per agent TCP endpoint and per TCP edge port) open on the HTTP listener's host (else the TLS
 * listener's) and are offered to the session path through `services.tcpPorts` while it runs.
 */

export interface ListenAddress {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0: any free port. */
  readonly port?: number;
}

export interface BoundAddress {
  readonly host: string;
  readonly port: number;
}

export interface IngressOptions<C = unknown> {
  /** The live agent sessions to route to (an agent gateway's `sessions`). */
  readonly sessions: () => readonly RoutableSession<C>[];
  /** The HTTP listener (plain HTTP, routed by Host). Default, when `tls` is not given either: 127.0.0.1, any free port. */
  readonly http?: ListenAddress;
  /** The TLS listener (HTTPS and TLS endpoints, routed by SNI; tls-ingress.ts). Off unless given. */
  readonly tls?: ListenAddress;
  /**
   * The account a session belongs to: forward-internal reaches only the same account's internal
   * endpoints. Default: every session is one account's.
   */
  readonly accountOf?: (session: RoutableSession<C>) => string;
  /** The name clients reach the ingress host by, in agents' TCP URLs (`tcp://NAME:PORT`; default localhost for a loopback or wildcard host). */
  readonly publicHost?: string;
  /** A failure while traffic was served (default: ignored; the client got its error page). */
  readonly onError?: (error: unknown) => void;
  /** The agents other servers sharing the store hold, reached over the link between servers (adapters/peer). */
  readonly remote?: RemoteAgents;
}

export interface Ingress {
  /** Where the HTTP listener listens, when it listens. */
  readonly http: BoundAddress | undefined;
  /** Where the TLS listener listens, when it was asked for. */
  readonly tls: BoundAddress | undefined;
  /** Listens on TCP edges' ports as the store has them now (it also looks after this process's changes, and now and then). */
  syncTcpEdges(): Promise<void>;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** Starts the ingress of `burrow`; see the file comment. */
export async function createIngress<C>(burrow: BurrowCore<any>, options: IngressOptions<C>): Promise<Ingress> {
  const onError = options.onError ?? (() => undefined);
  const accountOf = options.accountOf ?? (() => '');
  const routes = new IngressRoutes(burrow, options.sessions as () => readonly RoutableSession<unknown>[], (session) => accountOf(session as RoutableSession<C>), options.remote);
  const internalRequests = new InternalRequests();
  const policies = createIngressPolicies(burrow, internalRequests);
  const carrier = createCarrier(burrow, policies, onError);
  const connections: Connections = new WeakMap();
  const httpIngress = createHttpIngress(burrow, { routes, policies, connections, internalRequests, onError });
  const httpServer = httpIngress.server;
  const sockets = new Set<Socket>();
  // Upgraded connections leave node's HTTP server: the ingress closes every connection itself.
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  httpServer.on('connection', track);
  const tcp = createTcpIngress(burrow, {
    host: options.http?.host ?? options.tls?.host ?? '127.0.0.1',
    ...(options.publicHost ? { publicHost: options.publicHost } : {}),
    routes,
    carrier,
    track,
    onError,
  });
  const detach = burrow.services.tcpPorts.attach(tcp);
  const servers: { name: string; server: NetServer }[] = [];
  let detachReplay = () => {};
  const close = async () => {
    detach();
    detachReplay();
    for (const { name } of servers) burrow.services.listeners.delete(name);
    const closed = Promise.all([...servers.map(({ server }) => closeServer(server)), tcp.close()]);
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  const open = async (name: string, server: NetServer, address: ListenAddress) => {
    // What one connection can hold is bounded (its head, its ClientHello, its deadlines); this bounds their number (TCP ports: tcp-ingress.ts).
    server.maxConnections = LIMITS.ingress_connections.value;
    const bound = await listen(server, address);
    servers.push({ name, server });
    burrow.services.listeners.set(name, hostPort(bound.host, bound.port));
    return bound;
  };
  try {
    // Without an HTTP listener the HTTP server still serves what the TLS listener terminates.
    const http = options.http || !options.tls ? await open('http_ingress', httpServer, options.http ?? {}) : undefined;
    if (http) detachReplay = burrow.traffic.attachSender(replaySender(burrow, http));
    if (http) internalRequests.listen(http);
    let tls: BoundAddress | undefined;
    if (options.tls) {
      const certificates = createIngressCertificates(burrow);
      const tlsServer = createTlsIngress(burrow, { routes, carrier, certificates, http: httpIngress, connections, onError });
      tlsServer.on('connection', track);
      tls = await open('tls_ingress', tlsServer, options.tls);
      // After start returns: an agent connecting meanwhile (its TLS handshake alone takes some 40 ms) finds it made.
      setImmediate(() => certificates.prepare());
    }
    await tcp.syncEdges();
    return { http, tls, syncTcpEdges: () => tcp.syncEdges(), close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function listen(server: NetServer, address: ListenAddress): Promise<BoundAddress> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port ?? 0, address.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  return { host: bound.address, port: bound.port };
}

const closeServer = (server: NetServer) => new Promise<void>((resolve) => server.close(() => resolve()));
