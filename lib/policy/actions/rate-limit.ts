import * as v from 'valibot';
import type { PolicyExpression } from '../../conventions/cel.ts';
import { durationSeconds } from '../../conventions/traffic-policy.ts';
import { celToText } from '../values.ts';
import { defineAction, enforce, errorEnd, readConfig } from './types.ts';

/**
 * rate-limit: requests are counted per bucket (the values of `bucket_key`, CEL expressions) in the
 * engine's RateLimitStore (state.ts, the vendor's sliding window); past `capacity` per `rate` a
 * request is refused with 429 and `Retry-After`, unless `enforce: false`. The result is in
 * `actions.ngrok.rate_limit`. Buckets are per endpoint and rate-limit `name`.
 */
export const rateLimit = defineAction({
  results: 'rate_limit',
  type: 'rate-limit',
  compile(config, tools) {
    const c = readConfig(
      v.looseObject({
        name: v.string(),
        enforce,
        algorithm: v.picklist(['sliding_window']),
        capacity: v.number(),
        rate: v.pipe(v.string(), v.regex(/^(?:\d+h)?(?:\d+m)?(?:\d+s)?$/, 'must be a duration such as "60s"')),
        bucket_key: v.array(v.string()),
      }),
      config,
    );
    return { ...c, seconds: durationSeconds(c.rate), keys: c.bucket_key.map((key, i): PolicyExpression => tools.expression(key, `config.bucket_key[${i}]`)) };
  },
  async run(config, context) {
    const values = config.keys.map((key) => celToText(context.evaluate(key)));
    const bucket = values.join(',');
    const store = context.services.rateLimits;
    const decision = await store.take(`${context.scope.endpoint.id}\0${config.name}\0${JSON.stringify(values)}`, config.capacity, config.seconds, context.scope.now);
    const message = decision.allowed ? '' : `rate limit ${JSON.stringify(config.name)} exceeded for bucket ${JSON.stringify(bucket)}: ${config.capacity} per ${config.rate}`;
    context.scope.setActionResult('rate_limit', { bucket_key: bucket, limited: !decision.allowed, error: { code: '', message } });
    if (decision.allowed) return { note: `bucket ${JSON.stringify(bucket)} within ${config.capacity} per ${config.rate}` };
    if (!config.enforce) return { note: `${message} (not enforced)` };
    return { end: errorEnd(429, `Too Many Requests: ${message}`, undefined, [['retry-after', String(decision.retryAfterSeconds)]]), note: message };
  },
});
