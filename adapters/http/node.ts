import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Burrow } from '../../lib/index.ts';
import { MAX_BODY_BYTES, parseTarget, tooLarge, type HttpRequest, type HttpResponse } from './body.ts';
import { createHttpHandler, type HttpHandlerOptions } from './handler.ts';

export interface NodeListenerOptions extends HttpHandlerOptions {
  /** Take the caller's address from X-Forwarded-For (only behind a proxy you trust). */
  trustProxy?: boolean;
}

/**
 * A node:http request listener serving a Burrow instance: `http.createServer(createNodeListener(burrow))`.
 * It hands node's request to the shared translation layer directly (no WHATWG Request/Response).
 */
export function createNodeListener(burrow: Burrow, options: NodeListenerOptions = {}): RequestListener {
  const handle = createHttpHandler(burrow, options);
  return (req: IncomingMessage, res: ServerResponse) => {
    const forwarded = options.trustProxy ? String(req.headers['x-forwarded-for'] ?? '').split(',')[0]!.trim() : '';
    const sourceIp = forwarded || req.socket.remoteAddress;
    handle(new NodeRequest(req, sourceIp)).then(
      (response) => send(res, response),
      (error) => {
        res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end('internal error');
        options.onError?.(error);
      },
    );
  };
}

/** A node request as the translation layer reads it; methods, not per-request closures. */
class NodeRequest implements HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly search: string;
  readonly sourceIp?: string;
  readonly mountPath?: string;
  readonly #req: IncomingMessage;

  constructor(req: IncomingMessage, sourceIp: string | undefined) {
    this.#req = req;
    this.method = req.method ?? 'GET';
    const { path, search } = parseTarget(req.url ?? '/');
    this.path = path;
    this.search = search;
    if (sourceIp) this.sourceIp = sourceIp;
    const mountPath = (req as { originalUrl?: unknown }).originalUrl === undefined ? undefined : mountOf(req);
    if (mountPath) this.mountPath = mountPath;
  }

  get origin(): string {
    return new URL(`http://${this.#req.headers.host ?? 'localhost'}`).origin;
  }

  header(name: string): string | null {
    const value = this.#req.headers[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }

  text(): Promise<string> {
    return readBody(this.#req);
  }
}

/**
 * Writes a response in one socket write: with a string body and a known length, node sends the
 * head and the body together (a Buffer body would be a second chunk, and a copy).
 */
function send(res: ServerResponse, response: HttpResponse): void {
  const { body, headers } = response;
  if (body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(body));
  res.writeHead(response.status, headers);
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.resume();
        try {
          tooLarge();
        } catch (error) {
          reject(error);
        }
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Express (and Connect) strip their mount path from `req.url` and keep the client's path in
 * `req.originalUrl`; the difference is where Burrow is mounted, which every `uri` must include.
 */
function mountOf(req: IncomingMessage): string | undefined {
  const original = (req as { originalUrl?: unknown }).originalUrl;
  if (typeof original !== 'string' || original === req.url) return undefined;
  const originalPath = original.split('?')[0]!;
  const url = (req.url ?? '/').split('?')[0]!;
  const routedPath = url === '/' ? '' : url;
  if (!originalPath.endsWith(routedPath)) return undefined;
  return originalPath.slice(0, originalPath.length - routedPath.length).replace(/\/$/, '') || undefined;
}
