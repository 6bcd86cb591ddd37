import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as v from 'valibot';
import { ManualClock, formatTime } from '../../lib/conventions/clock.ts';
import { ApiError } from '../../lib/conventions/errors.ts';
import { description, parseInput, rfc3339 } from '../../lib/conventions/fields.ts';
import { IdFactory, idTime, seededRandom } from '../../lib/conventions/ids.ts';
import { listEnvelope, parsePageRequest } from '../../lib/conventions/paging.ts';
import { makeRef } from '../../lib/conventions/refs.ts';

function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ApiError);
    return error;
  }
  assert.fail('expected an ApiError');
}

describe('ids', () => {
  test('have the prefix and 27 base62 characters, and decode to their creation second', () => {
    const clock = new ManualClock('2025-09-04T10:11:14Z');
    const ids = new IdFactory(seededRandom(1), () => clock.now());
    const id = ids.id('ipp');
    assert.match(id, /^ipp_[0-9A-Za-z]{27}$/);
    assert.equal(idTime(id)?.toISOString(), '2025-09-04T10:11:14.000Z');
  });

  test('decode vendor ids to their documented created_at', () => {
    assert.equal(formatTime(idTime('ipp_32ELEgHfuPaCCgAL6TAb7B2Fq3e')!), '2025-09-04T10:11:14Z');
  });

  test('are strictly increasing within one second', () => {
    const clock = new ManualClock();
    const ids = new IdFactory(seededRandom(7), () => clock.now());
    const made = Array.from({ length: 1000 }, () => ids.ksuid());
    assert.deepEqual([...made].sort(), made);
    assert.equal(new Set(made).size, made.length);
  });

  test('made by adding one to the last id, spell the next number, carries included', () => {
    const clock = new ManualClock('2014-05-13T16:53:20Z');
    // Random bytes of zero: every id after the first is the one before plus one.
    const zeros = (size: number) => new Uint8Array(size);
    const decode = (ksuid: string) => [...ksuid].reduce((n, ch) => n * 62n + BigInt('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.indexOf(ch)), 0n);
    const bytesOf = (n: bigint) => Uint8Array.from({ length: 20 }, (_, i) => Number((n >> BigInt(8 * (19 - i))) & 0xffn));
    // Three below a multiple of 62³: the ids end in zy, zz, then the carry makes three zeros.
    const start = 62n ** 20n * 5n + 62n ** 3n * 1234n - 3n;
    const ids = new IdFactory(zeros, () => clock.now(), { last: bytesOf(start) });
    const made = Array.from({ length: 6 }, () => ids.ksuid());
    assert.deepEqual(made.map(decode), [1n, 2n, 3n, 4n, 5n, 6n].map((k) => start + k));
    assert.equal(decode(made.at(-1)!), [...ids.lastKsuid].reduce((n, byte) => n * 256n + BigInt(byte), 0n));
    assert.match(made[1]!, /z{3}$/);
    assert.match(made[2]!, /000$/);
  });

  test('sort by time across seconds', () => {
    const clock = new ManualClock();
    const ids = new IdFactory(seededRandom(3), () => clock.now());
    const a = ids.id('ak');
    clock.advance(1);
    const b = ids.id('ak');
    assert.ok(a < b);
  });

  test('the same seed and clock give the same ids and tokens', () => {
    const make = () => {
      const clock = new ManualClock();
      const ids = new IdFactory(seededRandom(42), () => clock.now());
      const id = ids.id('ak');
      return [id, ids.token(id)];
    };
    assert.deepEqual(make(), make());
  });

  test('tokens start with the KSUID of their id', () => {
    const ids = new IdFactory(seededRandom(1), () => new Date());
    const id = ids.id('cr');
    assert.ok(ids.token(id).startsWith(`${id.slice(3)}_`));
  });
});

describe('clock', () => {
  test('formats RFC 3339 UTC with whole seconds', () => {
    assert.equal(formatTime(new Date('2026-01-02T03:04:05.678Z')), '2026-01-02T03:04:05Z');
  });
  test('a manual clock moves only when told', () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    assert.equal(formatTime(clock.advance(10)), '2026-01-01T00:00:10Z');
    assert.equal(formatTime(clock.set('2027-01-01T00:00:00+02:00')), '2026-12-31T22:00:00Z');
  });
});

describe('fields', () => {
  test('description counts UTF-8 bytes', () => {
    const schema = v.strictObject({ description: v.optional(description) });
    assert.deepEqual(parseInput(schema, { description: '€'.repeat(85) }), { description: '€'.repeat(85) });
    assert.equal(apiError(() => parseInput(schema, { description: '€'.repeat(86) })).message, 'description: must be at most 255 bytes (got 258)');
  });

  test('RFC 3339 accepts offsets and refuses other forms with its own code', () => {
    const schema = v.strictObject({ at: rfc3339 });
    for (const ok of ['2026-01-02T03:04:05Z', '2026-01-02T03:04:05.123+05:30', '2026-01-02t03:04:05z']) parseInput(schema, { at: ok });
    for (const bad of ['2026-01-02', '2026-02-30T00:00:00Z', '2026-01-02T25:00:00Z', 'yesterday', '2026-01-02T03:04:05']) {
      const error = apiError(() => parseInput(schema, { at: bad }));
      assert.equal(error.code, 241, bad);
      assert.match(error.message, /^at: must be an RFC 3339 time/);
    }
  });

  test('nested paths are named with dots and indexes', () => {
    const schema = v.strictObject({ target: v.strictObject({ list: v.array(v.string()) }) });
    assert.equal(apiError(() => parseInput(schema, { target: { list: ['a', 1] } })).message, 'target.list[1]: must be a string (got 1)');
    const unknown = apiError(() => parseInput(schema, { target: { list: [], extra: true } }));
    assert.equal(unknown.code, 214);
    assert.equal(unknown.message, 'target.extra: unknown field; supported fields: list');
  });
});

describe('paging', () => {
  test('defaults to 100 and reads before_id or beforeId', () => {
    assert.deepEqual(parsePageRequest({}), { limit: 100 });
    assert.deepEqual(parsePageRequest({ before_id: 'ak_2', limit: '5' }), { limit: 5, beforeId: 'ak_2' });
    assert.deepEqual(parsePageRequest({ beforeId: 'ak_3' }), { limit: 100, beforeId: 'ak_3' });
  });

  test('refuses out-of-range limits, unknown and repeated parameters', () => {
    assert.equal(apiError(() => parsePageRequest({ limit: '101' })).code, 233);
    assert.equal(apiError(() => parsePageRequest({ limit: '0' })).code, 233);
    assert.equal(apiError(() => parsePageRequest({ foo: '1' })).code, 231);
    assert.equal(apiError(() => parsePageRequest({ limit: ['1', '2'] })).code, 232);
    assert.equal(apiError(() => parsePageRequest({ before_id: 'a', beforeId: 'b' })).code, 232);
  });

  test('builds the envelope with an absolute next_page_uri only when more exist', () => {
    assert.deepEqual(listEnvelope('keys', [1, 2], 'https://x/api_keys', { limit: 2 }, 'ak_1', true), {
      keys: [1, 2],
      uri: 'https://x/api_keys',
      next_page_uri: 'https://x/api_keys?limit=2&before_id=ak_1',
    });
    assert.equal(listEnvelope('keys', [1], 'https://x/api_keys', { limit: 2 }, 'ak_1', false).next_page_uri, null);
  });
});

describe('refs', () => {
  test('build absolute uris without doubled slashes', () => {
    assert.deepEqual(makeRef('http://h:1/', '/ip_policies', 'ipp_1'), { id: 'ipp_1', uri: 'http://h:1/ip_policies/ipp_1' });
  });
});
