/**
 * Bounds on the policy engine's work per connection and per request. (They join the instance's
 * limits table, lib/limits.ts, once it exists.) Expression sizes and macro nesting are bounded in
 * lib/conventions/cel.ts, patterns are RE2 (linear time) and checked when a policy is stored.
 */

/** The largest request body verify-webhook and jwt-validation (`method: body`) read, in bytes; a longer body fails them. */
export const MAX_INSPECTED_BODY_BYTES = 1024 * 1024;
/** The longest signature or token header value read, in bytes; a longer one fails verification. */
export const MAX_SIGNATURE_HEADER_BYTES = 8 * 1024;
/** The longest JSON Web Token read, in bytes. */
export const MAX_JWT_BYTES = 16 * 1024;
/** The most keys read from one JSON Web Key Set. */
export const MAX_JWKS_KEYS = 100;
/** How long a fetched JSON Web Key Set is reused, in seconds (the vendor refreshes "roughly every 15 minutes"). */
export const JWKS_CACHE_SECONDS = 15 * 60;
/** The most JSON Web Key Sets (and OIDC discovery documents) kept in the cache. */
export const MAX_CACHED_DOCUMENTS = 1000;
/** The longest string an interpolation (`${…}`) may produce, in bytes. */
export const MAX_INTERPOLATED_BYTES = 64 * 1024;
/** The most rate-limit buckets the in-memory store keeps; past it the least recently used is dropped. */
export const MAX_RATE_LIMIT_BUCKETS = 100_000;
/** The most circuit breakers the in-memory store keeps; past it the least recently used is dropped. */
export const MAX_CIRCUIT_BREAKERS = 10_000;
/** The most `log` entries one phase records. */
export const MAX_LOG_ENTRIES = 100;
/** The longest a timestamped webhook may be old or early, in seconds, when its provider names no tolerance (the vendor's default). */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 180;
