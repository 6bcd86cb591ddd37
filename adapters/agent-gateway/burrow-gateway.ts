import { isIP } from 'node:net';
import {
  ApiError,
  bindAgentTunnel,
  endSessionResumedBy,
  endSessionsOfGoneServers,
  AGENTS_ERRORS,
  openAgentSession,
  releaseExpiredUrlHolds,
  signServerCertificate,
  unbindAgentTunnel,
  type AgentBind,
  type AgentCommand,
  type AgentCommandReply,
  type AgentUpdate,
  type BurrowCore,
} from '../../lib/index.ts';
import { hostPort } from '../addresses.ts';
import { createAgentGateway, type AgentGateway, type AgentGatewayAddress } from './gateway.ts';
import type { BindRequest } from './protocol.ts';
import { AgentGatewayError, type AgentSession, type AgentSessionHandler, type SessionEndReason } from './session-handler.ts';
import { endLiveSession, type AgentSessionLog } from '../session-events.ts';
import type { Timers } from '../gateway-connection/timers.ts';

/**
 * The agent gateway over a Burrow instance: the vendor's agent connects with a tunnel credential's
 * token as its authtoken, and its sessions, binds and disconnects take the one session path
 * (lib/families/agents/agent-sessions.ts), as the simulator's do. The gateway's certificate is
 * signed by the instance's CA (`services.ca()`, served at `GET /_burrow/ca.pem`), for the listening
 * host, `localhost`, `127.0.0.1`, `::1` and `publicHost`. Each live session is held in
 * `services.liveAgents`, so the API's stop/restart/update reach it from any server of the store.
 * A stop or restart the agent accepted ends the session from this side too: the vendor's agent
 * exits on stop and reconnects, under a new session id, after a restart.
 */

export interface AgentGatewayStartOptions {
  /** Address to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 0: any free one). */
  readonly port?: number;
  /** Another name agents reach the gateway by; the certificate is valid for it too. */
  readonly publicHost?: string;
  /** The region of its sessions (default: the first of the instance's simulated regions). */
  readonly region?: string;
  /** Prefix of the error codes agents see (default: the instance's error prefix). */
  readonly errorCodePrefix?: string;
  /** Time between two looks for sessions of servers that are gone (default 5000 ms). */
  readonly sweepIntervalMs?: number;
  /** The gateway's timeouts (tests drive them by hand). */
  readonly timers?: Timers;
  /** A failure of the gateway or the store while an agent was served (default: ignored). */
  readonly onError?: (error: unknown) => void;
  /** Each session opened and closed, for the server's log. */
  readonly onSession?: AgentSessionLog;
}

export interface RunningAgentGateway {
  readonly address: AgentGatewayAddress;
  /** `host:port` as agents dial it (`server_addr`). */
  readonly serverAddr: string;
  /** The sessions this gateway holds now. */
  sessions(): AgentSession<LiveContext>[];
  /** Stops listening and ends every session (their records go); resolves once all are recorded. */
  close(): Promise<void>;
}

/** What the gateway keeps on each live session. */
export interface LiveContext {
  readonly account: string;
  readonly release: () => void;
}

const DEFAULT_SWEEP_MS = 5000;


/** Starts the agent gateway of `burrow`; see the file comment. */
export async function startAgentGateway(burrow: BurrowCore<any>, options: AgentGatewayStartOptions = {}): Promise<RunningAgentGateway> {
  const services = burrow.services;
  const region = options.region ?? services.simulation.regions[0] ?? 'us';
  if (!services.simulation.regions.includes(region)) throw new Error(`region must be one of ${services.simulation.regions.join(', ')} (got ${region})`);
  const host = options.host ?? '127.0.0.1';
  const onError = options.onError ?? (() => undefined);
  const ca = await services.ca();
  const serverId = await services.liveAgents.serverId();
  const names = [...new Set([host, 'localhost', '127.0.0.1', '::1', ...(options.publicHost ? [options.publicHost] : [])])];
  const certificate = await signServerCertificate(ca, { now: new Date(), dnsNames: names.filter((name) => isIP(name) === 0), ipAddresses: names.filter((name) => isIP(name) !== 0) });

  let gateway: AgentGateway<LiveContext> | undefined;
  const liveSession = (id: string) => gateway?.sessions().find((session) => session.id === id);
  /** Relays a command; a stop or restart the agent accepted ends the session (see the file comment). */
  const relay = async (id: string, kind: AgentCommand, update?: AgentUpdate): Promise<AgentCommandReply> => {
    const session = liveSession(id);
    if (!session) throw new Error(`tunnel session '${id}' is not connected to this gateway`);
    const reply = kind === 'update' ? await session.command('update', update ?? { version: '', permitMajorVersion: false }) : await session.command(kind);
    if (reply.outcome === 'ok' && kind !== 'update') session.close(kind === 'stop' ? 'the agent was stopped through the API' : 'the agent restarts');
    return reply;
  };

  const handler: AgentSessionHandler<LiveContext> = {
    async authenticate(auth, remote) {
      const opened = await refusals(() =>
        openAgentSession(burrow, {
          proof: { token: auth.authtoken },
          ip: remote.ip,
          os: auth.os,
          agent_version: auth.agentVersion,
          metadata: auth.metadata,
          region,
          update_checks: auth.commands.update.state === 'supported',
          server: serverId,
        }),
      );
      const id = opened.session.id;
      // An agent reconnecting names its previous session: if this gateway (or another) still holds it, it goes now.
      await endSessionResumedBy(burrow, opened.account, opened.session, auth.clientId);
      const release = services.liveAgents.hold(id, {
        command: (kind, update) => relay(id, kind, update),
        close: (message) => liveSession(id)?.close(message),
      });
      options.onSession?.({ event: 'opened', id, transport: 'agent', account: opened.account, agentVersion: auth.agentVersion, client: remote });
      return { sessionId: id, context: { account: opened.account, release }, region, accountName: opened.account };
    },
    async bind(session, request) {
      const bound = await refusals(() => bindAgentTunnel(burrow, session.context.account, session.id, bindOf(request)));
      return { tunnelId: bound.tunnelId, ...(bound.url === undefined ? {} : { url: bound.url }), ...(bound.token === undefined ? {} : { token: bound.token }) };
    },
    async unbind(session, tunnelId) {
      await refusals(() => unbindAgentTunnel(burrow, session.context.account, session.id, tunnelId));
    },
    // A lost connection (not the agent's GOAWAY, a stop, or the gateway's close): the agent comes back for its URLs.
    sessionEnded: (session, reason) => endLiveSession(burrow, 'agent', session, reason, options.onSession, { holdUrls: CONNECTION_LOST.has(reason.kind) }),
  };

  gateway = createAgentGateway({
    handler,
    tls: { cert: certificate.certificatePem, key: certificate.privateKeyPem },
    errorCodePrefix: options.errorCodePrefix ?? burrow.errorPrefix,
    serverVersion: 'burrow',
    onError,
    ...(options.timers ? { timers: options.timers } : {}),
  });
  const address = await gateway.listen(host, options.port ?? 0);
  const serverAddr = hostPort(options.publicHost ?? address.host, address.port);
  services.listeners.set('agent', hostPort(address.host, address.port));
  const sweep = () => Promise.all([endSessionsOfGoneServers(burrow).catch(onError), releaseExpiredUrlHolds(burrow).catch(onError)]);
  await sweep();
  const timer = setInterval(() => void sweep(), options.sweepIntervalMs ?? DEFAULT_SWEEP_MS);
  timer.unref();
  const running = gateway;
  return {
    address,
    serverAddr,
    sessions: () => running.sessions(),
    async close() {
      clearInterval(timer);
      services.listeners.delete('agent');
      await running.close();
    },
  };
}

/** How sessions end whose agent reconnects by itself, expecting its URLs back. */
const CONNECTION_LOST: ReadonlySet<SessionEndReason['kind']> = new Set(['disconnected', 'heartbeat-timeout', 'peer-not-reading']);

/** A bind as the session path takes it. */
function bindOf(request: BindRequest): AgentBind {
  // What the agent said it forwards to, '' when it said nothing (the v2 CLI agent): never an invented address.
  const common = { forwards_to: request.forwardsTo, metadata: request.metadata };
  if (request.kind === 'labeled') return { proto: 'labeled', labels: request.labels, ...common };
  // The policy the agent binds with is checked as a stored one is (lib/policy/checker.ts), before any traffic.
  const policy = request.options.trafficPolicy ? { traffic_policy: request.options.trafficPolicy } : {};
  // The ingress routes this gateway's sessions: a TCP bind gets a real port when one runs.
  // A rebind after a reconnect sends the address it was given back, with the bind token it was told (see lib's AddressBind.token).
  if (request.proto === 'tcp') return { proto: 'tcp', ...(request.options.addr ? { addr: request.options.addr } : {}), ...(request.token ? { token: request.token } : {}), listened: true, ...policy, ...common };
  const hostname = request.options.hostname || request.options.domain;
  // An HTTP bind's ForwardsProto (SDK appProtocol) is the protocol the ingress speaks down its proxy streams.
  const upstream = request.proto !== 'tls' && request.forwardsProto ? { upstream_protocol: request.forwardsProto } : {};
  return { proto: request.proto, ...(hostname ? { hostname } : {}), ...(request.options.subdomain ? { subdomain: request.options.subdomain } : {}), ...policy, ...upstream, ...common };
}

/**
 * The session path's refusals as the agent sees them: the code and message of the API's error,
 * except an unknown token, which the vendor's agent knows as 107 (a token that looks right but is
 * not valid).
 */
async function refusals<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.code === AGENTS_ERRORS.AGENT_CREDENTIAL_UNKNOWN.code) throw new AgentGatewayError(AUTHTOKEN_INVALID, `The authtoken you specified is not valid: ${error.message.replace(/^token: /, '')}. Use the token of a tunnel credential (POST /credentials).`);
    throw new AgentGatewayError(error.code, error.message);
  }
}

/** The vendor's code for a well-formed authtoken that is not valid. */
const AUTHTOKEN_INVALID = 107;
