import { isIPv4 } from 'node:net';
import { parseNetwork } from '../../lib/conventions/cidr.ts';
import type { ConnectionFacts } from '../../lib/traffic/facts.ts';

/**
 * The PROXY protocol header (haproxy's proxy-protocol.txt, versions 1 and 2) an agent asks for with
 * its bind's `ProxyProto`: the edge writes it as the first bytes of each proxy stream, before the
 * client's; the vendor's agent (ngrok-rust `tunnel_ext.rs` `forward_to`, `proxy_proto.rs`) reads
 * it off the stream and writes it again in front of its connection to the upstream. It names the
 * client's address as the source and the ingress's address the client reached as the destination,
 * both TCP. When the two are of different families the IPv4 one is written IPv4-mapped, so the
 * header stays TCP6 rather than UNKNOWN.
 */

/** The protocol version a bind asks for (0: none). */
export type ProxyProtocolVersion = 0 | 1 | 2;

/** The v2 signature, twelve bytes. */
const V2_SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
/** Version 2, command PROXY. */
const V2_PROXY = 0x21;
/** Address family and transport: TCP over IPv4, TCP over IPv6. */
const V2_TCP4 = 0x11;
const V2_TCP6 = 0x21;

/** The header for `conn` in `version`; an empty buffer for version 0. */
export function proxyProtocolHeader(version: ProxyProtocolVersion, conn: ConnectionFacts): Buffer {
  if (version === 0) return Buffer.alloc(0);
  const v4 = isIPv4(conn.clientIp) && isIPv4(conn.serverIp);
  const [source, destination] = [conn.clientIp, conn.serverIp].map((ip) => (v4 || !isIPv4(ip) ? ip : `::ffff:${ip}`)) as [string, string];
  if (version === 1) return Buffer.from(`PROXY ${v4 ? 'TCP4' : 'TCP6'} ${source} ${destination} ${conn.clientPort} ${conn.serverPort}\r\n`, 'latin1');
  const addresses = Buffer.concat([addressBytes(conn.clientIp, v4), addressBytes(conn.serverIp, v4), port(conn.clientPort), port(conn.serverPort)]);
  const head = Buffer.from([V2_PROXY, v4 ? V2_TCP4 : V2_TCP6, addresses.length >> 8, addresses.length & 0xff]);
  return Buffer.concat([V2_SIGNATURE, head, addresses]);
}

/** An address's bytes: 4 in an IPv4 header, else 16 (an IPv4 address mapped). */
function addressBytes(ip: string, v4: boolean): Buffer {
  const bytes = parseNetwork(ip).bytes;
  return Buffer.from(v4 || bytes.length === 16 ? bytes : [...Array<number>(10).fill(0), 0xff, 0xff, ...bytes]);
}

const port = (value: number) => Buffer.from([value >> 8, value & 0xff]);
