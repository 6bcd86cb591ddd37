import { PolicyExpressionProblem, type PolicyVariable } from '../conventions/cel.ts';
import type { TlsFacts } from '../traffic/facts.ts';
import type { Phase } from '../traffic/decisions.ts';
import { formatTime } from '../conventions/clock.ts';
import { LIMITS, limitNote } from '../limits.ts';
import { certificateVariables } from './certificates.ts';
import { headerMap, headerValues, mediaType, requestCookies, responseCookies, tokenList, urlParts, type UrlParts } from './http-fields.ts';
import { Unavailable, type RequestState, type ResponseState, type Scope } from './scope.ts';
import { parseUserAgent, type UserAgentParts } from './user-agent.ts';

/**
 * The vendor's traffic policy variables (its "Variables" reference): what each one reads from the
 * phase's scope, as a CEL value (ints are bigint, timestamps Date, bytes Uint8Array). Variables that
 * need data Burrow has no offline source for (IP intelligence, Kubernetes pod identity) are declared,
 * so expressions compile, and read as Unavailable: the rule that reads one answers a 5xx naming it.
 */
interface VariableSpec extends PolicyVariable {
  readonly read: (scope: Scope) => unknown;
  /** What Burrow lacks to give it as documented: data of a third party's (`third-party`), or nothing but the work (`no`). Absent: given. */
  readonly support?: 'third-party' | 'no';
}

const TIMESTAMP = 'google.protobuf.Timestamp';
const HEADERS = 'map<string, list<string>>';

function requestOf(scope: Scope, name: string): RequestState {
  if (!scope.request) throw new Unavailable(name, `there is no HTTP request in ${scope.phase}`);
  return scope.request;
}

function responseOf(scope: Scope, name: string): ResponseState {
  if (!scope.response) throw new Unavailable(name, `there is no HTTP response in ${scope.phase}`);
  return scope.response;
}

const url = (scope: Scope, name: string): UrlParts => {
  const request = requestOf(scope, name);
  return scope.memo('url', () => urlParts(request.url));
};
const userAgent = (scope: Scope, name: string): UserAgentParts =>
  scope.memo('user_agent', () => parseUserAgent(headerValues(requestOf(scope, name).headers, 'user-agent')[0] ?? ''));
const reqHeader = (scope: Scope, name: string, field: string) => headerValues(requestOf(scope, name).headers, field);

const urlVariables: [string, string, (parts: UrlParts) => unknown][] = [
  ['req.url', 'string', (p) => p.url],
  ['req.url.authority', 'string', (p) => p.authority],
  ['req.url.host', 'string', (p) => p.host],
  ['req.url.path', 'string', (p) => p.path],
  ['req.url.port', 'int', (p) => BigInt(p.port)],
  ['req.url.query', 'string', (p) => p.query],
  ['req.url.query_params', HEADERS, (p) => p.queryParams],
  ['req.url.raw', 'string', (p) => p.raw],
  ['req.url.raw_path', 'string', (p) => p.rawPath],
  ['req.url.scheme', 'string', (p) => p.scheme],
  ['req.url.uri', 'string', (p) => p.uri],
  ['req.url.user_password', 'string', (p) => p.userPassword],
];

const userAgentVariables: [string, string, keyof UserAgentParts][] = [
  ['req.user_agent.name', 'string', 'name'],
  ['req.user_agent.version', 'string', 'version'],
  ['req.user_agent.os', 'string', 'os'],
  ['req.user_agent.os_version', 'string', 'os_version'],
  ['req.user_agent.device', 'string', 'device'],
  ['req.user_agent.is_mobile', 'bool', 'is_mobile'],
  ['req.user_agent.is_tablet', 'bool', 'is_tablet'],
  ['req.user_agent.is_desktop', 'bool', 'is_desktop'],
  ['req.user_agent.is_bot', 'bool', 'is_bot'],
  ['req.user_agent.url', 'string', 'url'],
];

/** Variables shared by requests and responses: `headers`, `content_type`, `content_length`, … */
function messageVariables(prefix: 'req' | 'res', message: (scope: Scope, name: string) => RequestState | ResponseState): VariableSpec[] {
  const header = (scope: Scope, name: string, field: string) => headerValues(message(scope, name).headers, field);
  const type = (scope: Scope, name: string) => scope.memo(`${prefix}.content_type`, () => mediaType(header(scope, name, 'content-type')[0]));
  const spec = (suffix: string, type: string, read: (scope: Scope, name: string) => unknown): VariableSpec => {
    const name = `${prefix}.${suffix}`;
    return { name, type, read: (scope) => read(scope, name) };
  };
  return [
    spec('headers', HEADERS, (s, n) => headerMap(message(s, n).headers)),
    // Trailers follow the body: the engine (request) and the ingress (response) read the body to its end first for a policy that reads them.
    spec('trailers', HEADERS, (s, n) => headerMap(message(s, n).trailers ?? unread(n, prefix))),
    spec('content_type', 'string', (s, n) => type(s, n).type),
    spec('content_type.raw', 'string', (s, n) => header(s, n, 'content-type')[0] ?? ''),
    spec('content_type.parameters', 'map<string, string>', (s, n) => type(s, n).parameters),
    spec('content_encoding', 'list<string>', (s, n) => tokenList(header(s, n, 'content-encoding'))),
    spec('content_length', 'int', (s, n) => {
      const value = header(s, n, 'content-length')[0];
      return value && /^\d+$/.test(value) ? BigInt(value) : 0n;
    }),
    spec('location', 'string', (s, n) => header(s, n, 'location')[0] ?? ''),
  ];
}

/** Trailers that were not read: the body went past the bound, or the host read none. */
function unread(name: string, prefix: 'req' | 'res'): never {
  throw new Unavailable(name, prefix === 'req' ? `the request body was not read to its end (longer than ${LIMITS.policy_inspected_body_bytes.value} bytes ${limitNote('policy_inspected_body_bytes')})` : 'the host did not read the response body to its end before this phase');
}

function tlsOf(scope: Scope, name: string) {
  if (!scope.conn.tls) throw new Unavailable(name, 'the connection is not TLS (or TLS was not terminated)');
  return scope.conn.tls;
}

const CERTIFICATE_FIELDS: [string, string][] = [
  ['subject', 'string'],
  ['issuer', 'string'],
  ...(['subject', 'issuer'] as const).flatMap((n): [string, string][] => [
    [`${n}.common_name`, 'string'],
    ...['country', 'locality', 'organization', 'organizational_unit', 'postal_code', 'province', 'street_address'].map((f): [string, string] => [`${n}.${f}`, 'list<string>']),
  ]),
  ['san', 'string'],
  ...['dns_names', 'email_addresses', 'ip_addresses', 'uris'].map((f): [string, string] => [`san.${f}`, 'list<string>']),
  ['serial_number', 'string'],
  ['signature_algorithm', 'string'],
  ['validity.not_before', TIMESTAMP],
  ['validity.not_after', TIMESTAMP],
  ['extensions', 'list<dyn>'],
];

/** The documented fields of a TLS session (`conn.tls.<field>`, `actions.ngrok.terminate_tls.<field>`) that are no certificate's. */
const SESSION_FIELDS: [string, string, (tls: TlsFacts) => unknown][] = [
  ['version', 'string', (tls) => tls.version],
  ['cipher_suite', 'string', (tls) => tls.cipherSuite],
  ['sni', 'string', (tls) => tls.sni],
];

/** A certificate's fields of `side`: `client` has its `pem` under `conn.tls` only. */
const certificateFields = (side: 'client' | 'server', pem: boolean): [string, string][] =>
  side === 'client' && pem ? [...CERTIFICATE_FIELDS, ['pem', 'string']] : CERTIFICATE_FIELDS;

const certificateOf = (tls: TlsFacts, side: 'client' | 'server') => certificateVariables(side === 'client' ? tls.clientChain?.[0] : tls.serverCertificate);

function certificateSpecs(side: 'client' | 'server'): VariableSpec[] {
  return certificateFields(side, true).map(([field, type]) => {
    const name = `conn.tls.${side}.${field}`;
    return { name, type, read: (s: Scope) => {
      const tls = tlsOf(s, name);
      return s.memo(`tls.${side}`, () => certificateOf(tls, side))[field];
    } };
  });
}

/**
 * terminate-tls's result variables (its reference's "Action result variables"): the session it
 * terminated, as `conn.tls.*` shows it, keyed by the name after `actions.ngrok.terminate_tls.`;
 * `error.code`/`error.message` (the action page's names; the variables snippet writes
 * `error_code`/`error_message`, given too) "" and `warnings` empty, as Burrow reads its
 * authorities before the handshake and fails the action on one it cannot read.
 */
export function terminateTlsResults(tls: TlsFacts): Record<string, unknown> {
  const out: Record<string, unknown> = Object.fromEntries(SESSION_FIELDS.map(([field, , read]) => [field, read(tls)]));
  for (const side of ['client', 'server'] as const) {
    const certificate = certificateOf(tls, side);
    for (const [field] of certificateFields(side, false)) out[`${side}.${field}`] = certificate[field];
  }
  return { ...out, 'error.code': '', 'error.message': '', error_code: '', error_message: '', warnings: [] };
}

const TERMINATE_TLS_RESULTS: [string, string][] = [
  ...SESSION_FIELDS.map(([field, type]): [string, string] => [field, type]),
  ...(['client', 'server'] as const).flatMap((side) => certificateFields(side, false).map(([field, type]): [string, string] => [`${side}.${field}`, type])),
  ['error.code', 'string'],
  ['error.message', 'string'],
  ['error_code', 'string'],
  ['error_message', 'string'],
  ['warnings', 'list<string>'],
];

/** Typed, so a policy comparing them with the wrong type is refused on write; on_tcp_connect only (an action's results are its phase's). */
const terminateTlsSpecs = TERMINATE_TLS_RESULTS.map(([field, type]): VariableSpec => {
  const name = `actions.ngrok.terminate_tls.${field}`;
  return { name, type, read: (s) => {
    const results = s.actionResults.terminate_tls as Record<string, unknown> | undefined;
    if (!results) throw new PolicyExpressionProblem(`${name}: no terminate-tls action has terminated TLS before this point of ${s.phase}`);
    return results[field];
  } };
});

const GEO_FIELDS = ['city', 'country', 'country_code', 'latitude', 'longitude', 'radius', 'subdivision'] as const;

function geoOf(scope: Scope, name: string) {
  if (!scope.conn.geo) throw new Unavailable(name, `Burrow has no GeoIP data offline; the ingress knows no location for ${scope.conn.clientIp}`);
  return scope.conn.geo;
}

/** IP intelligence and Kubernetes pod identity: documented by the vendor, with no offline source. */
const IP_INTELLIGENCE: [string, string][] = (['client_ip', 'server_ip'] as const).flatMap((side) => [
  [`conn.${side}.categories`, 'list<string>'],
  [`conn.${side}.is_on_blocklist`, 'bool'],
  [`conn.${side}.is_tor_node`, 'bool'],
  [`conn.${side}.as.number`, 'int'],
  [`conn.${side}.as.organization`, 'string'],
  ...['continent', 'is_eu', 'metro_code', 'postal_code', 'timezone'].map((f): [string, string] => [`conn.${side}.geo.location.${f}`, f === 'is_eu' ? 'bool' : 'string']),
  ...['city', 'continent', 'country', 'country_code', 'is_eu', 'metro_code', 'subdivision', 'timezone'].map((f): [string, string] => [`conn.${side}.geo.registered_location.${f}`, f === 'is_eu' ? 'bool' : 'string']),
  ...(side === 'server_ip' ? GEO_FIELDS.map((f): [string, string] => [`conn.server_ip.geo.location.${f}`, 'string']) : []),
]);
const POD_IDENTITY: [string, string][] = [
  ['conn.k8s.pod.id', 'string'],
  ['conn.k8s.pod.metadata.name', 'string'],
  ['conn.k8s.pod.metadata.namespace', 'string'],
  ['conn.k8s.pod.metadata.annotations', 'map<string, string>'],
  ['conn.k8s.pod.metadata.error_code', 'string'],
  ['conn.k8s.pod.metadata.error_message', 'string'],
];

function endpointUrl(scope: Scope) {
  return scope.memo('endpoint', () => {
    const parsed = new URL(scope.endpoint.url);
    const protocol = parsed.protocol.replace(/:$/, '');
    const port = parsed.port ? Number(parsed.port) : ({ http: 80, https: 443, tls: 443 } as Record<string, number>)[protocol] ?? 0;
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    return { protocol, host, port, addr: `${parsed.hostname}:${port}` };
  });
}

const SPECS: readonly VariableSpec[] = [
  { name: 'req.method', type: 'string', read: (s) => requestOf(s, 'req.method').method },
  ...urlVariables.map(([name, type, pick]): VariableSpec => ({ name, type, read: (s) => pick(url(s, name)) })),
  { name: 'req.host', type: 'string', read: (s) => reqHeader(s, 'req.host', 'host')[0] ?? url(s, 'req.host').authority },
  { name: 'req.version', type: 'string', read: (s) => requestOf(s, 'req.version').version },
  ...messageVariables('req', requestOf),
  { name: 'req.cookies', type: 'map<string, list<dyn>>', read: (s) => s.memo('req.cookies', () => requestCookies(reqHeader(s, 'req.cookies', 'cookie'))) },
  { name: 'req.user_agent', type: 'string', read: (s) => reqHeader(s, 'req.user_agent', 'user-agent')[0] ?? '' },
  ...userAgentVariables.map(([name, type, field]): VariableSpec => ({ name, type, read: (s) => userAgent(s, name)[field] })),
  { name: 'req.ts.header_received', type: TIMESTAMP, read: (s) => requestOf(s, 'req.ts.header_received').receivedAt },
  {
    name: 'req.ts.body_received',
    type: TIMESTAMP,
    read: (s) => requestOf(s, 'req.ts.body_received').bodyRead?.at ?? (() => { throw new Unavailable('req.ts.body_received', 'no action has read the request body'); })(),
  },
  { name: 'res.status_code', type: 'int', read: (s) => BigInt(responseOf(s, 'res.status_code').status) },
  ...messageVariables('res', responseOf),
  { name: 'res.cookies', type: 'map<string, list<dyn>>', read: (s) => s.memo('res.cookies', () => responseCookies(headerValues(responseOf(s, 'res.cookies').headers, 'set-cookie'))) },
  { name: 'conn.client_ip', type: 'string', read: (s) => s.conn.clientIp },
  { name: 'conn.client_port', type: 'int', read: (s) => BigInt(s.conn.clientPort) },
  { name: 'conn.server_ip', type: 'string', read: (s) => s.conn.serverIp },
  { name: 'conn.server_port', type: 'int', read: (s) => BigInt(s.conn.serverPort) },
  { name: 'conn.server_region', type: 'string', read: (s) => s.conn.serverRegion ?? 'local' },
  { name: 'conn.ts.start', type: TIMESTAMP, read: (s) => s.conn.startedAt },
  { name: 'conn.bytes_in', type: 'int', read: (s) => BigInt(s.conn.bytesIn ?? 0) },
  { name: 'conn.bytes_out', type: 'int', read: (s) => BigInt(s.conn.bytesOut ?? 0) },
  ...GEO_FIELDS.flatMap((field): VariableSpec[] => [
    { name: `conn.geo.${field}`, type: 'string', read: (s) => geoOf(s, `conn.geo.${field}`)[field], support: 'third-party' },
    { name: `conn.client_ip.geo.location.${field}`, type: 'string', read: (s) => geoOf(s, `conn.client_ip.geo.location.${field}`)[field], support: 'third-party' },
  ]),
  ...SESSION_FIELDS.map(([field, type, read]): VariableSpec => ({ name: `conn.tls.${field}`, type, read: (s) => read(tlsOf(s, `conn.tls.${field}`)) })),
  { name: 'conn.tls.negotiated_alpn', type: 'string', read: (s) => tlsOf(s, 'conn.tls.negotiated_alpn').negotiatedAlpn ?? '' },
  { name: 'conn.tls.session_resumed', type: 'bool', read: (s) => tlsOf(s, 'conn.tls.session_resumed').sessionResumed ?? false },
  { name: 'conn.tls.ja4_fingerprint', type: 'string', read: (s) => tlsOf(s, 'conn.tls.ja4_fingerprint').ja4Fingerprint ?? '' },
  ...certificateSpecs('client'),
  ...certificateSpecs('server'),
  ...[...IP_INTELLIGENCE, ...POD_IDENTITY].map(([name, type]): VariableSpec => ({
    name,
    type,
    support: 'third-party',
    read: () => {
      throw new Unavailable(name, name.startsWith('conn.k8s.') ? 'Burrow has no Kubernetes pod identity offline' : 'Burrow has no IP intelligence data offline');
    },
  })),
  { name: 'endpoint.id', type: 'string', read: (s) => s.endpoint.id },
  { name: 'endpoint.url', type: 'string', read: (s) => s.endpoint.url },
  { name: 'endpoint.protocol', type: 'string', read: (s) => endpointUrl(s).protocol },
  { name: 'endpoint.host', type: 'string', read: (s) => endpointUrl(s).host },
  { name: 'endpoint.port', type: 'int', read: (s) => BigInt(endpointUrl(s).port) },
  { name: 'endpoint.addr', type: 'string', read: (s) => endpointUrl(s).addr },
  { name: 'time.now', type: 'string', read: (s) => formatTime(s.now) },
  { name: 'vars', type: 'map<string, dyn>', read: (s) => s.vars },
  { name: 'actions', type: 'map<string, dyn>', read: (s) => ({ ngrok: s.actionResults }) },
  ...terminateTlsSpecs,
];

const BY_NAME = new Map(SPECS.map((spec) => [spec.name, spec]));

/** Every variable of the policy language, for the compiler. */
export const POLICY_VARIABLES: readonly PolicyVariable[] = SPECS.map(({ name, type }) => ({ name, type }));

/**
 * The variables an expression of `phase` may read: a connection has no request (`req.*`) and a
 * request no response yet (`res.*`), as the vendor's phases describe them (traffic-policy/how-it-works.mdx).
 * Reading one is refused on write rather than failing every request.
 */
export function phaseVariables(phase: Phase): readonly PolicyVariable[] {
  const absent = phase === 'on_tcp_connect' ? ['req.', 'res.'] : phase === 'on_http_request' ? ['res.', 'actions.ngrok.terminate_tls.'] : ['actions.ngrok.terminate_tls.'];
  return POLICY_VARIABLES.filter(({ name }) => !absent.some((prefix) => name.startsWith(prefix)));
}

/** Whether Burrow gives variable `name` as documented (docs/traffic-policy.md's support table); `no` for a name it does not know. */
export function variableSupport(name: string): 'yes' | 'third-party' | 'no' {
  const spec = BY_NAME.get(name);
  return spec ? (spec.support ?? 'yes') : 'no';
}

/** The value of variable `name` in `scope`; throws Unavailable when the scope cannot provide it. */
export function readVariable(scope: Scope, name: string): unknown {
  if (name.startsWith('\u0000secret\u0000')) {
    const [, , vault, secret] = name.split('\u0000');
    const value = scope.secrets.get(name) ?? scope.accountSecrets?.(vault!, secret!);
    if (value === undefined) throw new Unavailable(`secrets.get(${JSON.stringify(vault)}, ${JSON.stringify(secret)})`, scope.secretsMissing ?? 'the account has no such vault or secret');
    return value;
  }
  const spec = BY_NAME.get(name);
  if (!spec) throw new Unavailable(name, 'no such variable');
  return spec.read(scope);
}
