import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { Socket } from 'node:net';
import { Writable, type Duplex, type Readable } from 'node:stream';
import type { HeaderList } from '../../lib/traffic/facts.ts';
import type { UpstreamRelay } from '../../lib/traffic/exchanges.ts';

/**
 * HTTP/2 to an agent's upstream: a bind whose `ForwardsProto` is `http2` (SDK `appProtocol("http2")`)
 * serves an app that speaks HTTP/2 only. The vendor's agent copies a proxy stream's bytes to its
 * upstream connection unchanged (for an `https://` upstream it offers ALPN h2 in its own TLS;
 * ngrok-rust `tunnel_ext.rs` `connect`/`tls_config`), so the edge speaks HTTP/2 with prior
 * knowledge (h2c, RFC 9113 §3.3) on the stream itself: one session per proxy stream, one request
 * per session, closed with the exchange.
 *
 * The request goes as the ingress parsed it: its fields as HTTP/2 headers (lower case; the Host as
 * `:authority`), its body as DATA frames ended with the stream, a Content-Length only when the
 * client's request had one. The answer is read like an HTTP/1.1 one (`statusCode`, `rawHeaders`
 * without pseudo-headers, the body streamed).
 */

/** The agent's answer as the ingress reads it, whichever protocol carried it (`rawTrailers` once the body ended). */
export type UpstreamAnswer = Readable & { readonly statusCode?: number | undefined; readonly rawHeaders: string[]; readonly rawTrailers?: string[] };

/** HTTP/2 fields as node's flat `rawHeaders` list, without pseudo-headers. */
const rawFields = (fields: IncomingHttpHeaders) =>
  Object.entries(fields).flatMap(([name, value]) => (name.startsWith(':') || value === undefined ? [] : (Array.isArray(value) ? value : [String(value)]).flatMap((one) => [name, one])));

/** A request on its way upstream: the body is written to it; it emits 'response' (an UpstreamAnswer) or 'error'. */
export interface UpstreamCall extends Writable {
  readonly reusedSocket: boolean;
  /** How the request goes (node's HTTP client, which has none, sends on a stream of its own). */
  readonly relay?: UpstreamRelay;
  /**
   * Trailer fields to send after a chunked body, before its end (HTTP/1.1 upstreams: node's client
   * and the kept-stream relay; an HTTP/2 upstream takes none). Throws node's error for a field that is no valid HTTP.
   */
  addTrailers?(trailers: Readonly<Record<string, string>>): void;
}

export interface Http2Call {
  readonly method: string;
  readonly path: string;
  readonly scheme: string;
  readonly authority: string;
  /** The fields to send (no hop-by-hop ones, no Host). */
  readonly headers: HeaderList;
}

/** Sends `call` as HTTP/2 with prior knowledge on `stream`; see the file comment. */
export function http2Call(stream: Duplex, call: Http2Call): UpstreamCall {
  const headers: OutgoingHttpHeaders = { ':method': call.method, ':path': call.path, ':scheme': call.scheme, ':authority': call.authority };
  for (const [name, value] of call.headers) {
    const key = name.toLowerCase();
    const had = headers[key];
    headers[key] = had === undefined ? value : [...(Array.isArray(had) ? had : [String(had)]), value];
  }
  const session: ClientHttp2Session = connect(`http://${call.authority}`, { createConnection: () => stream as unknown as Socket, settings: { enablePush: false } });
  // A session failure reaches the request through its stream.
  session.on('error', () => undefined);
  const request: ClientHttp2Stream = session.request(headers, { endStream: false });
  const sink = new Writable({
    // Destroying the sink cancels the request: not once its body is written.
    autoDestroy: false,
    write: (chunk, _encoding, done) => (request.write(chunk) ? done() : request.once('drain', () => done())),
    final: (done) => {
      request.end();
      done();
    },
    destroy: (error, done) => {
      if (!request.closed) request.close(constants.NGHTTP2_CANCEL);
      session.destroy();
      done(error);
    },
  }) as Writable & { reusedSocket: boolean; relay: UpstreamRelay };
  sink.reusedSocket = false;
  sink.relay = 'http2';
  request.once('response', (answer: IncomingHttpHeaders) => sink.emit('response', Object.assign(request, { statusCode: Number(answer[':status']), rawHeaders: rawFields(answer) })));
  // Trailing HEADERS come before the stream's end, as an HTTP/1.1 answer's rawTrailers are there by its end.
  request.once('trailers', (trailers: IncomingHttpHeaders) => Object.assign(request, { rawTrailers: rawFields(trailers) }));
  request.once('error', (error: Error) => sink.destroy(error));
  request.once('close', () => {
    session.close();
    if (request.rstCode !== constants.NGHTTP2_NO_ERROR && !sink.destroyed) sink.destroy(new Error(`the upstream reset the HTTP/2 stream (code ${request.rstCode})`));
  });
  return sink;
}
