import * as v from 'valibot';
import { formatTime, type Clock } from '../conventions/clock.ts';
import { ApiError, ERRORS, fail } from '../conventions/errors.ts';
import { parseInput } from '../conventions/fields.ts';
import { cryptoRandom, type IdFactory, type RandomSource } from '../conventions/ids.ts';
import { LIMITS, limitNote } from '../limits.ts';

/**
 * Faults on demand: rules that make matching API requests fail, slow down or lose their
 * connection, so that a client's error, retry and timeout paths can be tested against Burrow.
 * The request pipeline (lib/engine/pipeline.ts) asks `Faults.strike` once per authenticated request,
 * after auth and before guards and the operation; `/_burrow/faults` and `burrow.faults` manage
 * the rules.
 *
 * A rule matches on any of method, path pattern (`*` any run of characters but `/`, `**` any run),
 * operation id pattern and account; of the requests it matches it applies to every `every`th,
 * each with probability `probability`, at most `times` times (then it stays, spent, until
 * removed). Its effect: `latency_ms` (fixed, or `{min, max}` drawn per request) and then one of
 * an error answer (`error`: status, any `error_code`, message), a 429 with `Retry-After`
 * (`rate_limit`), or a dropped connection (`drop_connection`: the HTTP adapter closes the socket
 * without an answer; in-process callers get a `ConnectionDroppedError`). Draws (probability,
 * latency in a range) come from the instance's seed in deterministic mode, so a seeded run
 * replays them. The first matching rule that applies wins.
 */

export const pattern = (what: string): v.GenericSchema<string> => v.pipe(v.string(), v.minLength(1, `must not be empty`), v.maxLength(256, `must be at most 256 characters`), v.regex(/^[\x21-\x7e]+$/, `must be ${what} in visible ASCII without spaces`));
const whole = (min: number, max: number) => v.pipe(v.number(), v.safeInteger('must be a whole number'), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));
const latencyBound = v.pipe(v.number(), v.safeInteger('must be a whole number'), v.minValue(0, 'must not be negative'), v.maxValue(LIMITS.fault_latency_ms.value, `must be at most ${LIMITS.fault_latency_ms.value} ms ${limitNote('fault_latency_ms')}`));

const FaultBody = v.pipe(
  v.strictObject({
    method: v.optional(v.pipe(v.string(), v.regex(/^(GET|HEAD|POST|PUT|PATCH|DELETE)$/i, 'must be GET, HEAD, POST, PUT, PATCH or DELETE'))),
    path: v.optional(pattern('a path pattern such as /api_keys/*')),
    operation: v.optional(pattern('an operation id pattern such as api_keys.create or credentials.*')),
    account_id: v.optional(v.pipe(v.string(), v.regex(/^ac_[0-9A-Za-z]{1,64}$/, 'must be an account id (ac_…)'))),
    error: v.optional(
      v.strictObject({
        status: whole(400, 599),
        error_code: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, _, . or - (a number alone gets the error prefix)'))),
        message: v.optional(v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters'))),
      }),
    ),
    rate_limit: v.optional(v.strictObject({ retry_after_seconds: whole(0, 86_400) })),
    drop_connection: v.optional(v.literal(true, 'must be true (leave it out otherwise)')),
    latency_ms: v.optional(v.union([latencyBound, v.strictObject({ min: latencyBound, max: latencyBound })], `must be milliseconds from 0 to ${LIMITS.fault_latency_ms.value}, or {min, max}`)),
    every: v.optional(whole(1, 1_000_000)),
    times: v.optional(whole(1, 1_000_000_000)),
    probability: v.optional(v.pipe(v.number(), v.finite(), v.minValue(0, 'must be from 0 to 1'), v.maxValue(1, 'must be from 0 to 1'))),
  }),
  v.check((rule) => [rule.error, rule.rate_limit, rule.drop_connection].filter((x) => x !== undefined).length <= 1, 'error, rate_limit and drop_connection: give at most one of them'),
  v.check((rule) => rule.error !== undefined || rule.rate_limit !== undefined || rule.drop_connection !== undefined || rule.latency_ms !== undefined, 'a fault needs an effect: error, rate_limit, drop_connection or latency_ms'),
  v.check((rule) => typeof rule.latency_ms !== 'object' || rule.latency_ms.min <= rule.latency_ms.max, 'latency_ms: min must not be above max'),
);

/** A fault rule as given to `burrow.faults.add` and `POST /_burrow/faults`. */
export type FaultInput = v.InferInput<typeof FaultBody>;
/** The schema of a fault rule, for the OpenAPI document. */
export const FAULT_BODY = FaultBody;

/** A fault rule as listed: what was given, its id, and how often it matched and applied. */
export type FaultRule = v.InferOutput<typeof FaultBody> & {
  readonly id: string;
  readonly created_at: string;
  /** Requests it matched. */
  readonly matched: number;
  /** Requests it applied to. */
  readonly applied: number;
};

/** The request facts a rule matches on. */
export interface FaultTarget {
  readonly method: string;
  readonly path: string;
  readonly operation: string;
  readonly account: string;
}

/** What `strike` decided for one request. */
export interface Strike {
  /** The rule that applied. */
  readonly fault: string;
  /** Milliseconds the request waits first. */
  readonly latencyMs?: number;
  /** The error to answer with, after the wait. */
  readonly error?: ApiError;
  /** Close the connection without an answer, after the wait. */
  readonly drop?: true;
}

/** What an in-process caller gets where an HTTP client would see its connection reset. */
export class ConnectionDroppedError extends Error {
  readonly code = 'ECONNRESET';
  constructor(readonly fault: string) {
    super(`burrow: the connection was dropped (fault ${fault})`);
    this.name = 'ConnectionDroppedError';
  }
}

/** `*` any run of characters but `/`, `**` any run; everything else literal (also the journals' `find`: lib/journal/find.ts). */
export function compilePattern(text: string): RegExp {
  const source = text.split(/(\*\*|\*)/).map((part) => (part === '**' ? '.*' : part === '*' ? '[^/]*' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))).join('');
  return new RegExp(`^${source}$`);
}

interface LiveRule {
  readonly rule: Omit<FaultRule, 'matched' | 'applied'>;
  readonly path?: RegExp;
  readonly operation?: RegExp;
  matched: number;
  applied: number;
}

export interface FaultsOptions {
  readonly ids: IdFactory;
  readonly clock: Clock;
  /** Draws for probabilities and latency ranges; seeded in deterministic mode. */
  readonly random?: RandomSource;
  readonly errorPrefix: string;
}

/** The fault rules of one instance (in memory, like the request journal). */
export class Faults {
  readonly #rules: LiveRule[] = [];
  readonly #options: FaultsOptions;
  readonly #random: RandomSource;

  constructor(options: FaultsOptions) {
    this.#options = options;
    this.#random = options.random ?? cryptoRandom;
  }

  /** Adds a rule (checked as `POST /_burrow/faults` checks its body); answers it with its id. */
  add(input: FaultInput): FaultRule {
    const body = parseInput(FaultBody, input);
    if (this.#rules.length >= LIMITS.fault_rules.value) fail('INVALID_FIELD', `at most ${LIMITS.fault_rules.value} fault rules are kept; remove one first ${limitNote('fault_rules')}`);
    const rule = { id: this.#options.ids.id('flt'), created_at: formatTime(this.#options.clock.now()), ...body };
    const live: LiveRule = {
      rule,
      ...(body.path !== undefined ? { path: compilePattern(body.path) } : {}),
      ...(body.operation !== undefined ? { operation: compilePattern(body.operation) } : {}),
      matched: 0,
      applied: 0,
    };
    this.#rules.push(live);
    return view(live);
  }

  /** The rules, oldest first. */
  list(): FaultRule[] {
    return this.#rules.map(view);
  }

  /** The rule with this id; throws the 404. */
  get(id: string): FaultRule {
    const live = this.#rules.find((r) => r.rule.id === id) ?? fail('NOT_FOUND', `fault rule '${id}' was not found`, { id });
    return view(live);
  }

  /** Removes one rule; throws the 404 when there is none. */
  remove(id: string): void {
    const at = this.#rules.findIndex((r) => r.rule.id === id);
    if (at < 0) fail('NOT_FOUND', `fault rule '${id}' was not found`, { id });
    this.#rules.splice(at, 1);
  }

  /** Removes every rule, or those scoped to `account`; answers how many. */
  clear(account?: string): number {
    let removed = 0;
    for (let i = this.#rules.length - 1; i >= 0; i--) {
      if (account !== undefined && this.#rules[i]!.rule.account_id !== account) continue;
      this.#rules.splice(i, 1);
      removed++;
    }
    return removed;
  }

  /**
   * Waits a fault's latency (real time, also under a manual clock: it is the client's timeouts that
   * it tests), at least `ms` by the monotonic clock: a timer counts from the event loop's cached
   * time, which may lag, so it can fire a little early.
   */
  async wait(ms: number): Promise<void> {
    const until = performance.now() + ms;
    for (let left = ms; left > 0; left = until - performance.now()) await new Promise((resolve) => setTimeout(resolve, Math.ceil(left)));
  }

  /** The fault for one request, or undefined (the common case: no rules, one length check). */
  strike(target: FaultTarget): Strike | undefined {
    for (const live of this.#rules) {
      const { rule } = live;
      if (rule.times !== undefined && live.applied >= rule.times) continue;
      if (rule.method !== undefined && rule.method.toUpperCase() !== target.method) continue;
      if (rule.account_id !== undefined && rule.account_id !== target.account) continue;
      if (live.path && !live.path.test(target.path)) continue;
      if (live.operation && !live.operation.test(target.operation)) continue;
      live.matched++;
      if (live.matched % (rule.every ?? 1) !== 0) continue;
      if (rule.probability !== undefined && !(this.#draw() < rule.probability)) continue;
      live.applied++;
      return this.#effect(rule);
    }
    return undefined;
  }

  #effect(rule: LiveRule['rule']): Strike {
    const latency = rule.latency_ms;
    const latencyMs = latency === undefined ? undefined : typeof latency === 'number' ? latency : latency.min + Math.floor(this.#draw() * (latency.max - latency.min + 1));
    const base = { fault: rule.id, ...(latencyMs !== undefined ? { latencyMs } : {}) };
    if (rule.drop_connection) return { ...base, drop: true };
    if (rule.rate_limit) {
      const retry = rule.rate_limit.retry_after_seconds;
      return { ...base, error: new ApiError(ERRORS.RATE_LIMITED, `rate limit exceeded (fault ${rule.id}); retry in ${retry} s`, { fault: rule.id }, { 'Retry-After': String(retry) }) };
    }
    if (rule.error) {
      const { status, error_code: code, message } = rule.error;
      const wireCode = code === undefined ? undefined : /^\d+$/.test(code) ? `${this.#options.errorPrefix}${code}` : code;
      const spec = { code: code !== undefined && /^\d+$/.test(code) ? Number(code) : ERRORS.FAULT_INJECTED.code, status };
      return { ...base, error: new ApiError(spec, message ?? `injected fault ${rule.id}: ${status}`, { fault: rule.id }, {}, wireCode) };
    }
    return base;
  }

  /** A number in [0, 1). */
  #draw(): number {
    return Buffer.from(this.#random(4)).readUInt32BE(0) / 2 ** 32;
  }
}

function view(live: LiveRule): FaultRule {
  return { ...live.rule, matched: live.matched, applied: live.applied };
}
