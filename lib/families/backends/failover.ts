import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { fail } from '../../conventions/errors.ts';
import { zeroIsUnset } from '../../conventions/fields.ts';
import type { BaseRecord } from '../../engine/resource.ts';
import { backendCommonFields, defineBackend, refuseCycle, requireBackend } from './shared.ts';

/**
 * Failover backends (/backends/failover): traffic goes to the first child backend; when it is
 * offline or refuses the connection, to the next, in order. Children may be backends of any kind in
 * the account, each listed once, and no backend may reach itself through its children. `backends`
 * is replaced whole when sent.
 */

export interface FailoverBackendRecord extends BaseRecord {
  readonly backends: readonly string[];
}

const FailoverCreate = v.strictObject({ ...backendCommonFields, backends: v.optional(v.array(v.string())) });
/** `backends: []` in an update counts as not sent (zero values, docs/compatibility.md). */
const FailoverUpdate = v.strictObject({ ...backendCommonFields, backends: zeroIsUnset(v.array(v.string())) });

async function existingChildren(ctx: OperationContext, children: readonly string[]): Promise<string[]> {
  for (const [index, id] of children.entries()) {
    if (children.indexOf(id) !== index) fail('INVALID_FIELD', `backends[${index}]: '${id}' is already listed at backends[${children.indexOf(id)}]; list each backend once`);
    await requireBackend(ctx, id, `backends[${index}]`);
  }
  return [...children];
}

export const failoverBackends = defineBackend<FailoverBackendRecord, typeof FailoverCreate, typeof FailoverUpdate>('bkdfo', {
  createSchema: FailoverCreate,
  updateSchema: FailoverUpdate,
  references: (record) => record.backends,
  async create(ctx, input, base) {
    return { ...base, backends: await existingChildren(ctx, input.backends ?? []) };
  },
  async update(ctx, record, patch) {
    if (patch.backends === undefined) return record;
    const backends = await existingChildren(ctx, patch.backends);
    await refuseCycle(ctx, record.id, backends);
    return { ...record, backends };
  },
  toResponse: (_ctx, record, base) => ({ ...base, backends: [...record.backends] }),
});
