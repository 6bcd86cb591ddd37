import { X509Certificate } from 'node:crypto';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { CLUSTER_SCOPE, findHeldTunnel, findHeldTunnelById, signServerCertificate, type BurrowCore, type HeldTunnel, type StoredRecord } from '../../lib/index.ts';
import { EDGE_TYPES, type AgentTunnel, type EdgeType, type ProxyOptions, type RoutableSession, type SessionEndReason } from '../agent-gateway/index.ts';
import { readAll } from '../../lib/store.ts';
import { hostPort } from '../addresses.ts';
import type { BoundAddress, ListenAddress } from '../ingress/ingress.ts';
import type { HeldAgentTunnel, LiveSessions, RemoteAgents } from '../ingress/routes.ts';

/**
 * The link between servers sharing one store (issue 45): any server's ingress reaches an agent
 * whose session another server holds. The ingress that took a connection finds the endpoint's
 * tunnel in the store (lib findHeldTunnel: the tunnel URL's index, the tunnel, its session, which
 * names its server), applies the endpoint's policy itself, and opens the proxy stream on the
 * holding server over this link; that server only carries the bytes to its local agent session.
 * Edges alike: a tunnel group backend's `tunnel_ids` (the store's record of the account's live
 * labeled tunnels matching its labels, on every server) are looked up by id (findHeldTunnelById),
 * so an edge's upstream may be a labeled tunnel another server holds; the edge's modules run here.
 *
 * - **Listener** (`--peer-addr HOST:PORT`): HTTP/2 over TLS, one long-lived connection per pair
 *   of servers, one HTTP/2 stream per relayed connection (so HTTP/2 flow control carries each,
 *   and a half-close is END_STREAM). `GET /tunnels/<id>` answers a held tunnel's bind (what the
 *   other ingress needs for the policy and TLS termination); `POST /tunnels/<id>/proxy` opens a
 *   proxy stream of it (headers `burrow-client-addr`, `burrow-passthrough-tls`, and for an edge's
 *   labeled tunnel `burrow-edge-type`, `burrow-proto`: what the agent is told); 404 when the
 *   tunnel is not held here.
 * - **Authenticated both ways** with certificates of the instance CA (lib/ca/instance-ca.ts):
 *   each server signs itself one at start (serverAuth and clientAuth), and keeps its address and
 *   the certificate's SHA-256 fingerprint in the store (CLUSTER_SCOPE, kind `peer`, id its server
 *   id: beside its liveness, the advisory lock of its channel). The listener asks for a client
 *   certificate and refuses one the CA did not sign; of signed ones it accepts only those a
 *   server registered (the CA also signs other certificates: kubernetes operators' bindings).
 *   A client checks the listener's certificate against the fingerprint its record names.
 * - **A server that dies**: its connection closes, the streams on it fail and every target
 *   reached through it is forgotten; a new connection is refused (or, for a restarted server on
 *   the same address, fails the fingerprint), so its endpoints answer the offline page at once
 *   through every server. An agent that reconnects elsewhere binds again: the store names its
 *   new server.
 * - **What is cached**: an endpoint URL's holder, and a labeled tunnel's, for TARGET_TTL_MS (a tunnel that moves between
 *   two live servers is found again after at most that; a URL no agent serves is looked up at
 *   every request, so a new bind is reachable at once), a tunnel's bind for as long as the
 *   connection to its server lives.
 */

const PEER_SCOPE = { account: CLUSTER_SCOPE, kind: 'peer' };
/** The name peer certificates carry (they are pinned by fingerprint; the name is never routed). */
const PEER_NAME = 'peer.burrow.invalid';
const TARGET_TTL_MS = 1_000;
/** Targets and tunnels' binds kept at most (each cache is emptied when full). */
const MAX_KEPT = 10_000;
const CONNECT_TIMEOUT_MS = 2_000;
/** HTTP/2 windows: the default 64 KiB would cap a relayed stream's throughput at 64 KiB per round trip. */
const WINDOW = 4 * 1024 * 1024;
const SETTINGS: http2.Settings = { initialWindowSize: WINDOW, maxConcurrentStreams: 10_000 };

/** A server's entry in the store. */
interface PeerRecord extends StoredRecord {
  /** `host:port` of its listener, or '' for a server that only relays out. */
  readonly addr: string;
  readonly fingerprint: string;
}

export interface PeerLinkOptions {
  /** Listen here for the other servers (`--peer-addr`); without it this server only reaches out. */
  readonly listen?: ListenAddress;
  /** The agent sessions this server holds, served to the others. */
  readonly sessions: LiveSessions;
  readonly onError?: (error: unknown) => void;
}

export interface PeerLink {
  /** Where the listener listens, when it does. */
  readonly address: BoundAddress | undefined;
  /** The agents the other servers hold, for the ingress (adapters/ingress/routes.ts). */
  readonly remote: RemoteAgents;
  close(): Promise<void>;
}

/** Starts the link of `burrow` (a store several servers share); see the file comment. */
export async function startPeerLink(burrow: BurrowCore<any>, options: PeerLinkOptions): Promise<PeerLink> {
  const onError = options.onError ?? (() => undefined);
  const serverId = await burrow.services.liveAgents.serverId();
  const ca = await burrow.services.ca();
  const own = await signServerCertificate(ca, { now: new Date(), dnsNames: [PEER_NAME], clientAuth: true });
  const fingerprint = new X509Certificate(own.certificatePem).fingerprint256;
  const tls = { key: own.privateKeyPem, cert: own.certificatePem, ca: [ca.certificatePem] };

  let address: BoundAddress | undefined;
  let server: http2.Http2SecureServer | undefined;
  const inbound = new Set<http2.ServerHttp2Session>();
  if (options.listen) {
    server = serveLink(burrow, tls, options.sessions, onError);
    server.on('session', (session: http2.ServerHttp2Session) => {
      inbound.add(session);
      session.once('close', () => inbound.delete(session));
    });
    address = await new Promise<BoundAddress>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(options.listen!.port ?? 0, options.listen!.host ?? '127.0.0.1', () => {
        server!.off('error', reject);
        const bound = server!.address() as AddressInfo;
        resolve({ host: bound.address, port: bound.port });
      });
    });
    burrow.services.listeners.set('peer', hostPort(address.host, address.port));
  }
  await register(burrow, { id: serverId, addr: address ? hostPortOf(options.listen?.host, address) : '', fingerprint });
  const remote = new RemoteSessions(burrow, serverId, tls, onError);
  return {
    address,
    remote,
    async close() {
      remote.close();
      burrow.services.listeners.delete('peer');
      if (server) {
        const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
        // The other servers' connections are long-lived: they end now (their streams with them).
        for (const session of inbound) session.destroy();
        await closed;
      }
      await burrow.store.transaction((tx) => tx.delete(PEER_SCOPE, serverId)).catch(() => undefined);
    },
  };
}

/** `host:port` the others dial: the host asked for (a wildcard one is this host's loopback). */
function hostPortOf(host: string | undefined, bound: BoundAddress): string {
  return hostPort(host === undefined || host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, bound.port);
}

/** Keeps this server's entry, and drops the entries of servers that are no longer alive. */
async function register(burrow: BurrowCore<any>, record: PeerRecord): Promise<void> {
  const known = await readAll(burrow.reader, PEER_SCOPE);
  const alive = await burrow.services.liveAgents.alive(known.map((peer) => peer.id));
  await burrow.store.transaction(async (tx) => {
    for (const peer of known) if (!alive.has(peer.id) && peer.id !== record.id) await tx.delete(PEER_SCOPE, peer.id);
    await tx.put(PEER_SCOPE, record);
  });
}

type TlsFiles = { readonly key: string; readonly cert: string; readonly ca: string[] };

/** The listener: mutual TLS, then only registered servers' certificates; streams as in the file comment. */
function serveLink(burrow: BurrowCore<any>, tls: TlsFiles, sessions: LiveSessions, onError: (error: unknown) => void): http2.Http2SecureServer {
  const server = http2.createSecureServer({ ...tls, requestCert: true, rejectUnauthorized: true, settings: SETTINGS, allowHTTP1: false });
  const verified = new WeakMap<object, Promise<boolean>>();
  const isPeer = async (socket: TLSSocket) => {
    const presented = socket.getPeerX509Certificate()?.fingerprint256;
    if (!presented) return false;
    return (await readAll(burrow.reader, PEER_SCOPE)).some((peer) => peer.fingerprint === presented);
  };
  server.on('session', (session) => {
    session.on('error', () => undefined);
    const check = isPeer(session.socket as TLSSocket).catch(() => false);
    verified.set(session, check);
    void check.then((ok) => {
      if (ok) session.setLocalWindowSize(WINDOW);
      else session.destroy();
    });
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    void (verified.get(stream.session!) ?? Promise.resolve(false)).then((ok) => {
      if (!ok) return stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      answer(stream, headers);
    });
  });
  server.on('sessionError', onError);
  const held = (tunnelId: string) => {
    for (const session of sessions()) {
      if (session.ended) continue;
      for (const tunnel of session.tunnels()) if (tunnel.tunnelId === tunnelId) return { session, tunnel };
    }
    return undefined;
  };
  const answer = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const match = /^\/tunnels\/([^/]+)(\/proxy)?$/.exec(String(headers[':path']));
    const found = match ? held(decodeURIComponent(match[1]!)) : undefined;
    if (!match || !found) return stream.respond({ ':status': 404 }, { endStream: true });
    if (!match[2]) {
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      const { tunnelId, bindId, request, url } = found.tunnel;
      return stream.end(JSON.stringify({ sessionId: found.session.id, account: (found.session.context as { account?: string }).account ?? '', tunnel: { tunnelId, bindId, request, url } }));
    }
    const [passthrough, edgeType, proto] = [headers['burrow-passthrough-tls'], String(headers['burrow-edge-type'] ?? ''), headers['burrow-proto']];
    let upstream: Duplex;
    try {
      upstream = found.session.openProxy(found.tunnel.tunnelId, {
        clientAddr: String(headers['burrow-client-addr'] ?? ''),
        ...(passthrough === undefined ? {} : { passthroughTls: passthrough === '1' }),
        ...(Object.hasOwn(EDGE_TYPES, edgeType) ? { edgeType: edgeType as EdgeType } : {}),
        ...(proto === undefined ? {} : { proto: String(proto) }),
      });
    } catch (error) {
      onError(error);
      return stream.respond({ ':status': 502 }, { endStream: true });
    }
    stream.respond({ ':status': 200 });
    splice(stream, upstream);
  };
  return server;
}

/** Carries bytes both ways; an end is passed on as a half-close, a failure destroys both. */
function splice(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const fail = () => {
    a.destroy();
    b.destroy();
  };
  a.once('error', fail).once('close', () => b.destroy());
  b.once('error', fail).once('close', () => a.destroy());
}

/** What a held tunnel's server answers about it. */
interface Described {
  readonly sessionId: string;
  readonly account: string;
  readonly tunnel: AgentTunnel;
}

/** The JSON of a bind carries its certificate and key bytes (TLS termination) as node writes a Buffer. */
const reviveBuffers = (_key: string, value: unknown) =>
  value && typeof value === 'object' && (value as { type?: unknown }).type === 'Buffer' && Array.isArray((value as { data?: unknown }).data) ? Buffer.from((value as { data: number[] }).data) : value;

/** One connection to another server, and the tunnels of it this server reached. */
class Peer {
  readonly tunnels = new Map<string, Promise<HeldAgentTunnel | undefined>>();
  constructor(readonly id: string, readonly fingerprint: string, readonly session: http2.ClientHttp2Session) {}
  get closed(): boolean {
    return this.session.closed || this.session.destroyed;
  }
}

/** The other servers' agents, as the ingress finds them (RemoteAgents). */
class RemoteSessions implements RemoteAgents {
  readonly #peers = new Map<string, Promise<Peer | undefined>>();
  readonly #targets = new Map<string, { readonly at: number; readonly held: Promise<HeldAgentTunnel | undefined> }>();
  #closed = false;

  constructor(
    readonly burrow: BurrowCore<any>,
    readonly serverId: string,
    readonly tls: TlsFiles,
    readonly onError: (error: unknown) => void,
  ) {}

  find(urls: readonly string[]): Promise<HeldAgentTunnel | undefined> {
    // The URLs' lookups leave together (one round trip to a database), the first held one wins.
    return this.#cached(urls.join(' '), async () => (await Promise.all(urls.map((url) => findHeldTunnel(this.burrow.reader, url)))).find((found) => found !== undefined));
  }

  tunnel(account: string, tunnelId: string): Promise<HeldAgentTunnel | undefined> {
    // A URL has a scheme, so this key never meets one of find's.
    return this.#cached(`${account}/${tunnelId}`, () => findHeldTunnelById(this.burrow.reader, account, tunnelId));
  }

  /** The tunnel `lookup` finds in the store, reached over the link; kept under `key` for TARGET_TTL_MS while its connection lives. */
  async #cached(key: string, lookup: () => Promise<HeldTunnel | undefined>): Promise<HeldAgentTunnel | undefined> {
    const now = performance.now();
    const cached = this.#targets.get(key);
    if (cached && now - cached.at < TARGET_TTL_MS) {
      const held = await cached.held;
      if (held && !held.session.ended) return held;
    }
    const held = lookup().then((where) => this.#reach(where));
    if (this.#targets.size >= MAX_KEPT) this.#targets.clear();
    this.#targets.set(key, { at: now, held });
    return held;
  }

  /** The tunnel held `where`, as a session of the link to its server; undefined when this server holds it or its server cannot be reached. */
  async #reach(where: HeldTunnel | undefined): Promise<HeldAgentTunnel | undefined> {
    if (!where || where.server === this.serverId) return undefined;
    const peer = await this.#peer(where.server);
    if (!peer) return undefined;
    let described = peer.tunnels.get(where.tunnelId);
    if (!described) {
      // Tunnels that ended are not told of: the map is emptied when it grows past what live tunnels need.
      if (peer.tunnels.size >= MAX_KEPT) peer.tunnels.clear();
      peer.tunnels.set(where.tunnelId, (described = this.#describe(peer, where.tunnelId)));
    }
    const held = await described;
    if (!held) peer.tunnels.delete(where.tunnelId);
    return held;
  }

  /** The connection to server `id` (made once, remade after it closed); undefined when it cannot be reached. */
  async #peer(id: string): Promise<Peer | undefined> {
    let pending = this.#peers.get(id);
    if (pending) {
      const made = await pending;
      if (made && !made.closed) return made;
      if (this.#peers.get(id) === pending) this.#peers.delete(id);
    }
    pending = this.#peers.get(id) ?? this.#connect(id);
    this.#peers.set(id, pending);
    const made = await pending;
    if (!made && this.#peers.get(id) === pending) this.#peers.delete(id);
    return made;
  }

  async #connect(id: string): Promise<Peer | undefined> {
    if (this.#closed) return undefined;
    const record = (await this.burrow.reader.get(PEER_SCOPE, id)) as PeerRecord | undefined;
    if (!record?.addr) return undefined;
    const session = http2.connect(`https://${record.addr}`, {
      ...this.tls,
      servername: PEER_NAME,
      settings: SETTINGS,
      checkServerIdentity: (_name, cert) => (cert.fingerprint256 === record.fingerprint ? undefined : new Error(`server ${id} at ${record.addr} presented another certificate than it registered`)),
    });
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), CONNECT_TIMEOUT_MS);
      session.once('connect', () => {
        clearTimeout(timer);
        resolve(true);
      });
      session.once('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (!ready) {
      session.destroy();
      return undefined;
    }
    session.setLocalWindowSize(WINDOW);
    session.on('error', () => undefined);
    session.unref();
    const peer = new Peer(id, record.fingerprint, session);
    // Gone (died, closed): its sessions are ended, so what was reached through it is looked up afresh.
    return peer;
  }

  async #describe(peer: Peer, tunnelId: string): Promise<HeldAgentTunnel | undefined> {
    const body = await new Promise<string | undefined>((resolve) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = peer.session.request({ ':method': 'GET', ':path': `/tunnels/${encodeURIComponent(tunnelId)}` });
      } catch {
        return resolve(undefined);
      }
      const chunks: Buffer[] = [];
      let ok = false;
      stream.on('response', (headers) => (ok = headers[':status'] === 200));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve(ok ? Buffer.concat(chunks).toString('utf8') : undefined));
      stream.on('error', () => resolve(undefined));
      stream.on('close', () => resolve(undefined));
    });
    if (body === undefined) return undefined;
    const described = JSON.parse(body, reviveBuffers) as Described;
    return { session: remoteSession(peer, described), tunnel: described.tunnel, account: described.account };
  }

  close(): void {
    this.#closed = true;
    for (const peer of this.#peers.values()) void peer.then((made) => made?.session.close());
    this.#peers.clear();
    this.#targets.clear();
  }
}

/** A session another server holds, as the ingress uses one: its proxy streams are streams of the link. */
function remoteSession(peer: Peer, described: Described): RoutableSession<unknown> {
  const gone: SessionEndReason = { kind: 'disconnected', message: `the connection to server ${peer.id}, which holds the session, closed` };
  return {
    id: described.sessionId,
    context: { account: described.account },
    get ended() {
      return peer.closed ? gone : undefined;
    },
    tunnels: () => [described.tunnel],
    openProxy(tunnelId: string, proxy: ProxyOptions): Duplex {
      const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': `/tunnels/${encodeURIComponent(tunnelId)}/proxy`, 'burrow-client-addr': proxy.clientAddr };
      if (proxy.passthroughTls !== undefined) headers['burrow-passthrough-tls'] = proxy.passthroughTls ? '1' : '0';
      if (proxy.edgeType !== undefined) headers['burrow-edge-type'] = proxy.edgeType;
      if (proxy.proto !== undefined) headers['burrow-proto'] = proxy.proto;
      const stream = peer.session.request(headers, { endStream: false });
      stream.once('response', (answer) => {
        if (answer[':status'] !== 200) {
          peer.tunnels.delete(tunnelId);
          stream.destroy(new Error(`the server holding tunnel ${tunnelId} no longer has it (${answer[':status']})`));
        }
      });
      return stream;
    },
  };
}
