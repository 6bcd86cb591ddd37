import type { TrafficPolicyPhase } from '../conventions/traffic-policy.ts';
import type { HeaderList, TlsFacts } from './facts.ts';

/**
 * What the policy engine decides: plain data the ingress applies (it owns the sockets and the
 * error pages). Every phase also reports the rules it evaluated and the actions that ran, for the
 * ingress to journal.
 */

export type Phase = TrafficPolicyPhase;

/** A complete response the ingress sends as is. */
export interface PolicyResponse {
  readonly status: number;
  readonly headers: HeaderList;
  readonly body: string;
}

/**
 * An error the ingress answers with its error page: the status, the vendor's error code where it
 * documents one (`ERR_NGROK_3205`), a message naming what failed, and headers the answer must
 * carry (`WWW-Authenticate`, `Retry-After`).
 */
export interface PolicyError {
  readonly status: number;
  readonly code?: string;
  readonly message: string;
  readonly headers: HeaderList;
}

/** How a phase ended early, when it did. */
export type PolicyTerminal =
  /** Answer with this response (custom-response, redirect, deny). */
  | { readonly kind: 'respond'; readonly response: PolicyResponse }
  /** Answer with an error page (restrict-ips, basic-auth, rate-limit, unsupported actions …). */
  | { readonly kind: 'error'; readonly error: PolicyError }
  /** Close the connection without an answer (close-connection, deny and restrict-ips on TCP). */
  | { readonly kind: 'close'; readonly reason: string }
  /** Hand the traffic to this internal endpoint (forward-internal); its own policy runs there. */
  | { readonly kind: 'forward'; readonly url: string };

/** One action as it ran: `ended` when it ended the phase; `note` says what it did, for the journal. */
export interface ActionRecord {
  readonly type: string;
  readonly ended: boolean;
  readonly note?: string;
}

/**
 * One rule as evaluated: where it came from (`traffic_policy`, `module:ip_restriction`,
 * `agent:basic_auth` …), its position in its phase, whether its expressions held, the actions it
 * ran and the error that stopped it, if any. Rules after the one that ended a phase are absent.
 */
export interface RuleRecord {
  readonly phase: Phase;
  readonly index: number;
  readonly source: string;
  readonly name?: string;
  readonly matched: boolean;
  readonly actions: readonly ActionRecord[];
  readonly error?: string;
}

/** What `decidingRule` reads of a rule, as the traffic record and the journal entry both hold it. */
interface DecidableRule {
  readonly actions: readonly { readonly type: string; readonly ended: boolean }[];
  readonly error?: string | null;
}

/**
 * The rule that decided an exchange, and how: the last rule whose action ended it (`action`: that
 * action's type), else the first rule that failed (`action`: null); undefined when no rule did
 * (the upstream or the ingress answered). The server's log line and the journal's `decided_by`.
 */
export function decidingRule<R extends DecidableRule>(rules: readonly R[]): { readonly rule: R; readonly action: string | null } | undefined {
  for (let i = rules.length - 1; i >= 0; i--) {
    const ended = rules[i]!.actions.find((action) => action.ended);
    if (ended) return { rule: rules[i]!, action: ended.type };
  }
  const failed = rules.find((rule) => rule.error !== undefined && rule.error !== null);
  return failed && { rule: failed, action: null };
}

/** A `log` action's entry, for the traffic event (`traffic_policy.logs`). */
export interface PolicyLogEntry {
  readonly phase: Phase;
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** TLS termination decided at connect time (terminate-tls, the tls_termination and mutual_tls modules). */
export interface TlsTermination {
  readonly minVersion: '1.2' | '1.3';
  readonly maxVersion: '1.2' | '1.3';
  /** A certificate and key of the policy's own, PEM; absent: the ingress's certificate for the name. */
  readonly serverCertificate?: string;
  readonly serverPrivateKey?: string;
  /** Client certificates: the trusted authorities (PEM) and how strictly to ask; absent: none asked. */
  readonly mutualTls?: {
    readonly certificateAuthorities: readonly string[];
    readonly strategy: 'require-and-verify' | 'require-any' | 'request';
  };
}

/**
 * Terminates TLS on the connection being decided, as `termination` asks (terminate-tls runs it in
 * on_tcp_connect, so later actions and rules read the session: `actions.ngrok.terminate_tls.*`,
 * `conn.tls.*`): the session's facts, or why the handshake failed (the connection is then closed).
 */
export type TlsHandshake = (termination: TlsTermination) => Promise<{ readonly tls: TlsFacts } | { readonly failed: string }>;

export interface PhaseOutcome {
  readonly terminal?: PolicyTerminal;
  readonly logs: readonly PolicyLogEntry[];
  readonly rules: readonly RuleRecord[];
}

/** The `on_tcp_connect` decision. `tls` set: terminate TLS so; absent: pass TLS through (or plain TCP). */
export interface ConnectOutcome extends PhaseOutcome {
  readonly tls?: TlsTermination;
}

/** The request the ingress sends upstream, after url-rewrite and header actions. */
export interface OutgoingRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: HeaderList;
  /** The body to send instead of the client's (request-body-find-replace); absent: the client's as it came. */
  readonly body?: Uint8Array;
}

/** A message of a Server-Sent Events stream, as on_event_stream_message sees and changes it (sse-find-replace: `data`, `retry`). */
export interface EventStreamMessage {
  data: string;
  retry: string;
  readonly event: string;
  readonly id: string;
}

/** The on_event_stream_message decision for one message: the message as the phase left it, or a terminal (the stream is cut). */
export interface EventMessageOutcome extends PhaseOutcome {
  readonly message: EventStreamMessage;
}

/** A replacement response-body-find-replace asks of the response body: an RE2 pattern and a Go replacement template (`$1`). */
export interface BodyReplacement {
  readonly from: string;
  readonly to: string;
}

/** The `on_http_request` decision. */
export interface HttpRequestOutcome extends PhaseOutcome {
  readonly request: OutgoingRequest;
}

/** The response the ingress sends to the client, after header actions. */
export interface OutgoingResponse {
  readonly status: number;
  readonly headers: HeaderList;
}

/** The `on_http_response` decision; `compression`: encode the body so (and drop Content-Length, add Vary). */
export interface HttpResponseOutcome extends PhaseOutcome {
  readonly response: OutgoingResponse;
  /** Replace these in the response body, in order, buffering it (lib/policy/actions/body-find-replace.ts `replaceBody`). */
  readonly bodyReplacements?: readonly BodyReplacement[];
  readonly compression?: 'gzip' | 'deflate' | 'br';
}
