import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { description, HTTP_HEADER_NAME, metadata, type Schema } from '../../conventions/fields.ts';
import { makeRef, type Ref } from '../../conventions/refs.ts';
import { defineResource, scopeOf, type BaseRecord, type ResourceDefinition } from '../../engine/resource.ts';
import { isDnsName } from '../../conventions/acl.ts';
import { parseClientAddress } from '../../conventions/cidr.ts';
import { BACKENDS_ERRORS } from './errors.ts';

/**
 * What the five backend kinds (/backends/{weighted,failover,http_response,tunnel_group,static})
 * share: their table (prefix → store kind, path, label), the definition builder that gives every
 * kind the list key `backends`, the 404 6514 and the in-use 409 6502, the lookup of a backend named
 * by id (children of weighted and failover backends, the backend module of edges and routes), the
 * cycle check, and two field rules other families reuse (HTTP header maps, `host:port`).
 */

export const BACKEND_KINDS = {
  bkdwd: { kind: 'weighted_backend', path: '/backends/weighted', label: 'weighted backend', name: 'weighted_backends' },
  bkdfo: { kind: 'failover_backend', path: '/backends/failover', label: 'failover backend', name: 'failover_backends' },
  bkdhr: { kind: 'http_response_backend', path: '/backends/http_response', label: 'HTTP response backend', name: 'http_response_backends' },
  bkdtg: { kind: 'tunnel_group_backend', path: '/backends/tunnel_group', label: 'tunnel group backend', name: 'tunnel_group_backends' },
  bkdsc: { kind: 'static_backend', path: '/backends/static', label: 'static backend', name: 'static_backends' },
} as const;

export type BackendPrefix = keyof typeof BACKEND_KINDS;

/** The schema fields every backend body accepts. */
export const backendCommonFields = { description: v.optional(description), metadata: v.optional(metadata) };

type BackendDefinition<R extends BaseRecord, C extends Schema, U extends Schema> = Omit<ResourceDefinition<R, C, U>, 'name' | 'label' | 'kind' | 'path' | 'listKey' | 'notFoundError' | 'inUseError' | 'prefix'>;

/** A backend kind: the table entry of `prefix` plus the kind's own schemas and hooks. */
export function defineBackend<R extends BaseRecord, C extends Schema = Schema, U extends Schema = Schema>(prefix: BackendPrefix, definition: BackendDefinition<R, C, U>): ResourceDefinition<R, C, U> {
  const entry = BACKEND_KINDS[prefix];
  return defineResource<R, C, U>({
    ...definition,
    name: entry.name,
    label: entry.label,
    kind: entry.kind,
    prefix,
    path: entry.path,
    listKey: 'backends',
    notFoundError: BACKENDS_ERRORS.BACKEND_NOT_FOUND,
    inUseError: BACKENDS_ERRORS.BACKEND_IN_USE,
  });
}

function prefixOf(id: string): BackendPrefix | undefined {
  const prefix = id.slice(0, id.indexOf('_'));
  return Object.hasOwn(BACKEND_KINDS, prefix) ? (prefix as BackendPrefix) : undefined;
}

/** `{ id, uri }` of a backend of any kind. */
export function backendRef(ctx: OperationContext, id: string): Ref {
  return makeRef(ctx.baseUrl, BACKEND_KINDS[prefixOf(id)!].path, id);
}

/**
 * Reads the backend `id` named in request field `field`: 400 6526 when the id is no backend id at
 * all, 404 6501 when no such backend exists in the caller's account.
 */
export async function requireBackend(ctx: OperationContext, id: string, field: string): Promise<BaseRecord> {
  const prefix = prefixOf(id);
  if (!prefix) {
    throw new ApiError(BACKENDS_ERRORS.BACKEND_ID_INVALID, `${field}: '${id}' is not a backend id (expected one of the prefixes ${Object.keys(BACKEND_KINDS).map((p) => `${p}_`).join(', ')})`, { id });
  }
  const record = await ctx.tx.get(scopeOf(ctx, BACKEND_KINDS[prefix].kind), id);
  if (!record) throw new ApiError(BACKENDS_ERRORS.BACKEND_REFERENCE_NOT_FOUND, `${field}: ${BACKEND_KINDS[prefix].label} '${id}' was not found`, { id });
  return record as BaseRecord;
}

/** The child ids of a weighted (map keys) or failover (list) backend; [] for the other kinds. */
function childIds(record: BaseRecord | undefined): readonly string[] {
  const children = record?.backends;
  if (Array.isArray(children)) return children as string[];
  return children && typeof children === 'object' ? Object.keys(children) : [];
}

async function pathTo(ctx: OperationContext, from: string, target: string, seen: Set<string>): Promise<string[] | undefined> {
  if (from === target) return [from];
  if (seen.has(from)) return undefined;
  seen.add(from);
  const prefix = prefixOf(from);
  const record = prefix ? await ctx.tx.get(scopeOf(ctx, BACKEND_KINDS[prefix].kind), from) : undefined;
  for (const child of childIds(record as BaseRecord | undefined)) {
    const rest = await pathTo(ctx, child, target, seen);
    if (rest) return [from, ...rest];
  }
  return undefined;
}

/**
 * Refuses children that would make backend `id` reach itself (400 naming the cycle). Only an update
 * can close a cycle: a backend being created is referenced by nothing yet. Each backend is visited
 * once, so the cost is O(backends reachable from the children).
 */
export async function refuseCycle(ctx: OperationContext, id: string, children: readonly string[]): Promise<void> {
  const seen = new Set<string>();
  for (const child of children) {
    const path = await pathTo(ctx, child, id, seen);
    if (path) {
      const cycle = [id, ...path];
      throw new ApiError(BACKENDS_ERRORS.BACKEND_CYCLE, `backends: ${cycle.join(' → ')} would form a cycle; a backend may not reach itself through its children`, { cycle: cycle.join(',') });
    }
  }
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * A map of HTTP header names to values: names are RFC 9110 tokens, values carry no line breaks or
 * NUL, and no name appears twice in different case (header names are case-insensitive).
 */
export const httpHeaderMap = v.pipe(
  v.record(
    v.pipe(v.string(), v.regex(HTTP_HEADER_NAME, "must be an HTTP header name (letters, digits and !#$%&'*+.^_`|~-)")),
    v.pipe(v.string(), v.regex(/^[^\r\n\0]*$/, 'must not contain line breaks or NUL')),
  ),
  v.check(
    (headers) => new Set(Object.keys(headers).map((name) => name.toLowerCase())).size === Object.keys(headers).length,
    'names header twice (header names are case-insensitive)',
  ),
);

/** The outcome of reading a `host:port` string. */
export type HostPort = { ok: true; host: string; port: number; text: string } | { ok: false; reason: 'format' | 'port' };

/**
 * Reads `host:port`: the host is a DNS name, an IPv4 address or a bracketed IPv6 address, the port
 * 1–65535. `text` is the canonical form (host lower-cased, port without leading zeros).
 */
export function parseHostPort(input: string): HostPort {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,10})$/.exec(input);
  if (!match) return { ok: false, reason: 'format' };
  const host = match[1]!.toLowerCase();
  const validHost = host.startsWith('[')
    ? host.includes(':') && !host.includes('%') && parseClientAddress(host) !== undefined
    : IPV4.test(host) || (!/^[\d.]+$/.test(host) && isDnsName(host));
  if (!validHost) return { ok: false, reason: 'format' };
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return { ok: false, reason: 'port' };
  return { ok: true, host, port, text: `${host}:${port}` };
}
