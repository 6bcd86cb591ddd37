/**
 * ACL bind rules of tunnel and SSH credentials (spec "ACL rules").
 *
 * - `*` (or `bind:*`) alone permits everything; an empty list permits everything too.
 * - `bind:<domain>`: exactly that name; `bind:*.<domain>` any subdomain at any depth, including the
 *   literal wildcard name `*.<domain>`, but not `<domain>` itself. Names match case-insensitively.
 * - `bind:<host>:<port>`: exactly that address; host is a DNS name, IPv4, or `[IPv6]`.
 * - `bind:<key>=<value>`: a label; key, value or both may be `*`. Label keys and values use
 *   `A-Z a-z 0-9 . _ / -` (keys up to 63, values up to 255 characters).
 * Duplicate rules are accepted (they change nothing). Any other rule is refused.
 */

/** What an agent asks to bind: a domain, a `host:port` address, or a set of labels. */
export type AclBind = { domain: string } | { address: string } | { labels: Readonly<Record<string, string>> };

/** A rule that is not a valid bind rule; names the rule and its position. */
export class AclRuleError extends Error {
  readonly rule: string;
  readonly index: number;
  constructor(rule: string, index: number, reason: string) {
    super(`acl[${index}]: ${JSON.stringify(rule)} is not a valid rule: ${reason}`);
    this.name = 'AclRuleError';
    this.rule = rule;
    this.index = index;
  }
}

type Rule =
  | { type: 'any' }
  | { type: 'domain'; name: string; wildcard: boolean }
  | { type: 'address'; host: string; port: number }
  | { type: 'label'; key: string; value: string };

/** Validated rules, ready for `aclPermits`. */
export interface ParsedAcl {
  readonly rules: readonly Rule[];
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const LABEL_TEXT = /^[A-Za-z0-9._/-]+$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-f:.]+$/i;

/** Whether `name` is a DNS name (letters, digits, hyphens; labels 1–63; total ≤ 253). */
export function isDnsName(name: string): boolean {
  const lower = name.toLowerCase();
  return lower.length > 0 && lower.length <= 253 && lower.split('.').every((label) => LABEL.test(label));
}

function parseRule(rule: string, index: number): Rule {
  if (rule === '*' || rule === 'bind:*') return { type: 'any' };
  if (!rule.startsWith('bind:')) {
    throw new AclRuleError(rule, index, 'rules must be "*" or start with "bind:" followed by a domain, a host:port address or a key=value label');
  }
  const target = rule.slice(5);
  if (target === '') throw new AclRuleError(rule, index, 'the bind target is empty');
  if (target.includes('=')) {
    const at = target.indexOf('=');
    const key = target.slice(0, at);
    const value = target.slice(at + 1);
    if (key !== '*' && !(LABEL_TEXT.test(key) && key.length <= 63)) throw new AclRuleError(rule, index, 'the label key must be * or 1-63 of A-Z a-z 0-9 . _ / -');
    if (value !== '*' && !(LABEL_TEXT.test(value) && value.length <= 255)) throw new AclRuleError(rule, index, 'the label value must be * or 1-255 of A-Z a-z 0-9 . _ / -');
    return { type: 'label', key, value };
  }
  const address = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target);
  if (address) {
    const host = address[1]!;
    const port = Number(address[2]);
    if (!(port >= 1 && port <= 65535)) throw new AclRuleError(rule, index, 'the port must be 1-65535');
    const bare = host.startsWith('[') ? host.slice(1, -1) : host;
    const valid = host.startsWith('[') ? IPV6.test(bare) && bare.includes(':') : IPV4.test(bare) || isDnsName(bare);
    if (!valid) throw new AclRuleError(rule, index, 'the host must be a DNS name, an IPv4 address or a bracketed IPv6 address');
    return { type: 'address', host: bare.toLowerCase(), port };
  }
  const wildcard = target.startsWith('*.');
  const name = (wildcard ? target.slice(2) : target).toLowerCase();
  if (!isDnsName(name)) {
    throw new AclRuleError(rule, index, wildcard || !target.includes('*') ? 'not a valid domain name' : 'a wildcard may only be the whole first label, as in bind:*.example.com');
  }
  return { type: 'domain', name, wildcard };
}

/** Validates a list of rules; throws AclRuleError naming the first bad one. */
export function parseAcl(rules: readonly string[]): ParsedAcl {
  return { rules: rules.map((rule, index) => parseRule(rule, index)) };
}

function splitAddress(address: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(address);
  if (!match) return undefined;
  const host = match[1]!.startsWith('[') ? match[1]!.slice(1, -1) : match[1]!;
  return { host: host.toLowerCase(), port: Number(match[2]) };
}

function domainMatches(rule: { name: string; wildcard: boolean }, domain: string): boolean {
  const name = domain.toLowerCase();
  return rule.wildcard ? name.endsWith(`.${rule.name}`) : name === rule.name;
}

/**
 * Whether a credential with these rules may bind `bind`. Domains are checked against domain rules,
 * addresses against address rules, and every label of a label bind must be matched by some label
 * rule. An empty list, or one containing `*`, permits everything. Invalid rules never match.
 */
export function aclPermits(acl: readonly string[] | ParsedAcl, bind: AclBind): boolean {
  const rules = Array.isArray(acl)
    ? (acl as readonly string[]).flatMap((rule, i) => {
        try {
          return [parseRule(rule, i)];
        } catch {
          return [];
        }
      })
    : (acl as ParsedAcl).rules;
  if ((Array.isArray(acl) ? acl.length : rules.length) === 0 || rules.some((r) => r.type === 'any')) return true;
  if ('domain' in bind) return rules.some((r) => r.type === 'domain' && domainMatches(r, bind.domain));
  if ('address' in bind) {
    const wanted = splitAddress(bind.address);
    return wanted !== undefined && rules.some((r) => r.type === 'address' && r.host === wanted.host && r.port === wanted.port);
  }
  const labels = Object.entries(bind.labels);
  return labels.length > 0 && labels.every(([key, value]) =>
    rules.some((r) => r.type === 'label' && (r.key === '*' || r.key === key) && (r.value === '*' || r.value === value)),
  );
}

/** The rules as a readable list for error messages. */
export function describeAcl(acl: readonly string[]): string {
  return acl.length === 0 ? 'no rules (unrestricted)' : acl.join(', ');
}
