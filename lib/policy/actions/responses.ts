import * as v from 'valibot';
import { re2ReplaceAll } from '../../conventions/patterns.ts';
import type { Template } from '../interpolation.ts';
import { ActionFailure, defineAction, readConfig, statusIn, type ActionContext, type CompileTools } from './types.ts';

/** The actions that answer for the upstream (deny, custom-response, redirect) or drop the connection, and url-rewrite, which shares redirect's matching. */

const headerTemplates = (headers: Record<string, string> | undefined, tools: CompileTools): [string, Template][] =>
  Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), tools.template(value, `config.headers.${name}`)]);

const renderHeaders = (headers: readonly [string, Template][], context: ActionContext): [string, string][] =>
  headers.map(([name, template]) => [name, context.text(template, `headers.${name}`)]);

export const deny = defineAction({
  type: 'deny',
  compile: (config) => readConfig(v.looseObject({ status_code: statusIn(100, 599, 403) }), config),
  run: (config, { scope }) =>
    scope.phase === 'on_tcp_connect'
      ? { end: { kind: 'close', reason: 'denied by the traffic policy' } }
      : { end: { kind: 'respond', response: { status: config.status_code, headers: [], body: '' } } },
});

export const closeConnection = defineAction({
  type: 'close-connection',
  compile: () => ({}),
  run: () => ({ end: { kind: 'close', reason: 'closed by the traffic policy' } }),
});

/**
 * The content type custom-response infers when `headers` names none. The vendor documents that it
 * infers one without saying how; Burrow answers JSON for a body that parses as a JSON object or
 * list, HTML for one that starts with a tag, plain text otherwise.
 */
function inferredContentType(body: string): string {
  const trimmed = body.trim();
  if (/^[[{]/.test(trimmed)) {
    try {
      JSON.parse(trimmed);
      return 'application/json';
    } catch {
      // not JSON: fall through to the other guesses
    }
  }
  return /^<(!doctype|html|[a-z][\w-]*[\s>/])/i.test(trimmed) ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8';
}

export const customResponse = defineAction({
  type: 'custom-response',
  compile(config, tools) {
    const c = readConfig(
      v.looseObject({ status_code: statusIn(100, 599, 200), body: v.optional(v.string()), content: v.optional(v.string()), headers: v.optional(v.record(v.string(), v.string())) }),
      config,
    );
    return { status: c.status_code, body: tools.template(c.body ?? c.content ?? '', c.body === undefined ? 'config.content' : 'config.body'), headers: headerTemplates(c.headers, tools) };
  },
  run(config, context) {
    const body = context.text(config.body, 'body');
    const headers = renderHeaders(config.headers, context);
    if (!headers.some(([name]) => name === 'content-type') && body !== '') headers.push(['content-type', inferredContentType(body)]);
    return { end: { kind: 'respond', response: { status: config.status, headers, body } } };
  },
});

interface UrlReplacement {
  readonly from?: Template;
  readonly to: Template;
}

const replacementConfig = {
  from: v.optional(v.string()),
  to: v.string(),
};

/**
 * The rewritten text as a URL, against the request's: a `from` that consumed the host leaves
 * `https:///products.php?…` (the reference's `from: ${req.url.authority}/products…`), whose
 * empty authority WHATWG URL would fill with the first path segment; it keeps the request's
 * scheme and host instead.
 */
function resolveRewritten(replaced: string, base: string): string {
  const emptyAuthority = /^[a-z][a-z0-9+.-]*:\/\/(?=\/)/i.exec(replaced);
  return new URL(emptyAuthority ? replaced.slice(emptyAuthority[0].length) : replaced, base).href;
}

/**
 * The URL after replacing every match of `from` (the whole URL when absent) with `to`, and what
 * matched (each match and its groups); interpolation first, then RE2.
 */
function replaceUrl(config: UrlReplacement, context: ActionContext, type: string): { url: string; matches: string[] } {
  const url = context.scope.request!.url;
  const to = context.text(config.to, 'to');
  if (!config.from) return { url: new URL(to, url).href, matches: [url] };
  const from = context.text(config.from, 'from');
  const matches: string[] = [];
  let replaced: string;
  try {
    replaced = re2ReplaceAll(from, url, to, matches);
  } catch (error) {
    throw new ActionFailure({ status: 500, code: 'ERR_NGROK_3901', message: `CEL interpolation in action ${type} field from did not result in a valid regex: ${(error as Error).message}`, headers: [] });
  }
  try {
    return { url: resolveRewritten(replaced, url), matches };
  } catch {
    throw new ActionFailure({ status: 500, message: `${type}: the rewritten URL ${JSON.stringify(replaced)} is not a URL`, headers: [] });
  }
}

/** The result variables of redirect and url-rewrite (`actions.ngrok.redirect.url`, `.matches`, `.error`). */
const replacementResult = (replaced: { url: string; matches: string[] }) => ({ matches: replaced.matches, url: replaced.url, error: { code: '', message: '' } });

export const redirect = defineAction({
  results: 'redirect',
  type: 'redirect',
  compile(config, tools) {
    const c = readConfig(v.looseObject({ ...replacementConfig, status_code: statusIn(300, 399, 302), headers: v.optional(v.record(v.string(), v.string())) }), config);
    return { from: c.from === undefined ? undefined : tools.template(c.from, 'config.from'), to: tools.template(c.to, 'config.to'), status: c.status_code, headers: headerTemplates(c.headers, tools) };
  },
  run(config, context) {
    const before = new URL(context.scope.request!.url).href;
    const replaced = replaceUrl(config, context, 'redirect');
    const location = replaced.url;
    context.scope.setActionResult('redirect', replacementResult(replaced));
    if (location === before) return { note: 'the URL did not change; no redirect' };
    return { end: { kind: 'respond', response: { status: config.status, headers: [['location', location], ...renderHeaders(config.headers, context)], body: '' } } };
  },
});

export const urlRewrite = defineAction({
  results: 'url_rewrite',
  type: 'url-rewrite',
  compile(config, tools) {
    const c = readConfig(v.looseObject(replacementConfig), config);
    return { from: c.from === undefined ? undefined : tools.template(c.from, 'config.from'), to: tools.template(c.to, 'config.to') };
  },
  run(config, context) {
    const request = context.scope.request!;
    const before = request.url;
    const replaced = replaceUrl(config, context, 'url-rewrite');
    request.url = replaced.url;
    context.scope.setActionResult('url_rewrite', replacementResult(replaced));
    context.scope.changed();
    return { note: request.url === new URL(before).href ? 'the URL did not change' : `${before} → ${request.url}` };
  },
});
