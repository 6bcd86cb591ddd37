import type { Socket } from 'node:net';

/**
 * Socket addresses as the network edges (agent gateway, SSH gateway, ingress) report and print
 * them: one place for how an address is written.
 */

/** A peer's address as the edges report it. */
export interface RemoteAddress {
  /** IPv4 addresses plain (`127.0.0.1`), not IPv4-mapped IPv6. */
  readonly ip: string;
  readonly port: number;
}

/** An address without its IPv4-mapped form: IPv4 peers of a dual-stack listener appear as `::ffff:a.b.c.d`. */
export const unmappedIp = (ip: string | undefined): string => (ip?.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : (ip ?? ''));

/** The peer of `socket`, its address unmapped. */
export const remoteAddress = (socket: Socket): RemoteAddress => ({ ip: unmappedIp(socket.remoteAddress), port: socket.remotePort ?? 0 });

/** `host:port`, with IPv6 hosts bracketed (as listeners are named and the agent's proxy header takes it). */
export const hostPort = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;
