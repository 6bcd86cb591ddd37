import { createHash, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { headerValues } from '../http-fields.ts';
import { defineAction, enforce, errorEnd, readConfig } from './types.ts';

/**
 * basic-auth (and the agent's basic auth, translated into it): RFC 7617 credentials in the
 * Authorization header against `username:password` pairs (split at the first colon; CEL
 * interpolation allowed). Failure: 401 with `WWW-Authenticate: Basic realm="…"`; the default realm
 * is the service's name, `burrow` (the vendor's is its own name). Passwords are compared in
 * constant time.
 */

const digest = (text: string) => createHash('sha256').update(text).digest();
const equal = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

/** The user and password of a `Basic` Authorization header, or undefined. */
function presented(headers: readonly (readonly [string, string])[]): { user: string; password: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(headerValues(headers, 'authorization')[0] ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export const basicAuth = defineAction({
  results: 'basic_auth',
  type: 'basic-auth',
  compile(config, tools) {
    const c = readConfig(v.looseObject({ credentials: v.array(v.string()), realm: v.optional(v.string(), 'burrow'), enforce }), config);
    return { credentials: c.credentials.map((credential, i) => tools.template(credential, `config.credentials[${i}]`)), realm: c.realm, enforce: c.enforce };
  },
  run(config, context) {
    const given = presented(context.scope.request!.headers);
    const authorized =
      given !== undefined &&
      config.credentials.some((template) => {
        const credential = context.text(template, 'credentials');
        const colon = credential.indexOf(':');
        return colon > 0 && equal(credential.slice(0, colon), given.user) && equal(credential.slice(colon + 1), given.password);
      });
    context.scope.setActionResult('basic_auth', { credentials: { presented: given !== undefined, username: given?.user ?? '', authorized } });
    if (authorized) return { note: `authorized ${given!.user}` };
    const message = given ? `the credentials of ${JSON.stringify(given.user)} are not valid` : 'no Basic credentials were presented';
    if (!config.enforce) return { note: `${message} (not enforced)` };
    return { end: errorEnd(401, `Unauthorized: ${message}`, undefined, [['www-authenticate', `Basic realm="${config.realm.replaceAll('"', '')}"`]]), note: message };
  },
});
