import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { LIMITS, limitNote } from '../../lib/limits.ts';
import type { PolicyHttpRequest, PolicyHttpResponse } from '../../lib/policy/services.ts';
import { isInternalHost, type InternalRequests } from './internal-requests.ts';

/**
 * What traffic policies fetch. The JSON documents they fetch by URL (an OIDC provider's discovery
 * document, a JWKS for jwt-validation), as Burrow reads them offline: only from this machine (`localhost`,
 * 127.0.0.0/8, `::1`), so a test serves its provider's documents itself and nothing leaves the
 * machine. At most `ingress_document_bytes` within `ingress_document_ms`; any other URL, a failed
 * or non-JSON answer throws naming why (the action answers its 5xx with it).
 */

const LOOPBACK_NAMES = new Set(['localhost', '[::1]']);

function isLoopback(hostname: string): boolean {
  if (LOOPBACK_NAMES.has(hostname) || hostname.endsWith('.localhost')) return true;
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}

/** Whether `url` is an http(s) URL of this machine. */
const localUrl = (url: string) => {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  return parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:') && isLoopback(parsed.hostname) ? parsed : undefined;
};

/** Why fetch failed, in words. */
const fetchFailure = (error: Error, timeoutMs: number, limit: string) =>
  new Error(error.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms ${limit}` : `${error.message}${error.cause ? `: ${(error.cause as Error).message}` : ''}`);

/** The body of `response`, at most `maxBytes` (else an error naming `limit`). */
async function boundedBody(response: Response, maxBytes: number, limit: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body?.getReader();
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      throw new Error(`response size exceeded: longer than ${maxBytes} bytes ${limit}`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** fetch's headers as a header list. */
function headerListOf(headers: Headers): [string, string][] {
  const list: [string, string][] = [];
  headers.forEach((value, name) => list.push([name, value]));
  return list;
}

/** The JSON document at `url`, from this machine only (see the file comment). */
export async function fetchLocalJson(url: string): Promise<unknown> {
  const parsed = localUrl(url);
  if (!parsed) throw new Error(`${url} is not fetched: offline, Burrow reads documents only from this machine (http://localhost, 127.0.0.1, [::1]), or inline as a data: URL`);
  const timeoutMs = LIMITS.ingress_document_ms.value;
  const response = await fetch(parsed, { signal: AbortSignal.timeout(timeoutMs), redirect: 'error' }).catch((error: Error) => {
    throw fetchFailure(error, timeoutMs, limitNote('ingress_document_ms'));
  });
  if (!response.ok) throw new Error(`answered ${response.status}`);
  const body = await boundedBody(response, LIMITS.ingress_document_bytes.value, limitNote('ingress_document_bytes'));
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new Error(`not JSON: ${(error as Error).message}`);
  }
}

/**
 * Whether `url` is one the http-request action may call: any http(s) URL this machine reaches (the
 * action is a call the policy's author asked for, unlike documents an identity provider names).
 */
function requestableUrl(url: string): URL {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw new Error(`${url} is not requested: http-request calls http:// and https:// URLs`);
  return parsed;
}

/** The address `hostname` resolves to, as the action reports it (`res.resolved_ip`). */
async function resolvedIp(hostname: string): Promise<string> {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare)) return bare;
  return (await lookup(bare).catch(() => undefined))?.address ?? '';
}

/**
 * The http-request action's call (lib/policy/actions/http-request.ts): within the action's timeout
 * (all redirects included) and body bound, following at most `maxRedirects` redirects. A URL of an
 * internal endpoint (`*.internal`) goes to the calling endpoint's account's internal endpoint
 * through `internal` (internal-requests.ts); without it (`burrow policy test`), it fails naming why.
 */
export async function policyHttpRequest(request: PolicyHttpRequest, from?: Parameters<InternalRequests['send']>[2], internal?: InternalRequests): Promise<PolicyHttpResponse> {
  const started = performance.now();
  const signal = AbortSignal.timeout(request.timeoutMs);
  let url = request.url;
  let method = request.method;
  let body = request.body;
  for (let redirects = 0; ; redirects++) {
    const parsed = requestableUrl(url);
    const inside = isInternalHost(parsed.hostname);
    if (inside && !(internal && from)) throw new Error(`${parsed.href} is not requested: internal endpoints (*.internal) are reached only from the ingress, through the endpoint's account`);
    const headers = request.headers.map(([name, value]): [string, string] => [name, value]);
    const sent = inside ? internal!.send(parsed, { method, headers, ...(body !== undefined ? { body } : {}), signal }, from!) : fetch(parsed, { method, headers, ...(body !== undefined && method !== 'GET' ? { body } : {}), signal, redirect: 'manual' });
    const response = await sent.catch((error: Error) => {
      throw fetchFailure(error, request.timeoutMs, '(the action\'s timeout)');
    });
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      if (redirects >= request.maxRedirects) throw new Error(`redirected more than ${request.maxRedirects} times (max_redirects)`);
      url = new URL(location, url).href;
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) [method, body] = ['GET', undefined];
      continue;
    }
    const bytes = await boundedBody(response, request.maxBytes, '(the action\'s limit)');
    return { status: response.status, headers: headerListOf(response.headers), body: new Uint8Array(bytes), timeMs: Math.round(performance.now() - started), resolvedIp: inside ? internal!.address : await resolvedIp(parsed.hostname) };
  }
}
