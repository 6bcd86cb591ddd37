import type { QueryParams } from '../../lib/index.ts';

/**
 * A query string as the pipeline takes it: each parameter once, or (API requests) a list when it
 * is repeated, so lib can refuse repeated parameters by name; the control plane keeps the last.
 */
export function queryParams(search: string, options: { repeated: 'list' | 'last' } = { repeated: 'list' }): QueryParams {
  const out: Record<string, string | string[]> = {};
  if (search === '') return out;
  for (const [key, value] of new URLSearchParams(search)) {
    const prev = out[key];
    out[key] = prev === undefined || options.repeated === 'last' ? value : ([] as string[]).concat(prev, value);
  }
  return out;
}
