import { createECDH, createPrivateKey, hkdfSync } from 'node:crypto';
import {
  ApiError,
  bindAgentTunnel,
  ERRORS,
  findSshCredentialAccounts,
  openAgentSession,
  type AgentBind,
  type AgentCommandReply,
  type BurrowCore,
} from '../../lib/index.ts';
import { hostPort } from '../addresses.ts';
import { endLiveSession, type AgentSessionLog } from '../session-events.ts';
import type { Timers } from '../gateway-connection/timers.ts';
import type { SshBindRequest } from './command.ts';
import { routableSession } from './routable.ts';
import type { RoutableSession } from '../agent-gateway/session-handler.ts';
import { createSshGateway, type SshGateway, type SshGatewayAddress } from './gateway.ts';
import { SshGatewayError, type SshPublicKey, type SshSession, type SshSessionHandler } from './session-handler.ts';

/**
 * The SSH gateway over a Burrow instance: OpenSSH clients authenticate with a public key registered
 * as an SSH credential, and their sessions, binds and disconnects take the one session path
 * (lib/families/agents/agent-sessions.ts), as the agent gateway's and the simulator's do: the
 * session has transport `ssh`, the credential's ACL applies to the bind, the account's `agent` IP
 * restriction to the client's address. Each live session is held in `services.liveAgents`, so
 * deleting its credential or a stop through the API (from any server of the store) closes the
 * connection; an SSH client cannot restart or update, so those answer "unsupported".
 *
 * The host key is derived from the instance CA's private key (HKDF), so every server of one store
 * presents the same host key across restarts, with nothing more to keep, and the CA's own key
 * never signs for SSH.
 */

export interface SshGatewayStartOptions {
  /** Address to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 0: any free one). */
  readonly port?: number;
  /** The region of its sessions (default: the first of the instance's simulated regions). */
  readonly region?: string;
  /** The gateway's timeouts (tests drive them by hand). */
  readonly timers?: Timers;
  /** A failure of the gateway or the store while a client was served (default: ignored). */
  readonly onError?: (error: unknown) => void;
  /** Each session opened and closed, for the server's log. */
  readonly onSession?: AgentSessionLog;
}

export interface RunningSshGateway {
  readonly address: SshGatewayAddress;
  /** `host:port` as clients dial it (`ssh -p PORT v2@HOST`). */
  readonly serverAddr: string;
  /** The host key clients see, as a known_hosts line without its host (`ecdsa-sha2-nistp256 AAAA…`). */
  readonly hostKey: string;
  /** The sessions this gateway holds now. */
  sessions(): SshSession<SshLiveContext>[];
  /** The same sessions as the ingress routes to them, beside the agent gateway's (routable.ts). */
  routableSessions(): RoutableSession<SshLiveContext>[];
  /** Stops listening and ends every session (their records go); resolves once all are recorded. */
  close(): Promise<void>;
}

/** What the gateway keeps on each live session. */
export interface SshLiveContext {
  readonly account: string;
  readonly release: () => void;
}

/** Starts the SSH gateway of `burrow`; see the file comment. */
export async function startSshGateway(burrow: BurrowCore<any>, options: SshGatewayStartOptions = {}): Promise<RunningSshGateway> {
  const services = burrow.services;
  const region = options.region ?? services.simulation.regions[0] ?? 'us';
  if (!services.simulation.regions.includes(region)) throw new Error(`region must be one of ${services.simulation.regions.join(', ')} (got ${region})`);
  const host = options.host ?? '127.0.0.1';
  const hostKey = hostKeyOf((await services.ca()).privateKeyPem);
  const serverId = await services.liveAgents.serverId();
  const prefix = burrow.errorPrefix;

  let gateway: SshGateway<SshLiveContext> | undefined;
  const liveSession = (id: string) => gateway?.sessions().find((session) => session.id === id);
  const refusals = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ApiError) throw new SshGatewayError(`${error.message} (${prefix}${error.code})`);
      throw error;
    }
  };

  const handler: SshSessionHandler<SshLiveContext> = {
    async acceptsKey(key) {
      return (await findSshCredentialAccounts(burrow.reader, key.fingerprint)).length > 0;
    },
    async authenticate(key, login, remote) {
      const account = await accountOf(burrow, key, login.user);
      const opened = await refusals(() =>
        openAgentSession(burrow, {
          proof: { account_id: account, ssh_public_key: `${key.algorithm} ${key.blob.toString('base64')}` },
          ip: remote.ip,
          os: '',
          agent_version: login.software,
          metadata: '',
          region,
          update_checks: false,
          server: serverId,
        }),
      );
      const id = opened.session.id;
      const release = services.liveAgents.hold(id, {
        command: async (kind): Promise<AgentCommandReply> => {
          if (kind !== 'stop') return { outcome: 'unsupported', message: `an SSH client (ssh -R) cannot ${kind}` };
          liveSession(id)?.close('the session was stopped through the API');
          return { outcome: 'ok' };
        },
        close: (message) => liveSession(id)?.close(message),
      });
      options.onSession?.({ event: 'opened', id, transport: 'ssh', account: opened.account, agentVersion: login.software, client: remote });
      return { sessionId: id, context: { account: opened.account, release }, region, accountName: opened.account };
    },
    async bind(session, request) {
      const bound = await refusals(() => bindAgentTunnel(burrow, session.context.account, session.id, bindOf(request)));
      return { tunnelId: bound.tunnelId, url: bound.url! };
    },
    sessionEnded: (session, reason) => endLiveSession(burrow, 'ssh', session, reason, options.onSession),
  };

  gateway = createSshGateway({
    handler,
    hostKeys: [hostKey],
    serviceName: 'burrow',
    ...(options.onError ? { onError: options.onError } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
  });
  const address = await gateway.listen(host, options.port ?? 0);
  const serverAddr = hostPort(address.host, address.port);
  services.listeners.set('ssh', serverAddr);
  const running = gateway;
  return {
    address,
    serverAddr,
    hostKey: running.hostKeys()[0]!,
    sessions: () => running.sessions(),
    routableSessions: () => running.sessions().map(routableSession),
    async close() {
      services.listeners.delete('ssh');
      await running.close();
    },
  };
}

/**
 * The account a key logs into: the one whose SSH credential has it. A key registered in several
 * accounts needs the user name to be the account's id (`ssh … acc_…@host`, which the command
 * grammar reads as the latest syntax version).
 */
async function accountOf(burrow: BurrowCore<any>, key: SshPublicKey, user: string): Promise<string> {
  const accounts = await findSshCredentialAccounts(burrow.reader, key.fingerprint);
  if (accounts.includes(user)) return user;
  if (accounts.length === 1) return accounts[0]!;
  if (accounts.length === 0) throw new SshGatewayError(`no SSH credential has the key ${key.fingerprint}`);
  throw new SshGatewayError(`the key ${key.fingerprint} is an SSH credential of ${accounts.length} accounts (${accounts.join(', ')}): log in as <account id>@host to choose one`);
}

/**
 * The bind as the session path takes it (basic auth and header policies are not kept by it yet). A
 * TCP bind gets a listening port of the ingress when one runs, as an agent's does: its connections
 * reach the client as forwarded-tcpip channels.
 */
function bindOf(request: SshBindRequest): AgentBind {
  // `ssh -R 0:localhost:8080` keeps its local target to itself (tcpip-forward carries only the remote
  // address and port): the tunnel's forwards_to says nothing rather than an invented address.
  const common = { forwards_to: '' };
  if (request.proto === 'tcp') return { proto: 'tcp', ...(request.name ? { addr: request.name } : {}), listened: true, ...common };
  return { proto: request.proto, ...(request.name ? { hostname: request.name } : {}), ...common };
}

/**
 * An ECDSA P-256 host key derived from the CA's private key: HKDF over its PKCS#8 form gives the
 * scalar (a counter moves on in the ~2^-32 case of a value past the curve's order).
 */
function hostKeyOf(caPrivateKeyPem: string): string {
  const secret = createPrivateKey(caPrivateKeyPem).export({ type: 'pkcs8', format: 'der' });
  for (let counter = 0; ; counter++) {
    const scalar = Buffer.from(hkdfSync('sha256', secret, 'burrow', `ssh host key ${counter}`, 32));
    const ecdh = createECDH('prime256v1');
    try {
      ecdh.setPrivateKey(scalar);
    } catch {
      continue;
    }
    const point = ecdh.getPublicKey();
    const key = createPrivateKey({ key: { kty: 'EC', crv: 'P-256', d: scalar.toString('base64url'), x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }, format: 'jwk' });
    return key.export({ type: 'sec1', format: 'pem' }).toString();
  }
}

