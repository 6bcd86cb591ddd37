import type { Duplex } from 'node:stream';
import type { AgentTunnel, RoutableSession } from '../agent-gateway/index.ts';
import { findCloudEndpoint, isInternalHost, type BurrowCore } from '../../lib/index.ts';
import type { ConnectionFacts, EndpointFacts } from '../../lib/traffic/facts.ts';
import { hostPort } from '../addresses.ts';
import { agentBindSources, type AgentBindOptions } from '../../lib/policy/sources.ts';
import type { RuleSource } from '../../lib/policy/program.ts';
import { createEdgeRoutes, type EdgeRoutes, type EdgeTarget, type RemoteTunnels } from './edge-routes.ts';
import { proxyProtocolHeader } from './proxy-protocol.ts';

/**
 * Where the ingress sends traffic: which target serves a host name (or a TCP address). A live
 * agent's tunnel is read from the live sessions each time (a tunnel that goes away is offline at
 * once); a cloud endpoint is read from the store through the endpoints' url index (lib/), a few
 * reads per request whatever the number of accounts. A live agent's endpoint comes first, then a
 * stored cloud endpoint of that URL, then an HTTPS edge holding the name (edge-routes.ts).
 */

/** An endpoint served by a live agent tunnel. */
export interface AgentTarget {
  readonly kind: 'agent';
  readonly endpoint: EndpointFacts;
  readonly account: string;
  readonly session: RoutableSession<unknown>;
  readonly tunnel: AgentTunnel;
  /** The rules of the endpoint's policy: the options the agent set on its bind. */
  readonly sources: readonly RuleSource[];
  /** The bind asks for WebSocket-to-TCP conversion (`WebsocketTCPConverter`, websocket-tcp.ts). */
  readonly websocketTcp: boolean;
  /** The agent's upstream speaks HTTP/2 (the bind's `ForwardsProto` is `http2`, h2-upstream.ts). */
  readonly http2: boolean;
}

/** A cloud endpoint (POST /endpoints): its stored traffic policy answers or forwards every request. */
export interface CloudTarget {
  readonly kind: 'cloud';
  readonly endpoint: EndpointFacts;
  readonly account: string;
  readonly trafficPolicy: string;
}

/** What serves a name: the ingress applies its policy and, for an agent or edge target, proxies to it. */
export type IngressTarget = AgentTarget | CloudTarget | EdgeTarget;

/** A target traffic reaches as a stream of bytes: an agent's tunnel, or an edge's upstream. */
export type StreamTarget = AgentTarget | EdgeTarget;

/**
 * Opens the stream traffic to `target` travels (a proxy stream of the agent's tunnel, or the
 * edge's upstream), told the client connection `conn` and whether the bytes are TLS passed through
 * (default: as the agent's bind says); throws, naming why, when it cannot. An agent's bind that
 * asks for the PROXY protocol (`ProxyProto`) gets its header as the stream's first bytes
 * (proxy-protocol.ts).
 */
export function openStream(target: StreamTarget, conn: ConnectionFacts, passthroughTls?: boolean): Duplex {
  const clientAddr = hostPort(conn.clientIp, conn.clientPort);
  if (target.kind === 'edge') return target.open(clientAddr, passthroughTls);
  const stream = target.session.openProxy(target.tunnel.tunnelId, { clientAddr, ...(passthroughTls === undefined ? {} : { passthroughTls }) });
  const request = target.tunnel.request;
  // An SSH session's tunnel (adapters/ssh-gateway/routable.ts) reads as a bind without the option.
  const version = request.kind === 'endpoint' ? request.options.proxyProto : 0;
  if (version) stream.write(proxyProtocolHeader(version, conn));
  return stream;
}

/** The live sessions the ingress routes to (an agent gateway's `sessions`). */
export type LiveSessions = () => readonly RoutableSession<unknown>[];

/** A live tunnel, local or held by another server: its session, the tunnel, its account. */
export interface HeldAgentTunnel {
  readonly session: RoutableSession<unknown>;
  readonly tunnel: AgentTunnel;
  readonly account: string;
}

/**
 * The agents other servers sharing the store hold (adapters/peer): the tunnel of an endpoint URL,
 * or a labeled tunnel an edge's backend picked (RemoteTunnels), as a session whose proxy streams
 * travel to its server over the link between servers. The ingress applies the endpoint's or the
 * edge's policy itself, as for a local agent; the other server only carries bytes.
 */
export interface RemoteAgents extends RemoteTunnels {
  /** The tunnel of the first of `urls` (one endpoint's URLs by preferred scheme) that an agent on another server binds. */
  find(urls: readonly string[]): Promise<HeldAgentTunnel | undefined>;
}

/** The host name of a URL or a Host header, lower case, without port or trailing dot. */
export function hostnameOf(authority: string): string {
  const host = authority.startsWith('[') ? authority.slice(0, authority.indexOf(']') + 1) : authority.replace(/:\d*$/, '');
  return host.toLowerCase().replace(/\.$/, '');
}

/** Endpoint schemes that carry HTTP. */
export type HttpScheme = 'http' | 'https';

/** Finds the targets of names and addresses among live sessions and stored cloud endpoints. */
export class IngressRoutes {
  readonly #burrow: BurrowCore<any>;
  readonly #sessions: LiveSessions;
  readonly #accountOf: (session: RoutableSession<unknown>) => string;
  readonly #edges: EdgeRoutes;

  readonly #remote: RemoteAgents | undefined;

  constructor(burrow: BurrowCore<any>, sessions: LiveSessions, accountOf: (session: RoutableSession<unknown>) => string, remote?: RemoteAgents) {
    this.#burrow = burrow;
    this.#sessions = sessions;
    this.#accountOf = accountOf;
    this.#edges = createEdgeRoutes(burrow, sessions, remote);
    this.#remote = remote;
  }

  /**
   * The public HTTP target of `hostname` for a request that arrived over `schemes` (the first
   * preferred): `https` for the TLS ingress, `http` then `https` for plain HTTP. `target` (the
   * request target) selects an HTTPS edge's route.
   */
  async http(hostname: string, schemes: readonly HttpScheme[], target: string): Promise<IngressTarget | undefined> {
    // Internal endpoints (`https://api.internal`) take traffic only from forward-internal, never from clients.
    if (this.#isInternal(hostname)) return undefined;
    return this.#agent(hostname, schemes, () => true) ?? (await this.#elsewhere(schemes.map((scheme) => `${scheme}://${hostname}`))) ?? (await this.#cloud(hostname, schemes)) ?? (await this.#edges.route(hostname, target));
  }

  /**
   * The internal HTTP target of `url` (a forward-internal target) of `account`: a live agent's
   * endpoint or a cloud endpoint with the internal binding.
   */
  async internal(url: string, account: string): Promise<IngressTarget | undefined> {
    if (!URL.canParse(url)) return undefined;
    const parsed = new URL(url);
    const hostname = hostnameOf(parsed.host);
    const scheme = parsed.protocol.slice(0, -1);
    if (!this.#isInternal(hostname) || (scheme !== 'http' && scheme !== 'https')) return undefined;
    return this.#agent(hostname, [scheme], (session) => this.#accountOf(session) === account) ?? (await this.#elsewhere([`${scheme}://${hostname}`], account)) ?? (await this.#cloud(hostname, [scheme], account));
  }

  /** The live agent tunnel of a TLS endpoint (`tls://hostname`), if one serves it (here or on another server). */
  async tls(hostname: string): Promise<AgentTarget | undefined> {
    return this.#find((tunnel) => tunnel.request.kind === 'endpoint' && tunnel.request.proto === 'tls' && urlHost(tunnel.url) === hostname, () => true) ?? (await this.#elsewhere([`tls://${hostname}`]));
  }

  /** The live agent tunnel bound to the TCP URL `url` (`tcp://host:port`), if one serves it (here or on another server). */
  async tcp(url: string): Promise<AgentTarget | undefined> {
    return this.#find((tunnel) => tunnel.request.kind === 'endpoint' && tunnel.request.proto === 'tcp' && tunnel.url === url, () => true) ?? (await this.#elsewhere([url]));
  }

  /** Whether agents on other servers are reached (the TCP ingress then listens for their TCP endpoints too). */
  get relays(): boolean {
    return this.#remote !== undefined;
  }

  /** The TCP edge holding `hostport` (canonical `host:port`), if one does. */
  tcpEdge(hostport: string): Promise<EdgeTarget | undefined> {
    return this.#edges.connection(hostport, 'tcp');
  }

  /** The TLS edge holding `hostname:443`, if one does. */
  tlsEdge(hostname: string): Promise<EdgeTarget | undefined> {
    return this.#edges.connection(`${hostname}:443`, 'tls');
  }

  #isInternal(hostname: string): boolean {
    return isInternalHost(hostname, this.#burrow.services.simulation.serviceZone);
  }

  #agent(hostname: string, schemes: readonly HttpScheme[], reaches: (session: RoutableSession<unknown>) => boolean): AgentTarget | undefined {
    for (const scheme of schemes) {
      const found = this.#find((tunnel) => tunnel.request.kind === 'endpoint' && tunnel.request.proto === scheme && urlHost(tunnel.url) === hostname, reaches);
      if (found) return found;
    }
    return undefined;
  }

  #find(matches: (tunnel: AgentTunnel) => boolean, reaches: (session: RoutableSession<unknown>) => boolean): AgentTarget | undefined {
    for (const session of this.#sessions()) {
      if (session.ended || !reaches(session)) continue;
      for (const tunnel of session.tunnels()) {
        const request = tunnel.request;
        if (request.kind !== 'endpoint' || !tunnel.url || !matches(tunnel)) continue;
        return agentTarget({ session, tunnel, account: this.#accountOf(session) });
      }
    }
    return undefined;
  }

  /** The first of `urls` a live agent on another server binds (of `account` only, when given: forward-internal's targets). */
  async #elsewhere(urls: readonly string[], account?: string): Promise<AgentTarget | undefined> {
    const held = await this.#remote?.find(urls);
    return held && (account === undefined || held.account === account) ? agentTarget(held) : undefined;
  }

  async #cloud(hostname: string, schemes: readonly HttpScheme[], account?: string): Promise<CloudTarget | undefined> {
    for (const scheme of schemes) {
      const found = await findCloudEndpoint(this.#burrow.reader, { scheme, host: hostname }, account);
      if (found) return { kind: 'cloud', endpoint: { id: found.record.id, url: found.record.url, account: found.account }, account: found.account, trafficPolicy: found.record.traffic_policy };
    }
    return undefined;
  }
}

/** The target of a live endpoint tunnel, with the rules of the options its agent set on the bind. */
function agentTarget({ session, tunnel, account }: HeldAgentTunnel): AgentTarget {
  const request = tunnel.request as Extract<AgentTunnel['request'], { kind: 'endpoint' }>;
  // The Opts object as the agent sent it carries the vendor's option names agentBindSources reads;
  // the traffic policy as decoded (older agents send it as an object).
  const options = { ...(request.raw as AgentBindOptions), TrafficPolicy: request.options.trafficPolicy };
  const http = request.proto === 'http' || request.proto === 'https';
  return {
    kind: 'agent',
    endpoint: { id: tunnel.tunnelId, url: tunnel.url!, account },
    account,
    session,
    tunnel,
    sources: agentBindSources(request.proto, options),
    websocketTcp: http && Boolean((request.raw as { WebsocketTCPConverter?: unknown }).WebsocketTCPConverter),
    http2: http && request.forwardsProto === 'http2',
  };
}

/** The host name of an endpoint URL, or '' for none. */
const urlHost = (url: string | undefined) => (url && URL.canParse(url) ? hostnameOf(new URL(url).host) : '');
