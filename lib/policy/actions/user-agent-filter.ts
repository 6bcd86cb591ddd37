import * as v from 'valibot';
import { re2Test } from '../../conventions/patterns.ts';
import { headerValues } from '../http-fields.ts';
import { defineAction, errorEnd, readConfig } from './types.ts';

/**
 * The user_agent_filter module (edge routes, agent binds), which has no traffic policy action of
 * its own: the first User-Agent header is allowed when it matches any `allow` pattern or no `deny`
 * pattern (RE2); a request without one is refused unless an allow pattern matches "" (`^$`).
 * Refused: 403, ERR_NGROK_3211.
 */
export const userAgentFilter = defineAction({
  type: 'user-agent-filter',
  compile: (config) => readConfig(v.looseObject({ allow: v.optional(v.array(v.string()), []), deny: v.optional(v.array(v.string()), []) }), config),
  run(config, { scope }) {
    const agent = headerValues(scope.request!.headers, 'user-agent')[0];
    const allowedBy = config.allow.find((pattern) => re2Test(pattern, agent ?? ''));
    const deniedBy = config.deny.find((pattern) => re2Test(pattern, agent ?? ''));
    const allowed = allowedBy !== undefined || (agent !== undefined && deniedBy === undefined);
    const subject = agent === undefined ? 'a request without a User-Agent' : `user agent ${JSON.stringify(agent)}`;
    if (allowed) return { note: `${subject} allowed${allowedBy ? ` by ${allowedBy}` : ''}` };
    const reason = deniedBy ? `${subject} matches ${deniedBy}` : `${subject} is refused`;
    return { end: errorEnd(403, `The server does not authorize requests from your user-agent: ${reason}`, 'ERR_NGROK_3211'), note: reason };
  },
});
