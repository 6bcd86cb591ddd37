import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { bodyEntry, keepBytes, keepText, redactBodyText, redactCutJson, redactSerialisedJson } from '../../lib/journal/detail.ts';
import { LIMITS } from '../../lib/limits.ts';

/** Field names: secret ones, near misses, and names that need escaping in JSON. */
const name = fc.oneof(
  fc.constantFrom('token', 'value', 'authtoken', 'client_secret', 'password', 'db_password', 'private_key_pem', 'id_token', 'TOKEN', 'tokens', 'values', 'description', 'id', 'secretive', 'x"token', 'tok\\en', '1', '__proto__'),
  fc.string({ maxLength: 8 }),
);
const text = fc.oneof(fc.constantFrom('', 'token', '"token":"x"', 'a\\"b', '\u2028', '\ud800', '{"value":1}'), fc.string({ maxLength: 12 }));
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, text, fc.double(), fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(name, tie('value'), { maxKeys: 5 }),
})).value;

describe('redactSerialisedJson: the secret fields of JSON Burrow wrote', () => {
  test('answers what parsing and writing it again answers, for any JSON.stringify text', () => {
    fc.assert(
      fc.property(json, (value) => {
        const serialised = JSON.stringify(value);
        assert.equal(redactSerialisedJson(serialised), redactBodyText(serialised));
      }),
      { seed: 46, numRuns: 5000 },
    );
  });

  test('a created key\'s answer keeps everything but its token', () => {
    const answer = { id: 'ak_1', uri: 'https://api.ngrok.com/api_keys/ak_1', description: 'the "token": field', metadata: '{"value":"v"}', created_at: '2026-01-01T00:00:00Z', owner_id: 'usr_1', token: '2ft0_secret' };
    const kept = JSON.parse(redactSerialisedJson(JSON.stringify(answer)));
    assert.deepEqual(kept, { ...answer, token: 'REDACTED' });
    // A `__proto__` field, as a parse of the text would treat it.
    const proto = JSON.stringify(JSON.parse('{"__proto__":{"token":"t"},"token":"u","a\\u0000":1}'));
    assert.equal(redactSerialisedJson(proto), redactBodyText(proto));
    // Nothing to redact: the same string, not a copy.
    const plain = JSON.stringify({ id: 'ak_1', token: null });
    assert.equal(redactSerialisedJson(plain), plain);
  });
});

describe('a body cut at journal_body_bytes: its secrets are replaced as far as it goes', () => {
  /** Secrets are the only strings with `§` (fast-check's strings are printable ASCII). */
  const secret = fc.integer({ min: 0, max: 999 }).map((n) => `§§§${n}§§§`);
  const secretName = fc.constantFrom('token', 'value', 'authtoken', 'client_secret', 'password', 'db_password', 'private_key_pem', 'id_token', 'TOKEN');
  const plainName = fc.constantFrom('description', 'id', 'tokens', 'values', 'name', 'x"y', 'a\\b');
  const body = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 4 }),
    object: fc.tuple(fc.dictionary(plainName, tie('value'), { maxKeys: 4 }), fc.dictionary(secretName, secret, { maxKeys: 2 })).map(([plain, secrets]) => ({ ...plain, ...secrets })),
  })).object;

  test('no part of a secret string survives, wherever the cut falls, written compact or indented', () => {
    fc.assert(
      fc.property(body, fc.constantFrom(0, 2), fc.double({ min: 0, max: 1, noNaN: true }), (value, indent, at) => {
        const whole = JSON.stringify(value, null, indent);
        const cut = whole.slice(0, Math.floor(whole.length * at));
        const kept = redactCutJson(cut);
        assert.ok(!kept.includes('§'), `${JSON.stringify(cut)} kept as ${JSON.stringify(kept)}`);
        // Only values are replaced: what the body said besides its secrets stays as it was.
        assert.equal(kept.replace(/"REDACTED"?/g, ''), cut.replace(/"§§§\d+§§§"|"§[§\d]*$/g, ''));
      }),
      { seed: 46, numRuns: 3000 },
    );
  });

  test('the journals keep a long JSON body with its password replaced, as text or bytes, and say it was cut', () => {
    const long = JSON.stringify({ user: 'ada', password: '§§§1§§§', filler: 'x'.repeat(LIMITS.journal_body_bytes.value), token: '§§§2§§§' }, null, 1);
    const asText = keepText(long, 'application/json');
    assert.equal(asText.truncated, true);
    assert.equal(asText.bytes, Buffer.byteLength(long));
    assert.match(String(asText.data), /"password": "REDACTED"/);
    assert.ok(!String(asText.data).includes('§'));
    const asBytes = bodyEntry(keepBytes(Buffer.from(long).subarray(0, LIMITS.journal_body_bytes.value), Buffer.byteLength(long), 'application/json'))!;
    assert.equal(asBytes.truncated, true);
    assert.equal(asBytes.encoding, 'utf8');
    assert.match(asBytes.data!, /"password": "REDACTED"/);
    // A form, cut: by name.
    const form = keepText(`password=%C2%A7&pad=${'p'.repeat(LIMITS.journal_body_bytes.value)}`, 'application/x-www-form-urlencoded');
    assert.equal(form.truncated, true);
    assert.match(String(form.data), /^password=REDACTED&pad=p/);
  });
});
