import * as v from 'valibot';
import type { Template } from '../interpolation.ts';
import { LIMITS, limitNote } from '../../limits.ts';
import { celToJson } from '../values.ts';
import { ActionConfigProblem, defineAction, readConfig, type ActionContext, type CompileTools } from './types.ts';

/**
 * log (metadata for the traffic event, `traffic_policy.logs`, as JSON data) and set-vars (`vars.<name>` for the
 * rest of the phase). Strings in either are interpolated; a string that is exactly `${expr}` keeps
 * the value's type; numbers, booleans, lists and maps are kept (ints as CEL ints).
 */

type Value = Template | number | bigint | boolean | null | Value[] | { [key: string]: Value };

function compileValue(value: unknown, tools: CompileTools, field: string): Value {
  if (typeof value === 'string') return tools.template(value, field);
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value === 'boolean' || value === null) return value;
  if (Array.isArray(value)) return value.map((item, i) => compileValue(item, tools, `${field}[${i}]`));
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, compileValue(item, tools, `${field}.${key}`)]));
  throw new ActionConfigProblem(`${field}: must be a string, number, boolean, list or map`);
}

const isTemplate = (value: Value): value is Template => typeof value === 'object' && value !== null && 'source' in value && typeof (value as Template).text === 'function';

function evaluateValue(value: Value, context: ActionContext, field: string): unknown {
  if (isTemplate(value)) return context.value(value, field);
  if (Array.isArray(value)) return value.map((item) => evaluateValue(item, context, field));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, evaluateValue(item, context, `${field}.${key}`)]));
  return value;
}

export const log = defineAction({
  results: 'log',
  type: 'log',
  compile: (config, tools) => compileValue(readConfig(v.looseObject({ metadata: v.optional(v.record(v.string(), v.unknown()), {}) }), config).metadata, tools, 'config.metadata'),
  run(metadata, context) {
    const scope = context.scope;
    const value = evaluateValue(metadata, context, 'metadata') as Record<string, unknown>;
    scope.setActionResult('log', { metadata: value });
    if (scope.logs.length >= LIMITS.policy_log_entries.value) return { note: `not logged: a phase keeps at most ${LIMITS.policy_log_entries.value} entries ${limitNote('policy_log_entries')}` };
    const entry = celToJson(value) as Record<string, unknown>;
    scope.logs.push({ phase: scope.phase, metadata: entry });
    return { note: `logged ${Object.keys(entry).join(', ') || 'nothing'}` };
  },
});

export const setVars = defineAction({
  type: 'set-vars',
  compile(config, tools) {
    const c = readConfig(v.looseObject({ vars: v.array(v.record(v.string(), v.unknown())) }), config);
    return c.vars.map((entry, i) => {
      const names = Object.keys(entry);
      if (names.length !== 1) throw new ActionConfigProblem(`config.vars[${i}]: must set exactly one variable (got ${names.length})`);
      return [names[0]!, compileValue(entry[names[0]!], tools, `config.vars[${i}].${names[0]}`)] as const;
    });
  },
  run(vars, context) {
    for (const [name, value] of vars) context.scope.vars[name] = evaluateValue(value, context, `vars.${name}`);
    return { note: `set ${vars.map(([name]) => name).join(', ')}` };
  },
});
