import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { makeRef } from '../../conventions/refs.ts';
import { NO_FIELDS, rfc3339, storedRef } from '../../conventions/fields.ts';
import { addPair, membersOf, releaseUnique, removePair, type PairIndex } from '../../engine/indexes.ts';
import { INSTANCE_SCOPE } from '../../store.ts';
import { changeOnlineTunnels } from '../backends/index.ts';
import { defineResource, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { addAgentEndpoint, removeAgentEndpoint } from '../endpoints/index.ts';

/**
 * Tunnels (/tunnels): read-only; they exist while an agent runs them. A simulated agent's binds
 * become its tunnels when its session starts; a real agent (agent-sessions.ts) starts and stops
 * them one at a time, with the protocol of its bind (`http`, `https`, `tcp`, `tls`, or none for a
 * labeled tunnel). The tunnels go when the session ends (stop, restart, disconnect, credential
 * deleted). A simulated agent's binds are:
 *
 * - each bound domain: an `https` tunnel, `public_url` `https://<domain>`;
 * - each bound address `host:port`: a `tcp` tunnel, `public_url` `tcp://<host:port>`;
 * - the bound labels, if any: one labeled tunnel (no public URL, no protocol) with id `tn_` + the
 *   session's KSUID, which tunnel group backends match; its `backends` are those backends.
 *
 * Each tunnel with a URL has an agent endpoint (lib/families/endpoints/agent-endpoints.ts) sharing its KSUID
 * (`tn_X` ↔ `ep_X`), as the vendor's examples show. A tunnel's `metadata` is its bind's, else its
 * agent's, and `forwards_to` is the bind's or the agent's (default `http://localhost:80`,
 * `localhost:80` for TCP). A real agent's tunnel holds its URL instance-wide (a unique index) while
 * it runs. Tunnel records are stored like any resource, so listing pages through the store on every
 * backend (PostgreSQL included).
 */

export const TUNNEL_KIND = 'tunnel';

export interface TunnelRecord extends BaseRecord {
  readonly public_url: string;
  readonly proto: '' | 'http' | 'https' | 'tcp' | 'tls';
  readonly started_at: string;
  readonly region: string;
  readonly session_id: string;
  readonly endpoint_id: string | null;
  readonly labels: Readonly<Record<string, string>>;
  /** Tunnel group backends that currently match this tunnel, oldest first (kept by tunnel-group.ts). */
  readonly backend_ids: readonly string[];
  readonly forwards_to: string;
}

/** What a simulated agent binds when it connects (live agents bind tunnels one at a time instead). */
export interface SessionBinds {
  readonly domains: readonly string[];
  readonly addresses: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
}

/** What a session tells its tunnels: who runs them, where, and what they bind. */
export interface TunnelOwner {
  readonly id: string;
  readonly started_at: string;
  readonly region: string;
  readonly metadata: string;
  readonly owner_id: string;
  readonly forwards_to?: string;
  readonly binds: SessionBinds;
}

/** What tunnels and tunnel sessions declare alike: agents make them, and the API only reads them. */
export function madeByAgents(plural: string) {
  return {
    operations: ['get', 'list'] as const,
    createSchema: NO_FIELDS,
    updateSchema: NO_FIELDS,
    create(): never {
      throw new Error(`${plural} are started by connecting agents`);
    },
  };
}

export const tunnels = defineResource<TunnelRecord>({
  name: 'tunnels',
  label: 'tunnel',
  prefix: 'tn',
  ...madeByAgents('tunnels'),
  storedFields: {
    public_url: v.string(),
    proto: v.picklist(['', 'http', 'https', 'tcp', 'tls']),
    started_at: rfc3339,
    region: v.string(),
    session_id: storedRef('ts'),
    endpoint_id: v.nullable(storedRef('ep')),
    labels: v.record(v.string(), v.string()),
    backend_ids: v.array(storedRef('bkdtg')),
    forwards_to: v.string(),
  },
  // No `uri`: the vendor's Tunnel has none (test/compat/vendor-schemas.ts).
  toResponse: (ctx, record) => ({
    id: record.id,
    public_url: record.public_url,
    started_at: record.started_at,
    metadata: record.metadata,
    proto: record.proto,
    region: record.region,
    tunnel_session: makeRef(ctx.baseUrl, '/tunnel_sessions', record.session_id),
    endpoint: record.endpoint_id === null ? null : makeRef(ctx.baseUrl, '/endpoints', record.endpoint_id),
    labels: { ...record.labels },
    backends: record.backend_ids.map((id) => makeRef(ctx.baseUrl, '/backends/tunnel_group', id)),
    forwards_to: record.forwards_to,
  }),
});

const ksuidOf = (id: string) => id.slice(id.indexOf('_') + 1);

/** The labeled tunnel of a session: `tn_` + the session's KSUID (tunnel group backends list it). */
export const labeledTunnelOf = (sessionId: string) => `tn_${ksuidOf(sessionId)}`;

/** Pair index (session id, tunnel id): the tunnels a session runs, so ending it is O(its tunnels). */
const tunnelsOfSession = (ctx: OperationContext): PairIndex => ({ account: ctx.account, kind: '_session_tunnel' });

/** A tunnel's protocol: that of its URL, '' for a labeled tunnel. */
export type TunnelProto = TunnelRecord['proto'];

/** One tunnel to start on a session. */
export interface TunnelStart {
  readonly proto: TunnelProto;
  /** The public URL; '' for a labeled tunnel. */
  readonly url: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Default: the session's. */
  readonly metadata?: string;
  /** Default: the session's, else `http://localhost:80` (`localhost:80` for TCP). */
  readonly forwards_to?: string;
  /** Default: a new `tn_` id. */
  readonly id?: string;
  /** The agent endpoint's `upstream_protocol` (HTTP tunnels; default `http1`). */
  readonly upstream_protocol?: string;
}

/**
 * Starts one tunnel of a session: its record, its agent endpoint when it has a URL, and for a
 * labeled tunnel the tunnel group backends' new matches.
 */
export async function startTunnel(ctx: OperationContext, session: TunnelOwner, start: TunnelStart): Promise<TunnelRecord> {
  const id = start.id ?? ctx.ids.id('tn');
  const record: TunnelRecord = {
    id,
    created_at: session.started_at,
    started_at: session.started_at,
    description: '',
    metadata: start.metadata ?? session.metadata,
    region: session.region,
    session_id: session.id,
    backend_ids: [],
    public_url: start.url,
    proto: start.proto,
    endpoint_id: start.url === '' ? null : `ep_${ksuidOf(id)}`,
    labels: { ...start.labels },
    forwards_to: start.forwards_to ?? session.forwards_to ?? (start.proto === 'tcp' ? 'localhost:80' : 'http://localhost:80'),
  };
  await ctx.tx.put(scopeOf(ctx, TUNNEL_KIND), record);
  await addPair(ctx.tx, tunnelsOfSession(ctx), session.id, record.id);
  if (record.endpoint_id !== null) await addAgentEndpoint(ctx, record, session.owner_id, start.upstream_protocol);
  if (Object.keys(record.labels).length > 0) await changeLabeledTunnels(ctx, { online: { id: record.id, labels: record.labels } });
  return record;
}

/** Starts the tunnels of a simulated agent's binds (see the file comment); answers their records. */
export async function startTunnels(ctx: OperationContext, session: TunnelOwner): Promise<TunnelRecord[]> {
  const starts: TunnelStart[] = [
    ...session.binds.domains.map((domain) => ({ proto: 'https' as const, url: `https://${domain.toLowerCase()}`, labels: {} })),
    ...session.binds.addresses.map((address) => ({ proto: 'tcp' as const, url: `tcp://${address.toLowerCase()}`, labels: {} })),
    ...(Object.keys(session.binds.labels).length > 0 ? [{ proto: '' as const, url: '', labels: session.binds.labels, id: labeledTunnelOf(session.id) }] : []),
  ];
  const started: TunnelRecord[] = [];
  for (const start of starts) started.push(await startTunnel(ctx, session, start));
  return started;
}

/** Stops one tunnel: its endpoint, its URL, its place among the tunnel group backends' matches. */
export async function endTunnel(ctx: OperationContext, record: TunnelRecord): Promise<void> {
  if (Object.keys(record.labels).length > 0) await changeLabeledTunnels(ctx, { goneId: record.id });
  if (record.endpoint_id) await removeAgentEndpoint(ctx, record.endpoint_id);
  if (record.public_url !== '') await releaseUnique(ctx.tx, INSTANCE_SCOPE, TUNNEL_KIND, 'url', record.public_url, `${ctx.account}/${record.id}`);
  await ctx.tx.delete(scopeOf(ctx, TUNNEL_KIND), record.id);
  await removePair(ctx.tx, tunnelsOfSession(ctx), record.session_id, record.id);
}

/** Removes the tunnels (and agent endpoints) of a session that ended; answers their records. */
export async function endTunnels(ctx: OperationContext, sessionId: string): Promise<TunnelRecord[]> {
  const ended: TunnelRecord[] = [];
  for (const id of await membersOf(ctx.tx, tunnelsOfSession(ctx), sessionId)) {
    const record = (await ctx.tx.get(scopeOf(ctx, TUNNEL_KIND), id)) as TunnelRecord | undefined;
    if (record) {
      await endTunnel(ctx, record);
      ended.push(record);
    } else await removePair(ctx.tx, tunnelsOfSession(ctx), sessionId, id);
  }
  return ended;
}

/**
 * A labeled tunnel came online or went away: the tunnel group backends re-match (backends family)
 * and the tunnels they now match, or no longer match, list them.
 */
export async function changeLabeledTunnels(ctx: OperationContext, change: Parameters<typeof changeOnlineTunnels>[1]): Promise<void> {
  for (const { id, before, after } of await changeOnlineTunnels(ctx, change)) await relinkBackend(ctx, id, before, after);
}

/**
 * Tells tunnels which tunnel group backend matches them: backend `backendId` matched the tunnels
 * `before` and now matches `after`. Tunnels that are gone (or were never stored) are skipped.
 */
export async function relinkBackend(ctx: OperationContext, backendId: string, before: readonly string[], after: readonly string[]): Promise<void> {
  const scope = scopeOf(ctx, TUNNEL_KIND);
  for (const id of new Set([...before, ...after])) {
    const wanted = after.includes(id);
    if (before.includes(id) === wanted) continue;
    const record = (await ctx.tx.get(scope, id)) as TunnelRecord | undefined;
    if (!record) continue;
    const others = record.backend_ids.filter((other) => other !== backendId);
    const backend_ids = wanted ? [...others, backendId].sort((a, b) => (ksuidOf(a) < ksuidOf(b) ? -1 : 1)) : others;
    await ctx.tx.put(scope, { ...record, backend_ids });
  }
}
