import { LIMITS } from '../limits.ts';
import type { PolicyServices } from './services.ts';

/**
 * JSON documents actions fetch by URL (JSON Web Key Sets, OIDC discovery documents), through the
 * host's `fetchJson` and cached for JWKS_CACHE_SECONDS by the injected clock. A `data:` URL
 * (`data:application/json;base64,…` or `data:application/json,<percent-encoded JSON>`) is read in
 * place, so a policy can carry its keys inline without any server.
 */
/** How long a fetched document is reused, in seconds (the vendor refreshes JWKS "roughly every 15 minutes"). */
const JWKS_CACHE_SECONDS = 15 * 60;

export interface DocumentCache {
  /** The document at `url`; throws with the reason when it cannot be had. */
  get(url: string): Promise<unknown>;
}

function dataUrl(url: string): unknown {
  const match = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(url);
  if (!match) throw new Error('is not a data: URL of the form data:application/json[;base64],<document>');
  const text = match[2] ? Buffer.from(match[3]!, 'base64').toString('utf8') : decodeURIComponent(match[3]!);
  return JSON.parse(text);
}

export function createDocumentCache(services: PolicyServices): DocumentCache {
  const cached = new Map<string, { readonly document: unknown; readonly at: number }>();
  return {
    async get(url) {
      if (url.startsWith('data:')) return dataUrl(url);
      const now = services.clock.now().getTime();
      const hit = cached.get(url);
      if (hit && now - hit.at < JWKS_CACHE_SECONDS * 1000) return hit.document;
      if (!services.fetchJson) throw new Error(`cannot fetch ${url} here (no document fetcher was provided; a data: URL works offline)`);
      const document = await services.fetchJson(url);
      if (cached.size >= LIMITS.policy_cached_documents.value) cached.delete(cached.keys().next().value!);
      cached.set(url, { document, at: now });
      return document;
    },
  };
}
