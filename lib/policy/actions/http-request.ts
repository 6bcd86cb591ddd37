import * as v from 'valibot';
import { durationSeconds } from '../../conventions/traffic-policy.ts';
import { headerMap } from '../http-fields.ts';
import type { Template } from '../interpolation.ts';
import type { PolicyHttpResponse } from '../services.ts';
import { PolicyExpressionProblem, type PolicyExpression } from '../../conventions/cel.ts';
import { ActionConfigProblem, ActionFailure, defineAction, readConfig, type CompileTools } from './types.ts';

/**
 * http-request (on_http_request, on_http_response): a request out, as the vendor's reference
 * describes it (traffic-policy/actions/http-request.mdx) — url, method, query_params, headers
 * and body interpolated; at most `max_redirects` redirects (0..5, default 0) within `timeout`
 * (1s..30s, default 3s) for the whole action, retries included; a response body of at most 256 KB.
 * The host sends it (PolicyServices.httpRequest; the ingress's reaches any http(s) URL, and the
 * account's internal endpoints, `*.internal`, through its own routing).
 *
 * `retry_condition` (a CEL expression, default false) is evaluated after each failed attempt — no
 * answer, or an answer of 400 or more (Burrow's reading of "failed"; the reference's example
 * retries a 500) — with `attempts` (so far) and `last_attempt` (`req`, `res`, `error`); true retries,
 * at most 3 times, while the timeout lasts. `last_attempt.res` is `actions.ngrok.http_request.res`'s
 * shape plus `statusCode`, the spelling of the reference's example (`last_attempt.res.statusCode == 500`).
 *
 * The answer is in `actions.ngrok.http_request.{req,res,attempts,error}` (`attempts`: each answer
 * received). When the last attempt got no answer (too many redirects, too long a body, a URL the
 * host does not reach, the timeout) the action failed: it sets `error` and goes on
 * (`on_error: continue`, the default) or answers 502 naming it (`halt`).
 */

const METHODS = ['GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** The reference's bound of a response body. */
const MAX_RESPONSE_BYTES = 256 * 1024;
/** The reference's bound of retries ("retried up to 3 times"). */
const MAX_RETRIES = 3;

const timeout = v.pipe(
  v.optional(v.string(), '3s'),
  v.check((text) => {
    const seconds = durationSeconds(text);
    return seconds >= 1 && seconds <= 30;
  }, (issue) => `must be a duration from 1s to 30s, such as "5s" (got ${JSON.stringify(issue.input)})`),
);

const CONFIG = v.looseObject({
  url: v.string(),
  method: v.optional(v.picklist(METHODS, (issue) => `must be one of ${METHODS.join(', ')} (got ${JSON.stringify(issue.input)})`), 'GET'),
  query_params: v.optional(v.pipe(v.array(v.strictObject({ key: v.pipe(v.string(), v.maxLength(128, 'at most 128 characters')), value: v.pipe(v.string(), v.maxLength(8192, 'at most 8192 characters')) })), v.maxLength(32, 'at most 32 entries')), []),
  headers: v.optional(v.pipe(v.record(v.string(), v.string()), v.check((map) => Object.keys(map).length <= 10, 'at most 10 headers')), {}),
  body: v.optional(v.string()),
  max_redirects: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(0, 'must be from 0 to 5'), v.maxValue(5, 'must be from 0 to 5')), 0),
  timeout,
  retry_condition: v.optional(v.string()),
  on_error: v.optional(v.picklist(['continue', 'halt'], (issue) => `must be continue or halt (got ${JSON.stringify(issue.input)})`), 'continue'),
});

interface Compiled {
  readonly url: Template;
  readonly method: string;
  readonly query: readonly (readonly [Template, Template])[];
  readonly headers: readonly (readonly [string, Template])[];
  readonly body?: Template;
  readonly maxRedirects: number;
  readonly timeoutMs: number;
  readonly retry?: PolicyExpression;
  readonly halt: boolean;
}

/** `actions.ngrok.http_request.res` when no answer came. */
const NO_RESPONSE = { resolved_ip: '', header: {}, status_code: 0n, time_ms: 0n, body: '' };

/** A retry_condition: an expression, or one `${…}` around it. */
function retryCondition(text: string, tools: CompileTools): PolicyExpression {
  const expression = tools.retryCondition(/^\s*\$\{([\s\S]*)\}\s*$/.exec(text)?.[1] ?? text, 'config.retry_condition');
  if (expression.type !== 'bool' && expression.type !== 'dyn') throw new ActionConfigProblem(`config.retry_condition: must be a condition (a bool), not ${expression.type}`);
  return expression;
}

export const httpRequest = defineAction({
  type: 'http-request',
  results: 'http_request',
  compile(config, tools): Compiled {
    const c = readConfig(CONFIG, config);
    if (!/^\$\{|^https?:\/\//i.test(c.url)) throw new ActionConfigProblem(`config.url: must be an http or https URL (got ${JSON.stringify(c.url)})`);
    return {
      url: tools.template(c.url, 'config.url'),
      method: c.method,
      query: c.query_params.map(({ key, value }, i) => [tools.template(key, `config.query_params[${i}].key`), tools.template(value, `config.query_params[${i}].value`)] as const),
      headers: Object.entries(c.headers).map(([name, value]) => [name.toLowerCase(), tools.template(value, `config.headers.${name}`)] as const),
      ...(c.body === undefined ? {} : { body: tools.template(c.body, 'config.body') }),
      maxRedirects: c.max_redirects,
      timeoutMs: Math.round(durationSeconds(c.timeout) * 1000),
      ...(c.retry_condition === undefined ? {} : { retry: retryCondition(c.retry_condition, tools) }),
      halt: c.on_error === 'halt',
    };
  },
  async run(config, context) {
    const url = context.text(config.url, 'url');
    const target = URL.canParse(url) ? new URL(url) : undefined;
    for (const [key, value] of config.query) target?.searchParams.append(context.text(key, 'query_params.key'), context.text(value, 'query_params.value'));
    const headers = config.headers.map(([name, value]): [string, string] => [name, context.text(value, `headers.${name}`)]);
    const body = config.body ? context.text(config.body, 'body') : undefined;
    const req = { method: config.method, header: headerMap(headers), url: target?.href ?? url, body: body ?? '' };
    const clock = context.services.clock;
    const started = clock.now().getTime();
    const attempts: Record<string, unknown>[] = [];
    let res: Record<string, unknown> | undefined;
    let failure: string | undefined;
    let attempt = 0;
    for (;;) {
      attempt++;
      const left = config.timeoutMs - (clock.now().getTime() - started);
      let response: PolicyHttpResponse | undefined;
      failure = undefined;
      try {
        if (!target || (target.protocol !== 'http:' && target.protocol !== 'https:')) throw new Error(`${JSON.stringify(url)} is not an http or https URL`);
        if (!context.services.httpRequest) throw new Error('no HTTP requests can be sent here (the host gave no requester)');
        if (left <= 0) throw new Error(`no time left within the action's timeout (${config.timeoutMs} ms)`);
        const call = { method: config.method, url: target.href, headers, ...(body !== undefined ? { body } : {}), timeoutMs: left, maxBytes: MAX_RESPONSE_BYTES, maxRedirects: config.maxRedirects };
        response = await context.services.httpRequest(call, { endpoint: context.scope.endpoint, conn: context.scope.conn });
      } catch (error) {
        failure = (error as Error).message;
      }
      res = response && { resolved_ip: response.resolvedIp, header: headerMap(response.headers), status_code: BigInt(response.status), time_ms: BigInt(response.timeMs), body: Buffer.from(response.body).toString('utf8') };
      if (res) attempts.push({ resolved_ip: res.resolved_ip, response_header: res.header, response_status_code: res.status_code, response_time_ms: res.time_ms });
      const failed = failure !== undefined || response!.status >= 400;
      if (!failed || !config.retry || attempt > MAX_RETRIES) break;
      const last = { req, res: { ...(res ?? NO_RESPONSE), statusCode: res?.status_code ?? 0n }, error: failure ?? '' };
      const again = context.evaluateWith(config.retry, { attempts: BigInt(attempt), last_attempt: last });
      if (typeof again !== 'boolean') throw new PolicyExpressionProblem(`http-request retry_condition must be a condition (a bool); it gave ${typeof again === 'bigint' ? 'an int' : typeof again}`);
      if (!again) break;
    }
    context.scope.setActionResult('http_request', {
      error: { code: failure ? 'request_failed' : '', message: failure ?? '' },
      attempts,
      req,
      res: res ?? NO_RESPONSE,
    });
    if (failure && config.halt) throw new ActionFailure({ status: 502, message: `http-request ${config.method} ${req.url} failed: ${failure}`, headers: [] });
    const tries = attempt > 1 ? ` (${attempt} attempts)` : '';
    return { note: failure ? `${config.method} ${req.url} failed: ${failure}${tries}` : `${config.method} ${req.url} answered ${res!.status_code}${tries}` };
  },
});
