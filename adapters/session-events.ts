import { closeAgentSession, type BurrowCore } from '../lib/index.ts';
import type { RemoteAddress } from './addresses.ts';

/**
 * An agent session as the gateways report it to the server's log (bin/server-log.ts): opened, with
 * who connected, and closed, with why. The agent gateway and the SSH gateway report alike.
 */
export type AgentSessionEvent =
  | {
      readonly event: 'opened';
      readonly id: string;
      /** `agent`: the vendor's agent protocol; `ssh`: an SSH client's `ssh -R`. */
      readonly transport: 'agent' | 'ssh';
      readonly account: string;
      /** The agent's version (`3.19.0`), or the SSH client's software (`OpenSSH_9.2p1`). */
      readonly agentVersion: string;
      readonly client: RemoteAddress;
    }
  | {
      readonly event: 'closed';
      readonly id: string;
      readonly transport: 'agent' | 'ssh';
      readonly account: string;
      /** The gateway's kind of end (`disconnected`, `heartbeat-timeout`, `closed-by-server`…). */
      readonly reason: string;
      readonly message: string;
    };

/** Where a gateway reports its sessions (default: nowhere). */
export type AgentSessionLog = (event: AgentSessionEvent) => void;

/**
 * A gateway's session ended (`reason`): logged, released from the live agents, and its record
 * closed (its tunnels and endpoints go; `closing` as closeAgentSession takes it: URLs held for an
 * agent that lost its connection).
 */
export async function endLiveSession(
  burrow: BurrowCore<any>,
  transport: 'agent' | 'ssh',
  session: { readonly id: string; readonly context: { readonly account: string; release(): void } },
  reason: { readonly kind: string; readonly message: string },
  log: AgentSessionLog | undefined,
  closing?: Parameters<typeof closeAgentSession>[3],
): Promise<void> {
  log?.({ event: 'closed', id: session.id, transport, account: session.context.account, reason: reason.kind, message: reason.message });
  session.context.release();
  await closeAgentSession(burrow, session.context.account, session.id, closing);
}
