import { formatTime } from '../conventions/clock.ts';
import type { RuleRecord } from './decisions.ts';
import type { ConnectionFacts, HeaderList } from './facts.ts';
import type { HttpTraffic, TcpTraffic, Traffic } from './exchanges.ts';

/**
 * The vendor's traffic events, made from what the ingress reported (lib/traffic/exchanges.ts). The
 * object is the vendor's field list (docs/ingress.md names its source) with each dotted name as
 * nested objects, as its examples show (`conn.client_ip` → `{ conn: { client_ip } }`):
 *
 * - http_request_complete.v0: `conn` (client_ip, server_ip, server_name, server_port, start_ts),
 *   `http.request` (method in lower case, url.{raw, scheme, host, path, query}, headers, user_agent,
 *   body_length), `http.response` (status_code, headers, body_length), `backend.connection_reused`,
 *   `tls` (version, cipher_suite) when the ingress terminated TLS, `compression.algorithm` when a
 *   compression rule ran, `traffic_policy.logs` when `log` actions ran, and the decisions of the
 *   modules that ran: `basic_auth` (decision, username), `ip_policy`, `circuit_breaker`,
 *   `webhook_verification`, `user_agent_filter`, `oauth` (decision);
 * - tcp_connection_closed.v0: `conn` (as above, with bytes_in, bytes_out, end_ts), `ip_policy`,
 *   `traffic_policy.logs`.
 *
 * Headers are a map of canonical names (`Content-Type`) to lists of lower-cased values, as the
 * vendor describes them; the values of credential headers (Authorization, Cookie…) are replaced
 * by `REDACTED`, since outboxes are kept in the store.
 */

export const TRAFFIC_EVENT_TYPES = { http: 'http_request_complete.v0', tcp: 'tcp_connection_closed.v0' } as const;

/** The `<module>.decision` fields and the actions whose outcome they report. */
const DECISIONS: readonly (readonly [field: string, action: string])[] = [
  ['basic_auth', 'basic-auth'],
  ['ip_policy', 'restrict-ips'],
  ['circuit_breaker', 'circuit-breaker'],
  ['webhook_verification', 'verify-webhook'],
  ['user_agent_filter', 'user-agent-filter'],
  ['oauth', 'oauth'],
];

const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

export function httpRequestComplete(traffic: HttpTraffic): Record<string, unknown> {
  const url = new URL(traffic.request.url);
  const headers = traffic.request.headers;
  const decisions = decisionsOf(traffic.rules);
  const basicAuth = decisions.basic_auth;
  const username = basicAuth ? basicUser(headers) : undefined;
  const response = traffic.response;
  return {
    ...(traffic.conn ? { conn: connOf(traffic.conn, url.hostname) } : {}),
    http: {
      request: {
        method: traffic.request.method.toLowerCase(),
        url: { raw: url.href, scheme: url.protocol.slice(0, -1), host: url.hostname, path: url.pathname, query: url.search.slice(1) },
        headers: headerMap(headers),
        user_agent: headers.find(([name]) => name.toLowerCase() === 'user-agent')?.[1] ?? '',
        body_length: traffic.request.bodyBytes,
      },
      ...(response ? { response: { status_code: response.status, headers: headerMap(response.headers), body_length: response.bodyBytes } } : {}),
    },
    // A client connection's requests share a proxy stream (adapters/ingress/kept-streams.ts).
    ...(traffic.answeredBy === 'upstream' ? { backend: { connection_reused: response?.connectionReused ?? false } } : {}),
    ...(traffic.conn?.tls ? { tls: { version: traffic.conn.tls.version, cipher_suite: traffic.conn.tls.cipherSuite } } : {}),
    ...(response && traffic.rules.some((rule) => rule.actions.some((action) => action.type === 'compress-response')) ? { compression: { algorithm: response.compression ?? 'none' } } : {}),
    ...Object.fromEntries(Object.entries(decisions).map(([field, decision]) => [field, { decision, ...(field === 'basic_auth' && username !== undefined ? { username } : {}) }])),
    ...logsOf(traffic),
  };
}

export function tcpConnectionClosed(traffic: TcpTraffic): Record<string, unknown> {
  const ended = new Date(traffic.startedAt.getTime() + traffic.durationMs);
  const ipPolicy = decisionsOf(traffic.rules).ip_policy;
  return {
    conn: { ...connOf(traffic.conn, traffic.serverName), bytes_in: traffic.bytesIn, bytes_out: traffic.bytesOut, end_ts: formatTime(ended) },
    ...(ipPolicy ? { ip_policy: { decision: ipPolicy } } : {}),
    ...logsOf(traffic),
  };
}

function connOf(conn: ConnectionFacts, serverName: string) {
  return { client_ip: conn.clientIp, server_ip: conn.serverIp, server_name: serverName, server_port: conn.serverPort, start_ts: formatTime(conn.startedAt) };
}

const logsOf = (traffic: Traffic) => (traffic.logs.length > 0 ? { traffic_policy: { logs: traffic.logs.map((log) => ({ metadata: log.metadata })) } } : {});

/** `allow` or `block` for each module that ran: `block` when its action ended the phase (it answered instead of the upstream). */
function decisionsOf(rules: readonly RuleRecord[]): Record<string, 'allow' | 'block'> {
  const out: Record<string, 'allow' | 'block'> = {};
  for (const rule of rules) {
    for (const action of rule.actions) {
      const field = DECISIONS.find(([, type]) => type === action.type)?.[0];
      if (field && out[field] !== 'block') out[field] = action.ended ? 'block' : 'allow';
    }
  }
  return out;
}

/** The user name of a Basic Authorization header, when the request carried one. */
function basicUser(headers: HeaderList): string | undefined {
  const value = headers.find(([name]) => name.toLowerCase() === 'authorization')?.[1];
  const match = value && /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(value);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(0, colon);
}

/** `content-type` → `Content-Type`, as Go's net/textproto canonicalizes names. */
const canonical = (name: string) => name.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());

function headerMap(headers: HeaderList): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const [name, value] of headers) {
    const key = canonical(name);
    (map[key] ??= []).push(CREDENTIAL_HEADERS.has(name.toLowerCase()) ? 'REDACTED' : value.toLowerCase());
  }
  return map;
}
