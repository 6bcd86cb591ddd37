import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AclRuleError, aclPermits, parseAcl, type AclBind } from '../../../lib/conventions/acl.ts';

describe('parseAcl', () => {
  const valid = [
    '*',
    'bind:example.com',
    'bind:*.example.com',
    'bind:Sub.Example.COM',
    'bind:1.tcp.example.com:20001',
    'bind:10.0.0.1:22',
    'bind:[2001:db8::1]:443',
    'bind:region=eu',
    'bind:*=eu',
    'bind:region=*',
    'bind:*=*',
    'bind:k8s.io/app=web-1',
  ];
  for (const rule of valid) {
    test(`accepts ${rule}`, () => assert.equal(parseAcl([rule]).rules.length, 1));
  }

  const invalid: [string, RegExp][] = [
    ['allow:example.com', /must be "\*" or start with "bind:"/],
    ['bind:', /bind target is empty/],
    ['bind:exa mple.com', /not a valid domain/],
    ['bind:foo.*.example.com', /wildcard may only be the whole first label/],
    ['bind:*example.com', /wildcard may only be the whole first label/],
    ['bind:-bad.example.com', /not a valid domain/],
    ['bind:example.com:0', /port must be 1-65535/],
    ['bind:example.com:70000', /port must be 1-65535/],
    ['bind:[zz::1]:22', /host must be/],
    ['bind:region=e u', /label value/],
    ['bind:=eu', /label key/],
    ['bind:region=', /label value/],
    [`bind:${'k'.repeat(64)}=v`, /label key/],
  ];
  for (const [rule, reason] of invalid) {
    test(`refuses ${JSON.stringify(rule)} and names it`, () => {
      assert.throws(() => parseAcl(['*', rule]), (error: unknown) => {
        assert.ok(error instanceof AclRuleError);
        assert.equal(error.index, 1);
        assert.equal(error.rule, rule);
        assert.match(error.message, /^acl\[1\]: /);
        assert.match(error.message, reason);
        return true;
      });
    });
  }
});

describe('aclPermits', () => {
  const cases: [readonly string[], AclBind, boolean][] = [
    [[], { domain: 'anything.example.net' }, true],
    [['*'], { address: '1.tcp.example.com:20001' }, true],
    [['*', 'bind:a.example.com'], { labels: { any: 'thing' } }, true],
    [['bind:example.com'], { domain: 'example.com' }, true],
    [['bind:example.com'], { domain: 'EXAMPLE.com' }, true],
    [['bind:example.com'], { domain: 'www.example.com' }, false],
    [['bind:*.example.com'], { domain: 'www.example.com' }, true],
    [['bind:*.example.com'], { domain: 'a.b.example.com' }, true],
    [['bind:*.example.com'], { domain: '*.example.com' }, true],
    [['bind:*.example.com'], { domain: 'example.com' }, false],
    [['bind:*.example.com'], { domain: 'badexample.com' }, false],
    [['bind:example.com'], { address: 'example.com:443' }, false],
    [['bind:1.tcp.example.com:20001'], { address: '1.tcp.example.com:20001' }, true],
    [['bind:1.tcp.example.com:20001'], { address: '1.tcp.example.com:20002' }, false],
    [['bind:[2001:db8::1]:443'], { address: '[2001:DB8::1]:443' }, true],
    [['bind:region=eu'], { labels: { region: 'eu' } }, true],
    [['bind:region=eu'], { labels: { region: 'us' } }, false],
    [['bind:region=eu'], { labels: { region: 'eu', tier: 'web' } }, false],
    [['bind:region=eu', 'bind:tier=*'], { labels: { region: 'eu', tier: 'web' } }, true],
    [['bind:*=eu'], { labels: { zone: 'eu' } }, true],
    [['bind:*=*'], { labels: { zone: 'x' } }, true],
    [['bind:*=*'], { domain: 'example.com' }, false],
    [['bind:region=eu'], { labels: {} }, false],
  ];
  for (const [acl, bind, expected] of cases) {
    test(`${JSON.stringify(acl)} ${expected ? 'permits' : 'refuses'} ${JSON.stringify(bind)}`, () => {
      assert.equal(aclPermits(acl, bind), expected);
      assert.equal(aclPermits(parseAcl(acl), bind), expected, 'parsed rules answer the same');
    });
  }
});
