import * as v from 'valibot';
import { CidrError, evaluateIpRules, parseCidr } from '../../conventions/cidr.ts';
import type { Template } from '../interpolation.ts';
import { defineAction, enforce, errorEnd, forEndpoint, lookUp, readConfig, type ActionContext } from './types.ts';

/**
 * restrict-ips (and the ip_restriction module and agent IP restrictions, translated into it),
 * against the layer-4 client address (`conn.client_ip`), never X-Forwarded-For. As the vendor
 * documents it: an address passes when it matches at least one allowed CIDR and no denied one;
 * IP policies contribute their allow and deny rules. (The account's dashboard and agent IP
 * restrictions use Burrow's longest-prefix evaluation instead, lib/conventions/cidr.ts.)
 * Denied: a 403 (ERR_NGROK_3205) on HTTP phases, the connection closed on on_tcp_connect.
 */

const IP_RESTRICTED = 'ERR_NGROK_3205';

/** The network of a CIDR as written (host bits cleared, as Go's net.ParseCIDR reads it); undefined when it is none. */
function network(text: string): string | undefined {
  try {
    return parseCidr(text).text;
  } catch (error) {
    return error instanceof CidrError && error.reason === 'host_bits' ? error.suggestion : undefined;
  }
}

/** The first of `cidrs` that contains `ip`, as written (host bits cleared first; invalid CIDRs never match). */
export function firstMatchingCidr(cidrs: readonly string[], ip: string): string | undefined {
  for (const cidr of cidrs) {
    const text = network(cidr);
    if (text && evaluateIpRules([{ cidr: text, action: 'allow' }], ip).allowed) return cidr;
  }
  return undefined;
}

/** Whether `ip` passes allow/deny sets; the matched CIDR ('' when none). */
function restrictIp(ip: string, allow: readonly string[], deny: readonly string[]): { allowed: boolean; matched: string } {
  const denied = firstMatchingCidr(deny, ip);
  if (denied) return { allowed: false, matched: denied };
  const allowed = firstMatchingCidr(allow, ip);
  return { allowed: allowed !== undefined, matched: allowed ?? '' };
}

function cidrList(templates: readonly Template[], context: ActionContext, field: string): string[] {
  return templates.flatMap((template) => {
    const value = context.value(template, field);
    return Array.isArray(value) ? value.map(String) : [String(value)];
  });
}

export const restrictIps = defineAction({
  results: 'restrict_ips',
  type: 'restrict-ips',
  compile(config, tools) {
    const c = readConfig(
      v.looseObject({ enforce, allow: v.optional(v.array(v.string()), []), deny: v.optional(v.array(v.string()), []), ip_policies: v.optional(v.array(v.string()), []) }),
      config,
    );
    return {
      enforce: c.enforce,
      allow: c.allow.map((cidr, i) => tools.template(cidr, `config.allow[${i}]`)),
      deny: c.deny.map((cidr, i) => tools.template(cidr, `config.deny[${i}]`)),
      ipPolicies: c.ip_policies,
    };
  },
  async run(config, context) {
    const rules = config.ipPolicies.length === 0 ? [] : await lookUp(forEndpoint(context, context.services.ipPolicyRules), config.ipPolicies, 'restrict-ips: ip_policies', 'IP policies');
    const allow = [...cidrList(config.allow, context, 'allow'), ...rules.filter((rule) => rule.action === 'allow').map((rule) => rule.cidr)];
    const deny = [...cidrList(config.deny, context, 'deny'), ...rules.filter((rule) => rule.action === 'deny').map((rule) => rule.cidr)];
    const ip = context.scope.conn.clientIp;
    const verdict = restrictIp(ip, allow, deny);
    const message = verdict.allowed ? '' : verdict.matched ? `${ip} is denied by ${verdict.matched}` : `${ip} matches no allowed CIDR`;
    context.scope.setActionResult('restrict_ips', {
      action: verdict.allowed ? 'allow' : 'deny',
      matched_cidr: verdict.matched,
      error: { code: verdict.allowed ? '' : IP_RESTRICTED, message },
    });
    if (verdict.allowed) return { note: `${ip} allowed${verdict.matched ? ` by ${verdict.matched}` : ''}` };
    if (!config.enforce) return { note: `${message} (not enforced)` };
    if (context.scope.phase === 'on_tcp_connect') return { end: { kind: 'close', reason: message }, note: message };
    return { end: errorEnd(403, `Request blocked by IP restriction: ${message}`, IP_RESTRICTED), note: message };
  },
});
