import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ApiError, ERRORS } from '../../lib/index.ts';
import { JSON_TYPE, readJsonBody, type HttpRequest, type HttpResponse } from './body.ts';

/**
 * Serves the inspector page (`/_burrow/`): plain HTML, CSS and JavaScript files that ship in the
 * package next to this module (adapters/http/inspector/), read once and kept in memory. The page
 * itself holds no data and is served without a token; everything it shows comes from the control
 * plane, which checks the operator token the user signs in with. The files are looked up relative
 * to this module, so they are found from the TypeScript sources and from a compiled copy alike.
 */

const FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/inspector.js': { file: 'inspector.js', type: 'text/javascript; charset=utf-8' },
  '/inspector.css': { file: 'inspector.css', type: 'text/css; charset=utf-8' },
};

const HEADERS = {
  'Cache-Control': 'no-cache',
  // Only the page's own files run: no inline script, no third-party origin, no framing.
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

export const INSPECTOR_DIRECTORY = new URL('./inspector/', import.meta.url);

const cache = new Map<string, Promise<string>>();

function load(file: string): Promise<string> {
  let text = cache.get(file);
  if (!text) {
    text = readFile(new URL(file, INSPECTOR_DIRECTORY), 'utf8');
    // A failed read (files missing from a broken install) is retried on the next request.
    text.catch(() => cache.delete(file));
    cache.set(file, text);
  }
  return text;
}

/**
 * Answers GET/HEAD of the inspector's files; `path` is below `/_burrow` (`''` for `/_burrow`
 * itself, which redirects to `/_burrow/` so that the page's relative URLs resolve under it).
 */
export async function serveInspector(method: string, path: string): Promise<HttpResponse | undefined> {
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  // A relative Location keeps working when the server is mounted under a base path.
  if (path === '') return { status: 308, headers: { Location: '_burrow/' }, body: undefined };
  const entry = FILES[path];
  if (!entry) return undefined;
  const body = await load(entry.file);
  return { status: 200, headers: { 'Content-Type': entry.type, ...HEADERS }, body: method === 'HEAD' ? undefined : body };
}

/** Where the page exchanges the code of a sign-in link for the operator token (`POST`, no token). */
export const SIGN_IN_PATH = '/sign-in';

/**
 * The one-time sign-in link's exchange, as Jupyter's token link: the server prints
 * `<URL>/_burrow/?token=CODE` at start; the page, opened there, takes the code out of its URL and
 * sends it to `POST /_burrow/sign-in {"code"}`, which answers the operator token once (the page
 * keeps it as if it had been typed in), then refuses that code. Without a code (`signInCode`
 * undefined) every exchange is refused. Answers undefined for any other request.
 */
export function createSignIn(operatorToken: string | undefined, signInCode: string | undefined) {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  let unused = signInCode === undefined || operatorToken === undefined ? undefined : digest(signInCode);
  return async (request: HttpRequest, path: string): Promise<HttpResponse | undefined> => {
    if (path !== SIGN_IN_PATH || request.method !== 'POST') return undefined;
    const body = (await readJsonBody(request)) as { code?: unknown } | undefined;
    const code = typeof body?.code === 'string' ? body.code : '';
    if (unused === undefined || !timingSafeEqual(digest(code), unused)) {
      throw new ApiError(ERRORS.OPERATOR_FORBIDDEN, 'this sign-in link was used already or is not one this server printed: sign in with the operator token');
    }
    unused = undefined;
    return { status: 200, headers: { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-store' }, body: JSON.stringify({ operator_token: operatorToken }) };
  };
}
