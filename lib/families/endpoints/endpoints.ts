import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { CONNECTION_PHASES, policyRefusal, TRAFFIC_POLICY_PHASES } from '../../conventions/traffic-policy.ts';
import { coded, description, metadata, ownerId, rfc3339, storedId, storedRef, zeroIsUnset } from '../../conventions/fields.ts';
import { makeRef } from '../../conventions/refs.ts';
import { addPair, claimUnique, findUnique, releaseUnique, removePair } from '../../engine/indexes.ts';
import { ownerRef } from '../../engine/owners.ts';
import { defineResource } from '../../engine/resource.ts';
import { INSTANCE_SCOPE, type StoreReader } from '../../store.ts';
import { RESERVED_ADDR_KIND } from '../reserved-addrs/index.ts';
import { findReservedDomain } from '../domains/index.ts';
import { ipPolicyExists } from '../ip-policies/index.ts';
import { ENDPOINTS_ERRORS } from './errors.ts';
import { BINDINGS, byUrl, DEFAULT_PORTS, ENDPOINT_KIND, isInternalHost, parseEndpointUrl, SCHEMES, UPSTREAM_PROTOCOLS, type Binding, type EndpointRecord } from './records.ts';

/**
 * Endpoints (/endpoints): where traffic enters. Three types:
 *
 * - `agent`: one per domain or address tunnel of a simulated agent (lib/families/agents/tunnels.ts), with
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

/**
 * Checks a cloud endpoint's traffic policy with the write-time checker (ctx.services.trafficPolicies):
 * tcp and tls endpoints carry connections only (`on_tcp_connect`); http and https endpoints also
 * run the HTTP phases; as a cloud endpoint's, the policy must answer all traffic itself (2235).
 * Checked on create, when the policy changes and when the url's scheme does. A problem the vendor
 * numbers answers with its number (2200, 2216, 2235 …), any other with 18002.
 */
async function checkTrafficPolicy(ctx: OperationContext, text: string, scheme: string, field = 'traffic_policy'): Promise<string> {
  if (text.trim() === '') throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_TRAFFIC_POLICY_INVALID, `${field}: a cloud endpoint needs a traffic policy (a JSON or YAML document)`);
  const phases = scheme === 'tcp' || scheme === 'tls' ? CONNECTION_PHASES : TRAFFIC_POLICY_PHASES;
  const issue = await ctx.services.trafficPolicies.document(text, { phases, cloudEndpoint: true, ipPolicyExists: (id) => ipPolicyExists(ctx.tx, ctx.account, id) });
  if (issue) throw policyRefusal(issue, field, ENDPOINTS_ERRORS.ENDPOINT_TRAFFIC_POLICY_INVALID);
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

/**
 * A `.internal` host outside the service's own zone (whose names are public, like the vendor's).
 */
function checkBindings(ctx: OperationContext, requested: readonly string[] | undefined, host: string, field = 'bindings'): Binding[] {
  const internalHost = isInternalHost(host, ctx.services.simulation.serviceZone);
  const bindings = requested ?? [internalHost ? 'internal' : 'public'];
  if (bindings.length !== 1) throw new ApiError(ERRORS.INVALID_FIELD, `${field}: must hold exactly one binding, one of ${BINDINGS.join(', ')} (got ${bindings.length})`);
  const binding = bindings[0] as Binding;
  if (!BINDINGS.includes(binding)) throw new ApiError(ERRORS.INVALID_FIELD, `${field}[0]: must be one of ${BINDINGS.join(', ')} (got ${JSON.stringify(binding)})`);
  if (binding === 'internal' && !internalHost) throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_INTERNAL_HOST, `${field}: an endpoint with the internal binding needs a url whose host ends in .internal (got ${host})`);
  if (binding !== 'internal' && internalHost) throw new ApiError(ENDPOINTS_ERRORS.ENDPOINT_INTERNAL_HOST, `${field}: a .internal host (${host}) is only reachable with the internal binding (got ${binding})`);
  return [binding];
}

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

/** Where a request arrived: the scheme it came over and the host name it named. */
export interface CloudEndpointAddress {
  readonly scheme: string;
  readonly host: string;
}

/**
 * The cloud endpoint that serves `address` on the scheme's default port: a public one of any
 * account or, with `account`, one of that account (internal ones included); an exact name first,
 * then a wildcard one label up (`https://*.example.com`). Reads the url indexes claimUrl keeps, so
 * it costs a few reads whatever the number of accounts and endpoints.
 */
export async function findCloudEndpoint(reader: StoreReader, address: CloudEndpointAddress, account?: string): Promise<{ account: string; record: EndpointRecord } | undefined> {
  const port = DEFAULT_PORTS[address.scheme];
  if (port === undefined) return undefined;
  const dot = address.host.indexOf('.');
  const hosts = dot > 0 ? [address.host, `*${address.host.slice(dot)}`] : [address.host];
  for (const host of hosts) {
    const url = `${address.scheme}://${host}`;
    const held = account === undefined ? await findUnique(reader, INSTANCE_SCOPE, ENDPOINT_KIND, 'public_url', url) : await findUnique(reader, account, ENDPOINT_KIND, 'cloud_url', url);
    if (held === undefined) continue;
    const [owner, id] = account === undefined ? [held.slice(0, held.indexOf('/')), held.slice(held.indexOf('/') + 1)] : [account, held];
    const record = (await reader.get({ account: owner, kind: ENDPOINT_KIND }, id)) as EndpointRecord | undefined;
    if (record) return { account: owner, record };
  }
  return undefined;
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
      traffic_policy: await checkTrafficPolicy(ctx, input.traffic_policy, url.scheme),
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
      ...(patch.traffic_policy === undefined && url.scheme === record.scheme ? {} : { traffic_policy: await checkTrafficPolicy(ctx, patch.traffic_policy ?? record.traffic_policy, url.scheme) }),
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
      edge: record.edge_id ? makeRef(ctx.baseUrl, ctx.services.kinds.kindOfId(record.edge_id)?.path ?? '/edges', record.edge_id) : null,
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
