import * as v from 'valibot';
import { durationSeconds } from '../../conventions/traffic-policy.ts';
import { headerMap } from '../http-fields.ts';
import type { Template } from '../interpolation.ts';
import type { PolicyHttpResponse } from '../services.ts';
import { ActionConfigProblem, ActionFailure, defineAction, readConfig } from './types.ts';

/**
 * http-request (on_http_request, on_http_response): a request out, as the vendor's reference
 * describes it (traffic-policy/actions/http-request.mdx) — url, method, query_params, headers
 * and body interpolated; at most `max_redirects` redirects (0..5, default 0) within `timeout`
 * (1s..30s, default 3s) for the whole request; a response body of at most 256 KB. The host sends
 * it (PolicyServices.httpRequest; the ingress's reaches any http(s) URL but `*.internal`). The answer is in
 * `actions.ngrok.http_request.{req,res,attempts,error}`. A failure (no answer, too many
 * redirects, too long a body, a URL the host does not reach) sets `error` and goes on
 * (`on_error: continue`, the default) or answers 502 naming it (`halt`). `retry_condition` is
 * accepted and not evaluated: a failed request is not retried.
 */

const METHODS = ['GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** The reference's bound of a response body. */
const MAX_RESPONSE_BYTES = 256 * 1024;

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
  readonly halt: boolean;
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
    let response: PolicyHttpResponse | undefined;
    let failure: string | undefined;
    try {
      if (!target || (target.protocol !== 'http:' && target.protocol !== 'https:')) throw new Error(`${JSON.stringify(url)} is not an http or https URL`);
      if (!context.services.httpRequest) throw new Error('no HTTP requests can be sent here (the host gave no requester)');
      response = await context.services.httpRequest({ method: config.method, url: target.href, headers, ...(body !== undefined ? { body } : {}), timeoutMs: config.timeoutMs, maxBytes: MAX_RESPONSE_BYTES, maxRedirects: config.maxRedirects });
    } catch (error) {
      failure = (error as Error).message;
    }
    const res = response && { resolved_ip: response.resolvedIp, header: headerMap(response.headers), status_code: BigInt(response.status), time_ms: BigInt(response.timeMs), body: Buffer.from(response.body).toString('utf8') };
    context.scope.setActionResult('http_request', {
      error: { code: failure ? 'request_failed' : '', message: failure ?? '' },
      attempts: res ? [{ resolved_ip: res.resolved_ip, response_header: res.header, response_status_code: res.status_code, response_time_ms: res.time_ms }] : [],
      req,
      res: res ?? { resolved_ip: '', header: {}, status_code: 0n, time_ms: 0n, body: '' },
    });
    if (failure && config.halt) throw new ActionFailure({ status: 502, message: `http-request ${config.method} ${req.url} failed: ${failure}`, headers: [] });
    return { note: failure ? `${config.method} ${req.url} failed: ${failure}` : `${config.method} ${req.url} answered ${response!.status}` };
  },
});
