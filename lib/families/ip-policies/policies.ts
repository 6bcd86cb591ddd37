import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { coded, description, metadata, refusedField, storedRef } from '../../conventions/fields.ts';
import { defineResource, emitAudit, refTo, respond, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { addPair, membersOf, removePair, type PairIndex } from '../../engine/indexes.ts';
import type { StoreReader } from '../../store.ts';
import { restrictionOfType } from './restriction-types.ts';
import { CidrError, parseCidr, type RuleAction } from '../../conventions/cidr.ts';
import { IP_POLICIES_ERRORS } from './errors.ts';

/**
 * IP policies (/ip_policies) and their rules (/ip_policy_rules). A policy is a named set of
 * allow/deny CIDR rules; IP restrictions and edge modules point at policies. A pair index
 * (policy id, rule id) lists each policy's rules, so evaluating or checking a policy's rules costs
 * O(its rules), never a scan of the account. Deleting a policy deletes its rules; a
 * policy that a restriction or edge still uses is not deleted (1420).
 */

export interface IpPolicyRecord extends BaseRecord {}

export interface IpPolicyRuleRecord extends BaseRecord {
  readonly cidr: string;
  readonly action: RuleAction;
  readonly ip_policy_id: string;
}

const IpPolicyFields = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  action: refusedField('policies no longer carry an action; set allow or deny on each IP policy rule', IP_POLICIES_ERRORS.IP_POLICY_ACTION_MOVED),
});

export const ipPolicies = defineResource<IpPolicyRecord>({
  name: 'ip_policies',
  label: 'IP policy',
  prefix: 'ipp',
  filterable: true,
  event: 'ip_policy',
  notFoundError: IP_POLICIES_ERRORS.IP_POLICY_NOT_FOUND,
  inUseError: IP_POLICIES_ERRORS.IP_POLICY_IN_USE,
  createSchema: IpPolicyFields,
  updateSchema: IpPolicyFields,
  create: (_ctx, _input, base) => base,
  toResponse: (_ctx, _record, base) => ({ ...base }),
  async beforeDelete(ctx, record) {
    for (const rule of await rulesOfPolicy(ctx.tx, ctx.account, record.id)) {
      await ctx.tx.delete(scopeOf(ctx, ipPolicyRules.kind), rule.id);
      await removePair(ctx.tx, rulesIndex(ctx.account), record.id, rule.id);
      emitAudit(ctx, ipPolicyRules, 'deleted', respond(ctx, ipPolicyRules, rule));
    }
  },
});

const rulesIndex = (account: string): PairIndex => ({ account, kind: '_ip_policy_rule' });

/** The rules of one policy, oldest first (O(its rules)). */
export async function rulesOfPolicy(reader: StoreReader, account: string, policyId: string): Promise<IpPolicyRuleRecord[]> {
  const rules: IpPolicyRuleRecord[] = [];
  for (const ruleId of await membersOf(reader, rulesIndex(account), policyId)) {
    const rule = await reader.get({ account, kind: ipPolicyRules.kind }, ruleId);
    if (rule) rules.push(rule as IpPolicyRuleRecord);
  }
  return rules;
}

/**
 * The rules of the account's IP policies `ids`, policy by policy (what traffic policies'
 * `restrict-ips` and the edges' ip_restriction module evaluate); throws naming an id that is not
 * a policy of the account. O(the policies' rules).
 */
export async function rulesOfPolicies(reader: StoreReader, account: string, ids: readonly string[]): Promise<IpPolicyRuleRecord[]> {
  const rules: IpPolicyRuleRecord[] = [];
  for (const id of ids) {
    if (!(await reader.get({ account, kind: ipPolicies.kind }, id))) throw new Error(`IP policy '${id}' was not found`);
    rules.push(...(await rulesOfPolicy(reader, account, id)));
  }
  return rules;
}

/** Whether `account` has IP policy `id` (traffic policies' restrict-ips `ip_policies`). */
export async function ipPolicyExists(reader: StoreReader, account: string, id: string): Promise<boolean> {
  return (await reader.get({ account, kind: ipPolicies.kind }, id)) !== undefined;
}

/** Reads a policy of the caller's account named in a request field, or throws `error` (404). */
export async function requirePolicy(ctx: OperationContext, id: string, field: string, error = IP_POLICIES_ERRORS.IP_POLICY_NOT_FOUND): Promise<IpPolicyRecord> {
  const policy = await ctx.tx.get(scopeOf(ctx, ipPolicies.kind), id);
  if (!policy) throw new ApiError(error, `${field}: IP policy '${id}' was not found`, { id });
  return policy as IpPolicyRecord;
}

const cidrField = v.pipe(v.string(), v.trim());
const actionField = v.picklist(['allow', 'deny'], (issue) => coded(IP_POLICIES_ERRORS.IP_RULE_ACTION_INVALID, `must be allow or deny (got ${JSON.stringify(issue.input)})`));
const immutable = (what: string) => refusedField(`cannot be changed after creation; delete the rule and create one with the new ${what}`);

const RuleCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  cidr: cidrField,
  ip_policy_id: v.string(),
  action: actionField,
});

const RuleUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  cidr: v.optional(cidrField),
  action: immutable('action'),
  ip_policy_id: immutable('policy'),
});

/** Validates a CIDR and refuses one the policy already has (other than `self`). */
async function validRuleCidr(ctx: OperationContext, text: string, policyId: string, self?: string): Promise<string> {
  let cidr: string;
  try {
    cidr = parseCidr(text).text;
  } catch (error) {
    if (!(error instanceof CidrError)) throw error;
    const spec = { invalid: IP_POLICIES_ERRORS.CIDR_INVALID, missing_mask: IP_POLICIES_ERRORS.CIDR_MISSING_MASK, host_bits: IP_POLICIES_ERRORS.CIDR_HOST_BITS }[error.reason];
    throw new ApiError(spec, `cidr: ${error.message}`, error.suggestion ? { suggestion: error.suggestion } : {});
  }
  const duplicate = (await rulesOfPolicy(ctx.tx, ctx.account, policyId)).find((rule) => rule.cidr === cidr && rule.id !== self);
  if (duplicate) {
    throw new ApiError(IP_POLICIES_ERRORS.CIDR_DUPLICATE, `cidr: IP policy '${policyId}' already has a rule for ${cidr} ('${duplicate.id}')`, { id: duplicate.id });
  }
  return cidr;
}

export const ipPolicyRules = defineResource<IpPolicyRuleRecord, typeof RuleCreate, typeof RuleUpdate>({
  name: 'ip_policy_rules',
  label: 'IP policy rule',
  prefix: 'ipr',
  filterable: true,
  event: 'ip_policy_rule',
  notFoundError: IP_POLICIES_ERRORS.IP_RULE_NOT_FOUND,
  createSchema: RuleCreate,
  storedFields: { ip_policy_id: storedRef('ipp') },
  updateSchema: RuleUpdate,
  async create(ctx, input, base) {
    const policy = await requirePolicy(ctx, input.ip_policy_id, 'ip_policy_id');
    const cidr = await validRuleCidr(ctx, input.cidr, policy.id);
    await addPair(ctx.tx, rulesIndex(ctx.account), policy.id, base.id);
    return { ...base, cidr, action: input.action, ip_policy_id: policy.id };
  },
  async update(ctx, record, patch) {
    return patch.cidr === undefined ? record : { ...record, cidr: await validRuleCidr(ctx, patch.cidr, record.ip_policy_id, record.id) };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    cidr: record.cidr,
    ip_policy: refTo(ctx, ipPolicies, record.ip_policy_id),
    action: record.action,
  }),
  async beforeDelete(ctx, record) {
    await refuseEmptyingDashboardPolicy(ctx, record);
    await removePair(ctx.tx, rulesIndex(ctx.account), record.ip_policy_id, record.id);
  },
});

/** The dashboard must stay reachable: the last rule of a policy a dashboard restriction uses stays. */
async function refuseEmptyingDashboardPolicy(ctx: OperationContext, rule: IpPolicyRuleRecord): Promise<void> {
  if ((await membersOf(ctx.tx, rulesIndex(ctx.account), rule.ip_policy_id, 2)).length > 1) return;
  const dashboard = await restrictionOfType(ctx.tx, ctx.account, 'dashboard');
  if (dashboard?.ip_policy_ids.includes(rule.ip_policy_id)) {
    throw new ApiError(
      IP_POLICIES_ERRORS.IP_RULE_LAST_OF_DASHBOARD_POLICY,
      `IP policy rule '${rule.id}' is the only rule of IP policy '${rule.ip_policy_id}', which dashboard IP restriction '${dashboard.id}' uses; add another rule first`,
      { id: rule.id },
    );
  }
}
