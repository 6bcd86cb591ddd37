import type { ErrorSpec } from './conventions/errors.ts';

/**
 * Every bound Burrow puts on request input, in one table: what a caller may send, and how much
 * work one request may cause. The rule they serve: no request, authenticated or not, blocks the
 * event loop for more than 50 ms or makes a later request fail. Work that grows with the input
 * (parsing a YAML document, compiling RE2 patterns, evaluating a CEL filter over a collection)
 * is bounded here, and `npm run bench -- --bounds` times the costliest input each bound still
 * accepts.
 *
 * Each error a limit gives names it, `(limit <name>)`, through `limitNote`. docs/limits.md's
 * table lists these rows (test/readme.test.ts checks that they agree). To add a bound: one row
 * here, one row there, and the check that refuses with `limitNote(name)` in its message.
 */

/** One bound. */
export interface Limit {
  /** The largest accepted amount. */
  readonly value: number;
  /** What `value` counts, as messages print it: `bytes`, `levels`, `cost units`… */
  readonly unit: string;
  /** What it bounds, one line (docs/limits.md's words). */
  readonly bounds: string;
  /**
   * The errors a request over it gets, by name in the instance's error table (the core's and the
   * families'; several where the field's holder decides the code). Absent where the limit is no
   * request's error: it shortens an answer, or a client past it loses its own connection.
   */
  readonly errors?: readonly string[];
}

const KIB = 1024;

/** The bounds, by name. */
export const LIMITS = {
  request_body_bytes: { value: 1024 * KIB, unit: 'bytes', bounds: 'a request body', errors: ['BODY_TOO_LARGE'] },
  snapshot_body_bytes: {
    value: 128 * 1024 * KIB,
    unit: 'bytes',
    bounds: 'the body of a snapshot import (`PUT /_burrow/snapshot`): 100,000 records of 1.3 KB on average',
    errors: ['BODY_TOO_LARGE'],
  },
  request_json_depth: { value: 64, unit: 'levels', bounds: 'nesting of a JSON request body, checked before parsing', errors: ['BODY_NOT_JSON'] },
  page_size: { value: 100, unit: 'items', bounds: '`limit` of a list page', errors: ['INVALID_LIMIT'] },
  journal_page_size: { value: 1000, unit: 'entries', bounds: '`limit` of `GET /_burrow/requests` and `GET /_burrow/traffic`, and of their `find`', errors: ['INVALID_LIMIT', 'INVALID_FIELD'] },
  journal_find_wait_ms: { value: 10_000, unit: 'milliseconds', bounds: '`wait_ms` of `POST /_burrow/traffic/find`: how long it waits for a first match', errors: ['INVALID_FIELD'] },
  journal_body_bytes: {
    value: 64 * KIB,
    unit: 'bytes',
    bounds: 'each body (request and response) a journal entry keeps, API or traffic (the rest is cut; the entry says so and gives the whole size)',
  },
  journal_bodies_bytes: {
    value: 32 * 1024 * KIB,
    unit: 'bytes',
    bounds: "the bodies one journal keeps in all (the request journal's, the traffic journal's): past it the oldest entries lose theirs, and say so",
  },
  checkpoints: { value: 64, unit: 'checkpoints', bounds: 'named checkpoints an instance keeps (`POST /_burrow/checkpoints`)', errors: ['INVALID_FIELD'] },
  fault_rules: { value: 256, unit: 'rules', bounds: 'fault rules an instance keeps (`POST /_burrow/faults`)', errors: ['INVALID_FIELD'] },
  fault_latency_ms: { value: 600_000, unit: 'milliseconds', bounds: "a fault rule's `latency_ms`", errors: ['INVALID_FIELD'] },
  filter_length: { value: 2048, unit: 'characters', bounds: 'a list `filter` (CEL)', errors: ['FILTER_INVALID'] },
  filter_nodes: { value: 256, unit: 'syntax nodes', bounds: 'a list `filter` once parsed', errors: ['FILTER_INVALID'] },
  filter_page_cost: {
    value: 500_000,
    unit: 'cost units',
    bounds:
      'one filtered list page: records scanned × (the filter\'s syntax nodes, a `timestamp()` counting 25, + 50); a page that reaches it answers the matches so far and a `next_page_uri` that goes on scanning (only a Kubernetes operator\'s endpoint selectors that together exceed it per endpoint are refused)',
    errors: ['K8S_SELECTORS_INVALID'],
  },
  traffic_policy_yaml_bytes: {
    value: 64 * KIB,
    unit: 'bytes',
    bounds: 'a traffic policy that is not JSON, before it is read as YAML (the YAML reader spends up to a microsecond a byte on long lines and scalars, whatever their tokens)',
    errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'],
  },
  traffic_policy_yaml_tokens: {
    value: 5000,
    unit: 'tokens',
    bounds: 'a YAML traffic policy, read before it is composed (scalars, indicators, spaces, line breaks, comments)',
    errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'],
  },
  traffic_policy_nodes: {
    value: 5000,
    unit: 'values',
    bounds: 'the values of a traffic policy, JSON or YAML (each mapping, list and scalar is one)',
    errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'],
  },
  traffic_policy_depth: {
    value: 32,
    unit: 'levels',
    bounds: 'nesting of a traffic policy (JSON or YAML)',
    errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'],
  },
  traffic_policy_expression_chars: {
    value: 32 * KIB,
    unit: 'characters',
    bounds: 'the CEL `expressions` of one traffic policy together, checked before any is parsed',
    errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'],
  },
  policy_expression_nodes: { value: 2048, unit: 'syntax nodes', bounds: 'one CEL expression of a traffic policy', errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'] },
  cel_depth: { value: 32, unit: 'levels', bounds: 'nesting of a CEL expression (a list `filter` or a traffic policy expression)', errors: ['FILTER_INVALID', 'INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'] },
  cel_list_elements: { value: 100, unit: 'elements', bounds: 'a list literal in a CEL expression', errors: ['FILTER_INVALID', 'INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'] },
  cel_map_entries: { value: 100, unit: 'entries', bounds: 'a map literal in a traffic policy expression (filters take none)', errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'] },
  re2_pattern_cost: {
    value: 2000,
    unit: 'cost units',
    bounds: 'one RE2 pattern, estimated before it is compiled: its program\'s instructions (nested repetition counts multiply) + its characters + 200 per Unicode class',
    errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'],
  },
  re2_total_cost: {
    value: 10_000,
    unit: 'cost units',
    bounds: 'the RE2 patterns of one request body or traffic policy together, estimated as above',
    errors: ['INVALID_FIELD', 'ENDPOINT_TRAFFIC_POLICY_INVALID'],
  },
  reported_problems: { value: 10, unit: 'problems', bounds: 'the problems one 400 lists (the rest are counted: "and N more")' },
  ca_pem_bytes: { value: 32 * KIB, unit: 'bytes', bounds: '`ca_pem` of a certificate authority', errors: ['CA_PEM_TOO_LARGE'] },
  certificate_pem_bytes: { value: 64 * KIB, unit: 'bytes', bounds: '`certificate_pem` of a TLS certificate', errors: ['INVALID_FIELD'] },
  private_key_pem_bytes: { value: 16 * KIB, unit: 'bytes', bounds: '`private_key_pem` of a TLS certificate', errors: ['INVALID_FIELD'] },
  csr_pem_bytes: { value: 16 * KIB, unit: 'bytes', bounds: '`binding.csr` of a Kubernetes operator', errors: ['INVALID_FIELD'] },
  secret_value_bytes: { value: 64 * KIB, unit: 'bytes', bounds: '`value` of a vault secret', errors: ['SECRET_VALUE_TOO_LARGE'] },
  // The agent gateway (docs/agent-protocol.md): an agent past one of these loses its own session (GOAWAY naming the limit).
  agent_frame_bytes: { value: 256 * KIB, unit: 'bytes', bounds: 'the body of one muxado frame from an agent (a DATA frame never exceeds a stream window)' },
  agent_streams: { value: 512, unit: 'streams', bounds: 'streams open at once on one agent session, both sides\' (more are refused with RST)' },
  agent_stream_reorder: { value: 64, unit: 'streams', bounds: 'how far out of order an agent\'s new stream ids may arrive (Go\'s muxado numbers a stream when it is created and sends it from the goroutine that first writes); an id further back, or one used before, ends the session' },
  agent_streams_before_auth: { value: 4, unit: 'streams', bounds: 'streams an agent may have open before its successful Auth (the SDK opens two: heartbeat and Auth; more are refused with RST)' },
  agent_message_bytes: { value: 1024 * KIB, unit: 'bytes', bounds: 'one RPC message from an agent (Auth, Bind…)' },
  agent_message_depth: { value: 64, unit: 'levels', bounds: 'nesting of one RPC message from an agent, checked as it arrives, before parsing' },
  agent_held_bytes: {
    value: 16 * 1024 * KIB,
    unit: 'bytes',
    bounds: 'what the gateway holds for one agent connection: unsent bytes, a frame in part, each stream\'s unread data, writes waiting for window, RPC messages being read',
  },
  agent_held_bytes_before_auth: { value: 64 * KIB, unit: 'bytes', bounds: '`agent_held_bytes` until the agent\'s successful Auth (its Auth message included)' },
  agent_handshake_ms: { value: 10_000, unit: 'ms', bounds: 'from an agent\'s TCP connection to its successful Auth (TLS handshake included)' },
  agent_heartbeat_answer_ms: { value: 15_000, unit: 'ms', bounds: 'the time an agent has to answer one of the gateway\'s heartbeats' },
  agent_proxy_accept_ms: { value: 5_000, unit: 'ms', bounds: 'the time an agent has to take a proxied connection (acknowledge its first bytes); past it the client gets the offline page and the session ends' },
  agent_reconnect_hold_ms: { value: 30_000, unit: 'ms', bounds: "how long the URLs of an agent whose connection was lost (not a reserved domain or address) stay held for its credential, so only the agent reconnecting binds them again; others get 9017 meanwhile" },
  agent_command_answer_ms: { value: 30_000, unit: 'ms', bounds: 'the time an agent has to answer a Stop, Restart or Update (the command fails, the session stays)' },
  // The SSH gateway (docs/ssh-gateway.md): a client past one of these loses its own connection, with a message that names the limit.
  ssh_handshake_ms: { value: 10_000, unit: 'ms', bounds: 'from an SSH client\'s TCP connection to its bound tunnel (key exchange, authentication, the -R forward and the command)' },
  ssh_handshake_bytes: { value: 64 * KIB, unit: 'bytes', bounds: 'what an SSH client sends before its tunnel is bound' },
  ssh_auth_attempts: { value: 20, unit: 'attempts', bounds: 'authentication requests on one SSH connection (each key offered counts)' },
  ssh_command_bytes: { value: 4 * KIB, unit: 'bytes', bounds: 'the command an SSH client runs (`http --basic-auth …`)' },
  ssh_channels: { value: 512, unit: 'channels', bounds: 'channels open at once on one SSH connection, both sides\' (the client\'s session and the proxied connections; more are refused)' },
  ssh_unsent_bytes: {
    value: 1024 * KIB,
    unit: 'bytes',
    bounds: 'what the SSH gateway holds unsent for one client that does not read (past it, its proxied connections wait for the client to read)',
  },
  ssh_unbound_connections: { value: 1000, unit: 'connections', bounds: 'SSH connections at once without a bound tunnel, across all clients (more are closed at accept)' },
  // The ingress (adapters/ingress): a client past one of these gets the error page naming the limit, or loses its own connection.
  ingress_header_bytes: { value: 16 * KIB, unit: 'bytes', bounds: 'the head (request line and header fields) of one request to the ingress (longer: 431)' },
  ingress_head_ms: { value: 10_000, unit: 'ms', bounds: 'the time a client of the ingress has to send a whole request head (slower: 408)' },
  ingress_handshake_ms: { value: 10_000, unit: 'ms', bounds: 'from a connection to the TLS ingress to its completed handshake (the ClientHello, the name\'s on_tcp_connect, the TLS handshake), however the bytes trickle in (slower: closed)' },
  ingress_connections: { value: 10_000, unit: 'connections', bounds: 'connections open at once on one ingress listener (HTTP, TLS, or one TCP port; past it new ones are closed at once): 22 KiB each while a head is pending, 29 KiB while a ClientHello is, measured' },
  ingress_idle_ms: { value: 60_000, unit: 'ms', bounds: 'an ingress connection with no bytes either way, between or during requests (the connection is closed)' },
  ingress_forward_hops: { value: 10, unit: 'hops', bounds: 'forward-internal from endpoint to endpoint for one request (more: 508)' },
  ingress_document_bytes: { value: 1024 * KIB, unit: 'bytes', bounds: 'a JSON document a traffic policy fetches from this machine (an OIDC discovery document, a JWKS; longer: the action answers 5xx)' },
  ingress_document_ms: { value: 5_000, unit: 'ms', bounds: 'the time a JSON document a traffic policy fetches from this machine has to arrive (slower: the action answers 5xx)' },
  ingress_edge_policies: { value: 10_000, unit: 'policies', bounds: "edges' module sets (an edge's and a route's) the ingress keeps compiled (the least recently used is compiled again when next needed)" },
  ingress_tcp_edge_ports: { value: 1_000, unit: 'hostports', bounds: "TCP edges' hostports an ingress listens for, across every account (past it the rest are not listened on)" },
  ingress_tcp_relayed_ports: { value: 1_000, unit: 'ports', bounds: "TCP endpoints of agents on other servers of the store an ingress listens for (past it the rest answer only on their own server)" },
  ingress_backend_reads: { value: 64, unit: 'backends', bounds: 'the backends read to choose the upstream of one request to an edge (failover and weighted children; past it the request is answered as offline)' },
  policy_evaluation_steps: {
    value: 50_000,
    unit: 'steps',
    bounds: 'one evaluation of a traffic policy expression on live traffic (each node the evaluator dispatches; past it the rule answers 500)',
  },
  policy_macro_nesting: { value: 2, unit: 'levels', bounds: 'macros (`all`, `exists`, `map` …) inside one another in a traffic policy expression run on live traffic (deeper: the rule answers 500)' },
  policy_inspected_body_bytes: { value: 1024 * KIB, unit: 'bytes', bounds: 'the request body verify-webhook and jwt-validation read (longer: verification fails)' },
  policy_signature_header_bytes: { value: 8 * KIB, unit: 'bytes', bounds: 'a webhook signature header verify-webhook reads (longer: verification fails)' },
  policy_jwt_bytes: { value: 16 * KIB, unit: 'bytes', bounds: 'a JSON Web Token jwt-validation reads (longer: 401)' },
  policy_jwks_keys: { value: 100, unit: 'keys', bounds: 'the keys read from one JSON Web Key Set (the rest are ignored)' },
  policy_interpolated_bytes: { value: 64 * KIB, unit: 'bytes', bounds: 'one interpolated (`${…}`) string of a traffic policy action (longer: 500)' },
  policy_log_entries: { value: 100, unit: 'entries', bounds: 'the `log` entries one traffic policy phase records (the rest are dropped)' },
  policy_rate_limit_buckets: { value: 100_000, unit: 'buckets', bounds: 'rate-limit buckets kept in memory (the least recently used is dropped)' },
  policy_circuit_breakers: { value: 10_000, unit: 'breakers', bounds: 'circuit breakers kept in memory (the least recently used is dropped)' },
  policy_secrets_read: { value: 500, unit: 'secrets', bounds: "the secrets of an account a request reads for `secrets.get` with computed arguments (more: those calls answer 501); the vendor's default secret limit of an account" },
  policy_cached_documents: { value: 1000, unit: 'documents', bounds: 'JWKS and OIDC discovery documents cached for traffic policies (the oldest is dropped)' },
} as const satisfies Record<string, Limit>;

export type LimitName = keyof typeof LIMITS;

/** `(limit <name>)`: how every error a limit gives names it. */
export function limitNote(name: LimitName): string {
  return `(limit ${name})`;
}

/**
 * The HTTP statuses and codes a limit answers with, `400 ERR_BURROW_215, 18002` style (for
 * docs/limits.md), from `table`, every error by name (the registry's `errors()`).
 */
export function limitErrors(name: LimitName, table: Readonly<Record<string, ErrorSpec>>, prefix = 'ERR_BURROW_'): string {
  const limit: Limit = LIMITS[name];
  const specs = (limit.errors ?? []).map((error) => {
    const spec = table[error];
    if (!spec) throw new Error(`limit ${name} names error ${error}, which no table defines`);
    return spec;
  });
  if (specs.length === 0) return '—';
  const statuses = [...new Set(specs.map((spec) => spec.status))];
  return `${statuses.join('/')} ${specs.map((spec, i) => (i === 0 ? `${prefix}${spec.code}` : String(spec.code))).join(', ')}`;
}
