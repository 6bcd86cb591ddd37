import type * as IpAddr from 'ipaddr.js';
import { createRequire } from 'node:module';
import { onFirstUse } from './on-first-use.ts';

/**
 * CIDR parsing (ipaddr.js) and the pure evaluation of IP policy rules against an address.
 * ipaddr.js is loaded on the first address parsed (lib/conventions/on-first-use.ts): a server
 * without IP policies never needs it.
 *
 * Evaluation semantics, the same for every restriction type:
 * - the rule with the longest matching prefix decides;
 * - when an allow and a deny rule of the same prefix length both match, deny wins;
 * - an address that no rule matches is denied: a restriction is an allow-list;
 * - IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`, as dual-stack sockets report IPv4 callers)
 *   are evaluated as the IPv4 address they carry. IPv4 rules never match other IPv6 addresses.
 */

const ipaddr = onFirstUse(() => createRequire(import.meta.url)('ipaddr.js') as typeof IpAddr);
type Address = IpAddr.IPv4 | IpAddr.IPv6;

export type IpFamily = 'ipv4' | 'ipv6';
export type RuleAction = 'allow' | 'deny';

/** A validated network: canonical text, family, network bytes and prefix length. */
export interface Cidr {
  readonly text: string;
  readonly family: IpFamily;
  readonly bytes: readonly number[];
  readonly prefix: number;
}

/** Why a CIDR was refused; `suggestion` is the corrected value where one exists. */
export class CidrError extends Error {
  constructor(
    readonly reason: 'invalid' | 'missing_mask' | 'host_bits',
    message: string,
    readonly suggestion?: string,
  ) {
    super(message);
    this.name = 'CidrError';
  }
}

function parseAddress(text: string): Address | undefined {
  if (ipaddr().IPv4.isValidFourPartDecimal(text)) return ipaddr().IPv4.parse(text);
  if (text.includes(':') && !text.includes('%') && ipaddr().IPv6.isValid(text)) return ipaddr().IPv6.parse(text);
  return undefined;
}

/** Whether `text` is an IP address: IPv4 in four decimal parts, or IPv6 without a zone id (`%eth0`). */
export function isIpAddress(text: string): boolean {
  return parseAddress(text) !== undefined;
}

/** An IP address in its canonical text (IPv6 compressed, lower-case, RFC 5952); other text unchanged. */
export function canonicalAddress(text: string): string {
  return parseAddress(text)?.toString() ?? text;
}

/** Parses `a.b.c.d/n` or `v6/n`. A bare address, host bits or an unparseable value throw CidrError. */
export function parseCidr(input: string): Cidr {
  const text = input.trim();
  const slash = text.indexOf('/');
  const address = parseAddress(slash === -1 ? text : text.slice(0, slash));
  if (slash === -1) {
    if (address) {
      const bits = address.kind() === 'ipv4' ? 32 : 128;
      const suggestion = `${address.toString()}/${bits}`;
      throw new CidrError('missing_mask', `${JSON.stringify(input)} has no prefix length; to match one address write ${suggestion}`, suggestion);
    }
    throw new CidrError('invalid', `${JSON.stringify(input)} is not a CIDR such as 10.0.0.0/8 or 2001:db8::/32`);
  }
  const prefixText = text.slice(slash + 1);
  const maxPrefix = address?.kind() === 'ipv6' ? 128 : 32;
  if (!address || !/^\d{1,3}$/.test(prefixText) || Number(prefixText) > maxPrefix) {
    throw new CidrError('invalid', `${JSON.stringify(input)} is not a CIDR such as 10.0.0.0/8 or 2001:db8::/32`);
  }
  const prefix = Number(prefixText);
  const bytes = address.toByteArray();
  const network = maskBytes(bytes, prefix);
  const networkText = ipaddr().fromByteArray(network).toString();
  if (network.some((byte, i) => byte !== bytes[i])) {
    const suggestion = `${networkText}/${prefix}`;
    throw new CidrError('host_bits', `${JSON.stringify(input)} has host bits set; the network address is ${suggestion}`, suggestion);
  }
  return { text: `${networkText}/${prefix}`, family: address.kind(), bytes: network, prefix };
}

function maskBytes(bytes: readonly number[], prefix: number): number[] {
  return bytes.map((byte, i) => {
    const bitsHere = Math.max(0, Math.min(8, prefix - i * 8));
    return byte & ((0xff << (8 - bitsHere)) & 0xff);
  });
}

function contains(cidr: Cidr, bytes: readonly number[]): boolean {
  const full = Math.floor(cidr.prefix / 8);
  for (let i = 0; i < full; i++) if (bytes[i] !== cidr.bytes[i]) return false;
  const rest = cidr.prefix % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[full] ?? 0) & mask) === cidr.bytes[full];
}

/** What an IP policy rule contributes to a decision. */
export interface IpRule {
  readonly cidr: string;
  readonly action: RuleAction;
}

/** The outcome for an address; `rule` is the deciding rule, undefined when nothing matched. */
export interface IpDecision<T extends IpRule> {
  readonly allowed: boolean;
  readonly rule?: T;
}

/**
 * Decides whether `address` may pass `rules` (semantics at the top of this file). One pass over the
 * rules: O(rules). Rules whose CIDR does not parse never match; an unparseable address is denied.
 */
export function evaluateIpRules<T extends IpRule>(rules: readonly T[], address: string): IpDecision<T> {
  const parsed = parseClientAddress(address);
  if (!parsed) return { allowed: false };
  const family = parsed.kind();
  const bytes = parsed.toByteArray();
  let best: { rule: T; prefix: number } | undefined;
  for (const rule of rules) {
    const cidr = cachedCidr(rule.cidr);
    if (!cidr || cidr.family !== family || !contains(cidr, bytes)) continue;
    if (!best || cidr.prefix > best.prefix || (cidr.prefix === best.prefix && rule.action === 'deny')) best = { rule, prefix: cidr.prefix };
  }
  return best ? { allowed: best.rule.action === 'allow', rule: best.rule } : { allowed: false };
}

// Stored rules hold canonical CIDRs, so a bounded cache of parsed networks turns the per-request
// cost into one map lookup and one byte comparison per rule.
const PARSED = new Map<string, Cidr | null>();
const PARSED_LIMIT = 50_000;

function cachedCidr(text: string): Cidr | undefined {
  let cidr = PARSED.get(text);
  if (cidr === undefined) {
    try {
      cidr = parseCidr(text);
    } catch {
      cidr = null;
    }
    if (PARSED.size >= PARSED_LIMIT) PARSED.clear();
    PARSED.set(text, cidr);
  }
  return cidr ?? undefined;
}

/** Whether `text` is an IP address or an address/prefix (host bits allowed), as sshd's source-address reads them. */
export function isAddressOrCidr(text: string): boolean {
  return text.includes('/') ? ipaddr().isValidCIDR(text) : ipaddr().isValid(text);
}

/**
 * An address exactly as an X-Forwarded-For entry carries it: a dotted quad or an IPv6 address with
 * nothing around it (no zone id, brackets or port). Its canonical text (an IPv4-mapped IPv6 address
 * as the IPv4 address it carries), or undefined.
 */
export function parseExactAddress(text: string): string | undefined {
  return unmapped(parseAddress(text))?.toString();
}

/** A network given as a CIDR or as one address (`10.0.0.1` is `10.0.0.1/32`); throws CidrError. */
export function parseNetwork(text: string): Cidr {
  const address = parseAddress(text.trim());
  return address ? parseCidr(`${address.toString()}/${address.kind() === 'ipv4' ? 32 : 128}`) : parseCidr(text);
}

/** Whether a caller's address (read as parseClientAddress reads it) lies in one of `networks`. */
export function inNetworks(networks: readonly Cidr[], address: string): boolean {
  const parsed = parseClientAddress(address);
  if (!parsed) return false;
  const family = parsed.kind();
  const bytes = parsed.toByteArray();
  return networks.some((network) => network.family === family && contains(network, bytes));
}

/** A caller's address as sockets and proxies report it (`[v6]`, zone ids, mapped IPv4). */
export function parseClientAddress(address: string): Address | undefined {
  const bare = address.trim().replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  return unmapped(parseAddress(bare));
}

/** An IPv4-mapped IPv6 address as the IPv4 address it carries; any other address as it is. */
function unmapped(address: Address | undefined): Address | undefined {
  return address?.kind() === 'ipv6' && (address as IpAddr.IPv6).isIPv4MappedAddress() ? (address as IpAddr.IPv6).toIPv4Address() : address;
}
