import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Burrow } from '../../lib/index.ts';
import { MAX_BODY_BYTES, tooLarge } from './body.ts';
import { createHttpHandler, type HttpHandlerOptions } from './handler.ts';

export interface NodeListenerOptions extends HttpHandlerOptions {
  /** Take the caller's address from X-Forwarded-For (only behind a proxy you trust). */
  trustProxy?: boolean;
}

/** A node:http request listener serving a Burrow instance: `http.createServer(createNodeListener(burrow))`. */
export function createNodeListener(burrow: Burrow, options: NodeListenerOptions = {}): RequestListener {
  const handle = createHttpHandler(burrow, options);
  return (req: IncomingMessage, res: ServerResponse) => {
    const host = req.headers.host ?? 'localhost';
    const forwarded = options.trustProxy ? String(req.headers['x-forwarded-for'] ?? '').split(',')[0]!.trim() : '';
    const sourceIp = forwarded || req.socket.remoteAddress;
    handle({
      method: req.method ?? 'GET',
      url: new URL(req.url ?? '/', `http://${host}`),
      header: (name) => {
        const value = req.headers[name];
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
      },
      text: () => readBody(req),
      ...(sourceIp ? { sourceIp } : {}),
    }).then(
      (response) => {
        // A known length spares node the chunked encoding (one write instead of several).
        const body = response.body === undefined ? undefined : Buffer.from(response.body, 'utf8');
        res.writeHead(response.status, body ? { ...response.headers, 'Content-Length': body.length } : response.headers);
        res.end(body);
      },
      (error) => {
        res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end('internal error');
        options.onError?.(error);
      },
    );
  };
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
