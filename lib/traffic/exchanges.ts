import type { PolicyLogEntry, RuleRecord } from './decisions.ts';
import type { ConnectionFacts, HeaderList } from './facts.ts';

/**
 * Traffic as the ingress reports it once an exchange is complete (the seam between
 * adapters/ingress and lib/): plain data, no sockets. The traffic journal keeps it
 * (traffic-journal.ts) and the vendor's traffic events are made from it (traffic-events.ts).
 */

/** An endpoint that took traffic. */
export interface TrafficEndpoint {
  readonly id: string;
  readonly url: string;
}

/** Who answered: the agent's service, the endpoint's policy (deny, redirect, an auth page…), or the ingress itself (no endpoint, an agent gone, a bad request). */
export type AnsweredBy = 'upstream' | 'policy' | 'ingress';

/** How a request reached its upstream (HttpTraffic's `upstream.relay`). */
export type UpstreamRelay = 'kept_stream' | 'own_stream' | 'http2';

export interface TrafficBase {
  /** The account of the endpoint that took the traffic; undefined when no endpoint did. */
  readonly account: string | undefined;
  /** The endpoint the traffic reached first, then each one forward-internal handed it to. */
  readonly endpoints: readonly TrafficEndpoint[];
  /** The client connection (undefined when the traffic was refused before it was described). */
  readonly conn: ConnectionFacts | undefined;
  /** Every rule evaluated, phase by phase and endpoint by endpoint, in the order they ran. */
  readonly rules: readonly RuleRecord[];
  /** Entries of `log` actions. */
  readonly logs: readonly PolicyLogEntry[];
  readonly answeredBy: AnsweredBy;
  /** What failed, in words: the error page's message (the ingress's or a policy's); undefined otherwise. */
  readonly message?: string;
  /** When the request (or connection) arrived, by the instance clock. */
  readonly startedAt: Date;
  readonly durationMs: number;
}

/** One completed HTTP exchange, as the ingress reports it. */
export interface HttpTraffic extends TrafficBase {
  readonly protocol: 'http';
  readonly request: {
    readonly method: string;
    /** The absolute URL as received (scheme, Host, path, query). */
    readonly url: string;
    readonly headers: HeaderList;
    /** Body bytes received from the client. */
    readonly bodyBytes: number;
    /** The body's first bytes, at most `journal_body_bytes` (lib/limits.ts), for the journal's detail. */
    readonly body?: Uint8Array;
  };
  /**
   * What the upstream answered, before the response phases changed it, and when (ms after the
   * request arrived); `relay` says how the request went: down the client connection's kept proxy
   * stream by the ingress's own HTTP/1.1 relay, down a stream of its own through node's HTTP client,
   * or as HTTP/2.
   */
  readonly upstream?: { readonly status: number; readonly headers: HeaderList; readonly afterMs: number; readonly relay: UpstreamRelay };
  /** What the client was sent; undefined when its connection ended without an answer. */
  readonly response:
    | {
        readonly status: number;
        readonly headers: HeaderList;
        /** Body bytes of the answer (the upstream's before any compression). */
        readonly bodyBytes: number;
        /** The body's first bytes (the upstream's before any compression), at most `journal_body_bytes`. */
        readonly body?: Uint8Array;
        readonly compression?: 'gzip' | 'deflate' | 'br';
        /** The upstream's answer came down a proxy stream an earlier request of the client's connection used. */
        readonly connectionReused?: boolean;
      }
    | undefined;
}

/** One closed TCP (or TLS passed through) connection, as the ingress reports it. */
export interface TcpTraffic extends TrafficBase {
  readonly protocol: 'tcp';
  readonly conn: ConnectionFacts;
  /** Bytes from the client, and to it. */
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** The server name the client asked for (a TLS connection's SNI), '' for plain TCP. */
  readonly serverName: string;
}

export type Traffic = HttpTraffic | TcpTraffic;

