import * as v from 'valibot';
import { re2ReplaceAll } from '../../conventions/patterns.ts';
import { LIMITS, limitNote } from '../../limits.ts';
import type { BodyReplacement } from '../../traffic/decisions.ts';
import type { Template } from '../interpolation.ts';
import { ActionConfigProblem, ActionFailure, defineAction, readConfig, type ActionContext, type CompileTools } from './types.ts';

/**
 * request-body-find-replace (on_http_request) and response-body-find-replace (on_http_response),
 * as the reference describes them (traffic-policy/actions/request-body-find-replace.mdx): each
 * replacement's `from` (RE2, interpolated first) is replaced everywhere by `to` (`$1` groups,
 * interpolated; absent: deleted), in order, over the whole body as text; Content-Length follows.
 * The request body is read here (up to `policy_inspected_body_bytes`) and the ingress sends the
 * result upstream; a response body is the ingress's to buffer, so the response phase hands it the
 * rendered replacements (`replaceBody`).
 */


const CONFIG = v.looseObject({
  replacements: v.pipe(v.array(v.looseObject({ from: v.pipe(v.string(), v.minLength(1, 'must not be empty')), to: v.optional(v.string(), '') })), v.minLength(1, 'needs at least one replacement')),
});

type Compiled = readonly { readonly from: Template; readonly to: Template }[];

const compile = (config: unknown, tools: CompileTools): Compiled =>
  readConfig(CONFIG, config).replacements.map(({ from, to }, i) => ({ from: tools.template(from, `config.replacements[${i}].from`), to: tools.template(to, `config.replacements[${i}].to`) }));

const render = (config: Compiled, context: ActionContext): BodyReplacement[] =>
  config.map(({ from, to }, i) => ({ from: context.text(from, `replacements[${i}].from`), to: context.text(to, `replacements[${i}].to`) }));

/** `text` with every replacement applied in order; throws ActionFailure (ERR_NGROK_3901) for a `from` that is no RE2 pattern. */
export function replaceBody(text: string, replacements: readonly BodyReplacement[], type: string): string {
  return replacements.reduce((out, { from, to }) => {
    try {
      return re2ReplaceAll(from, out, to);
    } catch (error) {
      throw new ActionFailure({ status: 500, code: 'ERR_NGROK_3901', message: `CEL interpolation in action ${type} field from did not result in a valid regex: ${(error as Error).message}`, headers: [] });
    }
  }, text);
}

export const requestBodyFindReplace = defineAction({
  type: 'request-body-find-replace',
  compile,
  async run(config, context) {
    const request = context.scope.request!;
    const limit = LIMITS.policy_inspected_body_bytes.value;
    const body = await context.scope.body(limit);
    if (body === null) throw new ActionFailure({ status: 413, message: `request-body-find-replace: the body is longer than ${limit} bytes ${limitNote('policy_inspected_body_bytes')}`, headers: [] });
    if (body === undefined) return { note: 'no request body' };
    const replaced = new TextEncoder().encode(replaceBody(Buffer.from(body).toString('utf8'), render(config, context), 'request-body-find-replace'));
    // Later actions (verify-webhook …) and the upstream see the new body.
    request.bodyRead = { bytes: replaced, at: request.bodyRead!.at };
    request.bodyReplaced = true;
    if (request.headers.some(([name]) => name.toLowerCase() === 'content-length')) {
      request.headers = request.headers.map(([name, value]): [string, string] => [name, name.toLowerCase() === 'content-length' ? String(replaced.byteLength) : value]);
    }
    context.scope.changed();
    return { note: `${body.byteLength} → ${replaced.byteLength} bytes` };
  },
});

export const responseBodyFindReplace = defineAction({
  type: 'response-body-find-replace',
  compile,
  run(config, context) {
    const replacements = render(config, context);
    // Checked now, so that a bad pattern answers before the body is relayed.
    replaceBody('', replacements, 'response-body-find-replace');
    context.scope.bodyReplacements.push(...replacements);
    return { note: `${replacements.length} replacement(s) for the response body` };
  },
});

const SSE_FIELDS = ['data', 'retry'] as const;
const SSE_CONFIG = v.looseObject({
  replacements: v.pipe(v.array(v.looseObject({ field: v.optional(v.string(), 'data'), from: v.pipe(v.string(), v.minLength(1, 'must not be empty')), to: v.optional(v.string(), '') })), v.minLength(1, 'needs at least one replacement')),
});

/** sse-find-replace (on_event_stream_message): the replacements over the message's `data` (default) or `retry` field. */
export const sseFindReplace = defineAction({
  type: 'sse-find-replace',
  compile: (config, tools) =>
    readConfig(SSE_CONFIG, config).replacements.map(({ field, from, to }, i) => {
      if (!field.includes('${') && !(SSE_FIELDS as readonly string[]).includes(field)) throw new ActionConfigProblem(`config.replacements[${i}].field: must be data or retry (got ${JSON.stringify(field)})`);
      return { field: tools.template(field, `config.replacements[${i}].field`), from: tools.template(from, `config.replacements[${i}].from`), to: tools.template(to, `config.replacements[${i}].to`) };
    }),
  run(config, context) {
    const message = context.scope.eventMessage!;
    for (const [i, replacement] of config.entries()) {
      const field = context.text(replacement.field, `replacements[${i}].field`);
      if (field !== 'data' && field !== 'retry') throw new ActionFailure({ status: 500, message: `sse-find-replace: replacements[${i}].field must be data or retry (got ${JSON.stringify(field)})`, headers: [] });
      message[field] = replaceBody(message[field], [{ from: context.text(replacement.from, `replacements[${i}].from`), to: context.text(replacement.to, `replacements[${i}].to`) }], 'sse-find-replace');
    }
    return { note: `${config.length} replacement(s)` };
  },
});
