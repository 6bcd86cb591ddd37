import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { LIMITS, limitNote } from '../../limits.ts';
import { lookupToken } from '../../engine/auth.ts';
import { operatorIn, type Instance, type OperationContext, type Principal } from '../../engine/context.ts';
import { aclPermits, describeAcl, type AclBind } from '../../conventions/acl.ts';
import { ApiError, ERRORS, fail } from '../../conventions/errors.ts';
import { isTokenShaped } from '../../conventions/ids.ts';
import { CONNECTION_PHASES, policyRefusal, TRAFFIC_POLICY_PHASES } from '../../conventions/traffic-policy.ts';
import { AGENTS_ERRORS } from './errors.ts';
import { addPair, claimUnique, findByUnique, findUnique, membersOf, pairsOf, releaseUnique, removePair, uniqueEntries, type PairIndex } from '../../engine/indexes.ts';
import { inactiveOwnerError, isInactive, OWNER_KINDS, ownerKind } from '../../engine/owners.ts';
import { respond, scopeOf } from '../../engine/resource.ts';
import { INSTANCE_SCOPE, readAll, type StoreReader } from '../../store.ts';
import type { TcpPortLease, TcpPorts } from '../../traffic/tcp-ports.ts';
import { CREDENTIAL_KIND } from '../credentials/index.ts';
import { findCoveringDomain, findReservedDomain } from '../domains/index.ts';
import { isInternalHost, UPSTREAM_PROTOCOLS } from '../endpoints/index.ts';
import { evaluateRestriction, IP_POLICIES_ERRORS, ipPolicyExists } from '../ip-policies/index.ts';
import { findReservedAddr } from '../reserved-addrs/index.ts';
import { SSH_CREDENTIAL_KIND, validSshPublicKey } from '../ssh/index.ts';
import { endSession, sessionsOfServer, startSession, TUNNEL_SESSION_KIND, tunnelSessions, type SessionBinds, type TunnelSessionRecord } from './tunnel-sessions.ts';
import { endTunnel, startTunnel, TUNNEL_KIND, type TunnelProto, type TunnelRecord } from './tunnels.ts';

/**
 * The one session path: every way an agent reaches Burrow — the simulator (`POST /_burrow/agents`),
 * the agent gateway (the vendor's agent, adapters/agent-gateway) and the SSH gateway (OpenSSH,
 * adapters/ssh-gateway) — opens, binds and ends sessions through these functions, so credentials,
 * ACLs, the `agent` IP restriction, the records (sessions, tunnels, endpoints) and the events are
 * one code. A transport calls:
 *
 * 1. `openAgentSession(instance, hello)` when the agent authenticates: the credential (a tunnel
 *    credential's token or an SSH credential's public key), its owner's state and the agent's
 *    address are checked in the write transaction; answers the account and the session record.
 *    A live session names `server` (LiveAgents.serverId()), and its transport `hold`s it in
 *    `services.liveAgents` so commands reach it.
 * 2. `bindAgentTunnel(instance, account, sessionId, bind)` for each tunnel the agent asks for: the
 *    address rules below and the credential's ACL; answers the tunnel id and its URL.
 * 3. `unbindAgentTunnel(…)` when the agent closes one, and `closeAgentSession(…)` when the agent
 *    goes (disconnect, heartbeat timeout, ssh exiting): its tunnels and endpoints go with it.
 *
 * Refusals are ApiErrors (a transport shows the agent their code and message). Address rules of a
 * bind: an http/https/tls bind without a name gets `<random>.<service zone>`; one with a name
 * needs the account's reserved domain for it (a wildcard reservation covers one label), a name
 * under the service zone, or an internal name (`api.internal`, reached only through
 * forward-internal); a tcp bind with an address needs the account's reserved address, and without
 * one gets a free `0.tcp.<region>.<service zone>:<port>` (hosts 1–9 are reserved
 * addresses'). A URL is bound by one tunnel at a time across the instance.
 *
 * A tcp bind the ingress of this process carries (`listened`, when an ingress is attached to
 * `services.tcpPorts`) gets a real listening port first, outside the transaction (listening is not
 * work to repeat): without an address any free port, and the URL is the address clients dial
 * (`tcp://localhost:PORT`, or the ingress's public host); with a reserved address, that address's
 * own port on the ingress host, and the URL stays the reserved address. A port that cannot be
 * listened on refuses the bind (9019, naming the port). The port is released when the bind is
 * refused, and when the tunnel or its session ends.
 */

/** How an agent proves who it is: a tunnel credential's token, or an SSH key registered in an account. */
export type AgentProof = { readonly token: string; readonly account_id?: string } | { readonly account_id: string; readonly ssh_public_key: string };

/** What an agent says when it connects. */
export interface AgentHello {
  readonly proof: AgentProof;
  /** The agent's address as the server sees it. */
  readonly ip: string;
  readonly os: string;
  readonly agent_version: string;
  readonly metadata: string;
  readonly region: string;
  readonly update_checks: boolean;
  /** Binds started with the session (the simulator's); live agents bind one at a time afterwards. */
  readonly binds?: SessionBinds;
  readonly forwards_to?: string;
  /** The server holding the live session; absent for a simulated one. */
  readonly server?: string;
}

/** A session opened: its account and record, and the record as the API shows it. */
export interface OpenedSession {
  readonly account: string;
  readonly session: TunnelSessionRecord;
  readonly response: Record<string, unknown>;
}

interface BindCommon {
  /** Where the agent forwards the tunnel's traffic (the tunnel's `forwards_to`); '' when the agent did not say. */
  readonly forwards_to?: string;
  /**
   * The traffic policy the agent sets on the bind (a document, or the legacy JSON policy), refused
   * on bind by the write-time checker like any stored one (the vendor's agents learn of a bad
   * policy when they start the endpoint, not on its first request).
   */
  readonly traffic_policy?: string;
  /** The tunnel's metadata (default: the session's). */
  readonly metadata?: string;
  /** The protocol the agent speaks to its upstream (the Bind's `ForwardsProto`): `http1` (default) or `http2`; HTTP binds only. */
  readonly upstream_protocol?: string;
}
interface NamedBind extends BindCommon {
  readonly proto: 'http' | 'https' | 'tls';
  readonly hostname?: string;
  readonly subdomain?: string;
}
interface AddressBind extends BindCommon {
  readonly proto: 'tcp';
  readonly addr?: string;
  /**
   * The bind token an earlier bind of this address answered (BoundTunnel.token), which the agent
   * sends back when it rebinds after reconnecting: with it, an address the account has not
   * reserved (a free one it was given) is its again.
   */
  readonly token?: string;
  /** Whether this process's ingress routes the transport's sessions: then the bind gets a real listening port (see the file comment). */
  readonly listened?: boolean;
}
interface LabeledBind extends BindCommon {
  readonly proto: 'labeled';
  readonly labels: Readonly<Record<string, string>>;
}

/** One tunnel an agent asks for: an endpoint with a name or an address, or a labeled tunnel. */
export type AgentBind = NamedBind | AddressBind | LabeledBind;

export interface BoundTunnel {
  readonly tunnelId: string;
  /** The public URL (`https://…`, `tcp://host:port`, `tls://…`); absent for a labeled tunnel. */
  readonly url?: string;
  /** The bind token of a tcp bind's address (see AddressBind.token); absent for other binds. */
  readonly token?: string;
}

interface ResolvedCredential {
  readonly account: string;
  readonly kind: 'credential' | 'ssh_credential';
  readonly id: string;
  readonly ownerId: string;
  readonly acl: readonly string[];
}

const label = (credential: Pick<ResolvedCredential, 'kind'>) => (credential.kind === 'credential' ? 'tunnel' : 'SSH');

async function resolveCredential(reader: StoreReader, proof: AgentProof): Promise<ResolvedCredential> {
  if ('token' in proof) {
    // The vendor tells a token of the wrong shape (105) from a well-formed unknown one (107).
    if (!isTokenShaped(proof.token)) throw new ApiError(AGENTS_ERRORS.AGENT_TOKEN_MALFORMED, "token: not of the shape of a tunnel credential's token (<27 characters>_<secret>); use the token of a tunnel credential (POST /credentials)");
    const entry = await lookupToken(reader, proof.token);
    if (!entry || entry.kind !== 'credential' || (proof.account_id !== undefined && entry.account !== proof.account_id)) {
      throw new ApiError(AGENTS_ERRORS.AGENT_CREDENTIAL_UNKNOWN, 'token: not the token of a tunnel credential');
    }
    const credential = await reader.get({ account: entry.account, kind: CREDENTIAL_KIND }, entry.record_id);
    if (!credential) throw new ApiError(AGENTS_ERRORS.AGENT_CREDENTIAL_UNKNOWN, 'token: its tunnel credential was deleted');
    return { account: entry.account, kind: 'credential', id: credential.id, ownerId: String(credential.owner_id), acl: credential.acl as string[] };
  }
  if (!(await reader.get({ account: INSTANCE_SCOPE, kind: 'account' }, proof.account_id))) fail('NOT_FOUND', `account '${proof.account_id}' was not found`);
  const key = validSshPublicKey(proof.ssh_public_key, 'ssh_public_key');
  const match = await findByUnique(reader, proof.account_id, SSH_CREDENTIAL_KIND, 'fingerprint', key.fingerprint);
  if (match) return { account: proof.account_id, kind: 'ssh_credential', id: match.id, ownerId: String(match.owner_id), acl: match.acl as string[] };
  throw new ApiError(AGENTS_ERRORS.AGENT_CREDENTIAL_UNKNOWN, `ssh_public_key: no SSH credential of account '${proof.account_id}' has this key (${key.fingerprint})`);
}

/** Refuses a bind the credential's ACL does not permit, naming the bind (`field`) and the rules. */
function checkAcl(credential: Pick<ResolvedCredential, 'kind' | 'id' | 'acl'>, field: string, bind: AclBind): void {
  if (aclPermits(credential.acl, bind)) return;
  const text = 'domain' in bind ? bind.domain : 'address' in bind ? bind.address : Object.entries(bind.labels).map(([k, val]) => `${k}=${val}`).join(', ');
  throw new ApiError(AGENTS_ERRORS.AGENT_BIND_REFUSED, `${field}: ${label(credential)} credential '${credential.id}' may not bind ${text}; its acl: ${describeAcl(credential.acl)}`, {
    credential_id: credential.id,
  });
}

function checkSessionBinds(credential: ResolvedCredential, binds: SessionBinds): void {
  binds.domains.forEach((domain, i) => checkAcl(credential, `binds.domains[${i}]`, { domain }));
  binds.addresses.forEach((address, i) => checkAcl(credential, `binds.addresses[${i}]`, { address }));
  if (Object.keys(binds.labels).length > 0) checkAcl(credential, 'binds.labels', { labels: binds.labels });
}

const principalOf = (credential: ResolvedCredential): Principal => ({ account: credential.account, ownerId: credential.ownerId, admin: false });

/** Pair index (server id, account) instance-wide: the accounts where a server holds sessions. */
const ACCOUNTS_OF_SERVER: PairIndex = { account: INSTANCE_SCOPE, kind: '_server_account' };

/**
 * Opens a session for an agent (see the file comment). The credential, its ACL over the binds
 * given, its owner's state and the account's `agent` IP restriction are checked inside the write
 * transaction, so a credential deleted or a restriction enforced meanwhile cannot let it in.
 */
export async function openAgentSession(instance: Instance, hello: AgentHello, baseUrl?: string): Promise<OpenedSession> {
  const binds = hello.binds ?? { domains: [], addresses: [], labels: {} };
  let credential: ResolvedCredential;
  const agent = async (reader: StoreReader) => principalOf((credential = await resolveCredential(reader, hello.proof)));
  return instance.perform(agent, async (ctx) => {
    checkSessionBinds(credential, binds);
    if (isInactive(await ctx.tx.get({ account: credential.account, kind: OWNER_KINDS[ownerKind(credential.ownerId)].kind }, credential.ownerId))) {
      throw inactiveOwnerError(credential.ownerId, `${label(credential)} credential '${credential.id}'`);
    }
    const verdict = await evaluateRestriction(ctx.tx, credential.account, 'agent', hello.ip);
    if (verdict && !verdict.allowed && verdict.enforced) {
      throw new ApiError(IP_POLICIES_ERRORS.IP_RESTRICTED, `ip: agent IP restriction '${verdict.restrictionId}' denies ${hello.ip}`, { restriction_id: verdict.restrictionId, ip: hello.ip });
    }
    const session = await startSession(ctx, {
      metadata: hello.metadata,
      agent_version: hello.agent_version,
      credential: { kind: credential.kind, id: credential.id },
      ip: hello.ip,
      os: hello.os,
      region: hello.region,
      transport: credential.kind === 'credential' ? 'burrow/v2' : 'ssh',
      binds,
      update_checks: hello.update_checks,
      owner_id: credential.ownerId,
      ...(hello.forwards_to === undefined ? {} : { forwards_to: hello.forwards_to }),
      ...(hello.server === undefined ? {} : { server: hello.server }),
    });
    if (hello.server !== undefined) {
      await addPair(ctx.tx, sessionsOfServer(credential.account), hello.server, session.id);
      await addPair(ctx.tx, ACCOUNTS_OF_SERVER, hello.server, credential.account);
    }
    return { account: credential.account, session, response: respond(ctx, tunnelSessions, session) };
  }, baseUrl);
}

/** The session, or the refusal a transport gives a bind on a session that has ended meanwhile. */
async function liveSession(ctx: OperationContext, sessionId: string): Promise<TunnelSessionRecord> {
  const session = (await ctx.tx.get(scopeOf(ctx, TUNNEL_SESSION_KIND), sessionId)) as TunnelSessionRecord | undefined;
  if (!session) throw new ApiError(AGENTS_ERRORS.AGENT_SESSION_ENDED, `tunnel session '${sessionId}' has ended (its credential was deleted, or it was stopped)`);
  return session;
}

/** Candidate ports of a free TCP address: a random one of the range, then the next ones. */
const FREE_ADDR_PROBES = 64;

/** Starts one tunnel (and its endpoint) on a live session: see the file comment for the rules. */
export async function bindAgentTunnel(instance: Instance, account: string, sessionId: string, bind: AgentBind): Promise<BoundTunnel> {
  if (bind.upstream_protocol && !UPSTREAM_PROTOCOLS.includes(bind.upstream_protocol)) {
    throw new ApiError(AGENTS_ERRORS.AGENT_UPSTREAM_PROTOCOL_INVALID, `Upstream protocol is invalid: ${bind.upstream_protocol} (use http1 or http2)`);
  }
  for (let attempt = 1; ; attempt++) {
    const lease = bind.proto === 'tcp' && bind.listened ? await listenFor(instance.services.tcpPorts, bind.addr) : undefined;
    let bound: BoundTunnel;
    try {
      bound = await startBoundTunnel(instance, account, sessionId, bind, lease);
    } catch (error) {
      lease?.release();
      // Another server of the store (on another host) may have the same free port's URL: take another port.
      const taken = error instanceof ApiError && error.code === AGENTS_ERRORS.AGENT_URL_BOUND.code;
      if (lease && bind.proto === 'tcp' && !bind.addr && taken && attempt < FREE_PORT_ATTEMPTS) continue;
      throw error;
    }
    if (lease) {
      lease.serve(bound.url!);
      instance.services.tcpPorts.hold(sessionId, bound.tunnelId, lease);
    }
    return bound;
  }
}

/** Free ports tried for one TCP bind whose URL another server's tunnel holds. */
const FREE_PORT_ATTEMPTS = 4;

/** The port the ingress listens on for a TCP bind (a reserved address's own, else any free one), or undefined without an ingress. */
async function listenFor(ports: TcpPorts, addr: string | undefined): Promise<TcpPortLease | undefined> {
  const listener = ports.listener;
  if (!listener) return undefined;
  const port = addr === undefined ? 0 : Number(/:(\d{1,5})$/.exec(addr)?.[1] ?? NaN);
  // An address without a port is no reserved address: the transaction refuses it.
  if (!Number.isInteger(port)) return undefined;
  try {
    return await listener.listen(port);
  } catch (error) {
    throw new ApiError(AGENTS_ERRORS.AGENT_PORT_UNAVAILABLE, `${addr === undefined ? 'tcp' : `addr: ${addr}`}: the ingress cannot listen: ${(error as Error).message}`, { port: String(port) });
  }
}

async function startBoundTunnel(instance: Instance, account: string, sessionId: string, bind: AgentBind, lease: TcpPortLease | undefined): Promise<BoundTunnel> {
  return instance.perform(operatorIn(account), async (ctx) => {
    const session = await liveSession(ctx, sessionId);
    const credentialRecord = await ctx.tx.get({ account, kind: session.credential.kind }, session.credential.id);
    if (!credentialRecord) throw new ApiError(AGENTS_ERRORS.AGENT_SESSION_ENDED, `the credential of tunnel session '${sessionId}' was deleted`);
    const credential = { kind: session.credential.kind, id: session.credential.id, acl: credentialRecord.acl as string[] };
    const owner = { ...session, owner_id: session.owner_id ?? '' };
    const tunnel = (proto: TunnelProto, url: string, labels: Readonly<Record<string, string>> = {}) =>
      startTunnel(ctx, owner, {
        proto,
        url,
        labels,
        metadata: bind.metadata ?? session.metadata,
        ...(bind.forwards_to === undefined ? {} : { forwards_to: bind.forwards_to }),
        ...(bind.upstream_protocol ? { upstream_protocol: bind.upstream_protocol } : {}),
      });
    if (bind.proto === 'labeled') {
      checkAcl(credential, 'labels', { labels: bind.labels });
      return { tunnelId: (await tunnel('', '', bind.labels)).id };
    }
    if (bind.traffic_policy) {
      const phases = bind.proto === 'tcp' || bind.proto === 'tls' ? CONNECTION_PHASES : TRAFFIC_POLICY_PHASES;
      const issue = await ctx.services.trafficPolicies.agent(bind.traffic_policy, { phases, ipPolicyExists: (id) => ipPolicyExists(ctx.tx, ctx.account, id) });
      if (issue) throw policyRefusal(issue, 'traffic_policy', ERRORS.INVALID_FIELD);
    }
    const zone = ctx.services.simulation.serviceZone;
    let url: string;
    if (bind.proto === 'tcp') {
      const addr = bind.addr ? bind.addr.toLowerCase() : (lease?.address ?? (await freeAddress(ctx, session.region)));
      url = `tcp://${addr}`;
      const token = await bindToken(ctx, credential, url);
      // A free address comes back to the credential that was given it (the agent rebinding after a reconnect), and only to it.
      if (bind.addr && !sameToken(bind.token, token) && !(await findReservedAddr(ctx, addr))) {
        throw new ApiError(AGENTS_ERRORS.AGENT_ADDR_NOT_RESERVED, `addr: ${addr} is not a reserved address of this account; reserve it (POST /reserved_addrs) or bind without an address for a free one`);
      }
      checkAcl(credential, 'addr', { address: addr });
      return { ...(await startClaimed(ctx, account, credential, tunnel('tcp', url), url)), token };
    } else {
      const name = (bind.hostname || (bind.subdomain ? `${bind.subdomain}.${zone}` : `${hexOf(ctx.ids.bytes(8))}.${zone}`)).toLowerCase().replace(/\.$/, '');
      // The vendor checks a name's characters before any reservation (its ERR_NGROK_326).
      const invalid = /[^A-Za-z0-9.*-]/.exec(name);
      if (invalid) {
        throw new ApiError(AGENTS_ERRORS.AGENT_DOMAIN_INVALID, `hostname: invalid character '${invalid[0]}' in '${name}'; a domain may contain only a-z, A-Z, 0-9, '.', '*' and '-'`);
      }
      const own = bind.hostname || bind.subdomain ? await findReservedDomain(ctx, name) : undefined;
      // A name another account reserved is theirs, under the service's zones too (the vendor's ERR_NGROK_320).
      if ((bind.hostname || bind.subdomain) && !own && (await findCoveringDomain(ctx.tx, name))) {
        throw new ApiError(AGENTS_ERRORS.AGENT_DOMAIN_RESERVED_ELSEWHERE, `hostname: ${name} is reserved for another account; bind it with an authtoken of the account that reserved it, or choose another name`);
      }
      if (bind.hostname && !underZone(name, zone) && !isInternalHost(name, zone) && !own) {
        const vendorZone = VENDOR_ZONES.find((base) => underZone(name, base));
        if (vendorZone === undefined) {
          throw new ApiError(AGENTS_ERRORS.AGENT_DOMAIN_NOT_RESERVED, `hostname: ${name} is not a reserved domain of this account (nor under ${zone}); reserve it (POST /reserved_domains) or a wildcard domain one label above it`);
        }
        // The vendor's base domains: one label under them needs no reservation, a nested name does (its ERR_NGROK_354).
        const labels = name.slice(0, -vendorZone.length - 1).split('.');
        if (labels.length > 1) {
          throw new ApiError(AGENTS_ERRORS.AGENT_DOMAIN_NESTED, `hostname: nested subdomains of the base domain ${vendorZone} must be reserved first (POST /reserved_domains); alternatively, try ${labels.join('-')}.${vendorZone} instead`);
        }
      }
      checkAcl(credential, 'hostname', { domain: name });
      url = `${bind.proto}://${name}`;
    }
    return startClaimed(ctx, account, credential, tunnel(bind.proto === 'http' ? 'http' : bind.proto === 'tls' ? 'tls' : 'https', url), url);
  });
}

/**
 * The tunnel `starting` starts, once it holds `url` (one URL is served by one tunnel at a time).
 * A URL held for a reconnecting agent (closeAgentSession) is taken by that agent's credential, or
 * by anyone once the hold has passed.
 */
async function startClaimed(ctx: OperationContext, account: string, credential: { readonly kind: string; readonly id: string }, starting: Promise<TunnelRecord>, url: string): Promise<BoundTunnel> {
  const started = await starting;
  const claim = () => claimUnique(ctx.tx, INSTANCE_SCOPE, TUNNEL_KIND, 'url', url, `${account}/${started.id}`);
  let holder = await claim();
  const hold = heldFor(holder);
  if (hold && (hold.credential === `${credential.kind}/${credential.id}` || hold.until <= ctx.clock.now().getTime())) {
    await releaseHold(ctx, url, holder!);
    holder = await claim();
  }
  if (holder === undefined) return { tunnelId: started.id, url };
  const held = heldFor(holder);
  if (held) {
    throw new ApiError(AGENTS_ERRORS.AGENT_URL_BOUND, `${url} is held for the agent that bound it, which lost its connection, until ${new Date(held.until).toISOString()} (or it binds it again) ${limitNote('agent_reconnect_hold_ms')}`);
  }
  throw new ApiError(AGENTS_ERRORS.AGENT_URL_BOUND, `${url} is already bound by another tunnel (${holder.slice(holder.indexOf('/') + 1)}); one URL is served by one tunnel at a time`);
}

/**
 * The bind token of `url` for a credential: a MAC, under a key derived from the instance's CA key
 * (which every server of the store shares), of the credential and the URL. The vendor's service
 * answers each Bind with such a token (BindResp `Extra.Token`) and its agents send it back when
 * they rebind after a reconnect (ngrok-go internal/tunnel/client/reconnecting.go).
 */
async function bindToken(ctx: OperationContext, credential: { readonly kind: string; readonly id: string }, url: string): Promise<string> {
  const key = createHash('sha256').update('burrow bind token\n').update((await ctx.services.ca()).privateKeyPem).digest();
  return createHmac('sha256', key).update(`${credential.kind}/${credential.id}\n${url}`).digest('base64url');
}

const sameToken = (given: string | undefined, expected: string) => given !== undefined && given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));

/**
 * The vendor's own base domains (ngrok-docs domains/index.mdx, "ngrok managed domains"): an
 * account binds a one-label name under any of them without reserving it, as under Burrow's service
 * zone, so code written against the vendor (`domain('x.ngrok.app')`) runs unchanged; a nested name
 * needs a reservation (354).
 */
export const VENDOR_ZONES: readonly string[] = ['ngrok.app', 'ngrok.dev', 'ngrok.pizza', 'ngrok-free.app', 'ngrok-free.dev', 'ngrok-free.pizza', 'ngrok.io'];

const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const underZone = (name: string, zone: string) => name.endsWith(`.${zone}`);

async function freeAddress(ctx: OperationContext, region: string): Promise<string> {
  const { first, last } = ctx.services.simulation.reservedAddrPorts;
  const span = last - first + 1;
  const start = Buffer.from(ctx.ids.bytes(4)).readUInt32BE(0) % span;
  for (let probe = 0; probe < Math.min(FREE_ADDR_PROBES, span); probe++) {
    const addr = `0.tcp.${region}.${ctx.services.simulation.serviceZone}:${first + ((start + probe) % span)}`;
    const holder = await findUnique(ctx.tx, INSTANCE_SCOPE, TUNNEL_KIND, 'url', `tcp://${addr}`);
    if (holder === undefined || (heldFor(holder)?.until ?? Infinity) <= ctx.clock.now().getTime()) return addr;
  }
  throw new ApiError(AGENTS_ERRORS.AGENT_URL_BOUND, `no free TCP address in region ${region} among ${FREE_ADDR_PROBES} tried; bind a reserved address instead`);
}

/** Stops one tunnel of a live session (the agent closed it). */
export async function unbindAgentTunnel(instance: Instance, account: string, sessionId: string, tunnelId: string): Promise<void> {
  await instance.perform(operatorIn(account), async (ctx) => {
    const record = (await ctx.tx.get(scopeOf(ctx, TUNNEL_KIND), tunnelId)) as TunnelRecord | undefined;
    if (record?.session_id === sessionId) await endTunnel(ctx, record);
  });
  instance.services.tcpPorts.releaseTunnel(tunnelId);
}

/**
 * Ends a session whose agent went (disconnect, heartbeat timeout); answers false when it had ended
 * already. With `holdUrls` (its connection was lost: the agent will reconnect), the URLs it bound
 * that no reservation backs stay held for its credential for `agent_reconnect_hold_ms` (see
 * `startClaimed`), so only the agent reconnecting binds them again.
 */
export async function closeAgentSession(instance: Instance, account: string, sessionId: string, { holdUrls = false }: { readonly holdUrls?: boolean } = {}): Promise<boolean> {
  // The session's ports go whether or not its records had gone already (a deleted credential ends them first).
  instance.services.tcpPorts.releaseSession(sessionId);
  return instance.perform(operatorIn(account), async (ctx) => {
    const session = (await ctx.tx.get(scopeOf(ctx, TUNNEL_SESSION_KIND), sessionId)) as TunnelSessionRecord | undefined;
    if (!session) return false;
    const ended = await endSession(ctx, session);
    if (holdUrls) {
      const until = ctx.clock.now().getTime() + LIMITS.agent_reconnect_hold_ms.value;
      for (const { public_url: url } of ended) {
        if (url === '' || (await reserved(ctx, url))) continue;
        const holder = holdOf(session.credential, until);
        if ((await claimUnique(ctx.tx, INSTANCE_SCOPE, TUNNEL_KIND, 'url', url, holder)) === undefined) await addPair(ctx.tx, URL_HOLDS, HOLDS_KEY, encodeURIComponent(url), { url, holder });
      }
    }
    return true;
  });
}

/** Whether the account's reservation (a domain, a wildcard over it, or an address) backs `url`. */
async function reserved(ctx: OperationContext, url: string): Promise<boolean> {
  const { protocol, host, hostname } = new URL(url);
  return protocol === 'tcp:' ? (await findReservedAddr(ctx, host)) !== undefined : (await findReservedDomain(ctx, hostname)) !== undefined;
}

/** Pair index (HOLDS_KEY, encoded URL) instance-wide: the URLs held (with their holder), so expired holds are found and released. */
const URL_HOLDS: PairIndex = { account: INSTANCE_SCOPE, kind: '_url_hold' };
const HOLDS_KEY = 'held';

/** Releases the URL holds (closeAgentSession) that have passed; answers how many. The agent gateway's sweep runs it. */
export async function releaseExpiredUrlHolds(instance: Instance): Promise<number> {
  const now = instance.clock.now().getTime();
  const expired = (await pairsOf(instance.reader, URL_HOLDS, HOLDS_KEY)).filter((pair) => (heldFor(String(pair.holder))?.until ?? 0) <= now);
  if (expired.length === 0) return 0;
  await instance.perform(operatorIn(INSTANCE_SCOPE), async (ctx) => {
    for (const pair of expired) await releaseHold(ctx, String(pair.url), String(pair.holder));
  });
  return expired.length;
}

/** Ends the hold `holder` has on `url` (the index entry only if it still holds it). */
async function releaseHold(ctx: OperationContext, url: string, holder: string): Promise<void> {
  await releaseUnique(ctx.tx, INSTANCE_SCOPE, TUNNEL_KIND, 'url', url, holder);
  await removePair(ctx.tx, URL_HOLDS, HOLDS_KEY, encodeURIComponent(url));
}

/** The holder of a URL held for `credential`'s reconnecting agent until `until` (ms), in the URL's unique index. */
const holdOf = (credential: { readonly kind: string; readonly id: string }, until: number) => `hold ${credential.kind}/${credential.id} ${until}`;

function heldFor(holder: string | undefined): { readonly credential: string; readonly until: number } | undefined {
  const match = holder === undefined ? null : /^hold (\S+) (\d+)$/.exec(holder);
  return match ? { credential: match[1]!, until: Number(match[2]) } : undefined;
}

/**
 * An agent reconnecting names the session it had (Auth's `ClientId`): when that session is still
 * open — its server has not noticed the connection is gone — and belongs to the same credential as
 * `session`, it ends now (its server closes the old connection: endSession), so its URLs are free
 * for the agent to bind again. Answers whether it ended one; another credential's session is never
 * touched.
 */
export async function endSessionResumedBy(instance: Instance, account: string, session: TunnelSessionRecord, previousId: string): Promise<boolean> {
  if (previousId === '' || previousId === session.id) return false;
  const previous = (await instance.reader.get({ account, kind: TUNNEL_SESSION_KIND }, previousId)) as TunnelSessionRecord | undefined;
  if (!previous || previous.credential.kind !== session.credential.kind || previous.credential.id !== session.credential.id) return false;
  return closeAgentSession(instance, account, previousId);
}

/**
 * Ends the sessions of servers that are gone (`services.liveAgents.alive` no longer counts them:
 * their process died, or their connection to the shared database did); answers how many. Every
 * server holding live sessions runs it now and then, so a server's sessions outlive it only
 * until another one looks.
 */
export async function endSessionsOfGoneServers(instance: Instance): Promise<number> {
  const pairs = await readAll(instance.reader, { account: INSTANCE_SCOPE, kind: ACCOUNTS_OF_SERVER.kind });
  const holders = new Map<string, string[]>();
  for (const pair of pairs) {
    const server = decodeURIComponent(pair.id.slice(0, pair.id.indexOf(' ')));
    holders.set(server, [...(holders.get(server) ?? []), String(pair.member)]);
  }
  if (holders.size === 0) return 0;
  const alive = await instance.services.liveAgents.alive([...holders.keys()]);
  let ended = 0;
  for (const [server, accounts] of holders) {
    if (alive.has(server)) continue;
    for (const account of accounts) {
      for (const sessionId of await membersOf(instance.reader, sessionsOfServer(account), server)) {
        if (await closeAgentSession(instance, account, sessionId)) ended++;
      }
      await instance.perform(operatorIn(INSTANCE_SCOPE), async (ctx) => void (await removePair(ctx.tx, ACCOUNTS_OF_SERVER, server, account)));
    }
  }
  return ended;
}

/** Where a live agent's tunnel of `url` is held: its account, tunnel, session and the server holding the session. */
export interface HeldTunnel {
  readonly account: string;
  readonly tunnelId: string;
  readonly sessionId: string;
  readonly server: string;
}

/**
 * The live agent tunnel bound to `url` (`https://name`, `tls://name`, …) anywhere among the
 * servers sharing the store, and the server holding its session (three reads); undefined when no
 * live agent binds it (a simulated agent's session names no server).
 */
export async function findHeldTunnel(reader: StoreReader, url: string): Promise<HeldTunnel | undefined> {
  const holder = await findUnique(reader, INSTANCE_SCOPE, TUNNEL_KIND, 'url', url);
  if (holder === undefined) return undefined;
  const account = holder.slice(0, holder.indexOf('/'));
  return findHeldTunnelById(reader, account, holder.slice(account.length + 1));
}

/**
 * The live agent tunnel `tunnelId` of `account` (a labeled tunnel a tunnel group backend matched:
 * its `tunnel_ids` are the account's live labeled tunnels whose labels it wants, on every server)
 * and the server holding its session (two reads); undefined when it ended or no live agent holds it.
 */
export async function findHeldTunnelById(reader: StoreReader, account: string, tunnelId: string): Promise<HeldTunnel | undefined> {
  const tunnel = (await reader.get({ account, kind: TUNNEL_KIND }, tunnelId)) as TunnelRecord | undefined;
  if (!tunnel) return undefined;
  const session = (await reader.get({ account, kind: TUNNEL_SESSION_KIND }, tunnel.session_id)) as TunnelSessionRecord | undefined;
  if (session?.server === undefined) return undefined;
  return { account, tunnelId: tunnel.id, sessionId: session.id, server: session.server };
}

/** The URLs of the live agents' TCP tunnels across the servers sharing the store (`tcp://host:port`), at most `atMost`. */
export async function liveTcpTunnelUrls(reader: StoreReader, atMost: number): Promise<string[]> {
  return (await uniqueEntries(reader, INSTANCE_SCOPE, TUNNEL_KIND, 'url', atMost, 'tcp://')).map((entry) => entry.value);
}
