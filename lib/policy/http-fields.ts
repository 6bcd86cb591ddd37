import type { HeaderList } from '../traffic/facts.ts';
import { celDuration } from '../conventions/cel.ts';

/** Parsing of the HTTP message parts the policy variables expose, as Go's net/http reads them. */

/** Headers as `{lower-case name: [values in order]}` (the vendor's `req.headers`). */
export function headerMap(headers: HeaderList): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, value] of headers) (out[name.toLowerCase()] ??= []).push(value);
  return out;
}

/** The values of header `name`, any case, in order. */
export function headerValues(headers: HeaderList, name: string): string[] {
  const lower = name.toLowerCase();
  return headers.filter(([field]) => field.toLowerCase() === lower).map(([, value]) => value);
}

/** The URL parts the vendor's `req.url.*` variables name. */
export interface UrlParts {
  /** Normalized (WHATWG URL: dot segments resolved, default port dropped, percent-encoding canonical). */
  readonly url: string;
  readonly raw: string;
  readonly scheme: string;
  /** host[:port] as received, without user information. */
  readonly authority: string;
  readonly host: string;
  /** The port written in the URL, 0 when none is. */
  readonly port: number;
  readonly path: string;
  readonly rawPath: string;
  readonly query: string;
  readonly queryParams: Record<string, string[]>;
  /** `path?query`. */
  readonly uri: string;
  readonly userPassword: string;
}

/** Splits an absolute URL as received into the vendor's URL parts; throws TypeError when it is no URL. */
export function urlParts(raw: string): UrlParts {
  const parsed = new URL(raw);
  const match = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?/.exec(raw);
  const rawAuthority = match?.[2] ?? parsed.host;
  const at = rawAuthority.lastIndexOf('@');
  const authority = at < 0 ? rawAuthority : rawAuthority.slice(at + 1);
  const portText = /:(\d+)$/.exec(authority)?.[1];
  const query = match?.[4] ?? parsed.search.replace(/^\?/, '');
  return {
    url: parsed.href,
    raw,
    scheme: parsed.protocol.replace(/:$/, ''),
    authority,
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: portText ? Number(portText) : 0,
    path: parsed.pathname,
    rawPath: match?.[3] || '/',
    query,
    queryParams: queryParams(query),
    uri: `${parsed.pathname}${query ? `?${query}` : ''}`,
    userPassword: at < 0 ? '' : decodeURIComponent(rawAuthority.slice(0, at)),
  };
}

/** A query string as `{name: [values]}`: `&`-separated, `+` is a space, percent-decoded (Go's url.ParseQuery). */
export function queryParams(query: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, value] of new URLSearchParams(query)) (out[name] ??= []).push(value);
  return out;
}

/** A media type header: the lower-case type and its parameters (Go's mime.ParseMediaType); empty when absent. */
export function mediaType(value: string | undefined): { type: string; parameters: Record<string, string> } {
  if (!value) return { type: '', parameters: {} };
  const [type, ...rest] = value.split(';');
  const parameters: Record<string, string> = {};
  for (const part of rest) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    parameters[part.slice(0, eq).trim().toLowerCase()] = part.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
  }
  return { type: type!.trim().toLowerCase(), parameters };
}

/** A comma-separated header's tokens, lower case (`Content-Encoding: gzip, br` → `['gzip', 'br']`). */
export function tokenList(values: readonly string[]): string[] {
  return values.flatMap((value) => value.split(',')).map((token) => token.trim().toLowerCase()).filter(Boolean);
}

/**
 * A cookie as the vendor exposes it (Go's http.Cookie): a request's (Cookie) has its name and
 * value and the attributes' zero values; a response's (Set-Cookie) its attributes. `max_age` is a
 * duration (`max_age > duration('24h')`), `expires` a timestamp (the epoch when absent).
 */
export interface Cookie {
  readonly name: string;
  readonly value: string;
  readonly path: string;
  readonly domain: string;
  readonly expires: Date;
  readonly max_age: object;
  readonly secure: boolean;
  readonly http_only: boolean;
  readonly same_site: string;
  readonly unparsed_attributes: Record<string, string>;
}
export type RequestCookie = Cookie;
export type ResponseCookie = Cookie;

const cookie = (name: string, value: string, attributes: Partial<Cookie> = {}): Cookie => ({
  name,
  value: value.replace(/^"(.*)"$/, '$1'),
  path: '',
  domain: '',
  expires: new Date(0),
  max_age: celDuration(0n),
  secure: false,
  http_only: false,
  same_site: '',
  unparsed_attributes: {},
  ...attributes,
});

/** The request's cookies by name, in the order of the Cookie headers. */
export function requestCookies(cookieHeaders: readonly string[]): Record<string, RequestCookie[]> {
  const out: Record<string, RequestCookie[]> = {};
  for (const header of cookieHeaders) {
    for (const pair of header.split(';')) {
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      if (name) (out[name] ??= []).push(cookie(name, pair.slice(eq + 1).trim()));
    }
  }
  return out;
}

/** The response's cookies by name; several of one name are ordered by path length, longest first. */
export function responseCookies(setCookieHeaders: readonly string[]): Record<string, ResponseCookie[]> {
  const out: Record<string, ResponseCookie[]> = {};
  for (const header of setCookieHeaders) {
    const [pair, ...attributes] = header.split(';');
    const eq = pair!.indexOf('=');
    if (eq <= 0) continue;
    const set: { -readonly [K in keyof Cookie]?: Cookie[K] } & { unparsed_attributes: Record<string, string> } = { unparsed_attributes: {} };
    for (const attribute of attributes) {
      const at = attribute.indexOf('=');
      const key = (at < 0 ? attribute : attribute.slice(0, at)).trim();
      const value = at < 0 ? '' : attribute.slice(at + 1).trim();
      switch (key.toLowerCase()) {
        case 'path':
          set.path = value;
          break;
        case 'domain':
          set.domain = value.replace(/^\./, '');
          break;
        case 'expires':
          if (!Number.isNaN(Date.parse(value))) set.expires = new Date(value);
          break;
        case 'max-age':
          if (/^-?\d+$/.test(value)) set.max_age = celDuration(BigInt(value));
          break;
        case 'secure':
          set.secure = true;
          break;
        case 'httponly':
          set.http_only = true;
          break;
        case 'samesite':
          set.same_site = value;
          break;
        default:
          if (key) set.unparsed_attributes[key] = value;
      }
    }
    const name = pair!.slice(0, eq).trim();
    (out[name] ??= []).push(cookie(name, pair!.slice(eq + 1).trim(), set));
  }
  for (const list of Object.values(out)) list.sort((a, b) => b.path.length - a.path.length);
  return out;
}
