import type { OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { addPair, membersOf, removePair } from '../../engine/indexes.ts';
import { scopeOf } from '../../engine/resource.ts';
import { byUrl, DEFAULT_PORTS, ENDPOINT_KIND, type EndpointRecord } from './records.ts';

/**
 * Edge endpoints: one per hostport of a TCP, TLS or HTTPS edge, kept in step with the edge's
 * hostports.
 */

/** The URL scheme of an edge's endpoints, by the edge's id prefix. */
const EDGE_SCHEMES: Readonly<Record<string, string>> = { edgtcp: 'tcp', edgtls: 'tls', edghts: 'https' };

/** Pair index (edge id, endpoint id): the endpoints of an edge's hostports. */
const ofEdge = (ctx: OperationContext) => ({ account: ctx.account, kind: '_edge_endpoint' });

/**
 * Keeps the `edge` endpoints of edge `edgeId` in step with its hostports (canonical `host:port`):
 * one endpoint per hostport; a hostport that goes takes its endpoint along. Called by the edges on
 * every hostport change, in the same transaction. O(hostports of the edge).
 */
export async function syncEdgeEndpoints(ctx: OperationContext, edgeId: string, hostports: readonly string[]): Promise<void> {
  const scheme = EDGE_SCHEMES[edgeId.slice(0, edgeId.indexOf('_'))];
  if (!scheme) return;
  const scope = scopeOf(ctx, ENDPOINT_KIND);
  const kept = new Set<string>();
  for (const id of await membersOf(ctx.tx, ofEdge(ctx), edgeId)) {
    const record = (await ctx.tx.get(scope, id)) as EndpointRecord | undefined;
    const hostport = record ? `${record.host}:${record.port}` : undefined;
    if (record && hostport !== undefined && hostports.includes(hostport) && !kept.has(hostport)) {
      kept.add(hostport);
      continue;
    }
    if (record) {
      await ctx.tx.delete(scope, id);
      await removePair(ctx.tx, byUrl(ctx), record.url, id);
    }
    await removePair(ctx.tx, ofEdge(ctx), edgeId, id);
  }
  const now = formatTime(ctx.clock.now());
  for (const hostport of hostports) {
    if (kept.has(hostport)) continue;
    const at = hostport.lastIndexOf(':');
    const host = hostport.slice(0, at);
    const port = Number(hostport.slice(at + 1));
    const record: EndpointRecord = {
      id: ctx.ids.id('ep'),
      created_at: now,
      updated_at: now,
      description: '',
      metadata: '',
      type: 'edge',
      url: `${scheme}://${host}${port === DEFAULT_PORTS[scheme] ? '' : `:${port}`}`,
      scheme,
      host,
      port,
      region: 'global',
      bindings: ['public'],
      traffic_policy: '',
      upstream_url: '',
      upstream_protocol: '',
      pooling_enabled: false,
      owner_id: ctx.principal.ownerId,
      tunnel_id: null,
      session_id: null,
      edge_id: edgeId,
    };
    await ctx.tx.put(scope, record);
    await addPair(ctx.tx, byUrl(ctx), record.url, record.id);
    await addPair(ctx.tx, ofEdge(ctx), edgeId, record.id);
  }
}
