import { defineFamily } from '../../engine/family.ts';
import { BACKENDS_ERRORS } from './errors.ts';
import { failoverBackends } from './failover.ts';
import { httpResponseBackends } from './http-response.ts';
import { staticBackends } from './static.ts';
import { tunnelGroupBackends } from './tunnel-group.ts';
import { weightedBackends } from './weighted.ts';

/** Backends: where edges send traffic (weighted, failover, HTTP response, tunnel group, static address). */
export const backendsFamily = defineFamily({
  name: 'backends',
  errors: BACKENDS_ERRORS,
  kinds: {
    weighted_backends: weightedBackends,
    failover_backends: failoverBackends,
    http_response_backends: httpResponseBackends,
    tunnel_group_backends: tunnelGroupBackends,
    static_backends: staticBackends,
  },
  examples: {
    weighted_backends: { body: () => ({}) },
    failover_backends: { body: () => ({}) },
    http_response_backends: { body: () => ({}) },
    tunnel_group_backends: { body: () => ({ labels: { app: 'web' } }) },
    static_backends: { body: () => ({ address: 'example.com:443' }) },
  },
});

export { changeOnlineTunnels, type Rematched } from './tunnel-group.ts';
export { backendRef, httpHeaderMap, parseHostPort, requireBackend } from './shared.ts';
export { pickUpstream, type Upstream, type UpstreamChoice } from './upstream.ts';

export { BACKENDS_ERRORS } from './errors.ts';
