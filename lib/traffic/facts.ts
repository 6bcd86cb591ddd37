/**
 * What the policy engine is told about traffic: plain descriptions the ingress fills from its
 * sockets, so policy evaluation runs without any (tests build them by hand). Names follow the
 * vendor's traffic policy variables (docs/traffic-policy.md lists them).
 */

/** Header fields in the order received, names as sent (`[['Host', 'a.example'], ['Accept', '*\/*']]`). */
export type HeaderList = readonly (readonly [name: string, value: string])[];

/** Flat headers (node's `rawHeaders`: name, value, name, value…) as a header list, names as sent. */
export function headerPairs(flat: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
  return pairs;
}

/** The endpoint that took the traffic. */
export interface EndpointFacts {
  /** `ep_…`. */
  readonly id: string;
  /** `https://app.example`, `tcp://1.tcp.example:20001`, `tls://app.example` (the port is implied by the scheme when absent). */
  readonly url: string;
  /** The account the endpoint belongs to: the host's lookups (IP policies, certificate authorities) read its records. */
  readonly account?: string;
}

/** Where a client address is likely to be, when the ingress has a table for it (Burrow ships no GeoIP database). */
export interface GeoFacts {
  readonly city: string;
  readonly country: string;
  readonly country_code: string;
  readonly latitude: string;
  readonly longitude: string;
  readonly radius: string;
  readonly subdivision: string;
}

/** The TLS session between the client and the endpoint, when the ingress terminated TLS. */
export interface TlsFacts {
  /** `1.2`, `1.3`. */
  readonly version: string;
  /** The IANA name, `TLS_AES_128_GCM_SHA256`. */
  readonly cipherSuite: string;
  readonly sni: string;
  readonly negotiatedAlpn?: string;
  readonly sessionResumed?: boolean;
  /** The chain the client presented, leaf first, PEM (empty or absent: none). */
  readonly clientChain?: readonly string[];
  /** The endpoint's own leaf certificate, PEM. */
  readonly serverCertificate?: string;
  /** The JA4 fingerprint of the client's ClientHello, `t13d1516h2_8daaf6152771_e5627efa2ab1`. */
  readonly ja4Fingerprint?: string;
}

/** A client connection. */
export interface ConnectionFacts {
  readonly clientIp: string;
  readonly clientPort: number;
  readonly serverIp: string;
  readonly serverPort: number;
  readonly startedAt: Date;
  /** The point of presence, `local` unless the ingress says otherwise. */
  readonly serverRegion?: string;
  readonly bytesIn?: number;
  readonly bytesOut?: number;
  readonly tls?: TlsFacts;
  readonly geo?: GeoFacts;
}

/**
 * A request body the engine may read, once, when an action needs it (verify-webhook,
 * jwt-validation from the body). The ingress buffers at most `maxBytes` and answers undefined for
 * a longer body; it forwards what it buffered upstream afterwards.
 */
export interface RequestBody {
  read(maxBytes: number): Promise<Uint8Array | undefined>;
  /**
   * The trailer fields that followed the body (HTTP/1.1 chunked trailers, HTTP/2 trailing
   * HEADERS), names as sent, once `read` has read it to its end; undefined before (or when the body
   * was longer than asked, or the host keeps none).
   */
  trailers?(): HeaderList | undefined;
}

/** An HTTP request as received. */
export interface HttpRequestFacts {
  readonly method: string;
  /** The absolute URL as received: scheme, authority (the Host header), path and query. */
  readonly url: string;
  /** `1.1`, `2`. */
  readonly version: string;
  readonly headers: HeaderList;
  /** When the request head arrived. */
  readonly receivedAt: Date;
  readonly body?: RequestBody;
}

/** An upstream HTTP response as received. */
export interface HttpResponseFacts {
  readonly status: number;
  readonly headers: HeaderList;
  /** Its trailer fields, when the host read its body to the end first (it does for a policy that reads `res.trailers`: HttpExchange.readsTrailers). */
  readonly trailers?: HeaderList;
}
