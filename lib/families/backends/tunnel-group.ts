import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { coded, storedRef, zeroIsUnset } from '../../conventions/fields.ts';
import { makeRef } from '../../conventions/refs.ts';
import { allRecords, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { BACKEND_KINDS, backendCommonFields, defineBackend } from './shared.ts';
import type { ErrorSpec } from '../../conventions/errors.ts';
import { BACKENDS_ERRORS } from './errors.ts';

/**
 * Tunnel group backends (/backends/tunnel_group): balance traffic across the online tunnels whose
 * labels include all of the backend's `labels`; `tunnels` lists those tunnels as Refs. Labels are
 * 1–255 characters per key and value, without `=` (an agent binds labels as `key=value`), and at
 * least one is required.
 *
 * Which tunnels are online is told by the agent simulator through `changeOnlineTunnels`: one record
 * per online tunnel, every backend is re-matched when it changes, and a backend created or updated
 * later is matched against it. Until the simulator reports labeled tunnels, `tunnels` is `[]`.
 * Each matched tunnel lists the backend in its own `backends` (lib/families/agents/tunnels.ts), kept in
 * step here on every change of either side.
 */

export interface TunnelGroupBackendRecord extends BaseRecord {
  readonly labels: Readonly<Record<string, string>>;
  readonly tunnel_ids: readonly string[];
}

/** An online tunnel as the agent simulator reports it. */
export interface OnlineTunnel {
  readonly id: string;
  readonly labels: Readonly<Record<string, string>>;
}

const KIND = BACKEND_KINDS.bkdtg.kind;
/** One record per online labeled tunnel, so connects and disconnects of different agents never write the same row. */
const ONLINE = '_online_tunnel';
const MAX_LABEL = 255;

const labelPart = (what: 'key' | 'value', code: ErrorSpec) =>
  v.pipe(
    v.string(),
    v.check((text) => text.length >= 1 && text.length <= MAX_LABEL, (issue) => coded(code, `label ${what}s must be 1 to ${MAX_LABEL} characters (got ${issue.input.length})`)),
    v.check((text) => !text.includes('='), (issue) => coded(BACKENDS_ERRORS.BACKEND_LABEL_EQUALS, `label ${what} ${JSON.stringify(issue.input)} may not contain '='`)),
  );

const labels = v.pipe(
  v.record(labelPart('key', BACKENDS_ERRORS.BACKEND_LABEL_KEY_INVALID), labelPart('value', BACKENDS_ERRORS.BACKEND_LABEL_VALUE_INVALID)),
  v.check((map) => Object.keys(map).length > 0, coded(BACKENDS_ERRORS.BACKEND_LABELS_MISSING, 'a tunnel group backend needs at least one label')),
);

const TunnelGroupCreate = v.strictObject({ ...backendCommonFields, labels });
/** `labels: {}` in an update counts as not sent (zero values, docs/compatibility.md). */
const TunnelGroupUpdate = v.strictObject({ ...backendCommonFields, labels: zeroIsUnset(labels) });

function matching(tunnels: readonly OnlineTunnel[], wanted: Readonly<Record<string, string>>): string[] {
  return tunnels.filter((tunnel) => Object.entries(wanted).every(([key, value]) => tunnel.labels[key] === value)).map((tunnel) => tunnel.id);
}

/** The account's online labeled tunnels, oldest first: every one of them is a candidate for a backend. */
async function onlineTunnels(ctx: OperationContext): Promise<readonly OnlineTunnel[]> {
  return (await allRecords(ctx, ONLINE)).reverse() as unknown as OnlineTunnel[];
}

export const tunnelGroupBackends = defineBackend<TunnelGroupBackendRecord, typeof TunnelGroupCreate, typeof TunnelGroupUpdate>('bkdtg', {
  createSchema: TunnelGroupCreate,
  updateSchema: TunnelGroupUpdate,
  storedFields: { tunnel_ids: v.array(storedRef('tn')) },
  async create(ctx, input, base) {
    return { ...base, labels: input.labels, tunnel_ids: matching(await onlineTunnels(ctx), input.labels) };
  },
  async update(ctx, record, patch) {
    if (patch.labels === undefined) return record;
    return { ...record, labels: patch.labels, tunnel_ids: matching(await onlineTunnels(ctx), patch.labels) };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    labels: { ...record.labels },
    tunnels: record.tunnel_ids.map((id) => makeRef(ctx.baseUrl, '/tunnels', id)),
  }),
});

/** A tunnel group backend whose matched tunnels changed: they were `before` and are `after`. */
export interface Rematched {
  readonly id: string;
  readonly before: readonly string[];
  readonly after: readonly string[];
}

/**
 * Hooks for the agents family: a labeled tunnel came online (`tunnel`) or went away (`goneId`).
 * Re-matches every tunnel group backend of the account, inside the caller's transaction, and
 * answers the backends whose tunnels changed (the agents family relinks its tunnels to them).
 * Cost: O(backends × tunnels).
 */
export async function changeOnlineTunnels(ctx: OperationContext, change: { online?: OnlineTunnel; goneId?: string }): Promise<Rematched[]> {
  const rematched: Rematched[] = [];
  if (change.online) await ctx.tx.put(scopeOf(ctx, ONLINE), { id: change.online.id, labels: { ...change.online.labels } });
  if (change.goneId) await ctx.tx.delete(scopeOf(ctx, ONLINE), change.goneId);
  const tunnels = await onlineTunnels(ctx);
  for (const record of await allRecords<TunnelGroupBackendRecord>(ctx, KIND)) {
    const tunnel_ids = matching(tunnels, record.labels);
    if (tunnel_ids.join() === record.tunnel_ids.join()) continue;
    await ctx.tx.put(scopeOf(ctx, KIND), { ...record, tunnel_ids });
    rematched.push({ id: record.id, before: record.tunnel_ids, after: tunnel_ids });
  }
  return rematched;
}
