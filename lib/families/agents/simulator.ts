import * as v from 'valibot';
import { operatorIn, type ControlOperationSpec, type Instance } from '../../engine/context.ts';
import { fail } from '../../conventions/errors.ts';
import { metadata, parseInput } from '../../conventions/fields.ts';
import { isIpAddress } from '../../conventions/cidr.ts';
import { endSession, TUNNEL_SESSION_KIND, type TunnelSessionRecord } from './tunnel-sessions.ts';
import { compareVersions } from '../../simulation/settings.ts';
import { openAgentSession, type AgentProof } from './agent-sessions.ts';

/**
 * The agent simulator: tunnel sessions exist because agents connect. A test connects an agent
 * with a tunnel credential's token (transport `burrow/v2`) or an SSH public key registered as an
 * SSH credential (transport `ssh`), plus the binds it wants. Every bind must pass the credential's
 * ACL, and an enforced `agent` IP restriction must allow the agent's address; otherwise the
 * connection is refused with an error naming the bind, the rules or the restriction. Connecting
 * and disconnecting emit agent_session_start.v0 / agent_session_stop.v0. Deleting a credential
 * disconnects its agents. A credential of an inactive bot user cannot connect (403, vendor 636).
 */

export const AgentConnectInput = v.strictObject({
  /** Needed with `ssh_public_key` (SSH keys are registered per account); checked with `token`. */
  account_id: v.optional(v.string()),
  token: v.optional(v.string()),
  ssh_public_key: v.optional(v.string()),
  binds: v.optional(
    v.strictObject({
      domains: v.optional(v.array(v.string())),
      addresses: v.optional(v.array(v.string())),
      labels: v.optional(v.record(v.string(), v.string())),
    }),
  ),
  os: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  agent_version: v.optional(v.pipe(v.string(), v.regex(/^\d+\.\d+\.\d+$/, 'must be a version such as 3.5.0'))),
  region: v.optional(v.string()),
  /** The agent's public address as the service would see it (default 127.0.0.1). */
  ip: v.optional(v.pipe(v.string(), v.check(isIpAddress, (issue) => `must be an IPv4 or IPv6 address without a zone id (got ${JSON.stringify(issue.input)})`))),
  metadata: v.optional(metadata),
  /** Where the agent's tunnels forward traffic (`forwards_to` of its tunnels, `upstream_url` of its endpoints). */
  forwards_to: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(1024, 'must be at most 1024 characters'))),
  update_checks: v.optional(v.boolean()),
});

export type AgentConnect = v.InferInput<typeof AgentConnectInput>;

/**
 * Connects a simulated agent; answers its tunnel session as the API shows it, plus `account_id`.
 * The checks are the session path's (agent-sessions.ts), as for real agents.
 */
export async function connectAgent(instance: Instance, request: AgentConnect, baseUrl?: string): Promise<Record<string, unknown>> {
  const input = parseInput(AgentConnectInput, request ?? {});
  const settings = instance.services.simulation;
  const region = input.region ?? settings.regions[0] ?? 'us';
  if (!settings.regions.includes(region)) fail('INVALID_FIELD', `region: must be one of ${settings.regions.join(', ')} (got ${JSON.stringify(region)})`);
  if ((input.token === undefined) === (input.ssh_public_key === undefined)) fail('INVALID_FIELD', 'body: give exactly one of token (a tunnel credential) or ssh_public_key');
  if (input.ssh_public_key !== undefined && input.account_id === undefined) fail('INVALID_FIELD', 'account_id: required with ssh_public_key (SSH keys are registered per account)');
  const proof: AgentProof =
    input.token !== undefined ? { token: input.token, ...(input.account_id === undefined ? {} : { account_id: input.account_id }) } : { account_id: input.account_id!, ssh_public_key: input.ssh_public_key! };
  const newest = [...settings.agentVersions].sort(compareVersions).at(-1) ?? '3.0.0';
  const opened = await openAgentSession(
    instance,
    {
      proof,
      ip: input.ip ?? '127.0.0.1',
      os: input.os ?? 'linux',
      agent_version: input.agent_version ?? newest,
      metadata: input.metadata ?? '',
      region,
      update_checks: input.update_checks ?? true,
      binds: { domains: input.binds?.domains ?? [], addresses: input.binds?.addresses ?? [], labels: input.binds?.labels ?? {} },
      ...(input.forwards_to === undefined ? {} : { forwards_to: input.forwards_to }),
    },
    baseUrl,
  );
  return { ...opened.response, account_id: opened.account };
}

/** Disconnects the agent of a session (it goes offline; the session disappears). */
export async function disconnectAgent(instance: Instance, accountId: string, sessionId: string): Promise<void> {
  await instance.perform(operatorIn(accountId), async (ctx) => {
    const session = (await ctx.tx.get({ account: accountId, kind: TUNNEL_SESSION_KIND }, sessionId)) as TunnelSessionRecord | undefined;
    if (!session) fail('NOT_FOUND', `tunnel session '${sessionId}' was not found in account '${accountId}'`, { id: sessionId });
    await endSession(ctx, session);
  });
}

export const SIMULATOR_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  {
    id: 'control.agents.connect',
    route: 'POST /agents',
    status: 201,
    body: AgentConnectInput,
    summary: 'Connect a simulated agent (tunnel credential token or SSH key, binds, os, version, region, ip)',
    run: (instance, input, meta) => connectAgent(instance, input.body as AgentConnect, instance.baseUrl ?? meta.baseUrl),
  },
  {
    id: 'control.agents.disconnect',
    route: 'DELETE /accounts/:account_id/tunnel_sessions/:id',
    status: 204,
    summary: 'Disconnect the simulated agent of a tunnel session',
    async run(instance, input) {
      await disconnectAgent(instance, input.params.account_id!, input.params.id!);
      return undefined;
    },
  },
];
