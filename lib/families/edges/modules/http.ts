import * as v from 'valibot';
import { fail } from '../../../conventions/errors.ts';
import { coded, zeroIsUnset } from '../../../conventions/fields.ts';
import { httpHeaderMap } from '../../backends/index.ts';
import { EDGES_ERRORS } from '../errors.ts';
import { type ModuleSpec, at, enabled, headerNames, MAX_UINT32, nonEmpty, regexList, seconds } from './spec.ts';

/**
 * The HTTP route modules that shape traffic: headers, compression, websocket conversion, circuit
 * breaker, webhook verification and the user agent filter.
 */

const headersModule = (name: 'request_headers' | 'response_headers', label: string): ModuleSpec => ({
  name,
  label,
  schema: v.strictObject({ enabled, add: v.optional(v.nullable(httpHeaderMap)), remove: v.optional(v.nullable(headerNames)) }),
  store: (_ctx, input: { enabled?: boolean; add?: Record<string, string> | null; remove?: string[] | null }) => ({
    enabled: input.enabled ?? true,
    add: { ...(input.add ?? {}) },
    remove: [...(input.remove ?? [])],
  }),
  respond: (_ctx, stored) => ({ enabled: stored.enabled, add: stored.add, remove: stored.remove }),
});

export const REQUEST_HEADERS_MODULE = headersModule('request_headers', 'request headers');
export const RESPONSE_HEADERS_MODULE = headersModule('response_headers', 'response headers');

const toggleModule = (name: string, label: string): ModuleSpec => ({
  name,
  label,
  schema: v.strictObject({ enabled }),
  store: (_ctx, input: { enabled?: boolean }) => ({ enabled: input.enabled ?? true }),
  respond: (_ctx, stored) => ({ enabled: stored.enabled }),
});

export const COMPRESSION_MODULE = toggleModule('compression', 'compression');
export const WEBSOCKET_TCP_CONVERTER_MODULE = toggleModule('websocket_tcp_converter', 'websocket TCP converter');

const CIRCUIT_BREAKER_DEFAULTS = { tripped_duration: 10, rolling_window: 10, num_buckets: 10, volume_threshold: 20, error_threshold_percentage: 0.5 };

/**
 * Circuit breaker; defaults: tripped 10 s, window 10 s, 10 buckets, 20 requests, 50 % errors. A 0
 * counts as not sent (the default applies): the vendor's request type cannot tell 0 from absent.
 */
export const CIRCUIT_BREAKER_MODULE: ModuleSpec = {
  name: 'circuit_breaker',
  label: 'circuit breaker',
  schema: v.strictObject({
    enabled,
    tripped_duration: zeroIsUnset(seconds),
    rolling_window: zeroIsUnset(seconds),
    num_buckets: zeroIsUnset(v.pipe(v.number(), v.check((n) => Number.isInteger(n) && n >= 1 && n <= 128, (issue) => `must be an integer from 1 to 128 (got ${issue.input})`))),
    volume_threshold: zeroIsUnset(v.pipe(v.number(), v.check((n) => Number.isInteger(n) && n >= 0 && n <= MAX_UINT32, (issue) => `must be a whole number from 0 to ${MAX_UINT32} (got ${issue.input})`))),
    error_threshold_percentage: zeroIsUnset(
      v.pipe(v.number(), v.check((n) => n >= 0 && n <= 1, (issue) => coded(EDGES_ERRORS.CIRCUIT_BREAKER_THRESHOLD_INVALID, `must be a fraction from 0.0 to 1.0 (got ${issue.input})`))),
    ),
  }),
  store: (_ctx, input: Partial<typeof CIRCUIT_BREAKER_DEFAULTS> & { enabled?: boolean }) => ({
    enabled: input.enabled ?? true,
    tripped_duration: input.tripped_duration ?? CIRCUIT_BREAKER_DEFAULTS.tripped_duration,
    rolling_window: input.rolling_window ?? CIRCUIT_BREAKER_DEFAULTS.rolling_window,
    num_buckets: input.num_buckets ?? CIRCUIT_BREAKER_DEFAULTS.num_buckets,
    volume_threshold: input.volume_threshold ?? CIRCUIT_BREAKER_DEFAULTS.volume_threshold,
    error_threshold_percentage: input.error_threshold_percentage ?? CIRCUIT_BREAKER_DEFAULTS.error_threshold_percentage,
  }),
  respond: (_ctx, stored) => ({
    enabled: stored.enabled,
    tripped_duration: stored.tripped_duration,
    rolling_window: stored.rolling_window,
    num_buckets: stored.num_buckets,
    volume_threshold: stored.volume_threshold,
    error_threshold_percentage: stored.error_threshold_percentage,
  }),
};

/**
 * Webhook verification: `provider` names the sender; `secret` is required except for SNS, stored,
 * answered as null.
 */
export const WEBHOOK_VERIFICATION_MODULE: ModuleSpec = {
  name: 'webhook_verification',
  label: 'webhook verification',
  schema: v.strictObject({ enabled, provider: nonEmpty, secret: v.optional(v.string()) }),
  store(_ctx, input: { enabled?: boolean; provider: string; secret?: string }, field) {
    const secret = input.secret ?? '';
    if (secret === '' && input.provider.toUpperCase() !== 'SNS') fail('INVALID_FIELD', `${at(field, 'secret')}: is required for provider ${input.provider} (only SNS verifies without a secret)`);
    return { enabled: input.enabled ?? true, provider: input.provider, secret };
  },
  respond: (_ctx, stored) => ({ enabled: stored.enabled, provider: stored.provider, secret: null }),
};


/**
 * User agent filter: `allow` and `deny` RE2 patterns (the vendor's Go syntax, such as `(?i)bot`).
 */
export const USER_AGENT_FILTER_MODULE: ModuleSpec = {
  name: 'user_agent_filter',
  label: 'user agent filter',
  schema: v.strictObject({ enabled, allow: v.optional(v.nullable(regexList)), deny: v.optional(v.nullable(regexList)) }),
  store: (_ctx, input: { enabled?: boolean; allow?: string[] | null; deny?: string[] | null }) => ({
    enabled: input.enabled ?? true,
    allow: [...(input.allow ?? [])],
    deny: [...(input.deny ?? [])],
  }),
  respond: (_ctx, stored) => ({ enabled: stored.enabled, allow: stored.allow, deny: stored.deny }),
};
