import { defineFamily } from '../../family.ts';
import { ipPolicies, ipPolicyRules } from './policies.ts';
import { apiRestrictionGuard, ipRestrictions } from './restrictions.ts';

/** IP policies, their rules, and the restrictions that enforce them (the `api` guard among them). */
export const ipPoliciesFamily = defineFamily({
  name: 'ip-policies',
  kinds: { ip_policies: ipPolicies, ip_policy_rules: ipPolicyRules, ip_restrictions: ipRestrictions },
  guards: [apiRestrictionGuard],
});

export { ipPolicies, requirePolicy } from './policies.ts';
export { evaluateRestriction } from './restrictions.ts';
