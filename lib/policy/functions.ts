import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { PolicyExpressionProblem, type PolicyFunction, type PolicyReader } from '../conventions/cel.ts';
import { firstMatchingCidr } from './actions/restrict-ips.ts';
import { queryParams, type RequestCookie, type ResponseCookie } from './http-fields.ts';
import { secretVariable } from './scope.ts';
import { celToJson } from './values.ts';
import { xxhash64 } from './xxhash64.ts';

/**
 * The vendor's traffic policy macros (its "Macros" reference) that Burrow computes offline.
 * `secrets.get` reads the secrets the engine read for the phase (scope.ts `secretVariable`).
 */

/** The longest list `lists.range` builds. */
const MAX_RANGE = 10_000;

const fail = (message: string): never => {
  throw new PolicyExpressionProblem(message);
};

const inCidrRanges = (ip: string, cidrs: readonly string[]) => firstMatchingCidr(cidrs, ip) !== undefined;

const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'];

function digest(algorithm: string, text: string, format = 'hex'): string {
  if (format !== 'hex' && format !== 'base64') fail(`format must be "hex" or "base64" (got ${JSON.stringify(format)})`);
  return createHash(algorithm).update(text).digest(format as 'hex' | 'base64');
}

function checksum(bytes: Buffer, format = 'hex'): string {
  if (format !== 'hex' && format !== 'base64') fail(`format must be "hex" or "base64" (got ${JSON.stringify(format)})`);
  return format === 'hex' ? bytes.toString('hex') : bytes.toString('base64');
}

const CRC64_ISO_TABLE = (() => {
  const table: bigint[] = [];
  for (let n = 0n; n < 256n; n++) {
    let crc = n;
    for (let k = 0; k < 8; k++) crc = crc & 1n ? (crc >> 1n) ^ 0xd800000000000000n : crc >> 1n;
    table.push(crc);
  }
  return table;
})();

/** CRC-64 with the ISO polynomial, as Go's hash/crc64 computes it. */
function crc64(text: string): Buffer {
  let crc = 0xffffffffffffffffn;
  for (const byte of Buffer.from(text)) crc = CRC64_ISO_TABLE[Number((crc ^ BigInt(byte)) & 0xffn)]! ^ (crc >> 8n);
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(crc ^ 0xffffffffffffffffn);
  return out;
}

function crc32Bytes(text: string): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(crc32(text));
  return out;
}

/** Go's url.QueryEscape: unreserved bytes stay, a space is `+`, everything else is %XX. */
function queryEscape(text: string): string {
  return [...Buffer.from(text)].map((byte) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : byte === 0x20 ? '+' : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

function queryUnescape(text: string): string {
  if (/%(?![0-9a-fA-F]{2})/.test(text)) fail(`invalid URL escape in ${JSON.stringify(text)}`);
  return decodeURIComponent(text.replaceAll('+', ' '));
}

function decodeBase64(text: string): Buffer {
  const bare = text.replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]*$/.test(bare) || text.length % 4 !== 0) fail(`not base64: ${JSON.stringify(text)}`);
  return Buffer.from(text, 'base64');
}

function decodeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return fail(`not JSON: ${(error as Error).message}`);
  }
}

function parseUrl(text: string): Record<string, string> {
  if (!URL.canParse(text)) fail(`not a URL: ${JSON.stringify(text)}`);
  const url = new URL(text);
  return {
    scheme: url.protocol.replace(/:$/, ''),
    host: url.host,
    path: decodeURIComponent(url.pathname),
    raw_query: url.search.replace(/^\?/, ''),
    fragment: url.hash.replace(/^#/, ''),
    user: url.username ? `${decodeURIComponent(url.username)}${url.password ? `:${decodeURIComponent(url.password)}` : ''}` : '',
  };
}

function encodeQuery(map: Record<string, unknown>): string {
  return Object.keys(map)
    .sort()
    .flatMap((key) => (Array.isArray(map[key]) ? (map[key] as unknown[]) : [map[key]]).map((value) => `${queryEscape(key)}=${queryEscape(String(celToJson(value)))}`))
    .join('&');
}

/** printf-style `format`: %s %d %f %e %b %x %X %o, %% for a percent sign. */
function format(template: string, args: readonly unknown[]): string {
  let next = 0;
  return template.replace(/%(\.\d+)?([sdfebxXo%])/g, (_all, precision: string | undefined, verb: string) => {
    if (verb === '%') return '%';
    if (next >= args.length) fail(`format: too few arguments for ${JSON.stringify(template)}`);
    const arg = args[next++];
    const digits = precision ? Number(precision.slice(1)) : 6;
    const number = typeof arg === 'boolean' ? (arg ? 1 : 0) : Number(arg);
    switch (verb) {
      case 's':
        return typeof arg === 'string' ? arg : JSON.stringify(celToJson(arg));
      case 'd':
        return typeof arg === 'bigint' ? arg.toString() : Math.trunc(number).toString();
      case 'f':
        return number.toFixed(digits);
      case 'e':
        return number.toExponential(digits).replace(/e([+-])(\d)$/, 'e$10$2');
      case 'b':
        return (typeof arg === 'bigint' ? arg : BigInt(Math.trunc(number))).toString(2);
      case 'o':
        return (typeof arg === 'bigint' ? arg : BigInt(Math.trunc(number))).toString(8);
      default: {
        const hex = typeof arg === 'string' ? Buffer.from(arg).toString('hex') : (typeof arg === 'bigint' ? arg : BigInt(Math.trunc(number))).toString(16);
        return verb === 'X' ? hex.toUpperCase() : hex;
      }
    }
  });
}

function compare(a: unknown, b: unknown): number {
  if (typeof a !== typeof b || (typeof a === 'object' && !(a instanceof Date))) fail('sort: the elements must be of one comparable type');
  return a! < b! ? -1 : a! > b! ? 1 : 0;
}

function flatten(list: readonly unknown[], depth: number): unknown[] {
  return depth <= 0 ? [...list] : list.flatMap((item) => (Array.isArray(item) ? flatten(item, depth - 1) : [item]));
}

function headerList(read: PolicyReader, variable: string, name: string): string[] {
  return (read(variable) as Record<string, string[]>)[name.toLowerCase()] ?? [];
}

function firstCookie<T>(read: PolicyReader, variable: string, name: string): T {
  return ((read(variable) as Record<string, T[]>)[name] ?? [])[0] ?? fail(`no cookie named ${JSON.stringify(name)}`);
}

/**
 * Methods whose cel-js built-ins answer otherwise than the vendor's reference
 * (traffic-policy/macros/index.mdx): `'hello mellow'.split(' ', 1)` is `['hello']` (the first n
 * parts, not Go's SplitN), `'TacoCÆt Xii'.lowerAscii()` is `'tacocÆt xii'` (ASCII only),
 * `duration('1.234s').getMilliseconds()` is `234` (the milliseconds portion, not 1234).
 */
const REPLACED_BUILTINS = new Set(['split', 'lowerAscii', 'getMilliseconds']);

/** Go's strings.ToLower, rune by rune: `İ` is `i` (JavaScript writes `i̇`), and `Σ` is always `σ` (no final-sigma rule). */
const lower = (text: string) => [...text].map((char) => (char === '\u0130' ? 'i' : char.toLowerCase())).join('');

const GO_ESCAPES: Readonly<Record<string, string>> = { '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '\\': '\\\\', '"': '\\"' };

/** Go's strconv.Quote: the escapes Go writes (`\a`, `\v` …), other control characters as `\xNN` or `\uNNNN`, a lone surrogate as U+FFFD. */
function quote(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += '\ufffd';
      continue;
    }
    out += GO_ESCAPES[char] ?? (code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : code >= 0x80 && code < 0xa0 ? `\\u${code.toString(16).padStart(4, '0')}` : char);
  }
  return `${out}"`;
}

/**
 * The `secrets.get` calls in `text`: the (vault, name) pairs of those whose arguments are string
 * literals, read before a phase; `computed` when some call's are not (those read the account's
 * secrets once per request).
 */
export function secretReferences(text: string): { literal: [vault: string, name: string][]; computed: boolean } {
  const literal: [string, string][] = [];
  for (const match of text.matchAll(/secrets\s*\.\s*get\s*\(\s*(['"])((?:(?!\1)[^\\])*)\1\s*,\s*(['"])((?:(?!\3)[^\\])*)\3\s*\)/g)) literal.push([match[2]!, match[4]!]);
  return { literal, computed: (text.match(/secrets\s*\.\s*get\s*\(/g)?.length ?? 0) > literal.length };
}

/** The functions of the policy language; `random` serves `rand.*` (injected, so seeded runs repeat). */
export function policyFunctions(random: () => number): PolicyFunction[] {
  const fns: [string, PolicyFunction['handler']][] = [
    ['inCidrRange(string, string): bool', (_r, ip: string, cidr: string) => inCidrRanges(ip, [cidr])],
    ['inCidrRanges(string, list<string>): bool', (_r, ip: string, cidrs: string[]) => inCidrRanges(ip, cidrs)],
    ['string.isPrivateIp(): bool', (_r, ip: string) => inCidrRanges(ip, PRIVATE_RANGES)],
    ['getReqHeader(string): list<string>', (read, name: string) => headerList(read, 'req.headers', name)],
    ['hasReqHeader(string): bool', (read, name: string) => headerList(read, 'req.headers', name).length > 0],
    ['getResHeader(string): list<string>', (read, name: string) => headerList(read, 'res.headers', name)],
    ['hasResHeader(string): bool', (read, name: string) => headerList(read, 'res.headers', name).length > 0],
    ['getQueryParam(string): list<string>', (read, name: string) => (read('req.url.query_params') as Record<string, string[]>)[name] ?? []],
    ['hasQueryParam(string): bool', (read, name: string) => name in (read('req.url.query_params') as Record<string, string[]>)],
    ['getReqCookie(string): dyn', (read, name: string) => firstCookie<RequestCookie>(read, 'req.cookies', name)],
    ['hasReqCookie(string): bool', (read, name: string) => name in (read('req.cookies') as Record<string, unknown>)],
    ['getResCookie(string): dyn', (read, name: string) => firstCookie<ResponseCookie>(read, 'res.cookies', name)],
    ['hasResCookie(string): bool', (read, name: string) => name in (read('res.cookies') as Record<string, unknown>)],
    ['base64.decode(string): bytes', (_r, text: string) => new Uint8Array(decodeBase64(text))],
    ['base64.encode(bytes): string', (_r, bytes: Uint8Array) => Buffer.from(bytes).toString('base64')],
    ['string.decodeBase64(): string', (_r, text: string) => decodeBase64(text).toString('utf8')],
    ['string.encodeBase64(): string', (_r, text: string) => Buffer.from(text).toString('base64')],
    ['basic_auth.encode(string, string): string', (_r, user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`],
    ...(['md5', 'sha1', 'sha256', 'sha512'] as const).flatMap((algorithm): [string, PolicyFunction['handler']][] => [
      [`hash.${algorithm}(string): string`, (_r, text: string) => digest(algorithm, text)],
      [`hash.${algorithm}(string, string): string`, (_r, text: string, fmt: string) => digest(algorithm, text, fmt)],
      [`string.${algorithm}(): string`, (_r, text: string) => digest(algorithm, text)],
      [`string.${algorithm}(string): string`, (_r, text: string, fmt: string) => digest(algorithm, text, fmt)],
    ]),
    ...([['crc32', crc32Bytes], ['crc64', crc64], ['xxhash64', (text: string) => xxhash64(Buffer.from(text))]] as const).flatMap(([name, sum]): [string, PolicyFunction['handler']][] => [
      [`hash.${name}(string): string`, (_r, text: string) => checksum(sum(text))],
      [`hash.${name}(string, string): string`, (_r, text: string, fmt: string) => checksum(sum(text), fmt)],
      [`string.${name}(): string`, (_r, text: string) => checksum(sum(text))],
      [`string.${name}(string): string`, (_r, text: string, fmt: string) => checksum(sum(text), fmt)],
    ]),
    ['secrets.get(string, string): string', (read, vault: string, name: string) => read(secretVariable(vault, name))],
    ['json.decode(string): dyn', (_r, text: string) => decodeJson(text)],
    ['json.encode(dyn): string', (_r, value: unknown) => JSON.stringify(celToJson(value))],
    ['string.decodeJson(): dyn', (_r, text: string) => decodeJson(text)],
    ['string.isJson(): bool', (_r, text: string) => {
      try {
        JSON.parse(text);
        return true;
      } catch {
        return false;
      }
    }],
    ['list.encodeJson(): string', (_r, value: unknown) => JSON.stringify(celToJson(value))],
    ['map.encodeJson(): string', (_r, value: unknown) => JSON.stringify(celToJson(value))],
    ['url.escape(string): string', (_r, text: string) => queryEscape(text)],
    ['url.unescape(string): string', (_r, text: string) => queryUnescape(text)],
    ['url.parse(string): map<string, string>', (_r, text: string) => parseUrl(text)],
    ['string.escapeUrl(): string', (_r, text: string) => queryEscape(text)],
    ['string.unescapeUrl(): string', (_r, text: string) => queryUnescape(text)],
    ['string.parseUrl(): map<string, string>', (_r, text: string) => parseUrl(text)],
    ['string.isURL(): bool', (_r, text: string) => /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(text) && URL.canParse(text)],
    ['queryString.decode(string): map<string, string>', (_r, text: string) => Object.fromEntries(Object.entries(queryParams(text)).map(([k, v]) => [k, v[0]!]))],
    ['queryString.encode(map): string', (_r, map: Record<string, unknown>) => encodeQuery(map)],
    ['string.decodeQueryString(): map<string, string>', (_r, text: string) => Object.fromEntries(Object.entries(queryParams(text)).map(([k, v]) => [k, v[0]!]))],
    ['string.isQueryString(): bool', (_r, text: string) => /^[^=&\s]+=[^&\s]*(&[^=&\s]+=[^&\s]*)*$/.test(text)],
    ['map.encodeQueryString(): string', (_r, map: Record<string, unknown>) => encodeQuery(map)],
    ['string.lower(): string', (_r, text: string) => lower(text)],
    ['string.upper(): string', (_r, text: string) => text.toUpperCase()],
    ['string.reverse(): string', (_r, text: string) => [...text].reverse().join('')],
    ['string.charAt(int): string', (_r, text: string, at: bigint) => {
      const chars = [...text];
      if (at < 0n || at > BigInt(chars.length)) fail(`charAt: index ${at} is out of range`);
      return chars[Number(at)] ?? '';
    }],
    ['string.replace(string, string): string', (_r, text: string, from: string, to: string) => text.replaceAll(from, to)],
    ['string.replace(string, string, int): string', (_r, text: string, from: string, to: string, count: bigint) => {
      let out = text;
      let start = 0;
      for (let n = 0n; (count < 0n || n < count) && from !== ''; n++) {
        const at = out.indexOf(from, start);
        if (at < 0) break;
        out = out.slice(0, at) + to + out.slice(at + from.length);
        start = at + to.length;
      }
      return out;
    }],
    ['string.lowerAscii(): string', (_r, text: string) => text.replace(/[A-Z]+/g, (upper) => upper.toLowerCase())],
    ['string.split(): list<string>', (_r, text: string) => text.split(/\s+/).filter(Boolean)],
    ['string.split(string): list<string>', (_r, text: string, separator: string) => text.split(separator)],
    ['string.split(string, int): list<string>', (_r, text: string, separator: string, count: bigint) => (count < 0n ? text.split(separator) : text.split(separator).slice(0, Number(count)))],
    ['string.format(list): string', (_r, text: string, args: unknown[]) => format(text, args)],
    ['strings.quote(string): string', (_r, text: string) => quote(text)],
    ['google.protobuf.Timestamp.getMilliseconds(): int', (_r, at: Date) => BigInt(at.getUTCMilliseconds())],
    ['google.protobuf.Timestamp.getMilliseconds(string): int', (_r, at: Date) => BigInt(at.getUTCMilliseconds())],
    // The milliseconds portion; protobuf durations keep the nanos' sign with the seconds', as Go's % does.
    ['google.protobuf.Duration.getMilliseconds(): int', (_r, duration: { nanos: number }) => BigInt(Math.trunc(duration.nanos / 1_000_000))],
    ['list.distinct(): list', (_r, list: unknown[]) => {
      const seen = new Set<string>();
      return list.filter((item) => {
        const key = `${typeof item}:${JSON.stringify(celToJson(item))}`;
        return !seen.has(key) && !!seen.add(key);
      });
    }],
    ['list.flatten(): list', (_r, list: unknown[]) => flatten(list, 1)],
    ['list.flatten(int): list', (_r, list: unknown[], depth: bigint) => (depth < 0n ? fail('flatten: the depth must not be negative') : flatten(list, Number(depth)))],
    ['list.sort(): list', (_r, list: unknown[]) => {
      // Every element is checked, not only those the sort happens to compare: [[1]].sort() fails too.
      if (list.some((item) => typeof item !== typeof list[0] || (typeof item === 'object' && !(item instanceof Date)))) fail('sort: the elements must be of one comparable type');
      return [...list].sort(compare);
    }],
    ['list.slice(int, int): list', (_r, list: unknown[], from: bigint, to: bigint) => {
      if (from < 0n || to < from || to > BigInt(list.length)) fail(`slice: indexes ${from}, ${to} are out of range for a list of ${list.length}`);
      return list.slice(Number(from), Number(to));
    }],
    ['lists.range(int): list<int>', (_r, n: bigint) => {
      if (n < 0n || n > BigInt(MAX_RANGE)) fail(`lists.range: n must be from 0 to ${MAX_RANGE} (got ${n})`);
      return Array.from({ length: Number(n) }, (_, i) => BigInt(i));
    }],
    ['rand.double(): double', () => random()],
    ['rand.int(): int', () => BigInt(Math.floor(random() * 2))],
    ['rand.int(int, int): int', (_r, min: bigint, max: bigint) => {
      if (min < 0n || max < min) fail('rand.int: min and max must be positive, min at most max');
      return min + BigInt(Math.floor(random() * Number(max - min + 1n)));
    }],
  ];
  return fns.map(([signature, handler]) => ({ signature, handler, ...(REPLACED_BUILTINS.has(/\.(\w+)\(/.exec(signature)?.[1] ?? '') ? { replacesBuiltin: true as const } : {}) }));
}
