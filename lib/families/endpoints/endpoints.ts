import * as v from 'valibot';
import type { Operation, OperationContext, OperationInput } from '../../context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { CONNECTION_PHASES, TRAFFIC_POLICY_PHASES, trafficPolicyProblem } from '../../conventions/traffic-policy.ts';
import { coded, description, metadata, ownerId, rfc3339, storedId, storedRef, zeroIsUnset } from '../../conventions/fields.ts';
import { listEnvelope, parsePageRequest, type QueryParams } from '../../conventions/paging.ts';
import { absoluteUri, makeRef, type Ref } from '../../conventions/refs.ts';
import { addPair, claimUnique, findUnique, membersOf, releaseUnique, removePair } from '../../indexes.ts';
import { ownerRef } from '../../owners.ts';
import { defineResource, listRecords, respond, scopeOf, type BaseRecord } from '../../resource.ts';
import { INSTANCE_SCOPE } from '../../store.ts';
import { compileListFilter } from '../../list-filter.ts';
import { isDnsName } from '../../conventions/acl.ts';
import { RESERVED_ADDR_KIND } from '../reserved-addrs/index.ts';
import { findReservedDomain } from '../domains/index.ts';
import { ENDPOINTS_ERRORS } from './errors.ts';

/**
 * Endpoints (/endpoints): where traffic enters. Three types:
 *
 * - `agent`: one per domain or address tunnel of a simulated agent (lib/resources/tunnels.ts), with
 *   the tunnel's KSUID (`tn_X` ↔ `ep_X`), its session, `upstream_url` (the tunnel's `forwards_to`)
 *   and the binding `public`. They come and go with their agent and are read-only: PATCH and
 *   DELETE answer 400 9040 (stop the agent instead). The 0.11.0 client's documentation calls these
 *   `ephemeral`; the vendor's current API and its list filters say `agent`.
 * - `edge`: one per hostport of a TCP, TLS or HTTPS edge (`tcp://`, `tls://`, `https://` urls), with
 *   the `edge` Ref; they follow the edge's hostports and are read-only like agent endpoints.
 * - `cloud`: created through the API (POST, 0.13+ clients) and kept until deleted. `url` is
 *   `scheme://host[:port]` with scheme http, https, tls or tcp (18022), a DNS host (a leading `*.`
 *   allowed), no path, query or credentials (18001), and a port where the scheme has no default
 *   (tcp; 18003); it is stored canonical (lower-cased, default port dropped). `bindings` holds one
 *   of `public`, `internal`, `kubernetes` (default: `internal` for a `.internal` host, else
 *   `public`); only `internal` endpoints may and must use `.internal` hosts (9029; names in the
 *   service's own zone `burrow.internal` are public, like the vendor's `ngrok.app`). A public
 *   endpoint serves on a reserved domain of the account (http, https, tls) or a reserved address
 *   (tcp), 9041 otherwise, and references it: such a domain is not deleted while used (446). A
 *   cloud URL is unique in the account (409 18009) and a `public` one in the whole instance.
 *   `traffic_policy` (a JSON or YAML document) is required: a cloud
 *   endpoint does nothing else. `upstream_protocol` is `http1` or `http2` when given.
 *
 * The list takes `id` and `url` filters (0.17 clients; repeated or comma-separated, either one
 * matches; both given, an endpoint must match both), and paging keeps them in `next_page_uri`. A
 * url filter is one index read per url: a pair index (url → endpoint ids) holds every endpoint.
 */

export const ENDPOINT_KIND = 'endpoint';

const SCHEMES = ['http', 'https', 'tls', 'tcp'] as const;
const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443, tls: 443 };
const BINDINGS: readonly Binding[] = ['public', 'internal', 'kubernetes'];
const UPSTREAM_PROTOCOLS = ['http1', 'http2'];

export type EndpointType = 'agent' | 'cloud' | 'edge';
export type Binding = 'public' | 'internal' | 'kubernetes';

export interface EndpointRecord extends BaseRecord {
  readonly type: EndpointType;
  readonly updated_at: string;
  readonly url: string;
  readonly scheme: string;
  readonly host: string;
  readonly port: number;
  readonly region: string;
  readonly bindings: readonly Binding[];
  readonly traffic_policy: string;
  readonly upstream_url: string;
  readonly upstream_protocol: string;
  readonly pooling_enabled: boolean;
  readonly owner_id: string;
  readonly tunnel_id: string | null;
  readonly session_id: string | null;
  /** The reserved domain (http, https, tls) or address (tcp) a public cloud endpoint serves on. */
  readonly domain_id?: string | null;
  readonly tcp_addr_id?: string | null;
  /** The edge whose hostport an `edge` endpoint is. */
  readonly edge_id?: string | null;
}

/** A parsed endpoint URL in canonical form. */
export interface EndpointUrl {
  readonly url: string;
  readonly scheme: string;
  readonly host: string;
  readonly port: number;
}

/** Reads an endpoint URL (see the file comment for the rules); throws the vendor's 18001/18003/18022. */
export function parseEndpointUrl(text: string, field = 'url'): EndpointUrl {
  const invalid = (why: string, spec = ENDPOINTS_ERRORS.ENDPOINT_URL_INVALID): never => {
    throw new ApiError(spec, `${field}: ${why} (got ${JSON.stringify(text)})`);
  };
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(\/?)$/.exec(text);
  if (!match) {
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) invalid('must start with a scheme: http://, https://, tls:// or tcp://', ENDPOINTS_ERRORS.ENDPOINT_SCHEME_INVALID);
    invalid('must be scheme://host[:port] without a path, query or fragment');
  }
  const scheme = match![1]!.toLowerCase();
  if (!(SCHEMES as readonly string[]).includes(scheme)) invalid(`the scheme must be one of ${SCHEMES.join(', ')}`, ENDPOINTS_ERRORS.ENDPOINT_SCHEME_INVALID);
  const authority = match![2]!;
  if (authority.includes('@')) invalid('must not carry credentials');
  const hostPort = /^([^:]+)(?::(\d{1,10}))?$/.exec(authority);
  if (!hostPort) invalid(authority.includes(':') ? 'the port must be a number from 1 to 65535' : 'needs a host', authority.includes(':') ? ENDPOINTS_ERRORS.ENDPOINT_PORT_INVALID : ENDPOINTS_ERRORS.ENDPOINT_URL_INVALID);
  const host = hostPort![1]!.toLowerCase();
  const bare = host.startsWith('*.') ? host.slice(2) : host;
  if (!isDnsName(bare) || /^[\d.]+$/.test(bare)) invalid('the host must be a DNS name (a leading *. is allowed)');
  let port = DEFAULT_PORTS[scheme];
  if (hostPort![2] !== undefined) {
    port = Number(hostPort![2]);
    if (!(port >= 1 && port <= 65535)) invalid('the port must be a number from 1 to 65535', ENDPOINTS_ERRORS.ENDPOINT_PORT_INVALID);
  }
  if (port === undefined) invalid(`a ${scheme} URL needs a port`, ENDPOINTS_ERRORS.ENDPOINT_PORT_INVALID);
  const url = `${scheme}://${host}${port === DEFAULT_PORTS[scheme] ? '' : `:${port}`}`;
  return { url, scheme, host, port: port! };
}

/**
 * Checks a cloud endpoint's traffic policy with the shared validator (lib/conventions/traffic-policy.ts):
 * tcp and tls endpoints carry connections only (`on_tcp_connect`); http and https endpoints also
 * run the HTTP phases. Checked on create, when the policy changes and when the url's scheme does.
 */
function checkTrafficPolicy(text: string, scheme: string, field = 'traffic_policy'): string {
  if (text.trim() === '') throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_TRAFFIC_POLICY_INVALID, `${field}: a cloud endpoint needs a traffic policy (a JSON or YAML document)`);
  const phases = scheme === 'tcp' || scheme === 'tls' ? CONNECTION_PHASES : TRAFFIC_POLICY_PHASES;
  const problem = trafficPolicyProblem(text, { phases });
  if (problem) throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_TRAFFIC_POLICY_INVALID, `${field}: ${problem}`);
  return text;
}

const endpointType = v.pipe(
  v.string(),
  v.check((type) => type === 'cloud', (issue) => coded(ENDPOINTS_ERRORS.ENDPOINT_TYPE_INVALID, `only cloud endpoints can be created (got ${JSON.stringify(issue.input)})`)),
);
const bindingList = v.array(v.string());
const upstreamProtocol = v.pipe(
  v.string(),
  v.check((value) => UPSTREAM_PROTOCOLS.includes(value), (issue) => `must be one of ${UPSTREAM_PROTOCOLS.join(', ')} (got ${JSON.stringify(issue.input)})`),
);

/**
 * Zero values the newer clients always send count as not given where those clients default them so
 * (docs/compatibility.md, "Zero values"): `type`, `bindings`, `upstream_protocol` on create, `pooling_enabled` on
 * update (the Python client sends `false` on every update).
 */
const CloudEndpointCreate = v.strictObject({
  url: v.string(),
  type: zeroIsUnset(endpointType),
  traffic_policy: v.string(),
  description: v.optional(description),
  metadata: v.optional(metadata),
  bindings: zeroIsUnset(bindingList),
  pooling_enabled: v.optional(v.boolean()),
  upstream_protocol: zeroIsUnset(upstreamProtocol),
});

const CloudEndpointUpdate = v.strictObject({
  url: v.optional(v.string()),
  traffic_policy: v.optional(v.string()),
  description: v.optional(description),
  metadata: v.optional(metadata),
  bindings: v.optional(bindingList),
  pooling_enabled: v.optional(v.pipe(v.boolean(), v.transform((value) => (value ? true : undefined)))),
  upstream_protocol: zeroIsUnset(upstreamProtocol),
});

/** A `.internal` host outside the service's own zone (whose names are public, like the vendor's). */
function isInternalHost(ctx: OperationContext, host: string): boolean {
  const zone = ctx.services.simulation.serviceZone;
  return host.endsWith('.internal') && host !== zone && !host.endsWith(`.${zone}`);
}

function checkBindings(ctx: OperationContext, requested: readonly string[] | undefined, host: string, field = 'bindings'): Binding[] {
  const internalHost = isInternalHost(ctx, host);
  const bindings = requested ?? [internalHost ? 'internal' : 'public'];
  if (bindings.length !== 1) throw new ApiError(ERRORS.INVALID_FIELD, `${field}: must hold exactly one binding, one of ${BINDINGS.join(', ')} (got ${bindings.length})`);
  const binding = bindings[0] as Binding;
  if (!BINDINGS.includes(binding)) throw new ApiError(ERRORS.INVALID_FIELD, `${field}[0]: must be one of ${BINDINGS.join(', ')} (got ${JSON.stringify(binding)})`);
  if (binding === 'internal' && !internalHost) throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_INTERNAL_HOST, `${field}: an endpoint with the internal binding needs a url whose host ends in .internal (got ${host})`);
  if (binding !== 'internal' && internalHost) throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_INTERNAL_HOST, `${field}: a .internal host (${host}) is only reachable with the internal binding (got ${binding})`);
  return [binding];
}

/** Pair index (url, endpoint id): every endpoint under its url, for the list's `url` filter. */
const byUrl = (ctx: OperationContext) => ({ account: ctx.account, kind: '_endpoint_url' });
/** Public cloud URLs are unique in the instance: held by `<account>/<endpoint id>`. */
const holderOf = (account: string, id: string) => `${account}/${id}`;

/** Claims a cloud endpoint's url: unique in the account, and for `public` ones in the instance. */
async function claimUrl(ctx: OperationContext, record: EndpointRecord): Promise<void> {
  const holder = await claimUnique(ctx.tx, ctx.account, ENDPOINT_KIND, 'cloud_url', record.url, record.id);
  if (holder !== undefined) {
    throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_URL_TAKEN, `url: this account already has cloud endpoint '${holder}' on ${record.url}`, { url: record.url, used_by: holder });
  }
  if (record.bindings[0] === 'public') {
    const other = await claimUnique(ctx.tx, INSTANCE_SCOPE, ENDPOINT_KIND, 'public_url', record.url, holderOf(ctx.account, record.id));
    if (other !== undefined) throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_URL_TAKEN, `url: ${record.url} is served by another account`, { url: record.url });
  }
  await addPair(ctx.tx, byUrl(ctx), record.url, record.id);
}

async function releaseUrl(ctx: OperationContext, record: EndpointRecord): Promise<void> {
  await releaseUnique(ctx.tx, ctx.account, ENDPOINT_KIND, 'cloud_url', record.url, record.id);
  if (record.bindings[0] === 'public') await releaseUnique(ctx.tx, INSTANCE_SCOPE, ENDPOINT_KIND, 'public_url', record.url, holderOf(ctx.account, record.id));
  await removePair(ctx.tx, byUrl(ctx), record.url, record.id);
}

/**
 * What a public cloud endpoint serves on: a reserved domain of the account covering its host (http,
 * https, tls; the exact name or a wildcard one label up) or its reserved address (tcp). The
 * endpoint references it, so the domain or address is not deleted while the endpoint uses it
 * (446 for domains). Internal and kubernetes endpoints need neither.
 */
async function reservationOf(ctx: OperationContext, record: EndpointRecord): Promise<{ domain_id: string | null; tcp_addr_id: string | null }> {
  if (record.bindings[0] !== 'public') return { domain_id: null, tcp_addr_id: null };
  if (record.scheme === 'tcp') {
    const addr = `${record.host}:${record.port}`;
    const holder = await findUnique(ctx.tx, INSTANCE_SCOPE, RESERVED_ADDR_KIND, 'addr', addr);
    if (holder?.startsWith(`${ctx.account}/`)) return { domain_id: null, tcp_addr_id: holder.slice(ctx.account.length + 1) };
    throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_NOT_RESERVED, `url: ${addr} is not a reserved address of this account; a public tcp endpoint needs one (POST /reserved_addrs)`, { url: record.url });
  }
  const domain = await findReservedDomain(ctx, record.host);
  if (domain) return { domain_id: domain.id, tcp_addr_id: null };
  throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_NOT_RESERVED, `url: ${record.host} is not a reserved domain of this account; a public endpoint needs one (POST /reserved_domains)`, { url: record.url });
}

function refuseAgentEndpoint(record: EndpointRecord, verb: string): void {
  if (record.type === 'cloud') return;
  const why = record.type === 'edge' ? `an edge endpoint: it exists while edge '${record.edge_id}' has hostport ${record.host}:${record.port}` : `an agent endpoint: it exists while its agent runs tunnel '${record.tunnel_id}'`;
  throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_NOT_CLOUD, `endpoint '${record.id}' is ${why}, and only cloud endpoints can be ${verb}`, {
    id: record.id,
    type: record.type,
  });
}


export const endpoints = defineResource<EndpointRecord, typeof CloudEndpointCreate, typeof CloudEndpointUpdate>({
  name: 'endpoints',
  label: 'endpoint',
  kind: ENDPOINT_KIND,
  prefix: 'ep',
  filterable: true,
  operations: ['create', 'get', 'update', 'delete'],
  createSchema: CloudEndpointCreate,
  storedFields: {
    type: v.picklist(['agent', 'cloud', 'edge']),
    updated_at: rfc3339,
    scheme: v.picklist(SCHEMES),
    host: v.string(),
    port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)),
    region: v.string(),
    upstream_url: v.string(),
    upstream_protocol: v.picklist(['', ...UPSTREAM_PROTOCOLS]),
    owner_id: ownerId,
    tunnel_id: v.nullable(storedRef('tn')),
    session_id: v.nullable(storedRef('ts')),
    domain_id: v.optional(v.nullable(storedId('rd'))),
    tcp_addr_id: v.optional(v.nullable(storedId('ra'))),
    edge_id: v.optional(v.nullable(storedRef('edgtcp', 'edgtls', 'edghts'))),
  },
  updateSchema: CloudEndpointUpdate,
  async create(ctx, input, base) {
    const url = parseEndpointUrl(input.url);
    const record: EndpointRecord = {
      ...base,
      type: 'cloud',
      updated_at: base.created_at,
      ...url,
      region: 'global',
      bindings: checkBindings(ctx, input.bindings, url.host),
      traffic_policy: checkTrafficPolicy(input.traffic_policy, url.scheme),
      upstream_url: '',
      upstream_protocol: input.upstream_protocol ?? '',
      pooling_enabled: input.pooling_enabled ?? false,
      owner_id: ctx.principal.ownerId,
      tunnel_id: null,
      session_id: null,
    };
    const reserved = { ...record, ...(await reservationOf(ctx, record)) };
    await claimUrl(ctx, reserved);
    return reserved;
  },
  async update(ctx, record, patch) {
    refuseAgentEndpoint(record, 'updated');
    const url = patch.url === undefined ? record : parseEndpointUrl(patch.url);
    const next: EndpointRecord = {
      ...record,
      ...(patch.url === undefined ? {} : { url: url.url, scheme: url.scheme, host: url.host, port: url.port }),
      bindings: patch.bindings !== undefined ? checkBindings(ctx, patch.bindings, url.host) : patch.url !== undefined ? checkBindings(ctx, record.bindings, url.host) : record.bindings,
      ...(patch.traffic_policy === undefined && url.scheme === record.scheme ? {} : { traffic_policy: checkTrafficPolicy(patch.traffic_policy ?? record.traffic_policy, url.scheme) }),
      ...(patch.upstream_protocol === undefined ? {} : { upstream_protocol: patch.upstream_protocol }),
      ...(patch.pooling_enabled === undefined ? {} : { pooling_enabled: patch.pooling_enabled }),
      updated_at: formatTime(ctx.clock.now()),
    };
    if (next.url === record.url && next.bindings[0] === record.bindings[0]) return next;
    const reserved = { ...next, ...(await reservationOf(ctx, next)) };
    await releaseUrl(ctx, record);
    await claimUrl(ctx, reserved);
    return reserved;
  },
  references: (record) => [record.domain_id, record.tcp_addr_id].filter((id): id is string => typeof id === 'string'),
  async beforeDelete(ctx, record) {
    refuseAgentEndpoint(record, 'deleted');
    await releaseUrl(ctx, record);
  },
  toResponse: (ctx, record, base) => {
    const hostport = `${record.host}:${record.port}`;
    return {
      id: record.id,
      region: record.region,
      created_at: record.created_at,
      updated_at: record.updated_at,
      public_url: record.bindings[0] === 'public' ? record.url : '',
      proto: record.scheme,
      scheme: record.scheme,
      hostport,
      host: record.host,
      port: record.port,
      type: record.type,
      metadata: record.metadata,
      description: record.description,
      domain: record.domain_id ? makeRef(ctx.baseUrl, '/reserved_domains', record.domain_id) : null,
      tcp_addr: record.tcp_addr_id ? makeRef(ctx.baseUrl, '/reserved_addrs', record.tcp_addr_id) : null,
      tunnel: record.tunnel_id === null ? null : makeRef(ctx.baseUrl, '/tunnels', record.tunnel_id),
      edge: record.edge_id ? makeRef(ctx.baseUrl, EDGE_KINDS[record.edge_id.slice(0, record.edge_id.indexOf('_'))]?.path ?? '/edges', record.edge_id) : null,
      upstream_url: record.upstream_url,
      upstream_protocol: record.upstream_protocol,
      url: record.url,
      principal: record.owner_id ? ownerRef(ctx.baseUrl, record.owner_id) : null,
      traffic_policy: record.traffic_policy,
      bindings: [...record.bindings],
      tunnel_session: record.session_id === null ? null : makeRef(ctx.baseUrl, '/tunnel_sessions', record.session_id),
      uri: base.uri,
      name: '',
      pooling_enabled: record.pooling_enabled,
    };
  },
});

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

/** Stores the agent endpoint of a domain or address tunnel that just started. */
export async function addAgentEndpoint(ctx: OperationContext, tunnel: EndpointTunnel, ownerId: string): Promise<void> {
  const url = parseEndpointUrl(tunnel.public_url);
  const record: EndpointRecord = {
    id: tunnel.endpoint_id!,
    created_at: tunnel.started_at,
    updated_at: tunnel.started_at,
    description: '',
    metadata: tunnel.metadata,
    type: 'agent',
    ...url,
    region: tunnel.region,
    bindings: ['public'],
    traffic_policy: '',
    upstream_url: tunnel.forwards_to,
    upstream_protocol: url.scheme === 'tcp' ? '' : 'http1',
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

const EDGE_KINDS: Readonly<Record<string, { scheme: string; path: string }>> = {
  edgtcp: { scheme: 'tcp', path: '/edges/tcp' },
  edgtls: { scheme: 'tls', path: '/edges/tls' },
  edghts: { scheme: 'https', path: '/edges/https' },
};

/** Pair index (edge id, endpoint id): the endpoints of an edge's hostports. */
const ofEdge = (ctx: OperationContext) => ({ account: ctx.account, kind: '_edge_endpoint' });

/**
 * Keeps the `edge` endpoints of edge `edgeId` in step with its hostports (canonical `host:port`):
 * one endpoint per hostport; a hostport that goes takes its endpoint along. Called by the edges on
 * every hostport change, in the same transaction. O(hostports of the edge).
 */
export async function syncEdgeEndpoints(ctx: OperationContext, edgeId: string, hostports: readonly string[]): Promise<void> {
  const kind = EDGE_KINDS[edgeId.slice(0, edgeId.indexOf('_'))];
  if (!kind) return;
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
      url: `${kind.scheme}://${host}${port === DEFAULT_PORTS[kind.scheme] ? '' : `:${port}`}`,
      scheme: kind.scheme,
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

const FILTERS = ['id', 'url'] as const;
const LIST_PARAMS = ['before_id', 'beforeId', 'limit', 'filter', ...FILTERS];

/** The values of a list filter: repeated parameters and comma-separated lists, empty ones dropped. */
function filterValues(value: QueryParams[string]): string[] {
  if (value === undefined) return [];
  return (typeof value === 'string' ? [value] : [...value]).flatMap((item) => item.split(',')).map((item) => item.trim()).filter((item) => item !== '');
}

/** A url filter matches the stored (canonical) url; a parseable one is canonicalised first. */
function canonicalUrl(text: string): string {
  try {
    return parseEndpointUrl(text).url;
  } catch {
    return text;
  }
}

/**
 * One page of endpoints, newest first. Without filters it is the engine's list; with `id`/`url`,
 * the candidates are read by id and through the url index (O(filter values + matches)), then paged.
 */
export async function listEndpoints(ctx: OperationContext, query: QueryParams = {}): Promise<Record<string, unknown>> {
  const { id, url, ...paging } = query;
  const page = parsePageRequest(paging, LIST_PARAMS);
  const ids = filterValues(id);
  const urls = filterValues(url).map(canonicalUrl);
  if (ids.length === 0 && urls.length === 0) return listRecords(ctx, endpoints, paging);
  let candidates = new Set(ids);
  if (urls.length > 0) {
    const matches = new Set<string>();
    for (const one of new Set(urls)) for (const member of await membersOf(ctx.tx, byUrl(ctx), one)) matches.add(member);
    candidates = ids.length === 0 ? matches : new Set(ids.filter((candidate) => matches.has(candidate)));
  }
  const inPage = [...candidates].filter((candidate) => page.beforeId === undefined || candidate < page.beforeId).sort((a, b) => (a < b ? 1 : -1));
  const matches = page.filter === undefined ? undefined : compileListFilter(ctx, page.filter);
  const records: { id: string; response: Record<string, unknown> }[] = [];
  for (const candidate of inPage) {
    if (records.length > page.limit) break;
    const record = (await ctx.tx.get(scopeOf(ctx, ENDPOINT_KIND), candidate)) as EndpointRecord | undefined;
    if (!record) continue;
    const response = respond(ctx, endpoints, record);
    if (matches === undefined || matches(response)) records.push({ id: record.id, response });
  }
  const items = records.slice(0, page.limit);
  const listUri = absoluteUri(ctx.baseUrl, endpoints.path);
  const envelope = listEnvelope(endpoints.listKey, items.map((item) => item.response), listUri, page, items.at(-1)?.id, records.length > page.limit);
  if (typeof envelope.next_page_uri === 'string') {
    const keep = new URLSearchParams([...ids.map((value) => ['id', value]), ...filterValues(url).map((value) => ['url', value])]);
    envelope.next_page_uri = `${envelope.next_page_uri}&${keep.toString()}`;
  }
  return envelope;
}

/** The endpoint list: the engine's other operations come from the definition. */
export const ENDPOINT_OPERATIONS: readonly Operation[] = [
  {
    id: 'endpoints.list',
    tag: 'endpoints',
    method: 'GET',
    path: '/endpoints',
    status: 200,
    mutates: false,
    query: LIST_PARAMS.filter((name) => name !== 'beforeId'),
    // Deprecated by the vendor in its Go client v7.8 in favour of the CEL `filter`; still served.
    deprecatedQuery: ['id', 'url'],
    summary: 'List endpoints (filters: id, url, filter)',
    run: (ctx: OperationContext, input: OperationInput) => listEndpoints(ctx, input.query),
  },
];
