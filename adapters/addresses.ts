import type { Socket } from 'node:net';

/**
 * Socket addresses as the network edges (agent gateway, SSH gateway, ingress) report and print
 * them: one place for how an address is written.
 */

/** An address without its IPv4-mapped form: IPv4 peers of a dual-stack listener appear as `::ffff:a.b.c.d`. */
export const unmappedIp = (ip: string | undefined): string => (ip?.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : (ip ?? ''));

/** The peer of `socket`, its address unmapped. */
export const remoteAddress = (socket: Socket): { ip: string; port: number } => ({ ip: unmappedIp(socket.remoteAddress), port: socket.remotePort ?? 0 });

/** `host:port`, with IPv6 hosts bracketed (as listeners are named and the agent's proxy header takes it). */
export const hostPort = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;
