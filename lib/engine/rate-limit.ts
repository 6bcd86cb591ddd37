import type { Clock } from '../conventions/clock.ts';
import { ApiError, ERRORS } from '../conventions/errors.ts';
import { randomBytes } from 'node:crypto';
import { CLUSTER_SCOPE, type Store } from '../store.ts';
import type { RequestGuard } from './context.ts';

/**
 * Optional per-account rate limiting (off by default), like the vendor's: at most `requests` API
 * requests per rolling `windowSeconds` per account; beyond that 429 ERR_BURROW_226 with
 * `Retry-After`. One server alone over its store counts in memory (a sliding log of request times
 * per account). Servers sharing a store (PostgreSQL) count in it, so N servers allow the rate once,
 * not N times: each request first writes its own time (a record under CLUSTER_SCOPE, one
 * transaction that only inserts, so requests never conflict), then reads the newest `requests`
 * other times of its account up to its own (one page read); it is refused (and its record removed)
 * when they all fall in the window. The error bound: a request does not see another whose write
 * committed after its read, so of requests of one account in flight at the same moment, more than
 * the limit may pass — at most as many more as were in flight together; requests one after another
 * are counted exactly. Times are each server's clock: servers on different hosts need synchronised
 * clocks (NTP), and a skew of s seconds moves the window by s. Records that left the window are
 * removed by the requests whose page reaches them, so an account keeps about `requests` of them.
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

export function rateLimitGuard(limit: RateLimit, clock: Clock, shared?: Store): RequestGuard {
  if (shared) return sharedRateLimit(limit, clock, shared);
  const log = new Map<string, number[]>();
  return async (_store, principal) => {
    const now = clock.now().getTime();
    const since = now - limit.windowSeconds * 1000;
    const times = (log.get(principal.account) ?? []).filter((t) => t > since);
    if (times.length >= limit.requests) {
      log.set(principal.account, times);
      refuse(limit, times[0]! - since);
    }
    times.push(now);
    log.set(principal.account, times);
  };
}

/** The 429 of a request over the limit, `wait` ms before the oldest counted request leaves the window. */
function refuse(limit: RateLimit, wait: number): never {
  const retry = Math.max(1, Math.ceil(wait / 1000));
  throw new ApiError(
    ERRORS.RATE_LIMITED,
    `rate limit exceeded: at most ${limit.requests} requests per ${limit.windowSeconds} seconds per account; retry in ${retry} s`,
    {},
    { 'Retry-After': String(retry) },
  );
}

/** The counts in the store several servers share (see the file comment). */
function sharedRateLimit(limit: RateLimit, clock: Clock, store: Store): RequestGuard {
  const timeOf = (id: string) => Number(id.slice(0, id.indexOf(' ')));
  return async (_store, principal) => {
    const now = clock.now().getTime();
    const since = now - limit.windowSeconds * 1000;
    const scope = { account: CLUSTER_SCOPE, kind: `rate/${principal.account}` };
    // Milliseconds, then random digits: ids sort by time, and two requests of one millisecond differ.
    const id = `${String(now).padStart(15, '0')} ${randomBytes(6).toString('hex')}`;
    await store.transaction((tx) => tx.insert(scope, { id }));
    // This request's own time and older ones (`~` sorts after the id's hex digits).
    const page = await store.page(scope, { beforeId: `${id}~`, limit: limit.requests + 1 });
    const others = page.filter((record) => record.id !== id);
    const counted = others.filter((record) => timeOf(record.id) > since);
    const gone = others.filter((record) => timeOf(record.id) <= since).map((record) => record.id);
    const over = counted.length >= limit.requests;
    if (over) gone.push(id);
    if (gone.length > 0) await store.transaction(async (tx) => {
      for (const old of gone) await tx.delete(scope, old);
    });
    if (over) refuse(limit, timeOf(counted[limit.requests - 1]!.id) - since);
  };
}
