import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { CONNECTION_PHASES } from '../../conventions/traffic-policy.ts';
import { BACKEND_MODULE, IP_RESTRICTION_MODULE, MUTUAL_TLS_MODULE, policyModule, TLS_TERMINATION_MODULE, trafficPolicyModule, type StoredModule } from './modules.ts';
import { defineEdge, type EdgeRecord } from './shared.ts';
import { EDGES_ERRORS } from './errors.ts';

/**
 * TLS edges (/edges/tls): hostports plus the backend, ip_restriction, mutual_tls, tls_termination
 * policy and traffic_policy modules (its phase: on_tcp_connect, as TLS traffic is not HTTP).
 *
 * With enabled TLS termination at `upstream` the edge passes the TLS stream through undecrypted,
 * so modules that need the decrypted traffic (mutual_tls, policy) cannot apply. Such combinations
 * are refused whichever side is set last (7002); disabled modules do not count.
 */

const NEEDS_DECRYPTION = ['mutual_tls', 'policy'] as const;

function refuseUndecryptedModules(record: EdgeRecord, changed: readonly string[]): void {
  const termination = record.tls_termination as StoredModule | null;
  if (!termination?.enabled || termination.terminate_at !== 'upstream') return;
  const clash = NEEDS_DECRYPTION.find((name) => (record[name] as StoredModule | null)?.enabled);
  if (!clash) return;
  const message = changed.includes(clash)
    ? `${clash}: needs the decrypted traffic, but this TLS edge terminates TLS upstream (tls_termination.terminate_at); terminate at the edge or leave ${clash} out`
    : `tls_termination: terminate_at upstream passes TLS through undecrypted, which the edge's ${clash} module needs decrypted; delete ${clash} first or terminate at the edge`;
  throw new ApiError(EDGES_ERRORS.EDGE_REQUEST_INVALID, message, { module: clash });
}

export const tlsEdges = defineEdge({
  prefix: 'edgtls',
  name: 'tls_edges',
  label: 'TLS edge',
  kind: 'tls_edge',
  path: '/edges/tls',
  listKey: 'tls_edges',
  modules: [BACKEND_MODULE, IP_RESTRICTION_MODULE, MUTUAL_TLS_MODULE, TLS_TERMINATION_MODULE, policyModule(CONNECTION_PHASES), trafficPolicyModule(CONNECTION_PHASES)],
  checkModules: refuseUndecryptedModules,
});
