import * as v from 'valibot';
import { durationSeconds } from '../../conventions/traffic-policy.ts';
import type { CircuitBreakerSettings } from '../state.ts';
import { ActionConfigProblem, defineAction, enforce, errorEnd, readConfig } from './types.ts';

/** A duration field (`10s`, or a number of seconds) in seconds. */
function seconds(value: string | number, field: string): number {
  const result = typeof value === 'number' ? value : durationSeconds(value);
  if (!(result > 0)) throw new ActionConfigProblem(`${field}: must be a positive duration such as "10s" (got ${JSON.stringify(value)})`);
  return result;
}

const duration = v.optional(v.union([v.string(), v.number()]), '10s');

/**
 * circuit-breaker (and the circuit_breaker module and agent option): refuses requests with 503
 * (ERR_NGROK_3202) while the engine's CircuitBreakerStore (state.ts, Hystrix's breaker) is open
 * for this action, and reports each let-through request's upstream outcome to it.
 */
export const circuitBreaker = defineAction({
  type: 'circuit-breaker',
  compile(config) {
    const c = readConfig(
      v.looseObject({
        enforce,
        error_threshold: v.optional(v.pipe(v.number(), v.minValue(0, 'must be from 0.0 to 1.0'), v.maxValue(1, 'must be from 0.0 to 1.0')), 0.5),
        volume_threshold: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1')), 10),
        window_duration: duration,
        tripped_duration: duration,
        num_buckets: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1')), 10),
      }),
      config,
    );
    const settings: CircuitBreakerSettings = {
      trippedSeconds: seconds(c.tripped_duration, 'config.tripped_duration'),
      windowSeconds: seconds(c.window_duration, 'config.window_duration'),
      buckets: c.num_buckets,
      volumeThreshold: c.volume_threshold,
      errorThreshold: c.error_threshold,
    };
    return { enforce: c.enforce, settings };
  },
  async run(config, context) {
    if (!config.enforce) return { note: 'not enforced' };
    const store = context.services.circuitBreakers;
    const key = `${context.scope.endpoint.id}\0${context.key}`;
    if (!(await store.allow(key, config.settings, context.scope.now))) {
      return { end: errorEnd(503, 'Circuit breaker tripped: the upstream service is failing', 'ERR_NGROK_3202'), note: 'tripped' };
    }
    context.scope.onUpstreamOutcome.push((failed, now) => store.record(key, config.settings, now, failed));
    return { note: 'closed' };
  },
});
