import type { Clock } from '../conventions/clock.ts';
import type { IpRule } from '../conventions/cidr.ts';
import type { Phase, PolicyError } from '../traffic/decisions.ts';
import type { ConnectionFacts, EndpointFacts, HeaderList } from '../traffic/facts.ts';
import type { CircuitBreakerStore, RateLimitStore } from './state.ts';

/**
 * What the policy engine needs from its host, injected so evaluation stays pure and deterministic:
 * time, randomness, the state of rate limits and circuit breakers, and lookups of account data
 * (IP policies, certificate authorities), documents (JWKS, OIDC discovery) and internal endpoints.
 * A lookup the host does not provide makes the actions that need it answer a 5xx naming it.
 */
/** A request of the http-request action, as the host sends it. */
export interface PolicyHttpRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: HeaderList;
  readonly body?: string;
  /** For the whole request, redirects included. */
  readonly timeoutMs: number;
  /** The longest response body taken (longer: the request fails, "response size exceeded"). */
  readonly maxBytes: number;
  readonly maxRedirects: number;
}

/** Its answer. */
export interface PolicyHttpResponse {
  readonly status: number;
  readonly headers: HeaderList;
  readonly body: Uint8Array;
  readonly timeMs: number;
  readonly resolvedIp: string;
}

export interface PolicyServices {
  readonly clock: Clock;
  /** A number in [0, 1) for `rand.*` (seeded in deterministic mode). Default: Math.random. */
  readonly random?: () => number;
  /** Default: an in-memory store of this engine. */
  readonly rateLimits?: RateLimitStore;
  /** Default: an in-memory store of this engine. */
  readonly circuitBreakers?: CircuitBreakerStore;
  /** The rules of the IP policies `ids` of the endpoint's account; throws naming an id that does not exist. */
  ipPolicyRules?(ids: readonly string[], endpoint: EndpointFacts): Promise<readonly IpRule[]>;
  /** The certificates (PEM) of the certificate authorities `ids` of the endpoint's account; throws naming an id that does not exist. */
  certificateAuthorities?(ids: readonly string[], endpoint: EndpointFacts): Promise<readonly string[]>;
  /** The value of the secret `name` in the vault named `vault` of the endpoint's account (`secrets.get`); undefined when there is none. */
  secret?(vault: string, name: string, endpoint: EndpointFacts): Promise<string | undefined>;
  /**
   * The secrets of the endpoint's account, for `secrets.get` calls whose arguments are computed
   * (read once per request): a lookup by vault and name, undefined when there is none; throws
   * naming why they cannot be read (more than the host reads at once).
   */
  accountSecrets?(endpoint: EndpointFacts): Promise<(vault: string, name: string) => string | undefined>;
  /**
   * Sends an http-request action's request for traffic of `from` (the endpoint, whose account's
   * internal endpoints it may reach, and the connection); the host decides which URLs it reaches;
   * throws naming why it failed.
   */
  httpRequest?(request: PolicyHttpRequest, from: { readonly endpoint: EndpointFacts; readonly conn: ConnectionFacts }): Promise<PolicyHttpResponse>;
  /** A JSON document by URL (a JWKS, an OIDC discovery document); the host decides which URLs it serves (local ones). */
  fetchJson?(url: string): Promise<unknown>;
  /**
   * Whether traffic of `phase` can be forwarded to the internal endpoint `url`: undefined when it
   * can, else the error to answer (unknown or offline endpoint, other protocol, too many hops).
   */
  forwardInternal?(url: string, phase: Phase): Promise<PolicyError | undefined>;
  /**
   * The origin of the service's identity host, `https://idp.<service zone>`: OAuth and OIDC send
   * users back to `<origin>/oauth2/callback`, SAML to `<origin>/saml/<id>/acs`.
   */
  readonly identityOrigin?: string;
}
