import * as v from 'valibot';
import { lookupToken } from '../../auth.ts';
import { operatorIn, type ControlOperation, type Instance, type Principal } from '../../context.ts';
import { ApiError, ERRORS, fail } from '../../conventions/errors.ts';
import { metadata, parseInput } from '../../conventions/fields.ts';
import { inactiveOwnerError, isInactive, OWNER_KINDS, ownerKind } from '../../owners.ts';
import { aclPermits, describeAcl, type AclBind } from '../../conventions/acl.ts';
import { isIpAddress } from '../../conventions/cidr.ts';
import { evaluateRestriction } from '../ip-policies/index.ts';
import { CREDENTIAL_KIND } from '../credentials/index.ts';
import { SSH_CREDENTIAL_KIND, validSshPublicKey } from '../ssh/index.ts';
import { endSession, startSession, TUNNEL_SESSION_KIND, tunnelSessions, type TunnelSessionRecord } from './tunnel-sessions.ts';
import { respond } from '../../resource.ts';
import { findByUnique } from '../../indexes.ts';
import { INSTANCE_SCOPE, type StoreReader } from '../../store.ts';
import { compareVersions } from '../../simulation.ts';
import { AGENTS_ERRORS } from './errors.ts';
import { IP_POLICIES_ERRORS } from '../ip-policies/index.ts';

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

interface ResolvedCredential {
  readonly account: string;
  readonly kind: 'credential' | 'ssh_credential';
  readonly id: string;
  readonly ownerId: string;
  readonly acl: readonly string[];
}

async function resolveCredential(reader: StoreReader, input: v.InferOutput<typeof AgentConnectInput>): Promise<ResolvedCredential> {
  if ((input.token === undefined) === (input.ssh_public_key === undefined)) fail('INVALID_FIELD', 'body: give exactly one of token (a tunnel credential) or ssh_public_key');
  if (input.token !== undefined) {
    const entry = await lookupToken(reader, input.token);
    if (!entry || entry.kind !== 'credential' || (input.account_id !== undefined && entry.account !== input.account_id)) {
      throw new ApiError(AGENTS_ERRORS.AGENT_CREDENTIAL_UNKNOWN, 'token: not the token of a tunnel credential');
    }
    const credential = await reader.get({ account: entry.account, kind: CREDENTIAL_KIND }, entry.record_id);
    if (!credential) throw new ApiError(AGENTS_ERRORS.AGENT_CREDENTIAL_UNKNOWN, 'token: its tunnel credential was deleted');
    return { account: entry.account, kind: 'credential', id: credential.id, ownerId: String(credential.owner_id), acl: credential.acl as string[] };
  }
  if (input.account_id === undefined) fail('INVALID_FIELD', 'account_id: required with ssh_public_key (SSH keys are registered per account)');
  if (!(await reader.get({ account: INSTANCE_SCOPE, kind: 'account' }, input.account_id))) fail('NOT_FOUND', `account '${input.account_id}' was not found`);
  const key = validSshPublicKey(input.ssh_public_key, 'ssh_public_key');
  const match = await findByUnique(reader, input.account_id, SSH_CREDENTIAL_KIND, 'fingerprint', key.fingerprint);
  if (match) return { account: input.account_id, kind: 'ssh_credential', id: match.id, ownerId: String(match.owner_id), acl: match.acl as string[] };
  throw new ApiError(AGENTS_ERRORS.AGENT_CREDENTIAL_UNKNOWN, `ssh_public_key: no SSH credential of account '${input.account_id}' has this key (${key.fingerprint})`);
}

function checkBinds(credential: ResolvedCredential, binds: { domains: string[]; addresses: string[]; labels: Record<string, string> }): void {
  const refuse = (field: string, bind: string) => {
    throw new ApiError(AGENTS_ERRORS.AGENT_BIND_REFUSED, `${field}: ${credential.kind === 'credential' ? 'tunnel' : 'SSH'} credential '${credential.id}' may not bind ${bind}; its acl: ${describeAcl(credential.acl)}`, {
      credential_id: credential.id,
    });
  };
  const check = (field: string, bind: AclBind, text: string) => {
    if (!aclPermits(credential.acl, bind)) refuse(field, text);
  };
  binds.domains.forEach((domain, i) => check(`binds.domains[${i}]`, { domain }, domain));
  binds.addresses.forEach((address, i) => check(`binds.addresses[${i}]`, { address }, address));
  if (Object.keys(binds.labels).length > 0) check('binds.labels', { labels: binds.labels }, Object.entries(binds.labels).map(([k, val]) => `${k}=${val}`).join(', '));
}

function principalOf(credential: ResolvedCredential): Principal {
  return { account: credential.account, ownerId: credential.ownerId, admin: false };
}

/**
 * Connects a simulated agent; answers its tunnel session as the API shows it, plus `account_id`.
 * The credential, its ACL and the account's agent IP restriction are checked inside the write
 * transaction, so a credential deleted or a restriction enforced meanwhile cannot let it in.
 */
export async function connectAgent(instance: Instance, request: AgentConnect, baseUrl?: string): Promise<Record<string, unknown>> {
  const input = parseInput(AgentConnectInput, request ?? {});
  const settings = instance.services.simulation;
  const region = input.region ?? settings.regions[0] ?? 'us';
  if (!settings.regions.includes(region)) fail('INVALID_FIELD', `region: must be one of ${settings.regions.join(', ')} (got ${JSON.stringify(region)})`);
  const binds = { domains: input.binds?.domains ?? [], addresses: input.binds?.addresses ?? [], labels: input.binds?.labels ?? {} };
  const ip = input.ip ?? '127.0.0.1';
  const newest = [...settings.agentVersions].sort(compareVersions).at(-1) ?? '3.0.0';
  let credential: ResolvedCredential;
  const agent = async (reader: StoreReader) => principalOf((credential = await resolveCredential(reader, input)));
  return instance.perform(agent, async (ctx) => {
    checkBinds(credential, binds);
    if (isInactive(await ctx.tx.get({ account: credential.account, kind: OWNER_KINDS[ownerKind(credential.ownerId)].kind }, credential.ownerId))) {
      throw inactiveOwnerError(credential.ownerId, `${credential.kind === 'credential' ? 'tunnel' : 'SSH'} credential '${credential.id}'`);
    }
    const verdict = await evaluateRestriction(ctx.tx, credential.account, 'agent', ip);
    if (verdict && !verdict.allowed && verdict.enforced) {
      throw new ApiError(IP_POLICIES_ERRORS.IP_RESTRICTED, `ip: agent IP restriction '${verdict.restrictionId}' denies ${ip}`, { restriction_id: verdict.restrictionId, ip });
    }
    const session = await startSession(ctx, {
      metadata: input.metadata ?? '',
      agent_version: input.agent_version ?? newest,
      credential: { kind: credential.kind, id: credential.id },
      ip,
      os: input.os ?? 'linux',
      region,
      transport: credential.kind === 'credential' ? 'burrow/v2' : 'ssh',
      binds,
      update_checks: input.update_checks ?? true,
      owner_id: credential.ownerId,
      ...(input.forwards_to === undefined ? {} : { forwards_to: input.forwards_to }),
    });
    return { ...respond(ctx, tunnelSessions, session), account_id: credential.account };
  }, baseUrl);
}

/** Disconnects the agent of a session (it goes offline; the session disappears). */
export async function disconnectAgent(instance: Instance, accountId: string, sessionId: string): Promise<void> {
  await instance.perform(operatorIn(accountId), async (ctx) => {
    const session = (await ctx.tx.get({ account: accountId, kind: TUNNEL_SESSION_KIND }, sessionId)) as TunnelSessionRecord | undefined;
    if (!session) fail('NOT_FOUND', `tunnel session '${sessionId}' was not found in account '${accountId}'`, { id: sessionId });
    await endSession(ctx, session);
  });
}

export const SIMULATOR_CONTROL_OPERATIONS: readonly ControlOperation[] = [
  {
    id: 'control.agents.connect',
    method: 'POST',
    path: '/agents',
    status: 201,
    body: AgentConnectInput,
    summary: 'Connect a simulated agent (tunnel credential token or SSH key, binds, os, version, region, ip)',
    run: (instance, input, meta) => connectAgent(instance, input.body as AgentConnect, instance.baseUrl ?? meta.baseUrl),
  },
  {
    id: 'control.agents.disconnect',
    method: 'DELETE',
    path: '/accounts/:account_id/tunnel_sessions/:id',
    status: 204,
    summary: 'Disconnect the simulated agent of a tunnel session',
    async run(instance, input) {
      await disconnectAgent(instance, input.params.account_id!, input.params.id!);
      return undefined;
    },
  },
];
