import type { OperationContext } from '../../engine/context.ts';
import { ApiError } from '../../conventions/errors.ts';
import { type BaseRecord } from '../../engine/resource.ts';
import { isDnsName } from '../../conventions/acl.ts';
import { isIpAddress } from '../../conventions/cidr.ts';
import { ENDPOINTS_ERRORS } from './errors.ts';

/**
 * What every endpoint is: its record, its URL rules and the url index, shared by the three types.
 */

export const ENDPOINT_KIND = 'endpoint';

export const SCHEMES = ['http', 'https', 'tls', 'tcp'] as const;
export const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443, tls: 443 };
export const BINDINGS: readonly Binding[] = ['public', 'internal', 'kubernetes'];
export const UPSTREAM_PROTOCOLS = ['http1', 'http2'];

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

/**
 * Reads an endpoint URL (see the file comment for the rules); throws the vendor's
 * 18001/18003/18022.
 */
export function parseEndpointUrl(text: string, field = 'url', options: { readonly ipHost?: boolean } = {}): EndpointUrl {
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
  const hostPort = /^([^:]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,10}))?$/.exec(authority);
  if (!hostPort) invalid(authority.includes(':') ? 'the port must be a number from 1 to 65535' : 'needs a host', authority.includes(':') ? ENDPOINTS_ERRORS.ENDPOINT_PORT_INVALID : ENDPOINTS_ERRORS.ENDPOINT_URL_INVALID);
  const host = hostPort![1]!.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  const bare = host.startsWith('*.') ? host.slice(2) : host;
  const ip = isIpAddress(host);
  if (ip ? !options.ipHost : !isDnsName(bare) || /^[\d.]+$/.test(bare)) invalid('the host must be a DNS name (a leading *. is allowed)');
  let port = DEFAULT_PORTS[scheme];
  if (hostPort![2] !== undefined) {
    port = Number(hostPort![2]);
    if (!(port >= 1 && port <= 65535)) invalid('the port must be a number from 1 to 65535', ENDPOINTS_ERRORS.ENDPOINT_PORT_INVALID);
  }
  if (port === undefined) invalid(`a ${scheme} URL needs a port`, ENDPOINTS_ERRORS.ENDPOINT_PORT_INVALID);
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}${port === DEFAULT_PORTS[scheme] ? '' : `:${port}`}`;
  return { url, scheme, host, port: port! };
}


/**
 * Whether `host` is an internal endpoint's (`api.internal`): reached only through forward-internal,
 * never by clients, and needing no reserved domain. The service zone (`burrow.internal`) is public.
 */
export function isInternalHost(host: string, serviceZone: string): boolean {
  return host.endsWith('.internal') && host !== serviceZone && !host.endsWith(`.${serviceZone}`);
}

/** Pair index (url, endpoint id): every endpoint under its url, for the list's `url` filter. */
export const byUrl = (ctx: OperationContext) => ({ account: ctx.account, kind: '_endpoint_url' });
