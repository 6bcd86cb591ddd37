import { isIP } from 'node:net';
import { LIMITS, limitNote } from '../../lib/limits.ts';

/**
 * The JSON documents traffic policies fetch by URL (an OIDC provider's discovery document, a JWKS
 * for jwt-validation), as Burrow reads them offline: only from this machine (`localhost`,
 * 127.0.0.0/8, `::1`), so a test serves its provider's documents itself and nothing leaves the
 * machine. At most `ingress_document_bytes` within `ingress_document_ms`; any other URL, a failed
 * or non-JSON answer throws naming why (the action answers its 5xx with it).
 */

const LOOPBACK_NAMES = new Set(['localhost', '[::1]']);

function isLoopback(hostname: string): boolean {
  if (LOOPBACK_NAMES.has(hostname) || hostname.endsWith('.localhost')) return true;
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}

/** The JSON document at `url`, from this machine only (see the file comment). */
export async function fetchLocalJson(url: string): Promise<unknown> {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !isLoopback(parsed.hostname)) {
    throw new Error(`${url} is not fetched: offline, Burrow reads documents only from this machine (http://localhost, 127.0.0.1, [::1]), or inline as a data: URL`);
  }
  const limit = LIMITS.ingress_document_bytes.value;
  const response = await fetch(parsed, { signal: AbortSignal.timeout(LIMITS.ingress_document_ms.value), redirect: 'error' }).catch((error: Error) => {
    throw new Error(error.name === 'TimeoutError' ? `no answer within ${LIMITS.ingress_document_ms.value} ms ${limitNote('ingress_document_ms')}` : `${error.message}${error.cause ? `: ${(error.cause as Error).message}` : ''}`);
  });
  if (!response.ok) throw new Error(`answered ${response.status}`);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body?.getReader();
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel();
      throw new Error(`longer than ${limit} bytes ${limitNote('ingress_document_bytes')}`);
    }
    chunks.push(value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    throw new Error(`not JSON: ${(error as Error).message}`);
  }
}
