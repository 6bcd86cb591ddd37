import { LIMITS } from '../limits.ts';

/**
 * The state rate-limit and circuit-breaker actions keep between requests, behind interfaces a host
 * may implement (to share state, or inspect it), with the in-memory stores the engine uses by default.
 */

/** Whether one more request fits its bucket; when not, the whole seconds until one would. */
export interface RateDecision {
  readonly allowed: boolean;
  readonly retryAfterSeconds: number;
}

/**
 * Rate-limit state, injected so a host may share it (or tests inspect it). `take` counts the
 * request when it is allowed; refused requests do not count (they never reach the upstream).
 */
export interface RateLimitStore {
  take(key: string, capacity: number, windowSeconds: number, now: Date): RateDecision | Promise<RateDecision>;
}

/** The in-memory rate-limit store answers at once. */
export interface MemoryRateLimits extends RateLimitStore {
  take(key: string, capacity: number, windowSeconds: number, now: Date): RateDecision;
}

interface Bucket {
  window: number;
  current: number;
  previous: number;
}

/**
 * The vendor's `sliding_window` algorithm as a sliding-window counter: windows of `rate` seconds
 * aligned to the epoch; the estimate at time t is the previous window's count weighted by the part
 * of it still inside the last `rate` seconds, plus the current window's count. A request is allowed
 * while the estimate stays below `capacity`. Buckets live in memory, at most `policy_rate_limit_buckets` (lib/limits.ts),
 * the least recently used dropped first (as the vendor, state is per server).
 */
export function createMemoryRateLimits(maxBuckets: number = LIMITS.policy_rate_limit_buckets.value): MemoryRateLimits {
  const buckets = new Map<string, Bucket>();
  return {
    take(key, capacity, windowSeconds, now) {
      const size = windowSeconds * 1000;
      const time = now.getTime();
      const window = Math.floor(time / size);
      let bucket = buckets.get(key);
      buckets.delete(key);
      if (!bucket || bucket.window < window - 1) bucket = { window, current: 0, previous: 0 };
      else if (bucket.window === window - 1) bucket = { window, current: 0, previous: bucket.current };
      buckets.set(key, bucket);
      if (buckets.size > maxBuckets) buckets.delete(buckets.keys().next().value!);
      const elapsed = (time - window * size) / size;
      if (bucket.previous * (1 - elapsed) + bucket.current + 1 <= capacity) {
        bucket.current++;
        return { allowed: true, retryAfterSeconds: 0 };
      }
      // The earliest time the estimate leaves room for one more: later in this window when the
      // previous window's weight has decayed enough, else in the next window, where this window's
      // count becomes the decaying part.
      let waitMs: number;
      if (bucket.current + 1 <= capacity && bucket.previous > 0) waitMs = (1 - (capacity - bucket.current - 1) / bucket.previous) * size - (time - window * size);
      else waitMs = (window + 1) * size - time + (bucket.current > 0 ? Math.max(0, 1 - (capacity - 1) / bucket.current) * size : 0);
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(Math.round(waitMs) / 1000)) };
    },
  };
}

/** A circuit breaker's settings (seconds; errorThreshold a fraction of requests). */
export interface CircuitBreakerSettings {
  readonly trippedSeconds: number;
  readonly windowSeconds: number;
  readonly buckets: number;
  readonly volumeThreshold: number;
  readonly errorThreshold: number;
}

/** Circuit-breaker state, injected so a host may share it. */
export interface CircuitBreakerStore {
  /** Whether a request may go upstream now; while tripped, false, except the one trial request after `trippedSeconds`. */
  allow(key: string, settings: CircuitBreakerSettings, now: Date): boolean | Promise<boolean>;
  /** Records the upstream's outcome of a request `allow` let through. */
  record(key: string, settings: CircuitBreakerSettings, now: Date, failed: boolean): void | Promise<void>;
}

/** The in-memory circuit-breaker store answers at once. */
export interface MemoryCircuitBreakers extends CircuitBreakerStore {
  allow(key: string, settings: CircuitBreakerSettings, now: Date): boolean;
  record(key: string, settings: CircuitBreakerSettings, now: Date, failed: boolean): void;
}

interface Breaker {
  counts: { bucket: number; total: number; errors: number }[];
  openedAt?: number;
  trialInFlight: boolean;
}

/**
 * Hystrix's circuit breaker, as the vendor documents its module and action: outcomes are counted
 * in `buckets` buckets over a rolling window of `windowSeconds`; when at least `volumeThreshold`
 * requests are in the window and the share of failures (5xx answers and upstream errors) reaches
 * `errorThreshold`, the breaker opens and requests are refused (503, ERR_NGROK_3202) for
 * `trippedSeconds`; then one trial request goes through: success closes the breaker, failure opens
 * it again. In memory, per engine (as the vendor, per server); at most `policy_circuit_breakers` (lib/limits.ts).
 */
export function createMemoryCircuitBreakers(maxBreakers: number = LIMITS.policy_circuit_breakers.value): MemoryCircuitBreakers {
  const breakers = new Map<string, Breaker>();
  const get = (key: string) => {
    const breaker = breakers.get(key) ?? { counts: [], trialInFlight: false };
    breakers.delete(key);
    breakers.set(key, breaker);
    if (breakers.size > maxBreakers) breakers.delete(breakers.keys().next().value!);
    return breaker;
  };
  return {
    allow(key, settings, now) {
      const breaker = get(key);
      if (breaker.openedAt === undefined) return true;
      if (now.getTime() < breaker.openedAt + settings.trippedSeconds * 1000 || breaker.trialInFlight) return false;
      breaker.trialInFlight = true;
      return true;
    },
    record(key, settings, now, failed) {
      const breaker = get(key);
      const time = now.getTime();
      if (breaker.trialInFlight) {
        breaker.trialInFlight = false;
        breaker.counts = [];
        breaker.openedAt = failed ? time : undefined;
        return;
      }
      if (breaker.openedAt !== undefined) return;
      const width = (settings.windowSeconds * 1000) / settings.buckets;
      const bucket = Math.floor(time / width);
      breaker.counts = breaker.counts.filter((count) => count.bucket > bucket - settings.buckets);
      let current = breaker.counts.find((count) => count.bucket === bucket);
      if (!current) breaker.counts.push((current = { bucket, total: 0, errors: 0 }));
      current.total++;
      if (failed) current.errors++;
      const total = breaker.counts.reduce((sum, count) => sum + count.total, 0);
      const errors = breaker.counts.reduce((sum, count) => sum + count.errors, 0);
      if (total >= settings.volumeThreshold && errors / total >= settings.errorThreshold) {
        breaker.openedAt = time;
        breaker.counts = [];
      }
    },
  };
}
