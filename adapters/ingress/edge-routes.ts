import { STATUS_CODES } from 'node:http';
import { connect as connectTcp } from 'node:net';
import { Duplex } from 'node:stream';
import { connect as connectTls } from 'node:tls';
import type { BurrowCore } from '../../lib/burrow.ts';
import { seededRandom } from '../../lib/conventions/ids.ts';
import { routeEdgeTraffic, type EdgeTraffic, type Upstream } from '../../lib/index.ts';
import { LIMITS } from '../../lib/limits.ts';
import type { EndpointFacts } from '../../lib/policy/facts.ts';
import type { RuleSource } from '../../lib/policy/program.ts';
import { edgeModuleSources } from '../../lib/policy/sources.ts';
import type { AgentSession, AgentTunnel } from '../agent-gateway/index.ts';
import { LruCache } from './lru-cache.ts';

/**
 * Requests to edges: the store says where a request to an HTTPS edge's hostport goes
 * (lib/families/edges/traffic.ts: edge, route, modules, the upstream its backend picks); this file
 * turns that into a target the HTTP ingress serves like an agent endpoint (routes.ts): the edge's
 * and the route's modules as the endpoint's policy (lib/policy/sources.ts), and a stream to the
 * upstream: a proxy stream of the chosen labeled tunnel, a connection to a static address, or the
 * HTTP response backend's answer. Nothing online (no route, no online tunnel, no backend) is the
 * "endpoint offline" page, naming why.
 *
 * Policies are compiled once per set of modules as read (edge and route together), kept for at
 * most `ingress_edge_policies` sets (least recently used dropped), so a changed module applies
 * from the next request on. Weighted and tunnel-group draws use the instance's seed when it has
 * one, so a deterministic run repeats its choices.
 */

/** A request to an HTTPS edge: the policy of its modules and the way to the upstream its route's backend picked. */
export interface EdgeTarget {
  readonly kind: 'edge';
  readonly endpoint: EndpointFacts;
  readonly account: string;
  /** The rules of the edge's modules, then the route's. */
  readonly sources: readonly RuleSource[];
  /** What the compiled policy is kept under: the same object while the modules stay as they are. */
  readonly policyKey: object;
  /** Opens the stream the request travels to the upstream; throws, naming why, when nothing is online. */
  open(clientAddr: string): Duplex;
}

export interface EdgeRoutes {
  /** The edge target of a request for `hostname` and `target` (the request target), or undefined when no edge holds the host. */
  route(hostname: string, target: string): Promise<EdgeTarget | undefined>;
}

/** A live tunnel and its session. */
interface LiveTunnel {
  readonly session: AgentSession<unknown>;
  readonly tunnel: AgentTunnel;
}

export function createEdgeRoutes(burrow: BurrowCore<any>, sessions: () => readonly AgentSession<unknown>[]): EdgeRoutes {
  const seed = burrow.options.seed;
  const draws = seed === undefined ? undefined : seededRandom(`${seed}\u0000ingress`);
  const random = draws ? () => Buffer.from(draws(4)).readUInt32BE(0) / 2 ** 32 : Math.random;
  /** Policy sources by the modules they come from (their JSON). */
  const policies = new LruCache<readonly RuleSource[]>(LIMITS.ingress_edge_policies.value);
  // Sources are named after their edge or route, so rules (and circuit breakers) of two routes stay apart.
  const sourcesOf = (traffic: EdgeTraffic): readonly RuleSource[] =>
    policies.get(JSON.stringify(traffic.modules), () => traffic.modules.flatMap(({ holder, id, modules }) => edgeModuleSources(holder, id, modules).map((source) => ({ ...source, source: `${id} ${source.source}` }))));

  return {
    async route(hostname, target) {
      const live = new Map<string, LiveTunnel>();
      for (const session of sessions()) if (!session.ended) for (const tunnel of session.tunnels()) live.set(tunnel.tunnelId, { session, tunnel });
      const path = URL.canParse(target, 'http://edge') ? new URL(target, 'http://edge').pathname : target;
      // HTTPS edges hold port 443 only (the plain HTTP ingress serves them by Host, as it serves HTTPS endpoints).
      const traffic = await routeEdgeTraffic(burrow.reader, `${hostname}:443`, path, { isOnline: (id) => live.has(id), random });
      if (!traffic) return undefined;
      const sources = sourcesOf(traffic);
      return {
        kind: 'edge',
        endpoint: { id: traffic.edgeId, url: `https://${hostname}`, account: traffic.account },
        account: traffic.account,
        sources,
        policyKey: sources,
        open: (clientAddr) => openUpstream(traffic.upstream, live, clientAddr),
      };
    },
  };
}

/** The stream one request travels to `upstream`; throws, naming why, when nothing is online. */
function openUpstream(upstream: Upstream, live: ReadonlyMap<string, LiveTunnel>, clientAddr: string): Duplex {
  switch (upstream.kind) {
    case 'offline':
      throw new Error(upstream.reason);
    case 'tunnel': {
      const chosen = live.get(upstream.tunnelId);
      if (!chosen) throw new Error(`tunnel '${upstream.tunnelId}' of backend '${upstream.backendId}' went offline`);
      return chosen.session.openProxy(upstream.tunnelId, { clientAddr, edgeType: 'https' });
    }
    case 'static':
      return upstream.tls ? connectTls({ host: upstream.host, port: upstream.port, servername: upstream.host }) : connectTcp({ host: upstream.host, port: upstream.port });
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
