import type { AgentSession, AgentTunnel } from '../agent-gateway/index.ts';
import { agentBindSources, type AgentBindOptions } from '../../lib/policy/sources.ts';
import type { RuleSource } from '../../lib/policy/program.ts';

/**
 * Where the ingress sends a request: the endpoint that serves a host name and the live agent
 * tunnel behind it. Routes are read from the live sessions each time (a tunnel that goes away is
 * offline at once); nothing here is stored.
 */

/** An HTTP endpoint served by a live agent tunnel. */
export interface IngressRoute {
  readonly endpoint: { readonly id: string; readonly url: string };
  readonly session: AgentSession<unknown>;
  readonly tunnel: AgentTunnel;
  /** The rules of the endpoint's policy: the options the agent set on its bind. */
  readonly sources: readonly RuleSource[];
}

/** The live sessions the ingress routes to (an agent gateway's `sessions`). */
export type LiveSessions = () => readonly AgentSession<unknown>[];

/** The host name of a URL or a Host header, lower case, without port or trailing dot. */
export function hostnameOf(authority: string): string {
  const host = authority.startsWith('[') ? authority.slice(0, authority.indexOf(']') + 1) : authority.replace(/:\d*$/, '');
  return host.toLowerCase().replace(/\.$/, '');
}

/** Internal endpoints (`https://api.internal`) take traffic only from forward-internal, never from clients. */
const isInternal = (hostname: string) => hostname.endsWith('.internal');

/** The public HTTP endpoint of `hostname` among the live sessions' tunnels, if one serves it. */
export function routeHttp(sessions: LiveSessions, hostname: string): IngressRoute | undefined {
  return isInternal(hostname) ? undefined : findHttp(sessions, hostname, () => true);
}

/**
 * The internal HTTP endpoint of `url` (a forward-internal target), served by a session `reaches`
 * accepts (the forwarding endpoint's account's own), if one is live.
 */
export function routeInternal(sessions: LiveSessions, url: string, reaches: (session: AgentSession<unknown>) => boolean): IngressRoute | undefined {
  if (!URL.canParse(url)) return undefined;
  const hostname = hostnameOf(new URL(url).host);
  return isInternal(hostname) ? findHttp(sessions, hostname, reaches) : undefined;
}

function findHttp(sessions: LiveSessions, hostname: string, reaches: (session: AgentSession<unknown>) => boolean): IngressRoute | undefined {
  for (const session of sessions()) {
    if (session.ended || !reaches(session)) continue;
    for (const tunnel of session.tunnels()) {
      const request = tunnel.request;
      if (request.kind !== 'endpoint' || (request.proto !== 'http' && request.proto !== 'https') || !tunnel.url) continue;
      if (!URL.canParse(tunnel.url) || hostnameOf(new URL(tunnel.url).host) !== hostname) continue;
      // The Opts object as the agent sent it carries the vendor's option names agentBindSources reads;
      // the traffic policy as decoded (older agents send it as an object).
      const options = { ...(request.raw as AgentBindOptions), TrafficPolicy: request.options.trafficPolicy };
      return { endpoint: { id: tunnel.tunnelId, url: tunnel.url }, session, tunnel, sources: agentBindSources(request.proto, options) };
    }
  }
  return undefined;
}
