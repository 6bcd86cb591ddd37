import { Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import { replaceBody } from '../../lib/policy/actions/body-find-replace.ts';
import type { BodyReplacement } from '../../lib/traffic/decisions.ts';
import type { HeaderList, RequestBody } from '../../lib/traffic/facts.ts';

/**
 * Bodies the policy rewrote (lib/policy/actions/body-find-replace.ts), as the HTTP ingress sends
 * them: a request body request-body-find-replace replaced, held as bytes; an upstream's response
 * body response-body-find-replace asks to change, buffered (at most `policy_inspected_body_bytes`,
 * decoded from gzip, deflate or br first), replaced, and sent with its new Content-Length.
 */

/** Bytes the engine may read as a request body (a forward-internal hop reads the replaced body). */
export const heldBytes = (bytes: Uint8Array): RequestBody => ({ read: async (maxBytes) => (bytes.byteLength > maxBytes ? undefined : bytes) });

const DECODERS: Readonly<Record<string, (bytes: Buffer, options: { maxOutputLength: number }) => Buffer>> = { gzip: gunzipSync, 'x-gzip': gunzipSync, deflate: inflateSync, br: brotliDecompressSync };

/** The upstream's answer body with `replacements` applied, and its headers without its old length and encoding; throws naming a bound. */
export async function rewrittenBody(body: Readable, headers: HeaderList, replacements: readonly BodyReplacement[]): Promise<{ headers: HeaderList; body: Readable }> {
  const limit = LIMITS.policy_inspected_body_bytes.value;
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limit) {
      body.destroy();
      throw new Error(`response-body-find-replace: the response body is longer than ${limit} bytes ${limitNote('policy_inspected_body_bytes')}`);
    }
    chunks.push(chunk);
  }
  const encoding = headers.find(([name]) => name.toLowerCase() === 'content-encoding')?.[1].trim().toLowerCase();
  const decode = encoding && encoding !== 'identity' ? DECODERS[encoding] : undefined;
  if (encoding && encoding !== 'identity' && !decode) throw new Error(`response-body-find-replace: the response body is encoded as ${encoding}, which Burrow does not decode`);
  let bytes: Buffer = Buffer.concat(chunks);
  try {
    if (decode) bytes = decode(bytes, { maxOutputLength: limit });
  } catch (error) {
    throw new Error(`response-body-find-replace: the ${encoding} body does not decode within ${limit} bytes ${limitNote('policy_inspected_body_bytes')}: ${(error as Error).message}`);
  }
  const replaced = Buffer.from(replaceBody(bytes.toString('utf8'), replacements, 'response-body-find-replace'));
  const kept = headers.filter(([name]) => !['content-length', 'content-encoding'].includes(name.toLowerCase()));
  return { headers: [...kept, ['Content-Length', String(replaced.length)]], body: Readable.from([replaced]) };
}
