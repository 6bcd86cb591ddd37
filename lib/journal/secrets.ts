/** What looks like a secret in a request: the one rule the journals, their detail and the log line redact by. */

/**
 * Query parameter names whose values may be secrets: never kept in a journal or a log line.
 * A name is secret when it contains one of the usual words for a secret (`access_token`,
 * `client_secret`, `api_key`, `db_pwd`, `credential_id`, `session_cookie`…), ends in `sig`, or is
 * `value` (a vault secret's value, should a client send it in the query) or `code` (an OAuth code).
 */
const SECRET_NAME = /token|secret|passw|passphrase|pwd|credential|auth|key|signature|cookie|jwt|bearer|sig$|^value$|^code$/i;

/** Whether a query parameter or header name looks like it names a secret (see SECRET_NAME). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * The query string with the value of every secret-looking parameter replaced by `mask`; `search`
 * itself when it has none (the journals and the log line all redact through here).
 */
export function redactQuery(search: string, mask: string): string {
  const params = new URLSearchParams(search);
  const secret = [...new Set(params.keys())].filter((name) => SECRET_NAME.test(name));
  if (secret.length === 0) return search;
  for (const name of secret) params.set(name, mask);
  return `?${params.toString()}`;
}

/** A URL as received with its query redacted by `redactQuery` (the fragment, if any, kept). */
export function redactUrl(url: string, mask: string): string {
  const query = url.indexOf('?');
  if (query < 0) return url;
  const hash = url.indexOf('#', query);
  const search = url.slice(query, hash < 0 ? undefined : hash);
  return `${url.slice(0, query)}${redactQuery(search, mask)}${hash < 0 ? '' : url.slice(hash)}`;
}
