import type { HeaderList } from '../../lib/traffic/facts.ts';

/**
 * The ingress's error pages, as the vendor's edge answers: an HTML page naming the error code and
 * what failed, and the code again in the `ngrok-error-code` header so tools can read it without
 * parsing the page. Codes are the vendor's numbers with the instance's prefix (`ERR_BURROW_3200`
 * for the vendor's ERR_NGROK_3200), so a test can tell Burrow's answer from the real service's.
 */

/** Codes the ingress itself answers with (the vendor's numbers). */
export const INGRESS_CODES = {
  /** No endpoint serves the host, or its agent is gone ("The endpoint is offline."). */
  endpointOffline: 3200,
  /** The agent's stream failed or its answer was not HTTP ("invalid or incomplete HTTP response"). */
  invalidUpstreamResponse: 3004,
  /** An endpoint that converts WebSockets to TCP got a request that is no WebSocket handshake. */
  websocketExpected: 3206,
  /** A cloud endpoint's traffic policy neither answered nor forwarded the request. */
  nonTerminatingCloudPolicy: 6029,
} as const;

const VENDOR_PREFIX = 'ERR_NGROK_';

/** An error page to send. */
export interface ErrorPage {
  readonly status: number;
  readonly headers: HeaderList;
  readonly body: string;
  /** What failed, in words (the traffic journal's `message`). */
  readonly message?: string;
}

/**
 * The page for `status` with the vendor's code `code` (a number, or the engine's `ERR_NGROK_…`
 * text, re-prefixed) and `message`; `headers` are ones the answer must carry (`WWW-Authenticate`…).
 */
export function errorPage(prefix: string, status: number, code: number | string | undefined, message: string, headers: HeaderList = []): ErrorPage {
  const text = code === undefined ? undefined : typeof code === 'number' ? `${prefix}${code}` : code.startsWith(VENDOR_PREFIX) ? `${prefix}${code.slice(VENDOR_PREFIX.length)}` : code;
  const title = text ?? `${status} error`;
  const body = `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${escape(title)}</title></head>\n<body><h1>${escape(title)}</h1>\n<p>${escape(message)}</p></body></html>\n`;
  return {
    status,
    headers: [...headers, ['Content-Type', 'text/html; charset=utf-8'], ...(text ? [['ngrok-error-code', text] as const] : []), ['Content-Length', String(Buffer.byteLength(body))]],
    body,
    message,
  };
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
