import { Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import { replaceBody } from '../../lib/policy/actions/body-find-replace.ts';
import type { HttpExchange } from '../../lib/policy/engine.ts';
import type { BodyReplacement, EventStreamMessage } from '../../lib/traffic/decisions.ts';
import { headerPairs, type HeaderList, type RequestBody } from '../../lib/traffic/facts.ts';
import type { UpstreamAnswer } from './h2-upstream.ts';

/**
 * Bodies the policy rewrote (lib/policy/actions/body-find-replace.ts), as the HTTP ingress sends
 * them: a request body request-body-find-replace replaced, held as bytes; an upstream's response
 * body response-body-find-replace asks to change, buffered (at most `policy_inspected_body_bytes`,
 * decoded from gzip, deflate or br first), replaced, and sent with its new Content-Length.
 */

/** Bytes the engine may read as a request body (a forward-internal hop reads the replaced body). */
export const heldBytes = (bytes: Uint8Array): RequestBody => ({ read: async (maxBytes) => (bytes.byteLength > maxBytes ? undefined : bytes) });

const DECODERS: Readonly<Record<string, (bytes: Buffer, options: { maxOutputLength: number }) => Buffer>> = { gzip: gunzipSync, 'x-gzip': gunzipSync, deflate: inflateSync, br: brotliDecompressSync };

/** The chunks of `body` to its end, at most `policy_inspected_body_bytes` (longer: destroyed, throws `tooLong`). */
async function boundedChunks(body: Readable, tooLong: string): Promise<Buffer[]> {
  const limit = LIMITS.policy_inspected_body_bytes.value;
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limit) {
      body.destroy();
      throw new Error(`${tooLong}: the response body is longer than ${limit} bytes ${limitNote('policy_inspected_body_bytes')}`);
    }
    chunks.push(chunk);
  }
  return chunks;
}

/** The upstream's answer body with `replacements` applied, and its headers without its old length and encoding; throws naming a bound. */
export async function rewrittenBody(body: Readable, headers: HeaderList, replacements: readonly BodyReplacement[]): Promise<{ headers: HeaderList; body: Readable }> {
  const limit = LIMITS.policy_inspected_body_bytes.value;
  const chunks = await boundedChunks(body, 'response-body-find-replace');
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

/** An answer read to its end before the response phases: its trailers are known (`trailerList`). */
export type HeldAnswer = UpstreamAnswer & { readonly trailerList: HeaderList };

/**
 * The upstream's answer read to its end (at most `policy_inspected_body_bytes`; longer throws naming
 * the bound), so its trailers are known before on_http_response runs, for a policy that reads
 * `res.trailers` (HttpExchange.readsTrailers): the same head and trailers, the body again as a stream.
 */
export async function heldAnswer(answer: UpstreamAnswer): Promise<HeldAnswer> {
  const chunks = await boundedChunks(answer, 'res.trailers (which follow the body)');
  const rawTrailers = answer.rawTrailers ?? [];
  return Object.assign(Readable.from(chunks), { statusCode: answer.statusCode, rawHeaders: answer.rawHeaders, rawTrailers, trailerList: headerPairs(rawTrailers) });
}

/** Whether an answer is a Server-Sent Events stream. */
export const isEventStream = (headers: HeaderList) => headers.some(([name, value]) => name.toLowerCase() === 'content-type' && /^\s*text\/event-stream\b/i.test(value));

/** The end of the first message in `text` (a blank line), and the separator's length. */
function messageEnd(text: string): { at: number; length: number } | undefined {
  const match = /\r\n\r\n|\n\n|\r\r/.exec(text);
  return match ? { at: match.index, length: match[0].length } : undefined;
}

const FIELD = /^([^:]*)(?::\s?(.*))?$/s;

/** One raw message through the exchanges' on_event_stream_message (innermost first); its text again, rewritten only where a field changed. */
async function rewriteMessage(raw: string, exchanges: readonly HttpExchange[]): Promise<string> {
  const lines = raw.split(/\r\n|\n|\r/).map((line) => {
    const [, field = '', value = ''] = FIELD.exec(line) ?? [];
    return { line, field: line.startsWith(':') ? '' : field, value };
  });
  const valueOf = (field: string) => lines.filter((line) => line.field === field).map((line) => line.value);
  const before: EventStreamMessage = { data: valueOf('data').join('\n'), retry: valueOf('retry').at(-1) ?? '', event: valueOf('event').at(-1) ?? '', id: valueOf('id').at(-1) ?? '' };
  let message = before;
  for (const exchange of exchanges) {
    if (!exchange.handlesEventStream) continue;
    const outcome = await exchange.eventMessage(message);
    if (outcome.terminal) throw new Error(`on_event_stream_message ended the stream: ${outcome.terminal.kind === 'error' ? outcome.terminal.error.message : outcome.terminal.kind}`);
    message = outcome.message;
  }
  if (message.data === before.data && message.retry === before.retry) return raw;
  const out: string[] = [];
  let wrote = { data: false, retry: false };
  for (const line of lines) {
    if (line.field !== 'data' && line.field !== 'retry') out.push(line.line);
    else if (!wrote[line.field]) {
      out.push(...(line.field === 'data' ? message.data.split('\n').map((part) => `data: ${part}`) : message.retry ? [`retry: ${message.retry}`] : []));
      wrote = { ...wrote, [line.field]: true };
    }
  }
  if (!wrote.retry && message.retry) out.push(`retry: ${message.retry}`);
  return out.join('\n');
}

/**
 * The event stream `body` with each message run through on_event_stream_message as it arrives
 * (sse-find-replace); a message longer than `policy_inspected_body_bytes`, or a phase that fails,
 * cuts the stream.
 */
export function rewrittenEventStream(body: Readable, exchanges: readonly HttpExchange[]): Readable {
  const limit = LIMITS.policy_inspected_body_bytes.value;
  async function* messages(): AsyncGenerator<Buffer> {
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of body as AsyncIterable<Buffer>) {
      pending += decoder.decode(chunk, { stream: true });
      for (let end = messageEnd(pending); end; end = messageEnd(pending)) {
        yield Buffer.from(`${await rewriteMessage(pending.slice(0, end.at), exchanges)}${pending.slice(end.at, end.at + end.length)}`);
        pending = pending.slice(end.at + end.length);
      }
      if (pending.length > limit) throw new Error(`an event stream message is longer than ${limit} characters ${limitNote('policy_inspected_body_bytes')}`);
    }
    pending += decoder.decode();
    if (pending) yield Buffer.from(pending);
  }
  return Readable.from(messages());
}
