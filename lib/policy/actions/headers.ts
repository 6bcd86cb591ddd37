import * as v from 'valibot';
import type { Scope } from '../scope.ts';
import { defineAction, readConfig } from './types.ts';

/**
 * add-headers and remove-headers, on the request (on_http_request) or the response
 * (on_http_response). Added names are lower-cased (the vendor normalizes them, per HTTP/2); adding
 * appends a value, except `host`, which replaces; `user-agent` may be neither added nor removed.
 */

const message = (scope: Scope) => (scope.phase === 'on_http_response' ? scope.response! : scope.request!);
const PROTECTED = 'user-agent';

export const addHeaders = defineAction({
  results: 'add_headers',
  type: 'add-headers',
  compile(config, tools) {
    const c = readConfig(v.looseObject({ headers: v.record(v.string(), v.string()) }), config);
    return Object.entries(c.headers).map(([name, value]) => [name.toLowerCase(), tools.template(value, `config.headers.${name}`)] as const);
  },
  run(headers, context) {
    const target = message(context.scope);
    const added: string[] = [];
    const refused: string[] = [];
    const values: Record<string, string> = {};
    for (const [name, template] of headers) {
      if (name === PROTECTED) {
        refused.push(name);
        continue;
      }
      const value = context.text(template, `headers.${name}`);
      if (name === 'host' && context.scope.phase === 'on_http_request') target.headers = target.headers.filter(([field]) => field.toLowerCase() !== 'host');
      target.headers.push([name, value]);
      added.push(name);
      values[name] = value;
    }
    context.scope.changed();
    context.scope.setActionResult('add_headers', { headers_added: values });
    return { note: `added ${added.join(', ') || 'nothing'}${refused.length ? `; ${refused.join(', ')} may not be added` : ''}` };
  },
});

export const removeHeaders = defineAction({
  results: 'remove_headers',
  type: 'remove-headers',
  compile: (config) => readConfig(v.looseObject({ headers: v.array(v.string()) }), config).headers.map((name) => name.toLowerCase()),
  run(names, context) {
    const target = message(context.scope);
    const removable = names.filter((name) => name !== PROTECTED);
    const removed = removable.filter((name) => target.headers.some(([field]) => field.toLowerCase() === name));
    target.headers = target.headers.filter(([field]) => !removable.includes(field.toLowerCase()));
    context.scope.changed();
    context.scope.setActionResult('remove_headers', { headers_removed: removed });
    return { note: `removed ${removable.join(', ') || 'nothing'}${removable.length < names.length ? `; ${PROTECTED} may not be removed` : ''}` };
  },
});
