import type { Clock } from '../conventions/clock.ts';
import { ApiError, ERRORS } from '../conventions/errors.ts';
import type { RequestGuard } from './context.ts';

/**
 * Optional per-account rate limiting (off by default), like the vendor's: at most `requests` API
 * requests per rolling `windowSeconds` per account; beyond that 429 ERR_BURROW_226 with
 * `Retry-After`. Counts live in memory (a sliding log of request times per account).
 */

export interface RateLimit {
  readonly requests: number;
  readonly windowSeconds: number;
}

/** Parses `120/60s` (also `120/60`, `120/1m`). */
export function parseRateLimit(text: string): RateLimit {
  const match = /^(\d+)\/(\d+)(s|m)?$/.exec(text.trim());
  const requests = Number(match?.[1]);
  const window = Number(match?.[2]) * (match?.[3] === 'm' ? 60 : 1);
  if (!match || requests < 1 || window < 1) throw new Error(`rate limit must look like 120/60s (requests per window), got ${JSON.stringify(text)}`);
  return { requests, windowSeconds: window };
}

export function rateLimitGuard(limit: RateLimit, clock: Clock): RequestGuard {
  const log = new Map<string, number[]>();
  return async (_store, principal) => {
    const now = clock.now().getTime();
    const since = now - limit.windowSeconds * 1000;
    const times = (log.get(principal.account) ?? []).filter((t) => t > since);
    if (times.length >= limit.requests) {
      log.set(principal.account, times);
      const retry = Math.max(1, Math.ceil((times[0]! - since) / 1000));
      throw new ApiError(
        ERRORS.RATE_LIMITED,
        `rate limit exceeded: at most ${limit.requests} requests per ${limit.windowSeconds} seconds per account; retry in ${retry} s`,
        {},
        { 'Retry-After': String(retry) },
      );
    }
    times.push(now);
    log.set(principal.account, times);
  };
}
