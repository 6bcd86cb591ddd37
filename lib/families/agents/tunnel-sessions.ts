import * as v from 'valibot';
import type { OperationContext, Services } from '../../engine/context.ts';
import { AgentRelayFailure, type AgentCommand, type AgentCommandReply } from '../../traffic/live-agents.ts';
import { ApiError } from '../../conventions/errors.ts';
import { makeRef } from '../../conventions/refs.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ownerId, rfc3339, storedId } from '../../conventions/fields.ts';
import { defineResource, respond, scopeOf, type BaseRecord } from '../../engine/resource.ts';
import { availableUpdate } from '../../simulation/settings.ts';
import { addPair, membersOf, removePair, type PairIndex } from '../../engine/indexes.ts';
import { AGENTS_ERRORS } from './errors.ts';
import { endTunnels, madeByAgents, startTunnels, type SessionBinds, type TunnelRecord } from './tunnels.ts';

export type { SessionBinds };

/**
 * Tunnel sessions (/tunnel_sessions): read-only, online sessions only; they exist because agents
 * connect (agent-sessions.ts: the simulator, the agent gateway, the SSH gateway). The commands
 * restart, stop and update of a real agent's session are relayed to it (`relayTo` below); those of
 * a simulated agent act on the simulation:
 *
 * - stop: the agent exits; its session disappears.
 * - restart: the agent reconnects under a new session id with the same credential and binds
 *   (refused on Windows, and while an update is in progress); after an update it runs the new
 *   version.
 * - update: moves the agent to the newest release of its major version. Refused when update checks
 *   are disabled, when no newer release exists, while an update is in progress (10 seconds of the
 *   instance clock) and after an update until the agent restarts.
 */

export const UPDATE_SECONDS = 10;


export const TUNNEL_SESSION_KIND = 'tunnel_session';

export interface TunnelSessionRecord extends BaseRecord {
  readonly agent_version: string;
  readonly credential: { readonly kind: 'credential' | 'ssh_credential'; readonly id: string };
  readonly ip: string;
  readonly os: string;
  readonly region: string;
  readonly started_at: string;
  readonly transport: 'burrow/v2' | 'ssh';
  readonly binds: SessionBinds;
  readonly update_checks: boolean;
  /** The server holding the agent's live connection (lib/traffic/live-agents.ts); absent for a simulated agent. */
  readonly server?: string;
  /** The owner (user or bot) of the agent's credential; its endpoints' `principal`. */
  readonly owner_id?: string;
  /** Where the agent's tunnels forward to (tunnels.ts has the defaults). */
  readonly forwards_to?: string;
  /** Set by a successful update command until the agent restarts. */
  readonly update: { readonly version: string; readonly started_at: string } | null;
}

export const tunnelSessions = defineResource<TunnelSessionRecord>({
  name: 'tunnel_sessions',
  label: 'tunnel session',
  prefix: 'ts',
  filterable: true,
  ...madeByAgents('tunnel sessions'),
  commands: {
    restart: { summary: 'Restart the agent behind a tunnel session', relay: relayTo('restart'), run: restartAgent },
    stop: { summary: 'Stop the agent behind a tunnel session', relay: relayTo('stop'), run: async (ctx, record) => void (await endSession(ctx, record)) },
    update: { summary: 'Update the agent behind a tunnel session', relay: relayTo('update'), run: updateAgent },
  },
  storedFields: {
    agent_version: v.string(),
    credential: v.union([
      v.strictObject({ kind: v.literal('credential'), id: storedId('cr') }),
      v.strictObject({ kind: v.literal('ssh_credential'), id: storedId('sshcr') }),
    ]),
    ip: v.string(),
    os: v.string(),
    region: v.string(),
    started_at: rfc3339,
    transport: v.picklist(['burrow/v2', 'ssh']),
    binds: v.strictObject({ domains: v.array(v.string()), addresses: v.array(v.string()), labels: v.record(v.string(), v.string()) }),
    update_checks: v.boolean(),
    owner_id: v.optional(ownerId),
    forwards_to: v.optional(v.string()),
    server: v.optional(v.pipe(v.string(), v.regex(/^srv_[0-9a-f]{24}$/, 'must be a server id (srv_…)'))),
    update: v.nullable(v.strictObject({ version: v.string(), started_at: rfc3339 })),
  },
  toResponse: (ctx, record, base) => ({
    id: record.id,
    uri: base.uri,
    agent_version: record.agent_version,
    credential: makeRef(ctx.baseUrl, record.credential.kind === 'credential' ? '/credentials' : '/ssh_credentials', record.credential.id),
    ip: record.ip,
    metadata: record.metadata,
    os: record.os,
    region: record.region,
    started_at: record.started_at,
    transport: record.transport,
  }),
});

/** What a new session copies from its agent: everything but id and times. */
export type SessionTemplate = Pick<TunnelSessionRecord, 'metadata' | 'agent_version' | 'credential' | 'ip' | 'os' | 'region' | 'transport' | 'binds' | 'update_checks' | 'owner_id' | 'forwards_to' | 'server'>;

/** Stores a new online session for an agent and emits agent_session_start.v0. */
export async function startSession(ctx: OperationContext, agent: SessionTemplate): Promise<TunnelSessionRecord> {
  const now = formatTime(ctx.clock.now());
  const record: TunnelSessionRecord = {
    metadata: agent.metadata,
    agent_version: agent.agent_version,
    credential: agent.credential,
    ip: agent.ip,
    os: agent.os,
    region: agent.region,
    transport: agent.transport,
    binds: agent.binds,
    update_checks: agent.update_checks,
    ...(agent.owner_id === undefined ? {} : { owner_id: agent.owner_id }),
    ...(agent.forwards_to === undefined ? {} : { forwards_to: agent.forwards_to }),
    ...(agent.server === undefined ? {} : { server: agent.server }),
    id: ctx.ids.id('ts'),
    created_at: now,
    started_at: now,
    description: '',
    update: null,
  };
  await ctx.tx.put(scopeOf(ctx, TUNNEL_SESSION_KIND), record);
  await addPair(ctx.tx, sessionsOfCredential(ctx), record.credential.id, record.id);
  ctx.emit('agent_session_start.v0', respond(ctx, tunnelSessions, record));
  await startTunnels(ctx, { ...record, owner_id: record.owner_id ?? ctx.principal.ownerId });
  return record;
}

/** Pair index (credential id, session id): the online sessions of each credential. */
const sessionsOfCredential = (ctx: OperationContext): PairIndex => ({ account: ctx.account, kind: '_credential_session' });

/** Pair index (server id, session id) in each account: the live sessions a server holds. */
export const sessionsOfServer = (account: string): PairIndex => ({ account, kind: '_server_session' });

/**
 * Removes a session (its agent went offline) and emits agent_session_stop.v0. A live session's
 * agent is disconnected once that commits, wherever it is held (a no-op when it went already).
 */
export async function endSession(ctx: OperationContext, record: TunnelSessionRecord): Promise<TunnelRecord[]> {
  await ctx.tx.delete(scopeOf(ctx, TUNNEL_SESSION_KIND), record.id);
  await removePair(ctx.tx, sessionsOfCredential(ctx), record.credential.id, record.id);
  ctx.emit('agent_session_stop.v0', respond(ctx, tunnelSessions, record));
  const ended = await endTunnels(ctx, record.id);
  if (record.server !== undefined) {
    const server = record.server;
    await removePair(ctx.tx, sessionsOfServer(ctx.account), server, record.id);
    const live = ctx.services.liveAgents;
    ctx.afterCommit(() => void live.close(server, record.id, `tunnel session ${record.id} has ended`).catch(() => undefined));
  }
  return ended;
}

/** Ends the sessions of a credential that is being deleted: its agents can no longer stay online. */
export async function endSessionsOfCredential(ctx: OperationContext, credentialId: string): Promise<void> {
  for (const id of await membersOf(ctx.tx, sessionsOfCredential(ctx), credentialId)) {
    const session = await ctx.tx.get(scopeOf(ctx, TUNNEL_SESSION_KIND), id);
    if (session) await endSession(ctx, session as unknown as TunnelSessionRecord);
  }
}

const UNSUPPORTED = { stop: AGENTS_ERRORS.AGENT_STOP_UNSUPPORTED, restart: AGENTS_ERRORS.AGENT_RESTART_UNSUPPORTED, update: AGENTS_ERRORS.AGENT_UPDATE_UNSUPPORTED } as const;
const FAILED = { stop: AGENTS_ERRORS.AGENT_STOP_FAILED, restart: AGENTS_ERRORS.AGENT_RESTART_FAILED, update: AGENTS_ERRORS.AGENT_UPDATE_FAILED } as const;

/**
 * A command to the live agent of a session (one that names its server): relayed to it wherever it
 * is held, answered from its reply — 204, or the vendor's error when it has no handler for the
 * command (804–806) or its handler failed (807–809), or 810 when the relay failed. Simulated
 * sessions are left to `run`. An update asks for the newest release (`Version` empty, chosen).
 */
function relayTo(kind: AgentCommand) {
  return async (services: Services, record: TunnelSessionRecord): Promise<boolean> => {
    if (record.server === undefined) return false;
    let reply: AgentCommandReply;
    try {
      reply = await services.liveAgents.command(record.server, record.id, kind, kind === 'update' ? { version: '', permitMajorVersion: false } : undefined);
    } catch (error) {
      if (!(error instanceof AgentRelayFailure)) throw error;
      throw new ApiError(AGENTS_ERRORS.AGENT_RELAY_FAILED, `the ${kind} command could not be relayed to the agent of tunnel session '${record.id}' (it is probably shutting down or reconnecting): ${error.message}`);
    }
    if (reply.outcome === 'unsupported') throw new ApiError(UNSUPPORTED[kind], `the agent of tunnel session '${record.id}' does not support remote ${kind}: ${reply.message}`);
    if (reply.outcome === 'failed') throw new ApiError(FAILED[kind], `the agent of tunnel session '${record.id}' failed to ${kind}: ${reply.message}`);
    return true;
  };
}

type UpdateState = 'none' | 'in_progress' | 'updated';

function updateState(ctx: OperationContext, record: TunnelSessionRecord): UpdateState {
  if (!record.update) return 'none';
  const done = new Date(record.update.started_at).getTime() + UPDATE_SECONDS * 1000;
  return ctx.clock.now().getTime() < done ? 'in_progress' : 'updated';
}

/** Restarts the agent: it reconnects under a new session id, on the new version after an update. */
async function restartAgent(ctx: OperationContext, record: TunnelSessionRecord): Promise<void> {
  if (record.os.toLowerCase() === 'windows') {
    throw new ApiError(AGENTS_ERRORS.AGENT_RESTART_UNSUPPORTED, `the agent of tunnel session '${record.id}' runs on Windows, where remote restart is not supported`);
  }
  const state = updateState(ctx, record);
  if (state === 'in_progress') {
    throw new ApiError(AGENTS_ERRORS.AGENT_UPDATING, `the agent of tunnel session '${record.id}' is still updating to ${record.update!.version}; restart it at least ${UPDATE_SECONDS} seconds after the update began`);
  }
  await endSession(ctx, record);
  await startSession(ctx, {
    ...record,
    agent_version: state === 'updated' ? record.update!.version : record.agent_version,
  });
}

/** Starts an update to the newest release of the agent's major version. */
async function updateAgent(ctx: OperationContext, record: TunnelSessionRecord): Promise<void> {
  if (!record.update_checks) {
    throw new ApiError(AGENTS_ERRORS.AGENT_UPDATE_UNSUPPORTED, `the agent of tunnel session '${record.id}' has update checks disabled in its configuration`);
  }
  const state = updateState(ctx, record);
  if (state === 'in_progress') throw new ApiError(AGENTS_ERRORS.AGENT_UPDATING, `the agent of tunnel session '${record.id}' is already updating to ${record.update!.version}`);
  if (state === 'updated') {
    throw new ApiError(AGENTS_ERRORS.AGENT_UPDATED_NOT_RESTARTED, `the agent of tunnel session '${record.id}' has updated to ${record.update!.version}; restart it to run the new version before updating again`);
  }
  const version = availableUpdate(ctx.services.simulation.agentVersions, record.agent_version);
  if (!version) throw new ApiError(AGENTS_ERRORS.AGENT_NO_UPDATE, `no update is available for agent version ${record.agent_version} (updates stay within major version ${record.agent_version.split('.')[0]})`);
  await ctx.tx.put(scopeOf(ctx, TUNNEL_SESSION_KIND), { ...record, update: { version, started_at: ctx.clock.now().toISOString() } });
}
