import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * Tunnel sessions, agent commands (vendor 800–810) and agent ingresses (6700–6711); Reserved domains (vendor 400–461) and reserved addresses (500–517).
 */
export const DOMAINS_ERRORS = {
  INGRESS_DOMAIN_INVALID: errorSpec(6704, 400),
  INGRESS_DOMAIN_NOT_THIRD_PARTY: errorSpec(6705, 400),
  INGRESS_DOMAIN_EXISTS: errorSpec(6706, 409),
  RESERVED_DOMAIN_REGION_INVALID: errorSpec(400, 400),
  RESERVED_DOMAIN_WILDCARD_PLACEMENT: errorSpec(402, 400),
  RESERVED_DOMAIN_WILDCARD_LABEL: errorSpec(403, 400),
  RESERVED_DOMAIN_SERVICE_NAME: errorSpec(404, 400),
  RESERVED_DOMAIN_INVALID: errorSpec(406, 400),
  RESERVED_DOMAIN_TAKEN_BY_YOU: errorSpec(413, 409),
  RESERVED_DOMAIN_TAKEN: errorSpec(414, 409),
  RESERVED_DOMAIN_CERTIFICATE_AND_POLICY: errorSpec(434, 400),
  RESERVED_DOMAIN_CERTIFICATE_MANAGED: errorSpec(436, 409),
  RESERVED_DOMAIN_SERVICE_POLICY: errorSpec(439, 400),
  RESERVED_DOMAIN_SERVICE_UPLOAD: errorSpec(440, 400),
  RESERVED_DOMAIN_IN_USE: errorSpec(446, 409),
  RESERVED_DOMAIN_SUBDOMAIN: errorSpec(450, 400),
  RESERVED_DOMAIN_REGION_FIXED: errorSpec(451, 400),
} as const satisfies Record<string, ErrorSpec>;
