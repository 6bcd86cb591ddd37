import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Request plumbing, auth, versioning, paging (vendor 200–251); IP policies, rules and restrictions (vendor 1400–1423, 1800–1808).
 */
export const IP_POLICIES_ERRORS = {
  IP_RESTRICTED: errorSpec(220, 403),
  IP_POLICY_NOT_FOUND: errorSpec(1402, 404),
  IP_RULE_NOT_FOUND: errorSpec(1404, 404),
  CIDR_INVALID: errorSpec(1406, 400),
  CIDR_DUPLICATE: errorSpec(1408, 409),
  CIDR_HOST_BITS: errorSpec(1409, 400),
  CIDR_MISSING_MASK: errorSpec(1413, 400),
  IP_RULE_LAST_OF_DASHBOARD_POLICY: errorSpec(1419, 409),
  IP_POLICY_IN_USE: errorSpec(1420, 409),
  IP_RULE_ACTION_INVALID: errorSpec(1422, 400),
  IP_POLICY_ACTION_MOVED: errorSpec(1423, 400),
  IP_RESTRICTION_TOO_MANY_POLICIES: errorSpec(1800, 400),
  IP_RESTRICTION_POLICY_NOT_FOUND: errorSpec(1801, 404),
  IP_RESTRICTION_TYPE_EXISTS: errorSpec(1802, 409),
  IP_RESTRICTION_TYPE_INVALID: errorSpec(1803, 400),
  IP_RESTRICTION_NEEDS_POLICY: errorSpec(1804, 400),
} as const satisfies Record<string, ErrorSpec>;
