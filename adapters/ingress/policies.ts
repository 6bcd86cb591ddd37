import type { BurrowCore } from '../../lib/burrow.ts';
import { createPolicyEngine, type PolicyEngine } from '../../lib/policy/engine.ts';
import type { CompiledPolicy } from '../../lib/policy/program.ts';
import { trafficPolicySource } from '../../lib/policy/sources.ts';
import type { AgentTunnel } from '../agent-gateway/index.ts';
import { LruCache } from './lru-cache.ts';
import type { IngressTarget } from './routes.ts';

/**
 * The ingress's one policy engine (its rate limits and circuit breakers are shared by every
 * listener) and the compiled policy of each target, compiled once: an agent tunnel's for as long
 * as the tunnel lives, a cloud endpoint's for as long as its traffic policy stays the same.
 */
export interface IngressPolicies {
  readonly engine: PolicyEngine;
  of(target: IngressTarget): CompiledPolicy;
}

/** Cloud endpoints' compiled policies kept at once; past it the oldest is compiled again when used. */
const CLOUD_POLICIES_KEPT = 256;

export function createIngressPolicies(burrow: BurrowCore<any>): IngressPolicies {
  const engine = createPolicyEngine({
    clock: burrow.clock,
    // The hop itself reaches only the forwarding endpoint's own account (the ingress looks it up
    // and answers 3200 when nothing serves it), so the engine lets every forward through.
    forwardInternal: async () => undefined,
  });
  const agents = new WeakMap<AgentTunnel, CompiledPolicy>();
  const clouds = new LruCache<CompiledPolicy>(CLOUD_POLICIES_KEPT);
  return {
    engine,
    of(target) {
      if (target.kind === 'agent') {
        let policy = agents.get(target.tunnel);
        if (!policy) agents.set(target.tunnel, (policy = engine.compile(target.sources)));
        return policy;
      }
      return clouds.get(`${target.endpoint.id}\u0000${target.trafficPolicy}`, () => engine.compile([trafficPolicySource(target.trafficPolicy)]));
    },
  };
}
