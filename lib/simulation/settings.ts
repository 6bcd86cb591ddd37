/**
 * What the simulated service looks like: the agent releases it knows, its regions, the name
 * servers agent-ingress domains delegate to, the one certificate authority it manages certificates
 * with, its own zone (agent ingresses must be third-party domains outside it) and the ports of its
 * reserved TCP addresses. All of it can be
 * changed with `createBurrow({ simulation: { … } })`.
 */
export interface SimulationSettings {
  /** Released agent versions, any order; updates move to the newest of the same major. */
  readonly agentVersions: readonly string[];
  /** Region ids; an agent ingress gets `tunnel.<region>.<domain>` for each. */
  readonly regions: readonly string[];
  /** NS record values for agent-ingress domains. */
  readonly ingressNameServers: readonly string[];
  /** The one accepted `certificate_management_policy.authority`. */
  readonly certificateAuthority: string;
  /** The service's own zone. */
  readonly serviceZone: string;
  /** The ports reserved TCP addresses are allocated from (inclusive), on each of a region's nine TCP hosts. */
  readonly reservedAddrPorts: { readonly first: number; readonly last: number };
}

export const DEFAULT_SIMULATION: SimulationSettings = {
  agentVersions: ['2.3.40', '2.3.41', '3.0.0', '3.1.1', '3.5.0', '3.18.4'],
  regions: ['us', 'eu', 'ap', 'au', 'sa', 'jp', 'in', 'us-cal-1'],
  ingressNameServers: ['ns1.burrow.internal.', 'ns2.burrow.internal.', 'ns3.burrow.internal.', 'ns4.burrow.internal.'],
  certificateAuthority: 'letsencrypt',
  serviceZone: 'burrow.internal',
  reservedAddrPorts: { first: 10000, last: 29999 },
};

/** Compares dotted versions numerically: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** The newest released version with the same major as `current`, if newer than it. */
export function availableUpdate(versions: readonly string[], current: string): string | undefined {
  const major = current.split('.')[0];
  const newest = versions.filter((v) => v.split('.')[0] === major).sort(compareVersions).at(-1);
  return newest !== undefined && compareVersions(newest, current) > 0 ? newest : undefined;
}
