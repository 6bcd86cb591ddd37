import type { OperationContext } from '../../engine/context.ts';
import { addPair, removePair } from '../../engine/indexes.ts';
import { scopeOf } from '../../engine/resource.ts';
import { byUrl, ENDPOINT_KIND, isInternalHost, parseEndpointUrl, type EndpointRecord } from './records.ts';

/**
 * Agent endpoints: one per domain or address tunnel, made and removed with it (read-only through
 * the API).
 */

/** What an agent endpoint is made from: its tunnel (tunnels.ts). */
export interface EndpointTunnel {
  readonly id: string;
  readonly endpoint_id: string | null;
  readonly public_url: string;
  readonly started_at: string;
  readonly metadata: string;
  readonly region: string;
  readonly session_id: string;
  readonly forwards_to: string;
}

/** Stores the agent endpoint of a domain or address tunnel that just started; `upstreamProtocol` is an HTTP one's (default `http1`). */
export async function addAgentEndpoint(ctx: OperationContext, tunnel: EndpointTunnel, ownerId: string, upstreamProtocol = 'http1'): Promise<void> {
  // An agent's TCP URL names the ingress's public host, which may be an IP address (`--public-host`).
  const url = parseEndpointUrl(tunnel.public_url, 'url', { ipHost: true });
  const record: EndpointRecord = {
    id: tunnel.endpoint_id!,
    created_at: tunnel.started_at,
    updated_at: tunnel.started_at,
    description: '',
    metadata: tunnel.metadata,
    type: 'agent',
    ...url,
    region: tunnel.region,
    bindings: [isInternalHost(url.host, ctx.services.simulation.serviceZone) ? 'internal' : 'public'],
    traffic_policy: '',
    upstream_url: tunnel.forwards_to,
    upstream_protocol: url.scheme === 'http' || url.scheme === 'https' ? upstreamProtocol : url.scheme === 'tcp' ? '' : 'http1',
    pooling_enabled: false,
    owner_id: ownerId,
    tunnel_id: tunnel.id,
    session_id: tunnel.session_id,
  };
  await ctx.tx.put(scopeOf(ctx, ENDPOINT_KIND), record);
  await addPair(ctx.tx, byUrl(ctx), record.url, record.id);
}

/** Removes the agent endpoint of a tunnel that stopped. */
export async function removeAgentEndpoint(ctx: OperationContext, id: string): Promise<void> {
  const record = (await ctx.tx.get(scopeOf(ctx, ENDPOINT_KIND), id)) as EndpointRecord | undefined;
  if (!record) return;
  await ctx.tx.delete(scopeOf(ctx, ENDPOINT_KIND), id);
  await removePair(ctx.tx, byUrl(ctx), record.url, record.id);
}
