/**
 * Resource addresses. Every `uri` is `{base_url}{path}/{id}` (agent ingresses use the bare path,
 * as the spec says); a Ref is `{ id, uri }`. The base URL is the instance's (CLI `--base-url`) or,
 * when none is configured, the origin of the request being answered.
 */

export interface Ref {
  id: string;
  uri: string;
}

/** Joins a base URL and a path without doubling slashes. */
export function absoluteUri(baseUrl: string, path: string): string {
  return `${baseUrl.endsWith('/') ? baseUrl.replace(/\/+$/, '') : baseUrl}${path}`;
}

/** `{ id, uri }` for the resource `id` under collection `collectionPath` (e.g. `/api_keys`). */
export function makeRef(baseUrl: string, collectionPath: string, id: string): Ref {
  return { id, uri: absoluteUri(baseUrl, `${collectionPath}/${id}`) };
}
