/**
 * The agent protocol's messages (versions 3 and 2), as the vendor's agent writes and reads them
 * (ngrok-rust `ngrok/src/internals/proto.rs`, ngrok-go `internal/tunnel/proto/msg.go`;
 * docs/agent-protocol.md): JSON with PascalCase keys, one request per typed stream.
 *
 * Decoding follows the vendor's Go server, whose JSON decoder matches keys case-insensitively
 * (the Rust agent writes `AuthToken`, the Go one `Authtoken`) and ignores unknown keys; a value
 * of the wrong type is an error that names the key. The decoded forms are camelCase objects for
 * the session handler; `raw` keeps what the agent sent where Burrow does not read every option.
 */

/** Stream types of the RPCs (the first 4 bytes of a stream; ../muxado/typed.ts). */
export const STREAM_TYPES = {
  auth: 0,
  bind: 1,
  unbind: 2,
  proxy: 3,
  restart: 4,
  stop: 5,
  update: 6,
  bindLabeled: 7,
  serverInfo: 8,
  stopTunnel: 9,
} as const;

/**
 * The flow-control window of every stream, each way. The protocol does not negotiate it: the
 * vendor's agent assumes 256 KiB (ngrok-rust `muxado/src/session.rs`).
 */
export const STREAM_WINDOW_BYTES = 256 * 1024;

/** Protocol versions this gateway speaks, in order of preference. */
export const PROTOCOL_VERSIONS = ['3', '2'] as const;
export type ProtocolVersion = (typeof PROTOCOL_VERSIONS)[number];

/** A message that is not what the protocol says; the message names the key. */
export class MessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MessageError';
  }
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads the keys of one JSON object by name, case-insensitively, checking their types. */
class Fields {
  readonly #byLowerName = new Map<string, unknown>();

  constructor(
    readonly raw: Json,
    readonly path: string,
  ) {
    for (const [key, value] of Object.entries(raw)) this.#byLowerName.set(key.toLowerCase(), value);
  }

  static of(value: unknown, path: string): Fields {
    if (!isObject(value)) throw new MessageError(`${path}: expected an object`);
    return new Fields(value, path);
  }

  #get(name: string): unknown {
    const value = this.#byLowerName.get(name.toLowerCase());
    return value === null ? undefined : value;
  }

  #fail(name: string, expected: string): never {
    throw new MessageError(`${this.path}.${name}: expected ${expected}`);
  }

  string(name: string): string {
    const value = this.#get(name);
    if (value === undefined) return '';
    return typeof value === 'string' ? value : this.#fail(name, 'a string');
  }

  /** A string that may be absent (null then), as opposed to empty. */
  optionalString(name: string): string | null {
    const value = this.#get(name);
    if (value === undefined) return null;
    return typeof value === 'string' ? value : this.#fail(name, 'a string or null');
  }

  boolean(name: string): boolean {
    const value = this.#get(name);
    if (value === undefined) return false;
    return typeof value === 'boolean' ? value : this.#fail(name, 'true or false');
  }

  integer(name: string): number {
    const value = this.#get(name);
    if (value === undefined) return 0;
    return Number.isSafeInteger(value) ? (value as number) : this.#fail(name, 'an integer');
  }

  strings(name: string): string[] {
    const value = this.#get(name);
    if (value === undefined) return [];
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) this.#fail(name, 'a list of strings');
    return value as string[];
  }

  stringMap(name: string): Record<string, string> {
    const value = this.#get(name);
    if (value === undefined) return {};
    if (!isObject(value) || !Object.values(value).every((item) => typeof item === 'string')) this.#fail(name, 'an object of strings');
    return { ...(value as Record<string, string>) };
  }

  object(name: string): Fields | null {
    const value = this.#get(name);
    if (value === undefined) return null;
    return isObject(value) ? new Fields(value, `${this.path}.${name}`) : this.#fail(name, 'an object');
  }

  /** Bytes sent as base64 text (Go's []byte), decoded; null when absent. */
  bytes(name: string): Buffer | null {
    const value = this.#get(name);
    if (value === undefined) return null;
    if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) this.#fail(name, 'base64 text');
    return Buffer.from(value as string, 'base64');
  }

  /** Anything JSON, as sent. */
  any(name: string): unknown {
    return this.#get(name);
  }
}

// ---------------------------------------------------------------------------------------------
// Auth

/**
 * What the agent said at Auth about a remote command: it has a handler; it has none (with its
 * reason, the text it also replies with); or nothing (an agent older than remote commands).
 */
export type CommandSupport =
  | { readonly state: 'supported' }
  | { readonly state: 'unsupported'; readonly reason: string }
  | { readonly state: 'not-stated' };

/** The agent's Auth message (stream type 0). */
export interface AgentAuth {
  /** Protocol versions the agent speaks, preferred first. */
  readonly versions: readonly string[];
  /** The session id the agent had before (it reconnects), else ''. */
  readonly clientId: string;
  readonly authtoken: string;
  readonly os: string;
  readonly arch: string;
  /** The agent's own version (`1.7.0`). */
  readonly agentVersion: string;
  readonly hostname: string;
  readonly userAgent: string;
  readonly metadata: string;
  /** The cookie the server gave at the previous Auth of this agent, else ''. */
  readonly cookie: string;
  /** Nanoseconds, as the agent sends them (0 when not sent). */
  readonly heartbeatInterval: number;
  readonly heartbeatTolerance: number;
  readonly clientType: string;
  readonly proxyType: string;
  readonly configVersion: string;
  readonly mutualTls: boolean;
  readonly serviceRun: boolean;
  readonly customInterface: boolean;
  readonly customCas: boolean;
  /** Which remote commands the agent has handlers for. */
  readonly commands: { readonly stop: CommandSupport; readonly restart: CommandSupport; readonly update: CommandSupport };
}

/** The agent sends null (or nothing) for "too old", '' for "supported", else its reason. */
function commandSupport(value: string | null): CommandSupport {
  if (value === null) return { state: 'not-stated' };
  return value === '' ? { state: 'supported' } : { state: 'unsupported', reason: value };
}

export function decodeAuth(message: unknown): AgentAuth {
  const auth = Fields.of(message, 'Auth');
  const extra = auth.object('Extra') ?? Fields.of({}, 'Auth.Extra');
  return {
    versions: auth.strings('Version'),
    clientId: auth.string('ClientId'),
    authtoken: extra.string('AuthToken'),
    os: extra.string('OS'),
    arch: extra.string('Arch'),
    agentVersion: extra.string('Version'),
    hostname: extra.string('Hostname'),
    userAgent: extra.string('UserAgent'),
    metadata: extra.string('Metadata'),
    cookie: extra.string('Cookie'),
    heartbeatInterval: extra.integer('HeartbeatInterval'),
    heartbeatTolerance: extra.integer('HeartbeatTolerance'),
    clientType: extra.string('ClientType'),
    proxyType: extra.string('ProxyType'),
    configVersion: extra.string('ConfigVersion'),
    mutualTls: extra.boolean('MutualTLS'),
    serviceRun: extra.boolean('ServiceRun'),
    customInterface: extra.boolean('CustomInterface'),
    customCas: extra.boolean('CustomCAs'),
    commands: {
      stop: commandSupport(extra.optionalString('StopUnsupportedError')),
      restart: commandSupport(extra.optionalString('RestartUnsupportedError')),
      update: commandSupport(extra.optionalString('UpdateUnsupportedError')),
    },
  };
}

/** What the server tells the agent about itself after a successful Auth. */
export interface AuthReplyExtra {
  readonly serverVersion: string;
  readonly region: string;
  readonly cookie: string;
  readonly accountName: string;
  readonly planName: string;
  readonly banner: string;
}

export function encodeAuthReply(version: string, sessionId: string, extra: AuthReplyExtra) {
  return {
    Version: version,
    ClientId: sessionId,
    Error: '',
    Extra: {
      Version: extra.serverVersion,
      Region: extra.region,
      Cookie: extra.cookie,
      AccountName: extra.accountName,
      SessionDuration: 0,
      PlanName: extra.planName,
      Banner: extra.banner,
      AgentSessionID: sessionId,
    },
  };
}

export function encodeAuthError(error: string) {
  return { Version: '', ClientId: '', Error: error, Extra: {} };
}

// ---------------------------------------------------------------------------------------------
// Bind, StartTunnelWithLabel, Unbind

export type EndpointProto = 'http' | 'https' | 'tcp' | 'tls';
const ENDPOINT_PROTOS: readonly string[] = ['http', 'https', 'tcp', 'tls'];

/** PROXY protocol version the agent wants in front of forwarded connections (0: none). */
export type ProxyProtoVersion = 0 | 1 | 2;

export interface IpRestriction {
  readonly allowCidrs: readonly string[];
  readonly denyCidrs: readonly string[];
}

export interface BasicAuthCredential {
  readonly username: string;
  /** Sent in clear by the agent; a secret: never log or echo it. */
  readonly password: string;
}

/** Options of an http or https bind. */
export interface HttpEndpointOptions {
  readonly domain: string;
  readonly hostname: string;
  readonly subdomain: string;
  readonly proxyProto: ProxyProtoVersion;
  readonly hostHeaderRewrite: boolean;
  readonly localUrlScheme: string;
  readonly trafficPolicy: string | null;
  readonly ipRestriction: IpRestriction | null;
  readonly basicAuth: readonly BasicAuthCredential[] | null;
  /** PEM CA certificates for mutual TLS at the edge. */
  readonly mutualTlsCas: Buffer | null;
}

export interface TcpEndpointOptions {
  /** `host:port` the agent asked for, else ''. */
  readonly addr: string;
  readonly proxyProto: ProxyProtoVersion;
  readonly trafficPolicy: string | null;
  readonly ipRestriction: IpRestriction | null;
}

export interface TlsEndpointOptions {
  readonly domain: string;
  readonly hostname: string;
  readonly subdomain: string;
  readonly proxyProto: ProxyProtoVersion;
  readonly mutualTlsAtAgent: boolean;
  readonly mutualTlsCas: Buffer | null;
  /** Certificate and key to terminate TLS at the edge; null: TLS passes through to the agent. */
  readonly tlsTermination: { readonly certPem: Buffer; readonly keyPem: Buffer } | null;
  readonly trafficPolicy: string | null;
  readonly ipRestriction: IpRestriction | null;
}

interface BindCommon {
  /** The bind id the agent chose (on a rebind after reconnecting), else ''. */
  readonly clientId: string;
  readonly forwardsTo: string;
  readonly forwardsProto: string;
  readonly metadata: string;
  readonly name: string;
  readonly description: string;
  readonly token: string;
  readonly ipPolicyRef: string;
  readonly bindings: readonly string[];
  readonly poolingEnabled: boolean;
  /** The Opts object as sent (middleware options Burrow does not decode are there). */
  readonly raw: Json;
}

/** A Bind (stream type 1): an endpoint of one protocol. */
export type EndpointBindRequest =
  | (BindCommon & { readonly kind: 'endpoint'; readonly proto: 'http' | 'https'; readonly options: HttpEndpointOptions })
  | (BindCommon & { readonly kind: 'endpoint'; readonly proto: 'tcp'; readonly options: TcpEndpointOptions })
  | (BindCommon & { readonly kind: 'endpoint'; readonly proto: 'tls'; readonly options: TlsEndpointOptions });

/** A StartTunnelWithLabel (stream type 7): a labeled tunnel that joins tunnel groups. */
export interface LabeledBindRequest {
  readonly kind: 'labeled';
  readonly labels: Readonly<Record<string, string>>;
  readonly forwardsTo: string;
  readonly forwardsProto: string;
  readonly metadata: string;
}

export type BindRequest = EndpointBindRequest | LabeledBindRequest;

function proxyProto(fields: Fields): ProxyProtoVersion {
  const value = fields.integer('ProxyProto');
  if (value !== 0 && value !== 1 && value !== 2) throw new MessageError(`${fields.path}.ProxyProto: expected 0, 1 or 2`);
  return value;
}

function ipRestriction(opts: Fields): IpRestriction | null {
  const value = opts.object('IPRestriction');
  return value ? { allowCidrs: value.strings('allow_cidrs'), denyCidrs: value.strings('deny_cidrs') } : null;
}

/** TrafficPolicy is a document as text; older agents send the policy as an object. */
function trafficPolicy(opts: Fields): string | null {
  const value = opts.any('TrafficPolicy');
  if (value === undefined || value === '') return null;
  if (typeof value === 'string') return value;
  if (isObject(value)) return JSON.stringify(value);
  throw new MessageError('Bind.Opts.TrafficPolicy: expected a string or an object');
}

function basicAuth(opts: Fields): BasicAuthCredential[] | null {
  const value = opts.object('BasicAuth');
  if (!value) return null;
  const credentials = value.any('credentials') ?? [];
  if (!Array.isArray(credentials)) throw new MessageError('Bind.Opts.BasicAuth.credentials: expected a list');
  return credentials.map((item, i) => {
    const credential = Fields.of(item, `Bind.Opts.BasicAuth.credentials[${i}]`);
    return { username: credential.string('username'), password: credential.string('cleartext_password') };
  });
}

function mutualTlsCas(opts: Fields, name: string): Buffer | null {
  return opts.object(name)?.bytes('mutual_tls_ca') ?? null;
}

export function decodeBind(message: unknown): EndpointBindRequest {
  const bind = Fields.of(message, 'Bind');
  const proto = bind.string('Proto');
  if (!ENDPOINT_PROTOS.includes(proto)) throw new MessageError(`Bind.Proto: expected one of ${ENDPOINT_PROTOS.join(', ')} (got '${proto}')`);
  const opts = bind.object('Opts') ?? Fields.of({}, 'Bind.Opts');
  const extra = bind.object('Extra') ?? Fields.of({}, 'Bind.Extra');
  const common: BindCommon = {
    clientId: bind.string('Id'),
    forwardsTo: bind.string('ForwardsTo'),
    forwardsProto: bind.string('ForwardsProto'),
    metadata: extra.string('Metadata'),
    name: extra.string('Name'),
    description: extra.string('Description'),
    token: extra.string('Token'),
    ipPolicyRef: extra.string('IPPolicyRef'),
    bindings: extra.strings('Bindings'),
    poolingEnabled: extra.boolean('PoolingEnabled'),
    raw: opts.raw,
  };
  switch (proto as EndpointProto) {
    case 'http':
    case 'https':
      return {
        ...common,
        kind: 'endpoint',
        proto: proto as 'http' | 'https',
        options: {
          domain: opts.string('Domain'),
          hostname: opts.string('Hostname'),
          subdomain: opts.string('Subdomain'),
          proxyProto: proxyProto(opts),
          hostHeaderRewrite: opts.boolean('HostHeaderRewrite'),
          localUrlScheme: opts.string('LocalURLScheme'),
          trafficPolicy: trafficPolicy(opts),
          ipRestriction: ipRestriction(opts),
          basicAuth: basicAuth(opts),
          mutualTlsCas: mutualTlsCas(opts, 'MutualTLSCA'),
        },
      };
    case 'tcp':
      return {
        ...common,
        kind: 'endpoint',
        proto: 'tcp',
        options: { addr: opts.string('Addr'), proxyProto: proxyProto(opts), trafficPolicy: trafficPolicy(opts), ipRestriction: ipRestriction(opts) },
      };
    case 'tls': {
      const termination = opts.object('TLSTermination');
      return {
        ...common,
        kind: 'endpoint',
        proto: 'tls',
        options: {
          domain: opts.string('Domain'),
          hostname: opts.string('Hostname'),
          subdomain: opts.string('Subdomain'),
          proxyProto: proxyProto(opts),
          mutualTlsAtAgent: opts.boolean('MutualTLSAtAgent'),
          mutualTlsCas: mutualTlsCas(opts, 'MutualTLSAtEdge'),
          tlsTermination: termination ? { certPem: termination.bytes('cert') ?? Buffer.alloc(0), keyPem: termination.bytes('key') ?? Buffer.alloc(0) } : null,
          trafficPolicy: trafficPolicy(opts),
          ipRestriction: ipRestriction(opts),
        },
      };
    }
  }
}

/**
 * The BindResp: the bind id, the URL, the protocol and the options as bound. The agent decodes
 * Opts into the same structure it sent (missing required keys fail its decoder), so the reply
 * is the agent's Opts with the chosen hostname (http, https, tls) or address (tcp) filled in.
 */
export function encodeBindReply(request: EndpointBindRequest, bindId: string, url: string, tunnelId: string, token = '') {
  const bound = new URL(url);
  const opts = request.proto === 'tcp' ? { ...request.raw, Addr: bound.host } : { ...request.raw, Hostname: bound.hostname };
  return { Id: bindId, URL: url, Proto: request.proto, Opts: opts, Error: '', Extra: { Token: token, TunnelID: tunnelId } };
}

export function encodeBindError(error: string) {
  return { Id: '', URL: '', Proto: '', Opts: {}, Error: error, Extra: { Token: '' } };
}

export function decodeLabeledBind(message: unknown): LabeledBindRequest {
  const bind = Fields.of(message, 'StartTunnelWithLabel');
  return {
    kind: 'labeled',
    labels: bind.stringMap('Labels'),
    forwardsTo: bind.string('ForwardsTo'),
    forwardsProto: bind.string('ForwardsProto'),
    metadata: bind.string('Metadata'),
  };
}

export function encodeLabeledBindReply(id: string, error = '') {
  return { Id: id, Error: error };
}

/** An Unbind (stream type 2): the bind id to close. */
export function decodeUnbind(message: unknown): { readonly id: string } {
  return { id: Fields.of(message, 'Unbind').string('Id') };
}

export function encodeUnbindReply(error = '') {
  return { Error: error, Extra: null };
}

// ---------------------------------------------------------------------------------------------
// Server-initiated: Proxy, StopTunnel, Restart, Stop, Update, and SrvInfo

/** Edge types of the Proxy header, as the agent reads them (strings of digits). */
export const EDGE_TYPES = { undefined: '0', tcp: '1', tls: '2', https: '3' } as const;
export type EdgeType = keyof typeof EDGE_TYPES;

export interface ProxyHeader {
  /** The bind id the connection is for. */
  readonly id: string;
  /** `ip:port` of the client that connected to the endpoint. */
  readonly clientAddr: string;
  readonly proto: string;
  readonly edgeType: EdgeType;
  readonly passthroughTls: boolean;
}

/**
 * The header the server writes first on a proxy stream (type 3): a little-endian int64 length,
 * then that many bytes of JSON; the proxied bytes follow.
 */
export function encodeProxyHeader(header: ProxyHeader): Buffer {
  const json = Buffer.from(
    JSON.stringify({ Id: header.id, ClientAddr: header.clientAddr, Proto: header.proto, EdgeType: EDGE_TYPES[header.edgeType], PassthroughTLS: header.passthroughTls }),
  );
  const length = Buffer.alloc(8);
  length.writeBigInt64LE(BigInt(json.length), 0);
  return Buffer.concat([length, json]);
}

/** Reads a proxy header's JSON (for agents written in this repository's tests and tools). */
export function decodeProxyHeader(message: unknown): ProxyHeader {
  const header = Fields.of(message, 'ProxyHeader');
  const edgeType = (Object.keys(EDGE_TYPES) as EdgeType[]).find((key) => EDGE_TYPES[key] === header.string('EdgeType')) ?? 'undefined';
  return { id: header.string('Id'), clientAddr: header.string('ClientAddr'), proto: header.string('Proto'), edgeType, passthroughTls: header.boolean('PassthroughTLS') };
}

export function encodeStopTunnel(id: string, message: string, errorCode: string | null) {
  return { Id: id, Message: message, ErrorCode: errorCode };
}

export type CommandKind = 'stop' | 'restart' | 'update';

export const COMMAND_STREAM_TYPES: Readonly<Record<CommandKind, number>> = { stop: STREAM_TYPES.stop, restart: STREAM_TYPES.restart, update: STREAM_TYPES.update };

/** Arguments of Update; Stop and Restart have none. */
export interface UpdateArguments {
  /** The version to update to; '' for the latest. */
  readonly version: string;
  readonly permitMajorVersion: boolean;
}

export function encodeCommand(kind: CommandKind, update?: UpdateArguments) {
  return kind === 'update' ? { Version: update?.version ?? '', PermitMajorVersion: update?.permitMajorVersion ?? false } : {};
}

/** The agent's reply to a command: its error text, '' when it succeeded. */
export function decodeCommandReply(message: unknown): { readonly error: string } {
  return { error: Fields.of(message, 'CommandResp').string('Error') };
}

export function encodeServerInfo(region: string) {
  return { Region: region };
}

/**
 * The error text of a refused RPC, as the vendor's server writes it: the message, a blank line,
 * then the code on its own line. The agent takes a line that starts with the vendor's prefix as
 * the code (the SDK shows it as `errorCode`); with another prefix the code stays in the message.
 */
export function errorText(message: string, code: string | undefined): string {
  return code === undefined ? message : `${message}\n\n${code}\n`;
}
