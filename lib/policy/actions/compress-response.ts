import * as v from 'valibot';
import { headerValues } from '../http-fields.ts';
import type { RequestState, ResponseState } from '../scope.ts';
import { defineAction, readConfig } from './types.ts';

/**
 * compress-response (and the compression module): the response body is compressed with the
 * algorithm negotiated from the request's Accept-Encoding (q-values respected, `*` allowed, q=0
 * refused; ties go to the order of `algorithms`), unless the upstream already encoded it or the
 * client sent no Accept-Encoding. Burrow encodes gzip, deflate and br; `compress` (LZW), which the
 * vendor lists, is never chosen.
 */

export type Encoding = 'gzip' | 'deflate' | 'br';
const ENCODABLE: readonly string[] = ['gzip', 'deflate', 'br'];
const DEFAULT_ALGORITHMS = ['gzip', 'deflate', 'br', 'compress'];

/** The encoding to apply, or why none is (`already` when the upstream encoded the body). */
export function negotiateEncoding(request: RequestState | undefined, response: ResponseState, algorithms: readonly string[]): { encoding?: Encoding; already: boolean } {
  const existing = headerValues(response.headers, 'content-encoding').join(',').trim().toLowerCase();
  if (existing && existing !== 'identity') return { already: true };
  const accept = request ? headerValues(request.headers, 'accept-encoding') : [];
  if (accept.length === 0) return { already: false };
  const weights = new Map<string, number>();
  for (const entry of accept.join(',').split(',')) {
    const [token, ...params] = entry.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((value) => value !== undefined);
    if (token) weights.set(token, q === undefined ? 1 : Number(q));
  }
  let best: { encoding: Encoding; q: number } | undefined;
  for (const algorithm of algorithms) {
    if (!ENCODABLE.includes(algorithm)) continue;
    const q = weights.get(algorithm) ?? weights.get('*') ?? 0;
    if (q > 0 && (!best || q > best.q)) best = { encoding: algorithm as Encoding, q };
  }
  return { encoding: best?.encoding, already: false };
}

export const compressResponse = defineAction({
  results: 'compress',
  type: 'compress-response',
  compile: (config) =>
    readConfig(v.looseObject({ algorithms: v.optional(v.array(v.picklist(DEFAULT_ALGORITHMS, (issue) => `must be one of ${DEFAULT_ALGORITHMS.join(', ')} (got ${JSON.stringify(issue.input)})`)), DEFAULT_ALGORITHMS) }), config).algorithms,
  run(algorithms, { scope }) {
    if (scope.phase === 'on_http_request') {
      scope.compressionAllowed = algorithms;
      return { note: 'the response will be compressed when the client accepts it' };
    }
    scope.compressionAllowed = algorithms;
    const { encoding, already } = negotiateEncoding(scope.request, scope.response!, algorithms);
    scope.setActionResult('compress', { already_compressed: already, negotiated_algorithm: encoding ?? '' });
    return { note: already ? 'already compressed by the upstream' : encoding ? `compressing with ${encoding}` : 'the client accepts none of the algorithms' };
  },
});
