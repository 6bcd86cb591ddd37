/**
 * The parts of a User-Agent header the vendor's `req.user_agent.*` variables name. The vendor does
 * not document its parser; this one reads the common forms (browsers, their operating systems and
 * devices, command-line clients, crawlers) and answers "" / false for what it cannot tell.
 */
export interface UserAgentParts {
  readonly name: string;
  readonly version: string;
  readonly os: string;
  readonly os_version: string;
  readonly device: string;
  readonly is_mobile: boolean;
  readonly is_tablet: boolean;
  readonly is_desktop: boolean;
  readonly is_bot: boolean;
  readonly url: string;
}

/** Browsers and clients, most specific first: [product token, name]. */
const PRODUCTS: readonly (readonly [RegExp, string])[] = [
  [/\bEdg(?:e|A|iOS)?\/([\d.]+)/, 'Edge'],
  [/\bOPR\/([\d.]+)/, 'Opera'],
  [/\bSamsungBrowser\/([\d.]+)/, 'Samsung Browser'],
  [/\bCriOS\/([\d.]+)/, 'Chrome'],
  [/\bFxiOS\/([\d.]+)/, 'Firefox'],
  [/\bChrome\/([\d.]+)/, 'Chrome'],
  [/\bFirefox\/([\d.]+)/, 'Firefox'],
  [/\bVersion\/([\d.]+).*\bSafari\//, 'Safari'],
  [/\bMSIE ([\d.]+)/, 'Internet Explorer'],
  [/\bTrident\/.*\brv:([\d.]+)/, 'Internet Explorer'],
];

const BOT = /bot\b|crawl|spider|slurp|facebookexternalhit|bingpreview|mediapartners|headless/i;

function operatingSystem(ua: string): [string, string] {
  let m: RegExpExecArray | null;
  if ((m = /Windows NT ([\d.]+)/.exec(ua))) return ['Windows', { '10.0': '10', '6.3': '8.1', '6.2': '8', '6.1': '7' }[m[1]!] ?? m[1]!];
  if ((m = /Android ([\d.]+)/.exec(ua))) return ['Android', m[1]!];
  if ((m = /(?:iPhone|CPU) OS ([\d_]+)/.exec(ua))) return ['iOS', m[1]!.replaceAll('_', '.')];
  if ((m = /Mac OS X ([\d_.]+)/.exec(ua))) return ['macOS', m[1]!.replaceAll('_', '.')];
  if (/CrOS/.test(ua)) return ['Chrome OS', ''];
  if (/Linux/.test(ua)) return ['Linux', ''];
  return ['', ''];
}

/** Reads a User-Agent header value. */
export function parseUserAgent(ua: string): UserAgentParts {
  const isBot = BOT.test(ua);
  let name = '';
  let version = '';
  for (const [pattern, product] of PRODUCTS) {
    const m = pattern.exec(ua);
    if (m) {
      [name, version] = [product, m[1]!];
      break;
    }
  }
  if (!name || isBot) {
    const token = (isBot ? /([\w.-]*(?:bot|crawler|spider|slurp)[\w.-]*)\/([\w.]+)/i.exec(ua) : null) ?? /^([\w.-]+)\/([\w.-]+)/.exec(ua);
    if (token) [name, version] = [token[1]!, token[2]!];
  }
  const [os, osVersion] = operatingSystem(ua);
  const isTablet = /iPad|Tablet/.test(ua) || (/Android/.test(ua) && !/Mobile/.test(ua));
  const isMobile = !isTablet && /Mobi|iPhone|iPod|Android/.test(ua);
  const device = /iPad/.test(ua) ? 'iPad' : /iPhone/.test(ua) ? 'iPhone' : /iPod/.test(ua) ? 'iPod' : /Android/.test(ua) ? 'Android' : '';
  return {
    name,
    version,
    os,
    os_version: osVersion,
    device,
    is_mobile: isMobile,
    is_tablet: isTablet,
    is_desktop: !isMobile && !isTablet && !isBot && ['Windows', 'macOS', 'Linux', 'Chrome OS'].includes(os),
    is_bot: isBot,
    url: /\+?(https?:\/\/[^\s;)]+)/.exec(ua)?.[1] ?? '',
  };
}
