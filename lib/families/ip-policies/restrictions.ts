import * as v from 'valibot';
import type { OperationContext, RequestGuard } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { coded, description, metadata, refusedField, zeroIsUnset } from '../../conventions/fields.ts';
import { existingIds } from '../../engine/references.ts';
import { defineResource, refTo } from '../../engine/resource.ts';
import type { StoreReader } from '../../store.ts';
import { evaluateIpRules } from '../../conventions/cidr.ts';
import { ipPolicies, requirePolicy, rulesOfPolicy, type IpPolicyRuleRecord } from './policies.ts';
import { IP_RESTRICTION_KIND, restrictionOfType, RESTRICTION_TYPES, type IpRestrictionRecord, type RestrictionType } from './restriction-types.ts';
import { IP_POLICIES_ERRORS } from './errors.ts';

/**
 * IP restrictions (/ip_restrictions): which IP policies guard a class of traffic (dashboard, api,
 * agent, endpoints). At most one per type and account; the type never changes. `api` restrictions
 * are enforced on every API request by `apiRestrictionGuard`; `agent` restrictions by the agent
 * simulator through `evaluateRestriction`. Dashboard and endpoint traffic does not exist in Burrow,
 * so those restrictions are stored and served but evaluate nothing.
 */

const MAX_POLICIES = 100;

const policyIds = v.pipe(
  v.array(v.string()),
  v.check((ids) => ids.length > 0, coded(IP_POLICIES_ERRORS.IP_RESTRICTION_NEEDS_POLICY, 'a restriction needs at least one IP policy')),
  v.check((ids) => ids.length <= MAX_POLICIES, coded(IP_POLICIES_ERRORS.IP_RESTRICTION_TOO_MANY_POLICIES, `a restriction may use at most ${MAX_POLICIES} IP policies`)),
);

const RestrictionCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  enforced: v.optional(v.boolean()),
  type: v.picklist(RESTRICTION_TYPES, (issue) => coded(IP_POLICIES_ERRORS.IP_RESTRICTION_TYPE_INVALID, `must be one of ${RESTRICTION_TYPES.join(', ')} (got ${JSON.stringify(issue.input)})`)),
  ip_policy_ids: policyIds,
});

const RestrictionUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  enforced: v.optional(v.boolean()),
  // The vendor's newer Python client always sends `ip_policy_ids: []` in updates: not given.
  ip_policy_ids: zeroIsUnset(policyIds),
  type: refusedField('cannot be changed after creation; delete the restriction and create one of the new type'),
});

function existingPolicies(ctx: OperationContext, ids: readonly string[]): Promise<string[]> {
  return existingIds(ids, (id, index) => requirePolicy(ctx, id, `ip_policy_ids[${index}]`, IP_POLICIES_ERRORS.IP_RESTRICTION_POLICY_NOT_FOUND));
}

const typeTaken = (type: string, holder: string) =>
  new ApiError(IP_POLICIES_ERRORS.IP_RESTRICTION_TYPE_EXISTS, `type: this account already has an ${type} IP restriction ('${holder}'); update that one instead`, { id: holder });

export const ipRestrictions = defineResource<IpRestrictionRecord, typeof RestrictionCreate, typeof RestrictionUpdate>({
  name: 'ip_restrictions',
  label: 'IP restriction',
  prefix: 'ipx',
  filterable: true,
  event: 'ip_restriction',
  createSchema: RestrictionCreate,
  updateSchema: RestrictionUpdate,
  references: (record) => record.ip_policy_ids,
  unique: [{ field: 'type', conflict: typeTaken }],
  async create(ctx, input, base) {
    const existing = await restrictionOfType(ctx.tx, ctx.account, input.type);
    if (existing) throw typeTaken(input.type, existing.id);
    const ip_policy_ids = await existingPolicies(ctx, input.ip_policy_ids);
    return { ...base, enforced: input.enforced ?? false, type: input.type, ip_policy_ids };
  },
  async update(ctx, record, patch) {
    return {
      ...record,
      ...(patch.enforced === undefined ? {} : { enforced: patch.enforced }),
      ...(patch.ip_policy_ids === undefined ? {} : { ip_policy_ids: await existingPolicies(ctx, patch.ip_policy_ids) }),
    };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    enforced: record.enforced,
    type: record.type,
    ip_policies: record.ip_policy_ids.map((id) => refTo(ctx, ipPolicies, id)),
  }),
});

/** The verdict of an account's restriction of one type on one address. */
export interface RestrictionVerdict {
  readonly restrictionId: string;
  readonly enforced: boolean;
  readonly allowed: boolean;
  /** The deciding rule, when one matched. */
  readonly rule?: IpPolicyRuleRecord;
}

/**
 * Evaluates the account's restriction of `type` for `address`, or undefined when the account has
 * none. Cost: O(rules of the restriction's policies).
 */
export async function evaluateRestriction(reader: StoreReader, account: string, type: RestrictionType, address: string): Promise<RestrictionVerdict | undefined> {
  const restriction = await restrictionOfType(reader, account, type);
  if (!restriction) return undefined;
  const rules: IpPolicyRuleRecord[] = [];
  for (const policyId of restriction.ip_policy_ids) rules.push(...(await rulesOfPolicy(reader, account, policyId)));
  const decision = evaluateIpRules(rules, address);
  return { restrictionId: restriction.id, enforced: restriction.enforced, allowed: decision.allowed, ...(decision.rule ? { rule: decision.rule } : {}) };
}

function describeVerdict(verdict: RestrictionVerdict, address: string): string {
  const why = verdict.rule ? `rule '${verdict.rule.id}' (${verdict.rule.action} ${verdict.rule.cidr})` : 'no rule allows it';
  return `IP restriction '${verdict.restrictionId}' denies ${address}: ${why}`;
}

/**
 * Enforces the account's `api` restriction on every API request: enforced and denied → 403;
 * not enforced and denied → the request proceeds with a `Warning` header. Requests whose source
 * address is unknown (in-process calls without one) are not evaluated.
 */
export const apiRestrictionGuard: RequestGuard = async (store, principal, meta) => {
  if (!meta.sourceIp) return;
  const verdict = await evaluateRestriction(store, principal.account, 'api', meta.sourceIp);
  if (!verdict || verdict.allowed) return;
  const message = describeVerdict(verdict, meta.sourceIp);
  if (verdict.enforced) throw new ApiError(IP_POLICIES_ERRORS.IP_RESTRICTED, message, { ip: meta.sourceIp, restriction_id: verdict.restrictionId });
  return { Warning: `199 burrow "${message} (not enforced, so the request was allowed)"` };
};
