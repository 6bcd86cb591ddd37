import type { OperationContext, Reaction } from '../../engine/context.ts';
import { defineFamily } from '../../engine/family.ts';
import { AGENTS_ERRORS } from './errors.ts';
import type { StoredRecord } from '../../store.ts';
import { SIMULATOR_CONTROL_OPERATIONS } from './simulator.ts';
import { endSessionsOfCredential, tunnelSessions } from './tunnel-sessions.ts';
import { relinkBackend, tunnels } from './tunnels.ts';

export { connectAgent, disconnectAgent, type AgentConnect } from './simulator.ts';
/** The one session path every transport takes (agent-sessions.ts). */
export * from './agent-sessions.ts';

const endSessions = (kind: string): Reaction => ({
  kind,
  on: ['deleted'],
  run: (ctx: OperationContext, before: StoredRecord | undefined) => endSessionsOfCredential(ctx, before!.id),
});

const tunnelIds = (record: StoredRecord | undefined): readonly string[] => (record?.tunnel_ids as readonly string[] | undefined) ?? [];

/**
 * Agents: their tunnel sessions and tunnels, and the simulator that connects them. Deleting a
 * credential (tunnel or SSH) ends the sessions it started; a tunnel group backend's matches are
 * mirrored in each tunnel's `backends`.
 */
export const agentsFamily = defineFamily({
  name: 'agents',
  errors: AGENTS_ERRORS,
  kinds: { tunnel_sessions: tunnelSessions, tunnels },
  controlOperations: SIMULATOR_CONTROL_OPERATIONS,
  reactions: [
    endSessions('credential'),
    endSessions('ssh_credential'),
    {
      kind: 'tunnel_group_backend',
      on: ['created', 'updated', 'deleted'],
      run: (ctx, before, after) => relinkBackend(ctx, (after ?? before)!.id, tunnelIds(before), tunnelIds(after)),
    },
  ],
  examples: {
    tunnel_sessions: { control: 'control.agents.connect', body: async (seed) => ({ token: (await seed.record('credentials')).token }) },
    tunnels: {
      control: 'control.agents.connect',
      body: async (seed) => ({ token: (await seed.record('credentials')).token, binds: { domains: [seed.unique('tunnel') + '.example.com'] } }),
      pick: async (_answer, seed) => (await seed.list('tunnels'))[0]!.id,
    },
  },
});

export { AGENTS_ERRORS } from './errors.ts';
