import { STATUS_CODES } from 'node:http';
import { connect as connectTcp } from 'node:net';
import { Duplex } from 'node:stream';
import { connect as connectTls } from 'node:tls';
import type { BurrowCore } from '../../lib/burrow.ts';
import { seededRandom } from '../../lib/conventions/ids.ts';
import { routeEdgeTraffic, type EdgeTraffic, type Upstream } from '../../lib/index.ts';
import type { StoredModule } from '../../lib/families/edges/index.ts';
import { LIMITS } from '../../lib/limits.ts';
import type { EndpointFacts } from '../../lib/traffic/facts.ts';
import type { RuleSource } from '../../lib/policy/program.ts';
import { edgeModuleSources } from '../../lib/policy/sources.ts';
import type { AgentTunnel, RoutableSession } from '../agent-gateway/index.ts';
import { LruCache } from './lru-cache.ts';

/**
 * Traffic to edges: the store says where a request to an HTTPS edge's hostport, or a connection to
 * a TCP or TLS edge's, goes (lib/families/edges/traffic.ts: edge, route, modules, the upstream its
 * backend picks); this file turns that into a target the ingress serves like an agent endpoint
 * (routes.ts): the edge's and the route's modules as the endpoint's policy (lib/policy/sources.ts),
 * and a stream to the upstream: a proxy stream of the chosen labeled tunnel (told the edge type),
 * a connection to a static address, or the HTTP response backend's answer. Nothing online (no
 * route, no online tunnel, no backend) is the "endpoint offline" page for a request, naming why,
 * and a closed connection for TCP and TLS.
 *
 * Policies are compiled once per set of modules as read (edge and route together), kept for at
 * most `ingress_edge_policies` sets (least recently used dropped), so a changed module applies
 * from the next request on. Weighted and tunnel-group draws use the instance's seed when it has
 * one, so a deterministic run repeats its choices.
 */

/** The kinds of edge, as the agent is told on a proxy stream. */
type EdgeKind = 'https' | 'tcp' | 'tls';

const HOLDER_OF: Readonly<Record<EdgeKind, EdgeTraffic['holder']>> = { https: 'https_edge', tcp: 'tcp_edge', tls: 'tls_edge' };

/** Traffic to an edge: the policy of its modules and the way to the upstream its (route's) backend picked. */
export interface EdgeTarget {
  readonly kind: 'edge';
  readonly endpoint: EndpointFacts;
  readonly account: string;
  /** The rules of the edge's modules, then the route's. */
  readonly sources: readonly RuleSource[];
  /** What the compiled policy is kept under: the same object while the modules stay as they are. */
  readonly policyKey: object;
  /** The route's `websocket_tcp_converter` module is on: WebSockets reach the upstream as TCP (websocket-tcp.ts). */
  readonly websocketTcp: boolean;
  /** Opens the stream the traffic travels to the upstream; throws, naming why, when nothing is online. */
  open(clientAddr: string, passthroughTls?: boolean): Duplex;
}

export interface EdgeRoutes {
  /** The edge target of a request for `hostname` and `target` (the request target), or undefined when no HTTPS edge holds the host. */
  route(hostname: string, target: string): Promise<EdgeTarget | undefined>;
  /** The edge target of a connection to `hostport` (canonical `host:port`), or undefined when no edge of `kind` holds it. */
  connection(hostport: string, kind: 'tcp' | 'tls'): Promise<EdgeTarget | undefined>;
}

/** A live tunnel and its session. */
export interface LiveTunnel {
  readonly session: RoutableSession<unknown>;
  readonly tunnel: AgentTunnel;
}

/** The labeled tunnels other servers sharing the store hold (adapters/peer: RemoteAgents). */
export interface RemoteTunnels {
  /** The live tunnel `tunnelId` of `account` when another server holds it, as a session whose proxy streams travel to that server. */
  tunnel(account: string, tunnelId: string): Promise<LiveTunnel | undefined>;
}

export function createEdgeRoutes(burrow: BurrowCore<any>, sessions: () => readonly RoutableSession<unknown>[], remote?: RemoteTunnels): EdgeRoutes {
  const seed = burrow.options.seed;
  const draws = seed === undefined ? undefined : seededRandom(`${seed}\u0000ingress`);
  const random = draws ? () => Buffer.from(draws(4)).readUInt32BE(0) / 2 ** 32 : Math.random;
  /** Policy sources by the modules they come from (their JSON). */
  const policies = new LruCache<readonly RuleSource[]>(LIMITS.ingress_edge_policies.value);
  // Sources are named after their edge or route, so rules (and circuit breakers) of two routes stay apart.
  const sourcesOf = (traffic: EdgeTraffic): readonly RuleSource[] =>
    policies.get(JSON.stringify(traffic.modules), () => traffic.modules.flatMap(({ holder, id, modules }) => edgeModuleSources(holder, id, modules).map((source) => ({ ...source, source: `${id} ${source.source}` }))));

  /** The target of `hostport` if an edge of `kind` holds it; `path` selects an HTTPS edge's route; `url` is the endpoint's URL. */
  async function targetOf(kind: EdgeKind, hostport: string, path: string, url: string): Promise<EdgeTarget | undefined> {
    const live = new Map<string, LiveTunnel>();
    for (const session of sessions()) if (!session.ended) for (const tunnel of session.tunnels()) live.set(tunnel.tunnelId, { session, tunnel });
    // A backend's tunnel this server does not hold may be held by another: asked for only then, and kept for this request.
    const isOnline = async (id: string, account: string) => {
      if (live.has(id) || !remote) return live.has(id);
      const held = await remote.tunnel(account, id);
      if (held) live.set(id, held);
      return held !== undefined;
    };
    const traffic = await routeEdgeTraffic(burrow.reader, hostport, path, { isOnline, random });
    if (!traffic || traffic.holder !== HOLDER_OF[kind]) return undefined;
    const sources = sourcesOf(traffic);
    return {
      kind: 'edge',
      endpoint: { id: traffic.edgeId, url, account: traffic.account },
      account: traffic.account,
      sources,
      policyKey: sources,
      websocketTcp: traffic.modules.some(({ holder, modules }) => holder === 'https_route' && (modules.websocket_tcp_converter as StoredModule | null | undefined)?.enabled === true),
      open: (clientAddr, passthroughTls = false) => openUpstream(traffic.upstream, live, { clientAddr, edgeType: kind, passthroughTls }),
    };
  }

  return {
    route(hostname, target) {
      const path = URL.canParse(target, 'http://edge') ? new URL(target, 'http://edge').pathname : target;
      // HTTPS edges hold port 443 only (the plain HTTP ingress serves them by Host, as it serves HTTPS endpoints).
      return targetOf('https', `${hostname}:443`, path, `https://${hostname}`);
    },
    connection(hostport, kind) {
      // A TLS edge's URL names its host (port 443 is implied), a TCP edge's its hostport.
      return targetOf(kind, hostport, '', kind === 'tls' ? `tls://${hostport.replace(/:443$/, '')}` : `tcp://${hostport}`);
    },
  };
}

/** The stream one request or connection travels to `upstream`; throws, naming why, when nothing is online. */
function openUpstream(upstream: Upstream, live: ReadonlyMap<string, LiveTunnel>, proxy: { readonly clientAddr: string; readonly edgeType: EdgeKind; readonly passthroughTls: boolean }): Duplex {
  switch (upstream.kind) {
    case 'offline':
      throw new Error(upstream.reason);
    case 'tunnel': {
      const chosen = live.get(upstream.tunnelId);
      if (!chosen) throw new Error(`tunnel '${upstream.tunnelId}' of backend '${upstream.backendId}' went offline`);
      return chosen.session.openProxy(upstream.tunnelId, proxy);
    }
    case 'static':
      // TLS passed through is already the client's own TLS session: the bytes go as they are.
      return upstream.tls && !proxy.passthroughTls ? connectTls({ host: upstream.host, port: upstream.port, servername: upstream.host }) : connectTcp({ host: upstream.host, port: upstream.port });
    case 'http_response':
      return new FixedResponse(upstream);
  }
}

/**
 * An HTTP response backend as an upstream: whatever request arrives, its bytes are read and
 * dropped, and the backend's status, headers and body come back (then the stream ends), so the
 * response phase of the policy (headers, compression, circuit breakers) runs on it as on any answer.
 */
class FixedResponse extends Duplex {
  readonly #answer: Buffer;
  #sent = false;

  constructor(upstream: Extract<Upstream, { kind: 'http_response' }>) {
    super();
    const body = Buffer.from(upstream.body);
    const fields = Object.entries(upstream.headers).filter(([name]) => !['content-length', 'connection', 'transfer-encoding'].includes(name));
    const head = [`HTTP/1.1 ${upstream.status} ${STATUS_CODES[upstream.status] ?? 'Status'}`, ...fields.map(([name, value]) => `${name}: ${value}`), `content-length: ${body.length}`, 'connection: close'];
    this.#answer = Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), body]);
  }

  override _write(_chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    // The answer goes once the request has begun to arrive; the rest of the request is dropped.
    if (!this.#sent) {
      this.#sent = true;
      this.push(this.#answer);
      this.push(null);
    }
    done();
  }

  override _read(): void {}
}
