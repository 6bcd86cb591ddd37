import * as v from 'valibot';
import { ActionFailure, defineAction, readConfig } from './types.ts';

/**
 * forward-internal: hands the request (or, on_tcp_connect, the connection) to an internal endpoint
 * of the account, whose own traffic policy then runs; nothing after it in this phase does. When the
 * host says the target cannot take it (unknown, offline, other protocol), `on_error: halt` (the
 * default) answers the host's error and `continue` goes on with the next action.
 */
export const forwardInternal = defineAction({
  type: 'forward-internal',
  compile(config, tools) {
    const c = readConfig(v.looseObject({ url: v.string(), on_error: v.optional(v.picklist(['halt', 'continue']), 'halt') }), config);
    return { url: tools.template(c.url, 'config.url'), onError: c.on_error };
  },
  async run(config, context) {
    const url = context.text(config.url, 'url');
    if (!context.services.forwardInternal) throw new ActionFailure({ status: 501, message: `forward-internal: cannot forward to ${url} here (no internal endpoint lookup was provided)`, headers: [] });
    const problem = await context.services.forwardInternal(url, context.scope.phase);
    if (!problem) return { end: { kind: 'forward', url }, note: `forwarded to ${url}` };
    if (config.onError === 'continue') return { note: `could not forward to ${url}: ${problem.message} (on_error: continue)` };
    throw new ActionFailure(problem);
  },
});
