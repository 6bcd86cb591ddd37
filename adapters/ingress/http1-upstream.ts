import { validateHeaderName, validateHeaderValue } from 'node:http';
import { createRequire } from 'node:module';
import { Readable, Writable, type Duplex } from 'node:stream';
import { HTTP_TOKEN } from '../../lib/conventions/fields.ts';
import type { HeaderList } from '../../lib/traffic/facts.ts';
import type { UpstreamAnswer, UpstreamCall } from './h2-upstream.ts';
import type { KeptStream, KeptStreams } from './kept-streams.ts';

/**
 * HTTP/1.1 to an agent's upstream down a kept proxy stream (kept-streams.ts), without node's HTTP
 * client: the request head is written as node's client wrote it (the same bytes: the request
 * line, the fields in order, `Connection: keep-alive`, and `Transfer-Encoding: chunked` with an
 * empty body for a POST-like method without a body), its body framed as the head says (a
 * Content-Length's bytes as they come, or chunked), and the answer read by node's own HTTP parser
 * (llhttp, the one node's client uses, with its defaults: header size, no leniency; of a head that
 * comes in pieces, no more pieces past 2,000 entries): its status and fields, then its body as a
 * stream, 1xx answers other than 101 skipped, no body for HEAD or 304. The stream is kept for the
 * connection's next request once both the request is sent and its answer read, unless the answer
 * says `Connection: close`; an answer that goes on past its end, a byte while no request waits, a
 * 101 to a request that asked for no upgrade, or a parse error drop the stream. Failures are the
 * ones node's client gave (`Parse Error: …`, `socket hang up` before an answer, `aborted` on the
 * answer's body).
 */

interface HttpParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(data: Buffer): number | ParseError;
  finish(): number | ParseError | undefined;
  close(): void;
  [callback: number]: unknown;
}
type ParseError = Error & { code?: string; reason?: string };
interface ParserClass {
  new (): HttpParser;
  readonly RESPONSE: number;
  readonly kOnMessageBegin: number;
  readonly kOnHeaders: number;
  readonly kOnHeadersComplete: number;
  readonly kOnBody: number;
  readonly kOnMessageComplete: number;
  readonly kLenientNone: number;
}
// Node's HTTP parser binding, as node's own HTTP client reads answers with it.
const { HTTPParser } = createRequire(import.meta.url)('node:_http_common') as { HTTPParser: ParserClass };

/** Header entries (names and values) past which node's client kept no more of a head that came in pieces. */
const MAX_HEADER_ENTRIES = 2000;
/** Methods node's client sends without a body framing when none is given. */
const BODILESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
const INVALID_PATH = /[^\u0021-\u00ff]/;

export interface Http1Request {
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  /** The fields to send, the body's framing among them; no Connection. */
  readonly headers: HeaderList;
}

/**
 * What reads the answers on one kept stream: node's parser and the stream's listeners, made on its
 * first request and kept for its life, each event going to the request that has the stream now.
 * A byte while no request has it closes the stream (it answers nothing that was asked).
 */
class AnswerReader {
  readonly parser = new HTTPParser();
  current: Http1Call | undefined;

  constructor(readonly stream: Duplex) {
    const { parser } = this;
    parser[HTTPParser.kOnMessageBegin] = () => this.current?.onMessageBegin();
    parser[HTTPParser.kOnHeaders] = (fields: string[]) => this.current?.onFields(fields);
    parser[HTTPParser.kOnHeadersComplete] = (_major: number, _minor: number, fields: string[] | undefined, _method: unknown, _url: unknown, status: number, _message: string, upgrade: boolean, keepAlive: boolean) =>
      this.current ? this.current.onHead(fields, status, upgrade, keepAlive) : 0;
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => this.current?.onBody(chunk);
    parser[HTTPParser.kOnMessageComplete] = () => this.current?.onMessageComplete();
    stream.on('data', (chunk: Buffer) => (this.current ? this.current.onData(chunk) : stream.destroy()));
    // An end while no request has the stream: it can answer none any more.
    stream.on('end', () => (this.current ? this.current.onEnd() : stream.destroy()));
    stream.on('error', (error: Error) => this.current?.fail(error));
    stream.once('close', () => {
      this.current?.lost();
      parser.close();
    });
  }
}

const readers = new WeakMap<Duplex, AnswerReader>();

function readerOf(stream: Duplex): AnswerReader {
  let reader = readers.get(stream);
  if (!reader) readers.set(stream, (reader = new AnswerReader(stream)));
  return reader;
}

/** The request head as node's client wrote it; throws node's errors for a method, path or field it refused. */
function requestHead(request: Http1Request): { readonly head: Buffer; readonly chunked: boolean; readonly expects: boolean } {
  if (!HTTP_TOKEN.test(request.method)) throw Object.assign(new TypeError(`Method must be a valid HTTP token ["${request.method}"]`), { code: 'ERR_INVALID_HTTP_TOKEN' });
  if (INVALID_PATH.test(request.path)) throw Object.assign(new TypeError('Request path contains unescaped characters'), { code: 'ERR_UNESCAPED_CHARACTERS' });
  let head = `${request.method} ${request.path} HTTP/1.1\r\n`;
  let framed = false;
  let chunked = false;
  let expects = false;
  for (const [name, value] of request.headers) {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    head += `${name}: ${value}\r\n`;
    const lower = name.toLowerCase();
    if (lower === 'expect') expects = true;
    else if (lower === 'content-length') framed = true;
    else if (lower === 'transfer-encoding') {
      framed = true;
      chunked = /(?:^|\W)chunked(?:$|\W)/i.test(value);
    }
  }
  head += 'Connection: keep-alive\r\n';
  // A request without a framing has no body; node's client still framed it as chunked (an empty body) for these methods.
  if (!framed && !BODILESS_METHODS.has(request.method)) {
    head += 'Transfer-Encoding: chunked\r\n';
    chunked = true;
  }
  return { head: Buffer.from(`${head}\r\n`, 'latin1'), chunked, expects };
}

/**
 * Sends `request` down `key`'s kept stream of `streams` (a new one from `open` when none is; with
 * `sideBySide`, an HTTP/2 client's, one no other request has); see the file comment.
 */
export function http1Call(streams: KeptStreams, key: string, open: () => Duplex, request: Http1Request, sideBySide = false): UpstreamCall {
  const { head, chunked, expects } = requestHead(request);
  const call = new Http1Call(head, chunked, expects, request.method === 'HEAD');
  const use = (error: Error | undefined, kept?: KeptStream) => (error ? process.nextTick(() => call.destroy(error)) : call.start(kept!));
  if (sideBySide) streams.takeFree(key, open, use);
  else streams.take(key, open, use);
  return call;
}

const CRLF = Buffer.from('\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

const connectionReset = (message: string) => Object.assign(new Error(message), { code: 'ECONNRESET' });

class Http1Call extends Writable implements UpstreamCall {
  reusedSocket = false;
  readonly relay = 'kept_stream';
  /** The head, until it is written: with the body's first bytes, or at its end, as node's client did (at once with an Expect). */
  #head: Buffer | undefined;
  readonly #expects: boolean;
  readonly #chunked: boolean;
  readonly #headOnly: boolean;
  #kept: KeptStream | undefined;
  /** A write or the final that came before the stream. */
  #pending: (() => void) | undefined;
  #sent = false;
  #answer: (Readable & { statusCode: number; rawHeaders: string[]; rawTrailers?: string[] }) | undefined;
  #answered = false;
  /** The stream cannot carry another request (the answer said close, or went past its end). */
  #spent = false;
  #hint: string | undefined;
  #fields: string[] = [];
  /** The request's trailer section (`name: value\r\n` each), written with the last chunk. */
  #trailers = '';
  #released = false;
  #reader: AnswerReader | undefined;

  constructor(head: Buffer, chunked: boolean, expects: boolean, headOnly: boolean) {
    // Destroying the call cancels the request: not once its body is written.
    super({ autoDestroy: false });
    this.#head = head;
    this.#expects = expects;
    this.#chunked = chunked;
    this.#headOnly = headOnly;
  }

  /** The stream is this request's: the head goes down it, and the answer is read from it. */
  start(kept: KeptStream): void {
    if (this.destroyed) return kept.release(false);
    this.#kept = kept;
    this.reusedSocket = kept.reused;
    const reader = (this.#reader = readerOf(kept.stream));
    reader.parser.initialize(HTTPParser.RESPONSE, {}, 0, HTTPParser.kLenientNone);
    reader.current = this;
    // An Expect asks the upstream before the body comes: node's client sent such a head at once.
    if (this.#expects) this.#writeHead();
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.();
  }

  onData(chunk: Buffer): void {
    const parsed = this.#reader!.parser.execute(chunk);
    if (parsed instanceof Error) {
      // Past the end of a whole answer: the stream is spent, the answer stands.
      if (this.#answered) this.#spent = true;
      else return this.fail(parseError(parsed));
    }
    this.#settle();
  }

  onEnd(): void {
    const finished = this.#reader!.parser.finish();
    if (finished instanceof Error && !this.#answered) return this.fail(parseError(finished));
    if (!this.#answered) this.lost();
    this.#kept?.stream.destroy();
  }

  onMessageBegin(): void {
    if (this.#answered) this.#spent = true;
  }

  onFields(fields: string[]): void {
    if (this.#fields.length < MAX_HEADER_ENTRIES) this.#fields.push(...fields);
  }

  onHead(fields: string[] | undefined, status: number, upgrade: boolean, keepAlive: boolean): number {
    if (this.#answer) {
      // A second answer to one request: node's client dropped the connection.
      this.#spent = true;
      return 0;
    }
    const rawHeaders = fields ?? this.#fields;
    this.#fields = [];
    if (upgrade) {
      // A 101 to a request that asked for no upgrade: its connection carries another protocol now.
      process.nextTick(() => this.fail(new Error('the upstream switched protocols (101) on a request that asked for no upgrade')));
      return 2;
    }
    if (status >= 100 && status < 200) return 1;
    if (!keepAlive) this.#spent = true;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      if (rawHeaders[i]!.toLowerCase() === 'keep-alive') {
        this.#hint = rawHeaders[i + 1];
        break;
      }
    }
    const stream = this.#kept!.stream;
    const answer = new Readable({
      read: () => void stream.resume(),
      destroy: (error, done) => {
        // The answer dropped before its end (a policy answered instead, the client went): so is the stream.
        if (!this.#answered) this.#cut();
        done(error);
      },
    });
    this.#answer = Object.assign(answer, { statusCode: status, rawHeaders });
    this.emit('response', this.#answer satisfies UpstreamAnswer);
    return this.#headOnly || status === 304 ? 1 : 0;
  }

  onBody(chunk: Buffer): void {
    // (The body of a second answer to the request is dropped with its stream.)
    if (this.#answer && !this.#answered && !this.#answer.push(chunk)) this.#kept!.stream.pause();
  }

  onMessageComplete(): void {
    if (!this.#answer || this.#answered) return;
    this.#answered = true;
    // Fields after the head are a chunked body's trailers (res.trailers), there by the answer's end as node's client has them.
    Object.assign(this.#answer, { rawTrailers: this.#fields });
    this.#fields = [];
    this.#answer.push(null);
    // The answer holds all it will get: the stream flows again for what comes next, whatever its reader has yet to read.
    this.#kept!.stream.resume();
  }

  /** Writes the head down the stream, once. */
  #writeHead(): void {
    if (!this.#head) return;
    this.#kept!.stream.write(this.#head);
    this.#head = undefined;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (!this.#kept) return void (this.#pending = () => this._write(chunk, _encoding, done));
    const { stream } = this.#kept;
    this.#writeHead();
    if (chunk.length === 0) return done();
    let flowing: boolean;
    if (this.#chunked) {
      stream.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
      stream.write(chunk);
      flowing = stream.write(CRLF);
    } else flowing = stream.write(chunk);
    if (flowing) done();
    else stream.once('drain', () => done());
  }

  /** Trailer fields for the end of a chunked body (node's client sends none on another framing). */
  addTrailers(trailers: Readonly<Record<string, string>>): void {
    let section = '';
    for (const [name, value] of Object.entries(trailers)) {
      // Node's checks, as for the head's fields (and as its client's addTrailers makes them).
      validateHeaderName(name);
      validateHeaderValue(name, value);
      section += `${name}: ${value}\r\n`;
    }
    this.#trailers += section;
  }

  override _final(done: (error?: Error | null) => void): void {
    if (!this.#kept) return void (this.#pending = () => this._final(done));
    this.#writeHead();
    if (this.#chunked) this.#kept.stream.write(this.#trailers === '' ? LAST_CHUNK : Buffer.from(`0\r\n${this.#trailers}\r\n`, 'latin1'));
    this.#sent = true;
    done();
    this.#settle();
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    if (!this.#sent || !this.#answered) this.#cut();
    done(error);
  }

  /** Once the request is sent and its answer read, the stream goes back (or is closed when spent). */
  #settle(): void {
    if (!this.#sent || !this.#answered || this.#released) return;
    this.#released = true;
    this.#reader!.current = undefined;
    this.#kept!.release(!this.#spent, this.#hint);
  }

  /** The exchange ends unfinished: the stream goes (the agent sees it reset). */
  #cut(): void {
    if (this.#released) return;
    this.#released = true;
    if (this.#reader?.current === this) this.#reader.current = undefined;
    this.#pending = undefined;
    if (this.#kept) {
      this.#kept.stream.destroy();
      this.#kept.release(false);
    }
  }

  /** The stream ended or closed: before an answer, the request fails as node's did; during one, the answer is cut. */
  lost(): void {
    if (this.#released) return;
    if (!this.#answer) return this.fail(connectionReset('socket hang up'));
    if (!this.#answered) this.#answer.destroy(connectionReset('aborted'));
    // The request's body can go nowhere now.
    if (!this.#sent) this.destroy();
    this.#cut();
  }

  fail(error: Error): void {
    if (this.#answer && !this.#answered) this.#answer.destroy(connectionReset('aborted'));
    this.#cut();
    if (!this.destroyed) this.destroy(error);
  }
}

function parseError(error: ParseError): Error {
  if (typeof error.reason === 'string') error.message = `Parse Error: ${error.reason}`;
  return error;
}
