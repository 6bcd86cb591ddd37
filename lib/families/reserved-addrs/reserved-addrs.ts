import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { description, metadata, refusedField, zeroIsUnset } from '../../conventions/fields.ts';
import { claimUnique, findUnique, releaseUnique } from '../../engine/indexes.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { INSTANCE_SCOPE } from '../../store.ts';
import { RESERVED_ADDRS_ERRORS } from './errors.ts';

/**
 * Reserved addresses (/reserved_addrs): TCP addresses `host:port` that the service allocates to an
 * account in one region, e.g. `3.tcp.eu.burrow.internal:21734`. The host is one of the region's
 * TCP hosts `<1–9>.tcp.<region>.<zone>`, the port one of `simulation.reservedAddrPorts`
 * (10000–29999), picked at random. An address is unique across the instance: a unique index in
 * the instance scope, so a SQL store refuses the second of two servers that pick the same one and
 * the pick is re-run. `region` (default `us`) and `addr` cannot change.
 */

export const RESERVED_ADDR_KIND = 'reserved_addr';
const holderOf = (account: string, id: string) => `${account}/${id}`;
const HOSTS_PER_REGION = 9;
/** Addresses probed, from a random one on, before a region counts as full (503). */
const PROBES = 64;

export interface ReservedAddrRecord extends BaseRecord {
  readonly addr: string;
  readonly region: string;
}

const AddrCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  region: zeroIsUnset(v.string()),
});

const AddrUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  region: refusedField('cannot be changed; reserve an address in the other region'),
  addr: refusedField('is allocated by the service and cannot be changed'),
});

function regionOf(ctx: OperationContext, value: string | undefined): string {
  const regions = ctx.services.simulation.regions;
  const chosen = value ?? (regions.includes('us') ? 'us' : regions[0]!);
  if (!regions.includes(chosen)) throw new ApiError(RESERVED_ADDRS_ERRORS.RESERVED_ADDR_REGION_INVALID, `region: must be one of ${regions.join(', ')} (got ${JSON.stringify(value)})`);
  return chosen;
}

/**
 * The candidate addresses of one allocation: a random slot of the region, then the slots after it
 * (slot → host `slot mod 9 + 1`, port `first + slot div 9`), at most 64: a region is never
 * scanned whole, and one of at most 64 addresses is always filled up to the last one.
 */
function* candidates(ctx: OperationContext, region: string): Generator<string> {
  const { first, last } = ctx.services.simulation.reservedAddrPorts;
  const slots = HOSTS_PER_REGION * (last - first + 1);
  const [a, b, c, d] = ctx.ids.bytes(4) as unknown as [number, number, number, number];
  const start = ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
  for (let probe = 0; probe < Math.min(PROBES, slots); probe++) {
    const slot = (start + probe) % slots;
    yield `${(slot % HOSTS_PER_REGION) + 1}.tcp.${region}.${ctx.services.simulation.serviceZone}:${first + Math.floor(slot / HOSTS_PER_REGION)}`;
  }
}

export const reservedAddrs = defineResource<ReservedAddrRecord, typeof AddrCreate, typeof AddrUpdate>({
  name: 'reserved_addrs',
  label: 'reserved address',
  prefix: 'ra',
  filterable: true,
  event: 'tcp_address',
  createSchema: AddrCreate,
  updateSchema: AddrUpdate,
  storedFields: { addr: v.pipe(v.string(), v.regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')) },
  async create(ctx, input, base) {
    const region = regionOf(ctx, input.region);
    for (const addr of candidates(ctx, region)) {
      if ((await claimUnique(ctx.tx, INSTANCE_SCOPE, RESERVED_ADDR_KIND, 'addr', addr, holderOf(ctx.account, base.id))) === undefined) {
        return { ...base, addr, region };
      }
    }
    throw new ApiError(RESERVED_ADDRS_ERRORS.RESERVED_ADDR_EXHAUSTED, `region: no free reserved addresses are left in region ${region}; try another region`, { region });
  },
  toResponse: (_ctx, record, base) => ({ ...base, addr: record.addr, region: record.region }),
  async beforeDelete(ctx, record) {
    await releaseUnique(ctx.tx, INSTANCE_SCOPE, RESERVED_ADDR_KIND, 'addr', record.addr, holderOf(ctx.account, record.id));
  },
});

/** The id of the caller's reserved address `addr` (`host:port`), or undefined (one index read). */
export async function findReservedAddr(ctx: OperationContext, addr: string): Promise<string | undefined> {
  const holder = await findUnique(ctx.tx, INSTANCE_SCOPE, RESERVED_ADDR_KIND, 'addr', addr.toLowerCase());
  return holder?.startsWith(`${ctx.account}/`) ? holder.slice(ctx.account.length + 1) : undefined;
}
