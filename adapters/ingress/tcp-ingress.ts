import { createServer, type Server, type Socket } from 'node:net';
import type { BurrowCore } from '../../lib/burrow.ts';
import { LIMITS } from '../../lib/limits.ts';
import { liveTcpTunnelUrls, tcpEdgeHostports, type TcpPortLease, type TcpPortListener } from '../../lib/index.ts';
import { hostPort } from '../addresses.ts';
import type { Carrier } from './carry.ts';
import type { IngressRoutes, StreamTarget } from './routes.ts';

/**
 * The TCP ingress: a real listening port on the ingress host for each TCP endpoint, its
 * connections carried as bytes (carry.ts).
 *
 * - An agent's TCP bind (lib/traffic/tcp-ports.ts): the session path asks for a port before it stores the
 *   bind — any free one, whose address (`localhost:PORT`, or the public host) becomes the tunnel's
 *   URL, or a reserved address's own port — and releases it when the tunnel ends. A connection
 *   goes to the live tunnel bound to the URL; none (the agent went away meanwhile) closes it.
 * - A TCP edge's hostports: the ingress listens on each hostport's port, read from the store when
 *   it starts, when this process changes a TCP edge's hostports, and every `EDGE_SWEEP_MS` (for
 *   changes other servers of the store made). A connection goes to the edge's backend (routes.ts,
 *   edge-routes.ts) through its modules. A raw TCP connection names no host, so one port serves one
 *   hostport: when several TCP edges' hostports share a port, the first in sort order is served.
 *
 * - With several servers on one store (a peer link, adapters/peer): the TCP endpoints of agents
 *   other servers hold, read from the store at the same looks (`ingress_tcp_relayed_ports` at
 *   most): the ingress listens on each one's port too, and its connections are relayed to the
 *   holding server (routes.ts). A port this server cannot take (in use: on one host the holding
 *   server's ingress has it) is left to the holder.
 *
 * A port that cannot be listened on refuses the bind (naming the port and why), or, for an edge,
 * is reported to `onError` once and tried again at the next look.
 */

export interface TcpIngressOptions {
  /** The address the ports are opened on (the ingress host). */
  readonly host: string;
  /** The name clients reach the ingress host by, in agents' TCP URLs (default: localhost for a loopback or wildcard host, else the host). */
  readonly publicHost?: string;
  readonly routes: IngressRoutes;
  readonly carrier: Carrier;
  /** Every client connection (the ingress closes them when it closes). */
  readonly track: (socket: Socket) => void;
  readonly onError: (error: unknown) => void;
}

export interface TcpIngress extends TcpPortListener {
  /** Listens on TCP edges' ports as the store has them now (resolves once done). */
  syncEdges(): Promise<void>;
  /** Stops listening on every port. */
  close(): Promise<void>;
}

/** Time between two looks at the store's TCP edges (changes by other servers of the store). */
const EDGE_SWEEP_MS = 5_000;

const LOCAL_HOSTS = new Set(['127.0.0.1', '::1', '0.0.0.0', '::', 'localhost']);

export function createTcpIngress(burrow: BurrowCore<any>, options: TcpIngressOptions): TcpIngress {
  const { host, routes, carrier, onError } = options;
  const advertised = options.publicHost ?? (LOCAL_HOSTS.has(host) ? 'localhost' : host);
  const servers = new Set<Server>();
  /** Edge ports listened on, with the hostports they serve (sorted). */
  const edgePorts = new Map<number, { readonly server: Server; hostports: string[] }>();
  /** Edge ports that could not be listened on, with why (reported once). */
  const refused = new Map<number, string>();

  /** A server whose connections go to what `find` answers when they arrive. */
  function serverFor(find: () => StreamTarget | undefined | Promise<StreamTarget | undefined>): Server {
    const server = createServer((socket) => void accept(socket, find).catch((error: unknown) => {
      onError(error);
      socket.destroy();
    }));
    server.maxConnections = LIMITS.ingress_connections.value;
    servers.add(server);
    return server;
  }

  async function accept(socket: Socket, find: () => StreamTarget | undefined | Promise<StreamTarget | undefined>): Promise<void> {
    options.track(socket);
    socket.on('error', () => socket.destroy());
    const { conn, trace } = carrier.start(socket, burrow.clock.now(), '');
    const target = await find();
    if (!target) return void socket.destroy();
    if (!(await carrier.admit(socket, target, conn, trace))) return;
    carrier.join(socket, target, conn, trace);
  }

  /** Listens on `port` of the host; rejects naming the port and why. */
  async function open(server: Server, port: number): Promise<number> {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      servers.delete(server);
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'EADDRINUSE' ? 'it is in use' : code === 'EACCES' ? 'this process may not listen on it' : (error as Error).message;
      throw new Error(`port ${port} of the ingress host ${host}: ${why}`);
    }
    return (server.address() as { port: number }).port;
  }

  const shut = (server: Server) => {
    servers.delete(server);
    server.close();
  };

  /** Ports listened on for TCP endpoints other servers' agents hold, by port, with their URL. */
  const relayedPorts = new Map<number, { readonly server: Server; readonly url: string }>();
  /** Ports this server's own binds listen on. */
  const leased = new Set<number>();

  async function reconcileRelayed(): Promise<void> {
    if (!routes.relays) return;
    const wanted = new Map<number, string>();
    for (const url of await liveTcpTunnelUrls(burrow.reader, LIMITS.ingress_tcp_relayed_ports.value)) {
      const port = URL.canParse(url) ? Number(new URL(url).port) : 0;
      if (port > 0 && !leased.has(port) && !edgePorts.has(port)) wanted.set(port, url);
    }
    for (const [port, entry] of relayedPorts) {
      if (wanted.get(port) === entry.url) continue;
      shut(entry.server);
      relayedPorts.delete(port);
    }
    for (const [port, url] of wanted) {
      if (relayedPorts.has(port)) continue;
      const server = serverFor(() => routes.tcp(url));
      // In use: the holder's own ingress on this host, or anything else; left to the holder.
      if (await open(server, port).then(() => true, () => false)) relayedPorts.set(port, { server, url });
    }
  }

  async function reconcile(): Promise<void> {
    await reconcileRelayed().catch(onError);
    const wanted = new Map<number, string[]>();
    for (const { hostport } of await tcpEdgeHostports(burrow.reader)) {
      const port = Number(hostport.slice(hostport.lastIndexOf(':') + 1));
      wanted.set(port, [...(wanted.get(port) ?? []), hostport].sort());
    }
    for (const [port, entry] of edgePorts) {
      if (wanted.has(port)) continue;
      shut(entry.server);
      edgePorts.delete(port);
    }
    for (const port of refused.keys()) if (!wanted.has(port)) refused.delete(port);
    for (const [port, hostports] of wanted) {
      const current = edgePorts.get(port);
      if (current) {
        current.hostports = hostports;
        continue;
      }
      const server = serverFor(() => {
        const first = edgePorts.get(port)?.hostports[0];
        return first === undefined ? undefined : routes.tcpEdge(first);
      });
      try {
        await open(server, port);
        edgePorts.set(port, { server, hostports });
        refused.delete(port);
      } catch (error) {
        const message = `TCP edge hostport ${hostports[0]}: the ingress cannot listen: ${(error as Error).message}`;
        if (refused.get(port) !== message) onError(new Error(message));
        refused.set(port, message);
      }
    }
  }

  // One look at a time; a change during a look is looked at after it.
  let looking: Promise<void> = Promise.resolve();
  const syncEdges = () => (looking = looking.then(reconcile, reconcile).catch((error: unknown) => onError(error)));
  const timer = setInterval(() => void syncEdges(), EDGE_SWEEP_MS);
  timer.unref();

  return {
    async listen(port): Promise<TcpPortLease> {
      let url: string | undefined;
      const server = serverFor(() => (url === undefined ? undefined : routes.tcp(url)));
      const bound = await open(server, port);
      leased.add(bound);
      return {
        address: hostPort(advertised, bound),
        port: bound,
        serve: (served) => void (url = served),
        release: () => {
          leased.delete(bound);
          shut(server);
        },
      };
    },
    edgesChanged: () => void syncEdges(),
    syncEdges,
    async close() {
      clearInterval(timer);
      await looking;
      await Promise.all([...servers].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
      servers.clear();
      edgePorts.clear();
      relayedPorts.clear();
    },
  };
}
