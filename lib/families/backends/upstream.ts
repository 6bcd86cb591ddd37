import { LIMITS, limitNote } from '../../limits.ts';
import type { StoreReader } from '../../store.ts';
import type { FailoverBackendRecord } from './failover.ts';
import type { HttpResponseBackendRecord } from './http-response.ts';
import { BACKEND_KINDS, type BackendPrefix } from './shared.ts';
import type { StaticBackendRecord } from './static.ts';
import type { TunnelGroupBackendRecord } from './tunnel-group.ts';
import type { WeightedBackendRecord } from './weighted.ts';

/**
 * Where a backend sends one request or connection, as the vendor's edges do it: a tunnel group to
 * one of its online tunnels (chosen at random, so the group shares the traffic), a weighted backend
 * to one child drawn in proportion to the weights, a failover backend to its first child that has
 * an online upstream, an HTTP response backend answers itself, a static backend connects to its
 * address. "Online" is the host's to say (`isOnline`: a live tunnel it can reach, here or through
 * another server sharing the store: adapters/ingress/edge-routes.ts); the draws use
 * the host's randomness (seeded in deterministic mode, so a run repeats). A weighted backend whose
 * drawn child has nothing online answers offline (the draw is not repeated). At most
 * `ingress_backend_reads` backends are read per choice; creating and updating backends refuse
 * cycles (shared.ts), and a stored chain that still reaches itself is answered as offline.
 */

/** What answers a request. */
export type Upstream =
  | { readonly kind: 'tunnel'; readonly backendId: string; readonly tunnelId: string }
  | { readonly kind: 'http_response'; readonly backendId: string; readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: string }
  | { readonly kind: 'static'; readonly backendId: string; readonly host: string; readonly port: number; readonly tls: boolean }
  /** Nothing is online to answer: `reason` says which backend had nothing and why. */
  | { readonly kind: 'offline'; readonly reason: string };

export interface UpstreamChoice {
  /** Whether the tunnel `id` of `account` is live and reachable from here (a host that must ask another server answers a promise). */
  isOnline(tunnelId: string, account: string): boolean | Promise<boolean>;
  /** A number in [0, 1). */
  random(): number;
}

const prefixOf = (id: string) => id.slice(0, id.indexOf('_')) as BackendPrefix;

/** The upstream backend `backendId` of `account` sends one request to (see the file comment). */
export function pickUpstream(reader: StoreReader, account: string, backendId: string, choice: UpstreamChoice): Promise<Upstream> {
  return new Walk(reader, account, choice).pick(backendId, []);
}

/** One choice: the backends read so far (at most ingress_backend_reads) and the path to the current one. */
class Walk {
  #reads = 0;

  constructor(
    readonly reader: StoreReader,
    readonly account: string,
    readonly choice: UpstreamChoice,
  ) {}

  async pick(id: string, path: readonly string[]): Promise<Upstream> {
    if (path.includes(id)) return { kind: 'offline', reason: `backend '${id}' reaches itself (${[...path, id].join(' → ')})` };
    if (++this.#reads > LIMITS.ingress_backend_reads.value) return { kind: 'offline', reason: `more than ${LIMITS.ingress_backend_reads.value} backends to read ${limitNote('ingress_backend_reads')}` };
    const entry = BACKEND_KINDS[prefixOf(id)];
    const record = entry ? await this.reader.get({ account: this.account, kind: entry.kind }, id) : undefined;
    if (!record) return { kind: 'offline', reason: `backend '${id}' does not exist` };
    const within = [...path, id];
    switch (prefixOf(id)) {
      case 'bkdtg': {
        // The group's tunnels are asked together (a remote one is a lookup in the store), the draw then as always.
        const ids = (record as unknown as TunnelGroupBackendRecord).tunnel_ids;
        const flags = await Promise.all(ids.map((tunnelId) => this.choice.isOnline(tunnelId, this.account)));
        const online = ids.filter((_, index) => flags[index]);
        if (online.length === 0) return { kind: 'offline', reason: `tunnel group backend '${id}' has no online tunnel with its labels` };
        return { kind: 'tunnel', backendId: id, tunnelId: online[Math.min(online.length - 1, Math.floor(this.choice.random() * online.length))]! };
      }
      case 'bkdhr': {
        const response = record as unknown as HttpResponseBackendRecord;
        return { kind: 'http_response', backendId: id, status: response.status_code, headers: response.headers, body: response.body };
      }
      case 'bkdsc': {
        const { address, tls } = record as unknown as StaticBackendRecord;
        const cut = address.lastIndexOf(':');
        return { kind: 'static', backendId: id, host: address.slice(0, cut).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(cut + 1)), tls: tls.enabled };
      }
      case 'bkdfo': {
        const reasons: string[] = [];
        for (const child of (record as unknown as FailoverBackendRecord).backends) {
          const upstream = await this.pick(child, within);
          if (upstream.kind !== 'offline') return upstream;
          reasons.push(upstream.reason);
        }
        return { kind: 'offline', reason: `failover backend '${id}' has no online backend${reasons.length ? ` (${reasons.join('; ')})` : ''}` };
      }
      case 'bkdwd': {
        const weights = Object.entries((record as unknown as WeightedBackendRecord).backends).filter(([, weight]) => weight > 0);
        const total = weights.reduce((sum, [, weight]) => sum + weight, 0);
        if (total === 0) return { kind: 'offline', reason: `weighted backend '${id}' has no backend with a weight above 0` };
        let draw = this.choice.random() * total;
        const [chosen] = weights.find(([, weight]) => (draw -= weight) < 0) ?? weights[weights.length - 1]!;
        return this.pick(chosen, within);
      }
    }
  }
}
