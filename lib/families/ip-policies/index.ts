import { defineFamily } from '../../engine/family.ts';
import { IP_POLICIES_ERRORS } from './errors.ts';
import { ipPolicies, ipPolicyRules } from './policies.ts';
import { apiRestrictionGuard, ipRestrictions } from './restrictions.ts';

/** IP policies, their rules, and the restrictions that enforce them (the `api` guard among them). */
export const ipPoliciesFamily = defineFamily({
  name: 'ip-policies',
  errors: IP_POLICIES_ERRORS,
  kinds: { ip_policies: ipPolicies, ip_policy_rules: ipPolicyRules, ip_restrictions: ipRestrictions },
  guards: [apiRestrictionGuard],
  examples: {
    ip_policies: { body: () => ({}) },
    ip_policy_rules: { body: async (seed) => ({ ip_policy_id: await seed.id('ip_policies'), cidr: '10.0.0.0/8', action: 'allow' }) },
    ip_restrictions: { body: async (seed) => ({ type: 'agent', ip_policy_ids: [await seed.id('ip_policies')] }) },
  },
});

export { ipPolicies, ipPolicyExists, requirePolicy, rulesOfPolicies } from './policies.ts';
export { evaluateRestriction } from './restrictions.ts';

export { IP_POLICIES_ERRORS } from './errors.ts';
