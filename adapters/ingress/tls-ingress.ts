import { X509Certificate } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';
import type { BurrowCore } from '../../lib/burrow.ts';
import { LIMITS } from '../../lib/limits.ts';
import { clientChainProblem } from '../../lib/policy/certificates.ts';
import type { TlsTermination } from '../../lib/traffic/decisions.ts';
import type { TlsFacts } from '../../lib/traffic/facts.ts';
import { isDnsName } from '../../lib/conventions/acl.ts';
import type { IngressCertificates, ServedCertificate } from './certificates.ts';
import { CLIENT_HELLO_MAX_BYTES, clientHelloOf, ClientHelloError, type ClientHello } from './client-hello.ts';
import type { Carrier } from './carry.ts';
import type { HttpIngress } from './http-ingress.ts';
import { tlsFacts, type Connections } from './connections.ts';
import type { IngressRoutes, IngressTarget, StreamTarget } from './routes.ts';

/**
 * The TLS ingress: TLS connections routed by their server name (SNI), read from the ClientHello
 * before any TLS is spoken (client-hello.ts).
 *
 * - A TLS endpoint of the name (an agent's `tls://` bind), else a TLS edge holding `name:443`:
 *   its on_tcp_connect runs (carry.ts; an edge's modules: ip_restriction, tls_termination at the
 *   edge with mutual_tls, policy, traffic_policy); unless it decides to terminate (terminate-tls,
 *   the agent's own termination options, an edge's tls_termination at `edge`), the connection's
 *   bytes, ClientHello included, go to the agent's tunnel or the edge's upstream untouched and the
 *   service terminates TLS itself; terminated here, the plain bytes go instead. Either way the
 *   connection is journaled (`tcp_connection_closed.v0`, server name the SNI).
 * - Any other name: Burrow terminates TLS with the name's certificate (certificates.ts) and hands
 *   the connection to the HTTP ingress, which routes its requests by Host to HTTPS endpoints; the
 *   on_tcp_connect of the name's HTTPS endpoint runs once, before the handshake, and decides its
 *   TLS versions and client certificates.
 * - terminate-tls, for either, terminates TLS as it runs (the engine is handed the handshake), so
 *   later rules of on_tcp_connect read the session (`actions.ngrok.terminate_tls.*`).
 *
 * A connection without a server name, with bytes that are no ClientHello, or refused by the policy
 * is closed (there is no TLS session to answer an HTTP page on).
 */

export interface TlsIngressOptions {
  readonly routes: IngressRoutes;
  /** Connections carried as bytes (carry.ts): on_tcp_connect runs through it for every name. */
  readonly carrier: Carrier;
  readonly certificates: IngressCertificates;
  /** The HTTP ingress: terminated connections are handed to it. */
  readonly http: HttpIngress;
  readonly connections: Connections;
  readonly onError: (error: unknown) => void;
}

/** The TLS ingress's server (not listening); see the file comment. */
export function createTlsIngress(burrow: BurrowCore<any>, options: TlsIngressOptions): Server {
  const { routes, carrier, certificates, onError } = options;

  async function accept(socket: Socket): Promise<void> {
    const startedAt = burrow.clock.now();
    socket.on('error', () => socket.destroy());
    // A deadline from connect, not an idle timeout: a ClientHello or handshake dribbled a byte at a
    // time must not hold the connection for longer than an honest slow client takes.
    const deadline = setTimeout(() => socket.destroy(), LIMITS.ingress_handshake_ms.value);
    socket.once('close', () => clearTimeout(deadline));
    const hello = await readClientHello(socket);
    if (!hello || !isDnsName(hello.serverName)) return void socket.destroy();
    const name = hello.serverName;
    // A TLS endpoint or edge takes the connection's bytes; any other name is served as HTTPS.
    const stream: StreamTarget | undefined = (await routes.tls(name)) ?? (await routes.tlsEdge(name));
    // Before the handshake only the name is known: an HTTPS edge's connection rules are its own, whatever the route.
    const target: IngressTarget | undefined = stream ?? (await routes.http(name, ['https'], '/'));
    // Traced from here: a connection on_tcp_connect refuses is journaled, an HTTPS one too; an
    // admitted HTTPS connection is handed to the HTTP journal, which records its exchanges.
    const carried = target ? carrier.start(socket, startedAt, name) : undefined;
    // HTTPS is served as HTTP/1.1 or HTTP/2, as the client's ALPN prefers; a TLS endpoint's bytes are its service's own.
    const alpn = stream ? ['http/1.1'] : ['h2', 'http/1.1'];
    let session: { secure: TLSSocket; tls: TlsFacts } | undefined;
    /** TLS as `termination` asks; terminate-tls runs it in on_tcp_connect, so later rules read the session. */
    const handshake = async (termination: TlsTermination | undefined) => {
      socket.unshift(hello.bytes);
      const served = termination?.serverCertificate && termination.serverPrivateKey ? ownCertificate(termination) : await certificates.for(name, target !== undefined);
      const secure = await terminate(socket, served, termination, alpn);
      if (typeof secure === 'string') return { failed: secure };
      // The client's chain, when mutual TLS asked for one (conn.tls.client.*); checked in terminate unless the strategy is `request`.
      const clientChain = termination?.mutualTls ? peerChain(secure) : [];
      session = { secure, tls: { ...tlsFacts(secure, served.certificatePem, hello.ja4Fingerprint), ...(clientChain.length > 0 ? { clientChain } : {}) } };
      return { tls: session.tls };
    };
    let termination: TlsTermination | undefined;
    if (target && carried) {
      const connected = await carrier.admit(socket, target, carried.conn, carried.trace, handshake);
      if (!connected) return;
      termination = connected.tls;
      if (!stream) carried.trace.handOver();
    }
    if (stream && carried && !termination) {
      socket.unshift(hello.bytes);
      clearTimeout(deadline);
      return carrier.join(socket, stream, carried.conn, carried.trace, true);
    }
    if (!session && 'failed' in (await handshake(termination))) return;
    clearTimeout(deadline);
    const { secure, tls } = session!;
    if (stream && carried) return carrier.join(secure, stream, carried.conn, carried.trace, false);
    options.connections.set(secure as unknown as Socket, { startedAt, tls, ...(target ? { connectRanFor: target.endpoint.id } : {}) });
    options.http.serveTls(secure);
  }

  /** The TLS session on `socket` as `termination` asks, once its handshake (and client certificate check) passed; else why it failed (the socket is closed). */
  function terminate(socket: Socket, served: ServedCertificate, termination: TlsTermination | undefined, alpn: string[]): Promise<TLSSocket | string> {
    const mutual = termination?.mutualTls;
    const context = termination ? createSecureContext({ cert: served.certificatePem, key: served.privateKeyPem, minVersion: `TLSv${termination.minVersion}`, maxVersion: `TLSv${termination.maxVersion}` }) : served.context;
    const secure = new TLSSocket(socket, { isServer: true, secureContext: context, ALPNProtocols: alpn, requestCert: mutual !== undefined, rejectUnauthorized: false });
    return new Promise((resolve) => {
      const refuse = (problem: string) => {
        secure.destroy();
        resolve(problem);
      };
      const failed = (error: Error) => refuse(error.message);
      secure.once('error', failed);
      secure.once('secure', () => {
        secure.off('error', failed);
        secure.on('error', () => secure.destroy());
        if (mutual && mutual.strategy !== 'request') {
          const chain = peerChain(secure);
          const problem = mutual.strategy === 'require-any' ? (chain.length === 0 ? 'no client certificate was presented' : undefined) : clientChainProblem(chain, mutual.certificateAuthorities, new Date());
          if (problem) return refuse(problem);
        }
        resolve(secure);
      });
    });
  }

  const server = createServer((socket) =>
    void accept(socket).catch((error: unknown) => {
      onError(error);
      socket.destroy();
    }),
  );
  return server;
}

/** A certificate a policy brought (terminate-tls server_certificate). */
function ownCertificate(termination: TlsTermination): ServedCertificate {
  const certificatePem = termination.serverCertificate!;
  const privateKeyPem = termination.serverPrivateKey!;
  return { context: createSecureContext({ cert: certificatePem, key: privateKeyPem }), certificatePem, privateKeyPem };
}

/** The chain the client presented, leaf first, PEM. */
function peerChain(socket: TLSSocket): string[] {
  const chain: string[] = [];
  let current = socket.getPeerCertificate(true);
  while (current && current.raw && chain.length < 8) {
    chain.push(new X509Certificate(current.raw).toString());
    if (!current.issuerCertificate || current.issuerCertificate === current) break;
    current = current.issuerCertificate;
  }
  return chain;
}

/** Reads the ClientHello off `socket` (paused after it): its bytes and what clientHelloOf reads, or undefined when it is none. */
function readClientHello(socket: Socket): Promise<(ClientHello & { bytes: Buffer }) | undefined> {
  return new Promise((resolve) => {
    let bytes = Buffer.alloc(0);
    const finish = (result: (ClientHello & { bytes: Buffer }) | undefined) => {
      socket.off('data', onData).off('close', onClose);
      socket.pause();
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      try {
        const hello = clientHelloOf(bytes.subarray(0, CLIENT_HELLO_MAX_BYTES));
        if (hello) finish({ ...hello, bytes });
      } catch (error) {
        if (!(error instanceof ClientHelloError)) throw error;
        finish(undefined);
      }
    };
    const onClose = () => finish(undefined);
    socket.on('data', onData).once('close', onClose);
  });
}
