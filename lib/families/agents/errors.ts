import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers where it has one:
 * a malformed authtoken (105), a domain reserved for another account (320), a domain with invalid characters (326), an upstream protocol other than http1/http2 (15003), tunnel sessions, agent commands (vendor 800–810) and agent ingresses (6700–6711); Burrow's own range.
 */
export const AGENTS_ERRORS = {
  AGENT_TOKEN_MALFORMED: errorSpec(105, 401),
  AGENT_DOMAIN_RESERVED_ELSEWHERE: errorSpec(320, 403),
  AGENT_DOMAIN_INVALID: errorSpec(326, 400),
  AGENT_DOMAIN_NESTED: errorSpec(354, 403),
  AGENT_UPSTREAM_PROTOCOL_INVALID: errorSpec(15003, 400),
  AGENT_RESTART_UNSUPPORTED: errorSpec(804, 400),
  AGENT_STOP_UNSUPPORTED: errorSpec(805, 400),
  AGENT_UPDATE_UNSUPPORTED: errorSpec(806, 400),
  AGENT_STOP_FAILED: errorSpec(807, 502),
  AGENT_RESTART_FAILED: errorSpec(808, 502),
  AGENT_UPDATE_FAILED: errorSpec(809, 502),
  AGENT_RELAY_FAILED: errorSpec(810, 502),
  AGENT_NO_UPDATE: errorSpec(9010, 409),
  AGENT_UPDATING: errorSpec(9011, 409),
  AGENT_UPDATED_NOT_RESTARTED: errorSpec(9012, 409),
  AGENT_CREDENTIAL_UNKNOWN: errorSpec(9013, 401),
  AGENT_BIND_REFUSED: errorSpec(9014, 403),
  AGENT_DOMAIN_NOT_RESERVED: errorSpec(9015, 403),
  AGENT_ADDR_NOT_RESERVED: errorSpec(9016, 403),
  AGENT_URL_BOUND: errorSpec(9017, 409),
  AGENT_SESSION_ENDED: errorSpec(9018, 409),
  AGENT_PORT_UNAVAILABLE: errorSpec(9019, 409),
} as const satisfies Record<string, ErrorSpec>;
