import { CONNECTION_PHASES } from '../../conventions/traffic-policy.ts';
import { BACKEND_MODULE, IP_RESTRICTION_MODULE, policyModule, trafficPolicyModule } from './modules.ts';
import { defineEdge } from './shared.ts';

/**
 * TCP edges (/edges/tcp): hostports (any `host:port`) plus the backend, ip_restriction, policy and
 * traffic_policy modules (its phase: on_tcp_connect). TCP traffic is never decrypted, so there is nothing like TLS termination here.
 * An ingress listens on each hostport's port on its own host (adapters/ingress/tcp-ingress.ts).
 */
export const tcpEdges = defineEdge({
  prefix: 'edgtcp',
  name: 'tcp_edges',
  label: 'TCP edge',
  kind: 'tcp_edge',
  path: '/edges/tcp',
  listKey: 'tcp_edges',
  modules: [BACKEND_MODULE, IP_RESTRICTION_MODULE, policyModule(CONNECTION_PHASES), trafficPolicyModule(CONNECTION_PHASES)],
  listened: true,
});
