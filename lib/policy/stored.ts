import { CONNECTION_PHASES, TRAFFIC_POLICY_PHASES, type TrafficPolicyChecker, type TrafficPolicyHolder, type TrafficPolicyIssue, type TrafficPolicyPhase } from '../conventions/traffic-policy.ts';
import { ipPolicyExists } from '../families/ip-policies/index.ts';
import { INSTANCE_SCOPE, readAll, type StoreReader } from '../store.ts';

/**
 * The traffic policies a store already holds, checked again with the write-time checker: a state
 * written before the checker existed (or before one of its rules) may hold a policy the vendor
 * would have refused when it was saved. The vendor checks on save and documents nothing about
 * policies saved before a rule; Burrow keeps such a policy and serves it as stored (the parts that
 * cannot run answer a 5xx naming the problem, as the engine does for any such part), never
 * rewrites or disables it, and says so at load: `burrow serve` prints one warning per policy
 * (docs/traffic-policy.md, "Checked on write"). The next write of that policy must pass.
 *
 * Read: cloud endpoints' `traffic_policy`, and the `traffic_policy` and `policy` modules of TCP
 * and TLS edges and of HTTPS edge routes. Agents' policies are not stored: an agent sends its
 * policy again on every bind, where it is checked.
 */

/** A stored policy that no longer passes the check: whose, which, and the checker's first problem. */
export interface StoredPolicyIssue {
  readonly account: string;
  /** `ep_…`, `edgtcp_…`, `edghtsrt_…`. */
  readonly holder: string;
  /** `traffic_policy`, `traffic_policy.value`, `policy`. */
  readonly field: string;
  readonly issue: TrafficPolicyIssue;
}

type Modules = Readonly<Record<string, unknown>>;

interface PolicyModule {
  readonly enabled?: boolean;
  readonly value?: string;
  readonly inbound?: unknown;
  readonly outbound?: unknown;
}

/** The stored policies of the store's accounts that the checker refuses, in account and holder order. */
export async function storedPolicyIssues(reader: StoreReader, checker: TrafficPolicyChecker): Promise<StoredPolicyIssue[]> {
  const out: StoredPolicyIssue[] = [];
  const accounts = await readAll(reader, { account: INSTANCE_SCOPE, kind: 'account' });
  for (const { id: account } of accounts) {
    const holder = (phases: readonly TrafficPolicyPhase[], cloudEndpoint = false): TrafficPolicyHolder => ({
      phases,
      ...(cloudEndpoint ? { cloudEndpoint } : {}),
      ipPolicyExists: (id) => ipPolicyExists(reader, account, id),
    });
    const report = (id: string, field: string, issue: TrafficPolicyIssue | undefined) => void (issue && out.push({ account, holder: id, field, issue }));
    for (const endpoint of await readAll(reader, { account, kind: 'endpoint' })) {
      const { type, url, traffic_policy: text } = endpoint as { type?: string; url?: string; traffic_policy?: string };
      if (type !== 'cloud' || typeof text !== 'string' || text.trim() === '') continue;
      const connectionOnly = /^(tcp|tls):/.test(url ?? '');
      report(endpoint.id, 'traffic_policy', await checker.document(text, holder(connectionOnly ? CONNECTION_PHASES : TRAFFIC_POLICY_PHASES, true)));
    }
    /** The policy modules of an edge or route whose traffic has `phases`. */
    const modules = async (id: string, held: Modules, phases: readonly TrafficPolicyPhase[]) => {
      const document = held.traffic_policy as PolicyModule | null | undefined;
      if (document?.enabled !== false && typeof document?.value === 'string') report(id, 'traffic_policy.value', await checker.document(document.value, holder(phases)));
      const legacy = held.policy as PolicyModule | null | undefined;
      if (!legacy || legacy.enabled === false) return;
      const [inbound, outbound] = [legacy.inbound ?? [], legacy.outbound ?? []] as const;
      const connectionOnly = !phases.includes('on_http_request');
      const rules = connectionOnly ? { on_tcp_connect: inbound } : { on_http_request: inbound, on_http_response: outbound };
      const labels = connectionOnly ? { on_tcp_connect: 'inbound' } : { on_http_request: 'inbound', on_http_response: 'outbound' };
      report(id, 'policy', await checker.rules({ rules: rules as never, labels }, holder(phases)));
    };
    for (const kind of ['tcp_edge', 'tls_edge']) {
      for (const edge of await readAll(reader, { account, kind })) await modules(edge.id, edge as Modules, CONNECTION_PHASES);
    }
    for (const edge of await readAll(reader, { account, kind: 'https_edge' })) {
      for (const route of ((edge as Modules).routes as readonly (Modules & { id: string })[] | undefined) ?? []) await modules(route.id, route, TRAFFIC_POLICY_PHASES);
    }
  }
  return out;
}
