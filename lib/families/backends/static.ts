import * as v from 'valibot';
import { coded, zeroIsUnset } from '../../conventions/fields.ts';
import type { BaseRecord } from '../../engine/resource.ts';
import { backendCommonFields, defineBackend, parseHostPort } from './shared.ts';
import { BACKENDS_ERRORS } from './errors.ts';

/**
 * Static backends (/backends/static): forward traffic to a fixed public `host:port` (a DNS name,
 * IPv4 or bracketed IPv6 address, port 1–65535; stored canonical, host lower-cased), optionally
 * over TLS. `tls.enabled` defaults to false, also when `tls` is sent as `{}`.
 */

export interface StaticBackendRecord extends BaseRecord {
  readonly address: string;
  readonly tls: { readonly enabled: boolean };
}

const address = v.pipe(
  v.string(),
  v.check(
    (text) => parseHostPort(text).ok,
    (issue) => coded(BACKENDS_ERRORS.BACKEND_ADDRESS_INVALID, `must be host:port with a DNS name, IPv4 or [IPv6] host and a port from 1 to 65535 (got ${JSON.stringify(issue.input)})`),
  ),
  v.transform((text) => (parseHostPort(text) as { text: string }).text),
);

const tls = v.strictObject({ enabled: v.optional(v.boolean()) });

const StaticCreate = v.strictObject({ ...backendCommonFields, address, tls: v.optional(tls) });
/** `address: ""` and `tls: {}` (what the vendor's Go client always sends) count as not sent. */
const StaticUpdate = v.strictObject({ ...backendCommonFields, address: zeroIsUnset(address), tls: zeroIsUnset(tls) });

export const staticBackends = defineBackend<StaticBackendRecord, typeof StaticCreate, typeof StaticUpdate>('bkdsc', {
  createSchema: StaticCreate,
  updateSchema: StaticUpdate,
  create: (_ctx, input, base) => ({ ...base, address: input.address, tls: { enabled: input.tls?.enabled ?? false } }),
  update: (_ctx, record, patch) => ({
    ...record,
    ...(patch.address === undefined ? {} : { address: patch.address }),
    ...(patch.tls === undefined ? {} : { tls: { enabled: patch.tls.enabled ?? false } }),
  }),
  toResponse: (_ctx, record, base) => ({ ...base, address: record.address, tls: { enabled: record.tls.enabled } }),
});
