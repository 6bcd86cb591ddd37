import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import ipaddr from 'ipaddr.js';
import { CidrError, evaluateIpRules, parseCidr, type IpRule } from '../../lib/conventions/cidr.ts';

describe('parseCidr', () => {
  const valid: [string, string][] = [
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['192.168.1.7/32', '192.168.1.7/32'],
    [' 172.16.0.0/12 ', '172.16.0.0/12'],
    ['2001:DB8::/32', '2001:db8::/32'],
    ['::/0', '::/0'],
    ['2001:db8::1/128', '2001:db8::1/128'],
    ['::ffff:10.0.0.0/104', '::ffff:a00:0/104'],
  ];
  for (const [input, canonical] of valid) {
    test(`accepts ${input} as ${canonical}, a network ipaddr.js agrees with`, () => {
      const cidr = parseCidr(input);
      assert.equal(cidr.text, canonical);
      const [address, prefix] = ipaddr.parseCIDR(canonical);
      assert.equal(cidr.prefix, prefix);
      assert.deepEqual(cidr.bytes, address.toByteArray());
    });
  }

  const refused: [string, CidrError['reason'], string | undefined][] = [
    ['10.1.2.3', 'missing_mask', '10.1.2.3/32'],
    ['2001:db8::1', 'missing_mask', '2001:db8::1/128'],
    ['10.1.2.3/24', 'host_bits', '10.1.2.0/24'],
    ['10.0.0.1/0', 'host_bits', '0.0.0.0/0'],
    ['2001:db8::1/32', 'host_bits', '2001:db8::/32'],
    ['10.0.0.0/33', 'invalid', undefined],
    ['2001:db8::/129', 'invalid', undefined],
    ['10.0.0/8', 'invalid', undefined],
    ['10.0.0.0/', 'invalid', undefined],
    ['10.0.0.0/-1', 'invalid', undefined],
    ['0x0a.0.0.0/8', 'invalid', undefined],
    ['fe80::1%eth0/64', 'invalid', undefined],
    ['example.com/8', 'invalid', undefined],
    ['', 'invalid', undefined],
  ];
  for (const [input, reason, suggestion] of refused) {
    test(`refuses ${JSON.stringify(input)} (${reason})`, () => {
      assert.throws(() => parseCidr(input), (error: unknown) => {
        assert.ok(error instanceof CidrError);
        assert.equal(error.reason, reason);
        assert.equal(error.suggestion, suggestion);
        if (suggestion) assert.ok(error.message.includes(suggestion));
        return true;
      });
    });
  }
});

describe('evaluateIpRules', () => {
  const allow = (cidr: string): IpRule => ({ cidr, action: 'allow' });
  const deny = (cidr: string): IpRule => ({ cidr, action: 'deny' });
  const cases: [string, IpRule[], string, boolean][] = [
    ['no rules deny everything', [], '10.0.0.1', false],
    ['an unmatched address is denied', [allow('10.0.0.0/8')], '11.0.0.1', false],
    ['the first address of a prefix matches', [allow('10.0.0.0/8')], '10.0.0.0', true],
    ['the last address of a prefix matches', [allow('10.0.0.0/8')], '10.255.255.255', true],
    ['one past the last does not', [allow('10.0.0.0/8')], '11.0.0.0', false],
    ['a prefix that does not end on a byte', [allow('10.0.0.0/9')], '10.127.255.255', true],
    ['…and just outside it', [allow('10.0.0.0/9')], '10.128.0.0', false],
    ['/0 matches every IPv4 address', [allow('0.0.0.0/0')], '203.0.113.9', true],
    ['/0 of IPv4 does not match IPv6', [allow('0.0.0.0/0')], '2001:db8::1', false],
    ['/32 matches exactly one address', [allow('192.0.2.1/32')], '192.0.2.1', true],
    ['/32 does not match its neighbour', [allow('192.0.2.1/32')], '192.0.2.2', false],
    ['the longer prefix wins: deny inside allow', [allow('10.0.0.0/8'), deny('10.1.0.0/16')], '10.1.2.3', false],
    ['the longer prefix wins: allow inside deny', [deny('10.0.0.0/8'), allow('10.1.0.0/16')], '10.1.2.3', true],
    ['outside the longer prefix the shorter decides', [allow('10.0.0.0/8'), deny('10.1.0.0/16')], '10.2.0.1', true],
    ['deny wins a tie', [allow('10.0.0.0/8'), deny('10.0.0.0/8')], '10.0.0.1', false],
    ['deny wins a tie in any order', [deny('10.0.0.0/8'), allow('10.0.0.0/8')], '10.0.0.1', false],
    ['IPv6 /128', [allow('2001:db8::1/128')], '2001:db8::1', true],
    ['IPv6 /128 neighbour', [allow('2001:db8::1/128')], '2001:db8::2', false],
    ['IPv6 /0', [allow('::/0')], 'fe80::1', true],
    ['IPv6 /0 does not match IPv4', [allow('::/0')], '10.0.0.1', false],
    ['IPv6 longest prefix', [allow('2001:db8::/32'), deny('2001:db8:1::/48')], '2001:db8:1::5', false],
    ['IPv6 last address of a prefix', [allow('2001:db8::/32')], '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['IPv6 written in upper case', [allow('2001:db8::/32')], '2001:DB8::7', true],
    ['an IPv4-mapped address is evaluated as IPv4', [allow('127.0.0.0/8')], '::ffff:127.0.0.1', true],
    ['an IPv4-mapped address is denied by IPv4 rules', [deny('127.0.0.1/32'), allow('0.0.0.0/0')], '::ffff:127.0.0.1', false],
    ['a bracketed address with a zone', [allow('fe80::/10')], '[fe80::1%eth0]', true],
    ['an unparseable address is denied', [allow('0.0.0.0/0'), allow('::/0')], 'not-an-ip', false],
    ['an unparseable rule never matches', [{ cidr: 'nonsense', action: 'allow' }], '10.0.0.1', false],
  ];
  for (const [name, rules, address, allowed] of cases) {
    test(`${name} (${address})`, () => {
      assert.equal(evaluateIpRules(rules, address).allowed, allowed);
    });
  }

  test('reports the deciding rule', () => {
    const rules = [allow('10.0.0.0/8'), deny('10.1.0.0/16')];
    assert.equal(evaluateIpRules(rules, '10.1.0.9').rule, rules[1]);
    assert.equal(evaluateIpRules(rules, '11.0.0.1').rule, undefined);
  });
});
