import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { ConnectionFacts, TlsFacts } from '../../lib/traffic/facts.ts';
import { unmappedIp } from '../addresses.ts';

/**
 * What the ingress knows of a client connection beyond its socket, kept by socket for its
 * listeners to share: when it started (the TLS connection's start for requests the TLS ingress
 * terminated), the TLS session, and the endpoint whose on_tcp_connect already ran for it.
 */
export interface ConnectionInfo {
  readonly startedAt: Date;
  readonly tls?: TlsFacts;
  readonly connectRanFor?: string;
}

/** Connection records by socket (the HTTP server's sockets: plain, or TLS ones the TLS ingress handed it). */
export type Connections = WeakMap<Socket, ConnectionInfo>;

/** What the policy engine is told about a client connection, from its socket. */
export function connectionFacts(socket: Socket, startedAt: Date, tls?: TlsFacts): ConnectionFacts {
  return {
    clientIp: unmappedIp(socket.remoteAddress),
    clientPort: socket.remotePort ?? 0,
    serverIp: unmappedIp(socket.localAddress),
    serverPort: socket.localPort ?? 0,
    startedAt,
    ...(tls ? { tls } : {}),
  };
}

/** The TLS session the ingress terminated, as the policy's `conn.tls.*` variables read it. */
export function tlsFacts(socket: TLSSocket, serverCertificate: string, ja4Fingerprint: string): TlsFacts {
  const version = socket.getProtocol() ?? '';
  return {
    version: version.replace(/^TLSv/, ''),
    cipherSuite: socket.getCipher()?.standardName ?? '',
    sni: typeof socket.servername === 'string' ? socket.servername : '',
    ...(typeof socket.alpnProtocol === 'string' ? { negotiatedAlpn: socket.alpnProtocol } : {}),
    sessionResumed: socket.isSessionReused(),
    serverCertificate,
    ja4Fingerprint,
  };
}

/**
 * Carries bytes both ways between a client and an agent's proxy stream until either side ends
 * (its end written through to the other) or fails; then both close. With pipe and one listener
 * per event, not two stream.pipeline calls: those add end-of-stream listeners to each side twice,
 * and a client socket that node's server, the trace and the ingress already watch went past
 * node's ten 'close' listeners (MaxListenersExceededWarning in every WebSocket test).
 */
export function joinStreams(client: Duplex, upstream: Duplex): void {
  const done = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const [from, to] of [
    [client, upstream],
    [upstream, client],
  ] as const) {
    // Done once what one side sent is written through to the other, or when a side fails or
    // closes before its end (an end then waits for the write to flush, as pipeline's did).
    from.pipe(to).once('finish', done);
    from.once('error', done).once('close', () => {
      if (!from.readableEnded) done();
    });
  }
}
