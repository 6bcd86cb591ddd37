import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMemoryCircuitBreakers, createMemoryRateLimits, type CircuitBreakerSettings } from '../../lib/policy/state.ts';
import { CONN, ENDPOINT, harness, onRequest, policyOf, requestFacts } from './helpers.ts';

const at = (iso: string) => new Date(iso);

describe('rate-limit: the sliding window', () => {
  test('capacity per window; the previous window weighs by the part still inside the last rate seconds', () => {
    const store = createMemoryRateLimits();
    const take = (iso: string) => store.take('k', 3, 60, at(iso));
    // Windows are aligned to the epoch: [12:00:00, 12:01:00) …
    assert.deepEqual([take('2026-03-01T12:00:10Z'), take('2026-03-01T12:00:20Z'), take('2026-03-01T12:00:30Z')].map((d) => d), [
      { allowed: true, retryAfterSeconds: 0 },
      { allowed: true, retryAfterSeconds: 0 },
      { allowed: true, retryAfterSeconds: 0 },
    ]);
    // Full: the next room is 1 s after 12:01:00 + 60 × (1 − 2/3) = 12:01:20, from 12:00:40 that is 40 s.
    assert.deepEqual(take('2026-03-01T12:00:40Z'), { allowed: false, retryAfterSeconds: 40 });
    // At 12:01:15 the estimate is 3 × 0.75 = 2.25: one more (3.25) does not fit; room at 12:01:20.
    assert.deepEqual(take('2026-03-01T12:01:15Z'), { allowed: false, retryAfterSeconds: 5 });
    assert.deepEqual(take('2026-03-01T12:01:20Z'), { allowed: true, retryAfterSeconds: 0 });
    // Two windows later nothing remains.
    assert.deepEqual([take('2026-03-01T12:03:00Z'), take('2026-03-01T12:03:00Z'), take('2026-03-01T12:03:00Z'), take('2026-03-01T12:03:00Z')].map((d) => d.allowed), [true, true, true, false]);
  });

  test('buckets are separate and the least recently used is dropped past the limit', () => {
    const store = createMemoryRateLimits(2);
    const now = at('2026-03-01T12:00:00Z');
    assert.equal(store.take('a', 1, 60, now).allowed, true);
    assert.equal(store.take('b', 1, 60, now).allowed, true);
    assert.equal(store.take('a', 1, 60, now).allowed, false);
    assert.equal(store.take('c', 1, 60, now).allowed, true);
    assert.equal(store.take('b', 1, 60, now).allowed, true, 'b was the least recently used and was dropped');
  });

  test('the action: 429 with Retry-After per bucket key, refused requests do not count, enforce: false only records', async () => {
    const h = harness();
    const document = `on_http_request: [{actions: [{type: rate-limit, config: {name: per-ip, algorithm: sliding_window, capacity: 2, rate: 60s, bucket_key: [conn.client_ip, "getReqHeader('X-Tenant')"]}}]}]`;
    const policy = policyOf(h, document);
    const send = async (clientIp = CONN.clientIp, tenant = 'acme') =>
      (await h.engine.http(policy, ENDPOINT, { ...CONN, clientIp }, requestFacts({ headers: [['X-Tenant', tenant]] })).request()).terminal;
    assert.equal(await send(), undefined);
    assert.equal(await send(), undefined);
    // Two in the window starting now; the next room is halfway through the next window (2 × 0.5 + 1 = 2).
    assert.deepEqual(await send(), {
      kind: 'error',
      error: { status: 429, message: 'Too Many Requests: rate limit "per-ip" exceeded for bucket "203.0.113.7,[\\"acme\\"]": 2 per 60s', headers: [['retry-after', '90']] },
    });
    assert.equal(await send('198.51.100.1'), undefined, 'another client address is another bucket');
    assert.equal(await send(CONN.clientIp, 'other'), undefined, 'another tenant is another bucket');
    h.clock.advance(120);
    assert.equal(await send(), undefined);
    const observed = await onRequest(h, `on_http_request: [{actions: [{type: rate-limit, config: {name: soft, enforce: false, algorithm: sliding_window, capacity: 1, rate: 60s, bucket_key: [req.host]}}, {type: log, config: {metadata: {limited: '\${actions.ngrok.rate_limit.limited}'}}}]}]`);
    assert.deepEqual(observed.logs, [{ phase: 'on_http_request', metadata: { limited: false } }]);
  });
});

describe('circuit-breaker: closed, open, half-open', () => {
  const settings: CircuitBreakerSettings = { trippedSeconds: 10, windowSeconds: 10, buckets: 10, volumeThreshold: 4, errorThreshold: 0.5 };

  test('opens when the window holds enough requests with enough failures; one trial after the tripped time', () => {
    const store = createMemoryCircuitBreakers();
    let now = at('2026-03-01T12:00:00Z');
    const tick = (seconds: number) => (now = new Date(now.getTime() + seconds * 1000));
    for (const failed of [false, true, false]) {
      assert.equal(store.allow('k', settings, now), true);
      store.record('k', settings, now, failed);
      tick(1);
    }
    assert.equal(store.allow('k', settings, now), true, 'three requests: below the volume threshold');
    store.record('k', settings, now, true);
    assert.equal(store.allow('k', settings, now), false, '4 requests, 2 failed: open');
    tick(9);
    assert.equal(store.allow('k', settings, now), false, 'still tripped');
    tick(1);
    assert.equal(store.allow('k', settings, now), true, 'the trial request');
    assert.equal(store.allow('k', settings, now), false, 'only one trial at a time');
    store.record('k', settings, now, true);
    tick(5);
    assert.equal(store.allow('k', settings, now), false, 'the trial failed: open again');
    tick(5);
    assert.equal(store.allow('k', settings, now), true);
    store.record('k', settings, now, false);
    assert.equal(store.allow('k', settings, now), true, 'the trial succeeded: closed');
  });

  test('old buckets leave the rolling window', () => {
    const store = createMemoryCircuitBreakers();
    let now = at('2026-03-01T12:00:00Z');
    for (let i = 0; i < 3; i++) store.record('k', settings, now, true);
    now = new Date(now.getTime() + 11_000);
    store.record('k', settings, now, true);
    assert.equal(store.allow('k', settings, now), true, 'the first three failures are outside the 10 s window');
  });

  test('the action counts upstream answers (5xx and failures) and refuses with 503 while open', async () => {
    const h = harness();
    const policy = policyOf(h, 'on_http_request: [{actions: [{type: circuit-breaker, config: {error_threshold: 0.5, volume_threshold: 2, window_duration: 10s, tripped_duration: 30s}}]}]');
    const attempt = () => h.engine.http(policy, ENDPOINT, CONN, requestFacts());
    const first = attempt();
    assert.equal((await first.request()).terminal, undefined);
    await first.response({ status: 502, headers: [] });
    const second = attempt();
    assert.equal((await second.request()).terminal, undefined);
    await second.upstreamFailed();
    assert.deepEqual((await attempt().request()).terminal, { kind: 'error', error: { status: 503, code: 'ERR_NGROK_3202', message: 'Circuit breaker tripped: the upstream service is failing', headers: [] } });
    h.clock.advance(30);
    const trial = attempt();
    assert.equal((await trial.request()).terminal, undefined);
    await trial.response({ status: 200, headers: [] });
    assert.equal((await attempt().request()).terminal, undefined);
  });
});
