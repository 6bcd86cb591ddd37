import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { coded, zeroIsUnset } from '../../conventions/fields.ts';
import type { BaseRecord } from '../../engine/resource.ts';
import { backendCommonFields, defineBackend, refuseCycle, requireBackend } from './shared.ts';
import { BACKENDS_ERRORS } from './errors.ts';

/**
 * Weighted backends (/backends/weighted): traffic is shared among the child backends in proportion
 * to their weights (share = weight / sum of weights). Weights are integers 0–10000; 0 keeps a child
 * configured but sends it nothing. Children may be backends of any kind in the account, but no
 * backend may reach itself through its children. `backends` is replaced whole when sent.
 */

export interface WeightedBackendRecord extends BaseRecord {
  readonly backends: Readonly<Record<string, number>>;
}

const MAX_WEIGHT = 10_000;

const weights = v.record(
  v.string(),
  v.pipe(
    v.number(),
    v.check(
      (weight) => Number.isInteger(weight) && weight >= 0 && weight <= MAX_WEIGHT,
      (issue) => coded(BACKENDS_ERRORS.BACKEND_WEIGHT_INVALID, `weights must be integers from 0 to ${MAX_WEIGHT} (got ${issue.input})`),
    ),
  ),
);

const WeightedCreate = v.strictObject({ ...backendCommonFields, backends: v.optional(weights) });
/** `backends: {}` in an update counts as not sent (zero values, docs/compatibility.md). */
const WeightedUpdate = v.strictObject({ ...backendCommonFields, backends: zeroIsUnset(weights) });

async function existingChildren(ctx: OperationContext, children: Record<string, number>): Promise<Record<string, number>> {
  for (const id of Object.keys(children)) await requireBackend(ctx, id, `backends.${id}`);
  return children;
}

export const weightedBackends = defineBackend<WeightedBackendRecord, typeof WeightedCreate, typeof WeightedUpdate>('bkdwd', {
  createSchema: WeightedCreate,
  updateSchema: WeightedUpdate,
  references: (record) => Object.keys(record.backends),
  async create(ctx, input, base) {
    return { ...base, backends: await existingChildren(ctx, input.backends ?? {}) };
  },
  async update(ctx, record, patch) {
    if (patch.backends === undefined) return record;
    const backends = await existingChildren(ctx, patch.backends);
    await refuseCycle(ctx, record.id, Object.keys(backends));
    return { ...record, backends };
  },
  toResponse: (_ctx, record, base) => ({ ...base, backends: { ...record.backends } }),
});
