import { LIMITS, type BurrowCore } from '../../lib/index.ts';
import { tooLarge, type BodyLimit } from './body.ts';
import { createHttpHandler, type HttpHandlerOptions } from './handler.ts';

/**
 * The universal seam: `(Request) => Promise<Response>`, for Hono, Deno-style servers, service
 * workers and in-process tests. A fault rule's dropped connection rejects with a TypeError, as
 * `fetch` does on a network error.
 */
export interface FetchHandlerOptions extends HttpHandlerOptions {
  /** The caller's address (IP restrictions of type `api` need it); fetch Requests do not carry one. */
  sourceIp?: (request: Request) => string | undefined;
}

export function createFetchHandler(burrow: BurrowCore<any>, options: FetchHandlerOptions = {}): (request: Request) => Promise<Response> {
  const handle = createHttpHandler(burrow, options);
  return async (request) => {
    const sourceIp = options.sourceIp?.(request);
    const url = new URL(request.url);
    const response = await handle({
      ...(sourceIp ? { sourceIp } : {}),
      method: request.method,
      path: url.pathname,
      search: url.search,
      origin: url.origin,
      header: (name) => request.headers.get(name),
      rawHeaders: () => {
        const raw: string[] = [];
        request.headers.forEach((value, name) => raw.push(name, value));
        return raw;
      },
      text: (limit = 'request_body_bytes') => readLimited(request, limit),
    });
    // A fault's dropped connection: fetch's own network error.
    if (response.drop) throw new TypeError(`fetch failed: the connection was dropped (fault ${response.fault})`);
    return new Response(response.body ?? null, { status: response.status, headers: response.headers });
  };
}

async function readLimited(request: Request, limit: BodyLimit): Promise<string> {
  const maxBytes = LIMITS[limit].value;
  if (!request.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
