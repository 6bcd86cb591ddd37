import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { redactBodyText, redactSerialisedJson } from '../../lib/journal/detail.ts';

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
