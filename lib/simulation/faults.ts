import * as v from 'valibot';
import { formatTime, type Clock } from '../conventions/clock.ts';
import { ApiError, ERRORS, fail } from '../conventions/errors.ts';
import { parseInput } from '../conventions/fields.ts';
import { cryptoRandom, type IdFactory, type RandomSource } from '../conventions/ids.ts';
import { LIMITS, limitNote } from '../limits.ts';
import { CLUSTER_SCOPE, type Read, type ReadResult, type Store, type StoredRecord } from '../store.ts';

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
  matched: number;
  /** Requests it applied to. */
  applied: number;
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

/** A rule as kept: what was given, its id and counts. */
type KeptRule = FaultRule;

/**
 * Where the rules live. One server alone over its store keeps them in its memory; servers sharing
 * a store (PostgreSQL) keep them in it (one record under CLUSTER_SCOPE), so a rule added through
 * any server applies through all, and its counts, `every` and `times` count every server's
 * requests (a match that changes counts is one store transaction; requests no rule matches read
 * the rules only, in the round trip of their key check).
 */
interface RuleBook {
  /** The rules, oldest first. */
  read(): Promise<readonly KeptRule[]>;
  /** Where a shared book keeps its rules, for a caller that reads them with other reads (undefined in memory). */
  readonly where?: Read;
  /** Runs `change` on the rules atomically; what it leaves in the array is kept. */
  change<T>(change: (rules: KeptRule[]) => T): Promise<T>;
}

class MemoryRuleBook implements RuleBook {
  readonly #rules: KeptRule[] = [];
  readonly #read = Promise.resolve(this.#rules);
  read() {
    return this.#read;
  }
  async change<T>(change: (rules: KeptRule[]) => T) {
    return change(this.#rules);
  }
}

const RULES_SCOPE = { account: CLUSTER_SCOPE, kind: 'faults' };

/** The rules a shared book's record holds. */
const rulesIn = (record: StoredRecord | undefined) => (record?.rules ?? []) as KeptRule[];

class StoreRuleBook implements RuleBook {
  readonly where: Read = { scope: RULES_SCOPE, id: 'rules' };
  constructor(readonly store: Store) {}
  async read() {
    return rulesIn(await this.store.get(RULES_SCOPE, 'rules'));
  }
  change<T>(change: (rules: KeptRule[]) => T) {
    return this.store.transaction(async (tx) => {
      const rules = structuredClone(rulesIn(await tx.get(RULES_SCOPE, 'rules')));
      const result = change(rules);
      await tx.put(RULES_SCOPE, { id: 'rules', rules });
      return result;
    });
  }
}

export interface FaultsOptions {
  readonly ids: IdFactory;
  readonly clock: Clock;
  /** Draws for probabilities and latency ranges; seeded in deterministic mode. */
  readonly random?: RandomSource;
  readonly errorPrefix: string;
  /** The store, when several servers share it: the rules live in it (see RuleBook). */
  readonly shared?: Store;
}

/** The fault rules of one instance (in memory, or in a store several servers share). */
export class Faults {
  readonly #book: RuleBook;
  readonly #options: FaultsOptions;
  readonly #random: RandomSource;
  /** Compiled path and operation patterns, by pattern (rules are few: LIMITS.fault_rules). */
  readonly #patterns = new Map<string, RegExp>();

  constructor(options: FaultsOptions) {
    this.#options = options;
    this.#random = options.random ?? cryptoRandom;
    this.#book = options.shared ? new StoreRuleBook(options.shared) : new MemoryRuleBook();
  }

  /** Adds a rule (checked as `POST /_burrow/faults` checks its body); answers it with its id. */
  add(input: FaultInput): Promise<FaultRule> {
    const body = parseInput(FaultBody, input);
    const rule: KeptRule = { id: this.#options.ids.id('flt'), created_at: formatTime(this.#options.clock.now()), ...body, matched: 0, applied: 0 };
    return this.#book.change((rules) => {
      if (rules.length >= LIMITS.fault_rules.value) fail('INVALID_FIELD', `at most ${LIMITS.fault_rules.value} fault rules are kept; remove one first ${limitNote('fault_rules')}`);
      rules.push(rule);
      return { ...rule };
    });
  }

  /** The rules, oldest first. */
  async list(): Promise<FaultRule[]> {
    return (await this.#book.read()).map((rule) => ({ ...rule }));
  }

  /** The rule with this id; throws the 404. */
  async get(id: string): Promise<FaultRule> {
    const rule = (await this.#book.read()).find((r) => r.id === id) ?? fail('NOT_FOUND', `fault rule '${id}' was not found`, { id });
    return { ...rule };
  }

  /** Removes one rule; throws the 404 when there is none. */
  remove(id: string): Promise<void> {
    return this.#book.change((rules) => {
      const at = rules.findIndex((r) => r.id === id);
      if (at < 0) fail('NOT_FOUND', `fault rule '${id}' was not found`, { id });
      rules.splice(at, 1);
    });
  }

  /** Removes every rule, or those scoped to `account`; answers how many. */
  clear(account?: string): Promise<number> {
    return this.#book.change((rules) => {
      let removed = 0;
      for (let i = rules.length - 1; i >= 0; i--) {
        if (account !== undefined && rules[i]!.account_id !== account) continue;
        rules.splice(i, 1);
        removed++;
      }
      return removed;
    });
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

  /**
   * The rules as they are now, for `strike`: the pipeline asks for them before a request's key
   * check, so a store a round trip away answers both together. Never rejects (a store that cannot
   * be read strikes nothing; the request then meets the store's own error).
   */
  rules(): Promise<readonly KeptRule[]> {
    return this.#book.read().catch(() => []);
  }

  /**
   * Where shared rules are kept, for a request that reads them in the statement that checks its
   * key (lib/engine/pipeline.ts); undefined when they are in memory.
   */
  get sharedRead(): Read | undefined {
    return this.#book.where;
  }

  /** The rules in the answer to `sharedRead`. */
  rulesRead(answer: ReadResult): readonly KeptRule[] {
    return rulesIn(answer as StoredRecord | undefined);
  }

  /** The fault for one request, or undefined (the common case: no rules, one length check). */
  async strike(rules: readonly KeptRule[], target: FaultTarget): Promise<Strike | undefined> {
    if (rules.length === 0 || !rules.some((rule) => this.#matches(rule, target))) return undefined;
    return this.#book.change((current) => {
      for (const rule of current) {
        if (!this.#matches(rule, target)) continue;
        rule.matched++;
        if (rule.matched % (rule.every ?? 1) !== 0) continue;
        if (rule.probability !== undefined && !(this.#draw() < rule.probability)) continue;
        rule.applied++;
        return this.#effect(rule);
      }
      return undefined;
    });
  }

  #matches(rule: KeptRule, target: FaultTarget): boolean {
    if (rule.times !== undefined && rule.applied >= rule.times) return false;
    if (rule.method !== undefined && rule.method.toUpperCase() !== target.method) return false;
    if (rule.account_id !== undefined && rule.account_id !== target.account) return false;
    if (rule.path !== undefined && !this.#pattern(rule.path).test(target.path)) return false;
    if (rule.operation !== undefined && !this.#pattern(rule.operation).test(target.operation)) return false;
    return true;
  }

  #pattern(text: string): RegExp {
    let compiled = this.#patterns.get(text);
    if (!compiled) {
      if (this.#patterns.size >= 4 * LIMITS.fault_rules.value) this.#patterns.clear();
      this.#patterns.set(text, (compiled = compilePattern(text)));
    }
    return compiled;
  }

  #effect(rule: KeptRule): Strike {
    const latency = rule.latency_ms;
    const latencyMs = latency === undefined ? undefined : typeof latency === 'number' ? latency : latency.min + Math.floor(this.#draw() * (latency.max - latency.min + 1));
    const base = { fault: rule.id, ...(latencyMs !== undefined ? { latencyMs } : {}) };
    if (rule.drop_connection) return { ...base, drop: true as const };
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
