import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS, fail } from '../../conventions/errors.ts';
import { INSTANCE_SCOPE, type StoreReader } from '../../store.ts';
import { description, metadata, storedId } from '../../conventions/fields.ts';
import { claimUnique, findUnique, releaseUnique, uniqueEntries } from '../../engine/indexes.ts';
import { LIMITS } from '../../limits.ts';
import { defineResource, keepIndexes, scopeOf, stripPathIds, type BaseRecord, type ResourceDefinition } from '../../engine/resource.ts';
import { parseHostPort } from '../backends/index.ts';
import { findReservedAddr } from '../reserved-addrs/index.ts';
import { findReservedDomain } from '../domains/index.ts';
import { syncEdgeEndpoints } from '../endpoints/index.ts';
import { moduleFields, moduleReferences, moduleResponses, patchModules, storeModules, type ModuleSpec, type StoredModules } from './modules.ts';
import { EDGES_ERRORS } from './errors.ts';

/**
 * What the three edge kinds (/edges/tcp, /edges/tls, /edges/https) share: one definition builder
 * (hostports, modules, PATCH rules, response with every module key), the account-wide hostport
 * index, and the save step the module endpoints use.
 *
 * Hostports are `host:port` (DNS name, IPv4 or [IPv6]; port 1–65535, 7112), stored canonical, and
 * unique across all edges of the account (409 7122): a unique index (lib/engine/indexes.ts, kind `edge`,
 * field `hostport`) names the edge that holds each, so the check costs O(hostports sent). A hostport
 * is also unique in the instance, held by `<account>/<edge id>` (as the vendor's reserved domains
 * make it: one account serves a name): the ingress finds the edge of a request's host in one read
 * (`findEdgeByHostport`), and another account's claim is a 409 7122 too.
 *
 * A hostport that is one of the account's reserved addresses, or whose host one of its reserved
 * domains covers, references that reservation (`reservations`), so the reservation is not deleted
 * while the edge uses it (446 for domains). The vendor requires every hostport to be reserved;
 * Burrow does not (yet), so edges on names nobody reserved keep working.
 * Each hostport is also an `edge` endpoint (lib/families/endpoints/edge-endpoints.ts), kept in step here.
 */

export interface EdgeRecord extends BaseRecord {
  readonly hostports: readonly string[];
  /** Ids of the reserved domains and addresses the hostports use (absent in records from before they were tracked). */
  readonly reservations?: readonly string[];
}

/** The reserved addresses and domains of the account that `hostports` use. */
async function reservationsOf(ctx: OperationContext, hostports: readonly string[]): Promise<string[]> {
  const ids = new Set<string>();
  for (const hostport of hostports) {
    const addr = await findReservedAddr(ctx, hostport);
    const domain = addr === undefined ? await findReservedDomain(ctx, hostport.slice(0, hostport.lastIndexOf(':'))) : undefined;
    const id = addr ?? domain?.id;
    if (id !== undefined) ids.add(id);
  }
  return [...ids];
}

/** Who holds a hostport instance-wide: `<account>/<edge id>`. */
const edgeHolder = (account: string, edgeId: string) => `${account}/${edgeId}`;

/** The account and id of the edge whose hostports include `hostport` (canonical `host:port`), in any account: one read. */
export async function findEdgeByHostport(reader: StoreReader, hostport: string): Promise<{ readonly account: string; readonly edgeId: string } | undefined> {
  const holder = await findUnique(reader, INSTANCE_SCOPE, 'edge', 'hostport', hostport);
  if (holder === undefined) return undefined;
  const cut = holder.indexOf('/');
  return { account: holder.slice(0, cut), edgeId: holder.slice(cut + 1) };
}

/**
 * The hostports TCP edges hold, in every account, with their edge: what an ingress listens for
 * (one range read of the instance-wide hostport index, at most `ingress_tcp_edge_ports` of them).
 */
export async function tcpEdgeHostports(reader: StoreReader): Promise<{ readonly hostport: string; readonly account: string; readonly edgeId: string }[]> {
  const held = await uniqueEntries(reader, INSTANCE_SCOPE, 'edge', 'hostport', Number.POSITIVE_INFINITY);
  const tcp = held.filter((entry) => entry.recordId.includes('/edgtcp_')).slice(0, LIMITS.ingress_tcp_edge_ports.value);
  return tcp.map(({ value, recordId }) => ({ hostport: value, account: recordId.slice(0, recordId.indexOf('/')), edgeId: recordId.slice(recordId.indexOf('/') + 1) }));
}

const EDGE_LABELS: Record<string, string> = { edgtcp: 'TCP edge', edgtls: 'TLS edge', edghts: 'HTTPS edge' };

/** A kind-specific hostport rule (HTTPS edges: port 443). */
export type HostportRule = (host: string, port: number, field: string) => void;

/**
 * Claims `requested` for `edgeId` (which held `previous`): validates each, refuses duplicates and
 * hostports another edge holds, and moves the index entries. Returns the canonical list.
 */
async function claimHostports(ctx: OperationContext, edgeId: string, previous: readonly string[], requested: readonly string[], rule?: HostportRule, listened?: boolean): Promise<string[]> {
  const next: string[] = [];
  for (const [index, text] of requested.entries()) {
    const field = `hostports[${index}]`;
    const parsed = parseHostPort(text);
    if (!parsed.ok && parsed.reason === 'port') throw new ApiError(EDGES_ERRORS.HOSTPORT_PORT_INVALID, `${field}: the port of ${JSON.stringify(text)} is not in range 1-65535`);
    if (!parsed.ok) fail('INVALID_FIELD', `${field}: must be host:port with a DNS name, IPv4 or [IPv6] host (got ${JSON.stringify(text)})`);
    rule?.(parsed.host, parsed.port, field);
    if (next.includes(parsed.text)) fail('INVALID_FIELD', `${field}: ${parsed.text} is listed twice`);
    const holder = await findUnique(ctx.tx, ctx.account, 'edge', 'hostport', parsed.text);
    if (holder !== undefined && holder !== edgeId) {
      throw new ApiError(EDGES_ERRORS.HOSTPORT_IN_USE, `${field}: ${parsed.text} is already used by ${EDGE_LABELS[holder.slice(0, holder.indexOf('_'))] ?? 'edge'} '${holder}'`, {
        hostport: parsed.text,
        used_by: holder,
      });
    }
    next.push(parsed.text);
  }
  for (const hostport of previous) {
    if (next.includes(hostport)) continue;
    await releaseUnique(ctx.tx, ctx.account, 'edge', 'hostport', hostport, edgeId);
    await releaseUnique(ctx.tx, INSTANCE_SCOPE, 'edge', 'hostport', hostport, edgeHolder(ctx.account, edgeId));
  }
  for (const [index, hostport] of next.entries()) {
    await claimUnique(ctx.tx, ctx.account, 'edge', 'hostport', hostport, edgeId);
    if ((await claimUnique(ctx.tx, INSTANCE_SCOPE, 'edge', 'hostport', hostport, edgeHolder(ctx.account, edgeId))) !== undefined) {
      throw new ApiError(EDGES_ERRORS.HOSTPORT_IN_USE, `hostports[${index}]: ${hostport} is already used by an edge of another account`, { hostport });
    }
  }
  await syncEdgeEndpoints(ctx, edgeId, next);
  // The ingress of this process listens on TCP edges' ports: it looks again once the change is committed.
  if (listened && (next.length !== previous.length || next.some((hostport, i) => hostport !== previous[i]))) ctx.afterCommit(() => ctx.services.tcpPorts.edgesChanged());
  return next;
}

/** An edge kind: a resource definition that also knows its module specs and cross-module rule. */
export interface EdgeDefinition<R extends EdgeRecord = EdgeRecord> extends ResourceDefinition<R> {
  readonly modules: readonly ModuleSpec[];
  /** Refuses module combinations that cannot work together; `changed` names the fields being set. */
  readonly checkModules?: (record: R, changed: readonly string[]) => void;
}

export interface EdgeKindOptions<R extends EdgeRecord> {
  readonly prefix: string;
  readonly name: string;
  readonly label: string;
  readonly kind: string;
  readonly path: string;
  readonly listKey: string;
  readonly modules: readonly ModuleSpec[];
  readonly hostportRule?: HostportRule;
  /** Whether an ingress listens on the hostports' ports (TCP edges), so it is told of changes. */
  readonly listened?: boolean;
  readonly checkModules?: (record: R, changed: readonly string[]) => void;
  /** Fields a new edge starts with besides hostports and modules (HTTPS: `routes: []`). */
  readonly initial?: () => Record<string, unknown>;
  /** Response fields besides hostports and modules (HTTPS: `routes`). */
  readonly respondExtra?: (ctx: OperationContext, record: R) => Record<string, unknown>;
  /** Cleanup of what the edge owns besides its hostports (HTTPS: its routes' references). */
  readonly onDelete?: (ctx: OperationContext, record: R) => Promise<void>;
}

const hostportList = v.optional(v.nullable(v.array(v.string())));

/**
 * Builds an edge kind. Create: hostports ([] when not sent) and modules (unset when absent or
 * null). PATCH: hostports replaced when sent; a module that is sent replaces the stored one whole,
 * absent ones stay, and null is refused (modules are removed only by their DELETE endpoint).
 */
export function defineEdge<R extends EdgeRecord>(options: EdgeKindOptions<R>): EdgeDefinition<R> {
  const common = { description: v.optional(description), metadata: v.optional(metadata), hostports: hostportList, ...moduleFields(options.modules) };
  const schema = v.strictObject(common);
  const definition = defineResource<R, typeof schema, typeof schema>({
    name: options.name,
    label: options.label,
    kind: options.kind,
    prefix: options.prefix,
    path: options.path,
    listKey: options.listKey,
    notFoundError: EDGES_ERRORS.EDGE_NOT_FOUND,
    createSchema: schema,
    updateSchema: schema,
    storedFields: {
      hostports: v.array(v.string()),
      reservations: v.optional(v.array(storedId('rd', 'ra'))),
      // Modules are kept in the form their `store` makes; their responses are checked by rendering.
      ...Object.fromEntries(options.modules.map((spec) => [spec.name, v.nullable(v.record(v.string(), v.unknown()))])),
    },
    references: (record) => [...moduleReferences(options.modules, record), ...(record.reservations ?? [])],
    async create(ctx, input, base) {
      const modules = await storeModules(ctx, options.modules, input);
      const record = { ...base, ...options.initial?.(), ...modules, hostports: [] as string[] } as unknown as R;
      options.checkModules?.(record, Object.keys(modules).filter((name) => modules[name] !== null));
      const hostports = await claimHostports(ctx, base.id, [], (input.hostports as string[] | null | undefined) ?? [], options.hostportRule, options.listened);
      return { ...record, hostports, reservations: await reservationsOf(ctx, hostports) };
    },
    async update(ctx, record, patch) {
      const modules: StoredModules = await patchModules(ctx, options.modules, patch, `${options.path}/${record.id}`);
      const next = { ...record, ...modules } as R;
      options.checkModules?.(next, Object.keys(modules));
      if (patch.hostports === undefined) return next;
      const hostports = await claimHostports(ctx, record.id, record.hostports, (patch.hostports as string[] | null) ?? [], options.hostportRule, options.listened);
      return { ...next, hostports, reservations: await reservationsOf(ctx, hostports) };
    },
    toResponse: (ctx, record, base) => ({
      ...base,
      hostports: [...record.hostports],
      ...moduleResponses(ctx, options.modules, record, record.id),
      ...options.respondExtra?.(ctx, record),
    }),
    async beforeDelete(ctx, record) {
      await claimHostports(ctx, record.id, record.hostports, [], undefined, options.listened);
      await options.onDelete?.(ctx, record);
    },
  });
  return { ...definition, modules: options.modules, ...(options.checkModules ? { checkModules: options.checkModules } : {}) };
}

/** Stores an edge whose module changed through a module endpoint, keeping the reverse index in step. */
export async function saveEdge<R extends EdgeRecord>(ctx: OperationContext, def: EdgeDefinition<R>, previous: R, next: R): Promise<void> {
  await ctx.tx.put(scopeOf(ctx, def.kind), next);
  await keepIndexes(ctx, def, previous, next);
}

/**
 * Drops `id` and `edge_id` from a body when they equal the path (the official TS client sends
 * them in PATCH and module PUT bodies). A different `edge_id` is 7110; a different `id` is 400.
 */
export function stripEdgeIds(body: unknown, params: Readonly<Record<string, string>>): unknown {
  const edgeId = (body as Record<string, unknown> | null)?.edge_id;
  if (params.edge_id !== undefined && edgeId !== undefined && edgeId !== params.edge_id) {
    throw new ApiError(EDGES_ERRORS.ROUTE_EDGE_MISMATCH, `edge_id: ${JSON.stringify(edgeId)} is not this route's edge ('${params.edge_id}'); leave it out or send the edge id of the path`);
  }
  return stripPathIds(body ?? {}, params);
}
