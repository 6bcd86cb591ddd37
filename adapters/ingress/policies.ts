import type { BurrowCore } from '../../lib/burrow.ts';
import { accountSecretsOf, certificateAuthorityPems, rulesOfPolicies, secretValueNamed } from '../../lib/index.ts';
import { createPolicyEngine, type PolicyEngine } from '../../lib/policy/engine.ts';
import type { CompiledPolicy } from '../../lib/policy/program.ts';
import { trafficPolicySource } from '../../lib/policy/sources.ts';
import type { InternalRequests } from './internal-requests.ts';
import { fetchLocalJson, policyHttpRequest } from './local-documents.ts';
import { LruCache } from './lru-cache.ts';
import type { IngressTarget } from './routes.ts';

/**
 * The ingress's one policy engine (its rate limits and circuit breakers are shared by every
 * listener) and the compiled policy of each target, compiled once: an agent tunnel's for as long
 * as the tunnel lives, a cloud endpoint's for as long as its traffic policy stays the same, an
 * edge's for as long as its modules do (edge-routes.ts keeps their key). The policies' lookups
 * read the records of the endpoint's account (IP policies, certificate authorities), and documents
 * only from this machine (local-documents.ts).
 */
export interface IngressPolicies {
  readonly engine: PolicyEngine;
  of(target: IngressTarget): CompiledPolicy;
}

/** Cloud endpoints' compiled policies kept at once; past it the oldest is compiled again when used. */
const CLOUD_POLICIES_KEPT = 256;

export function createIngressPolicies(burrow: BurrowCore<any>, internal: InternalRequests): IngressPolicies {
  const engine = createPolicyEngine({
    clock: burrow.clock,
    // The hop itself reaches only the forwarding endpoint's own account (the ingress looks it up
    // and answers 3200 when nothing serves it), so the engine lets every forward through.
    forwardInternal: async () => undefined,
    ipPolicyRules: (ids, endpoint) => rulesOfPolicies(burrow.reader, endpoint.account ?? '', ids),
    certificateAuthorities: (ids, endpoint) => certificateAuthorityPems(burrow.reader, endpoint.account ?? '', ids),
    // OAuth, OIDC and SAML send users back to the simulated service's identity host.
    identityOrigin: `https://idp.${burrow.services.simulation.serviceZone}`,
    fetchJson: fetchLocalJson,
    // Internal endpoints of the calling endpoint's account through the ingress's own routing.
    httpRequest: (request, from) => policyHttpRequest(request, from, internal),
    secret: (vault, name, endpoint) => secretValueNamed(burrow, endpoint.account ?? '', vault, name),
    accountSecrets: (endpoint) => accountSecretsOf(burrow, endpoint.account ?? ''),
  });
  /** Agents' policies by their tunnel, edges' by their key. */
  const live = new WeakMap<object, CompiledPolicy>();
  const clouds = new LruCache<CompiledPolicy>(CLOUD_POLICIES_KEPT);
  return {
    engine,
    of(target) {
      if (target.kind !== 'cloud') {
        const key = target.kind === 'agent' ? target.tunnel : target.policyKey;
        let policy = live.get(key);
        if (!policy) live.set(key, (policy = engine.compile(target.sources)));
        return policy;
      }
      return clouds.get(`${target.endpoint.id}\u0000${target.trafficPolicy}`, () => engine.compile([trafficPolicySource(target.trafficPolicy)]));
    },
  };
}
