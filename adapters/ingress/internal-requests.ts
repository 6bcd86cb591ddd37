import { request, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { ConnectionFacts, EndpointFacts, HeaderList } from '../../lib/traffic/facts.ts';
import { unmappedIp } from '../addresses.ts';

/**
 * The http-request action's calls to internal endpoints (`https://api.internal`), routed as the
 * vendor routes them: to the internal endpoint of that name of the calling endpoint's account,
 * through the service itself rather than DNS (ngrok-docs traffic-policy/actions/http-request.mdx,
 * "Internal endpoint behavior"). Burrow sends the request to its own HTTP listener on a connection
 * it marks as this account's internal call (by the connection's address and port, while it is
 * open), and the HTTP ingress routes that connection's requests to the account's internal
 * endpoints (routes.ts `internal`) — so the internal endpoint's policy runs, its agent or cloud
 * endpoint answers, and the exchange is journaled, as for any request. A call made while serving
 * an internal call counts one hop more; past MAX_INTERNAL_HOPS it fails (the reference's loop
 * protection: "more than 3 times").
 */

/** What the HTTP ingress needs of a marked connection: whose internal endpoints, by which scheme. */
export interface InternalCall {
  readonly account: string;
  readonly scheme: 'http' | 'https';
  readonly hops: number;
}

export const MAX_INTERNAL_HOPS = 3;

/** Whether `hostname` names an internal endpoint (`*.internal`). */
export const isInternalHost = (hostname: string) => hostname === 'internal' || hostname.endsWith('.internal');

const key = (address: string | undefined, port: number | undefined) => `${unmappedIp(address)}|${port ?? 0}`;

export class InternalRequests {
  readonly #calls = new Map<string, InternalCall>();
  #listener: { readonly host: string; readonly port: number } | undefined;

  /** The HTTP listener internal calls go to (none: they fail, naming it). */
  listen(listener: { readonly host: string; readonly port: number }): void {
    this.#listener = listener;
  }

  /** The address internal calls go to (`res.resolved_ip` of their answers). */
  get address(): string {
    const host = this.#listener?.host ?? '';
    return host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  }

  /** The internal call a connection of the HTTP listener carries, if an http-request action opened it. */
  of(socket: Socket): InternalCall | undefined {
    return this.#calls.get(key(socket.remoteAddress, socket.remotePort));
  }

  /** Sends one request to the internal endpoint of `url` of `from`'s account; its answer, as fetch gives one. */
  async send(url: URL, call: { readonly method: string; readonly headers: HeaderList; readonly body?: string; readonly signal: AbortSignal }, from: { readonly endpoint: EndpointFacts; readonly conn: ConnectionFacts }): Promise<Response> {
    const listener = this.#listener;
    if (!listener) throw new Error(`${url.href} is not requested: internal endpoints are reached through Burrow's HTTP ingress listener, which is off`);
    const hops = (this.#calls.get(key(from.conn.clientIp, from.conn.clientPort))?.hops ?? 0) + 1;
    if (hops > MAX_INTERNAL_HOPS) throw new Error(`${url.href} is not requested: the request has looped through internal endpoints more than ${MAX_INTERNAL_HOPS} times`);
    const socket = connect({ host: this.address, port: listener.port });
    const closed = () => socket.destroy();
    // The action's timeout covers the answer's body too: the connection is closed when it passes.
    call.signal.addEventListener('abort', closed, { once: true });
    socket.once('close', () => call.signal.removeEventListener('abort', closed));
    try {
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).on('error', reject));
      // Marked before the first byte is written: the ingress reads the mark when the request head arrives.
      const mark = key(socket.localAddress, socket.localPort);
      this.#calls.set(mark, { account: from.endpoint.account ?? '', scheme: url.protocol === 'https:' ? 'https' : 'http', hops });
      socket.once('close', () => this.#calls.delete(mark));
      const req = request({ createConnection: () => socket, method: call.method, path: `${url.pathname}${url.search}`, headers: [['Host', url.host], ...call.headers].flat(), setHost: false, signal: call.signal });
      req.end(call.method === 'GET' ? undefined : call.body);
      const res = await new Promise<IncomingMessage>((resolve, reject) => req.once('response', resolve).on('error', reject));
      const headers = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      res.once('end', closed);
      return new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, { status: res.statusCode ?? 502, headers });
    } catch (error) {
      closed();
      throw call.signal.aborted ? Object.assign(new Error('timed out'), { name: 'TimeoutError' }) : error;
    }
  }
}
