import type { Session } from '@ngrok/ngrok';
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createServer as createNetServer, connect as netConnect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { LIMITS } from '../../../lib/limits.ts';
import { exchange, parseResponses, type RawResponse } from '../../fixtures/raw-http.ts';
import { EVENT_LOOP_MONITOR, eventLoopReport, fuzzUnderProbes, startHealthProber } from '../../fixtures/raw-socket-fuzz.ts';
import { listenLocally, startIngressServer, type IngressServer } from './fixtures.ts';

/**
 * The HTTP and TLS ingress against clients that mean harm, on a real `burrow serve` with the
 * vendor's agent serving an app that logs every request it gets: requests that try to smuggle a
 * second request past the endpoint's policy inside a body, heads and ClientHellos dribbled a byte
 * at a time, made-up server names by the hundred, and a raw fuzz of heads and bodies with a health
 * probe beside it. The slow-client tests wait out the real deadlines (ingress_head_ms,
 * ingress_handshake_ms), so the file's tests run at once.
 */

const HOST = 'guarded.example.com';
/** The policy every request to HOST goes through: /forbidden is denied. */
const POLICY = JSON.stringify({ on_http_request: [{ expressions: ["req.url.path.startsWith('/forbidden')"], actions: [{ type: 'deny', config: { status_code: 403 } }] }] });
const SMUGGLED = `GET /forbidden/secret HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`;

let ingress: IngressServer;
let httpPort: number;
let tlsPort: number;
/** What the app behind the agent received, one `METHOD URL BODY-LENGTH` line per request. */
const received: string[] = [];
let app: Awaited<ReturnType<typeof listenLocally>>;
let session: Session;
/** The agent's end, run before the server stops. */
const agentEnds: (() => unknown)[] = [];

before(async () => {
  ingress = await startIngressServer(['--http-ingress-addr', '127.0.0.1:0', '--tls-ingress-addr', '127.0.0.1:0'], EVENT_LOOP_MONITOR);
  httpPort = ingress.port('http_ingress');
  tlsPort = ingress.port('tls_ingress');
  app = await listenLocally(
    createServer(async (req, res) => {
      let length = 0;
      try {
        for await (const chunk of req) length += (chunk as Buffer).length;
      } catch {
        // A fuzzed body the client cut mid-way aborts its request here: there is no one to answer.
        return void res.destroy();
      }
      received.push(`${req.method} ${req.url} ${length}`);
      res.end(`seen ${req.method} ${req.url}`);
    }),
  );
  await ingress.reserve(HOST);
  session = await ingress.agent({ after: (end) => void agentEnds.push(end) });
  await session.httpEndpoint().domain(HOST).trafficPolicy(POLICY).listenAndForward(`http://127.0.0.1:${app.port}`);
});

after(async () => {
  for (const end of agentEnds) await end();
  await ingress?.stop();
  await app?.close();
});

/**
 * Sends `request` and then, on the same connection, a last request to /sentinel: the agent keeps
 * one stream to the app per client connection, so once the sentinel is answered the app has seen
 * everything the first request became. Answers the responses and what the app saw meanwhile.
 */
async function sendThenSentinel(request: string, via: (bytes: string) => Promise<Buffer>): Promise<{ responses: RawResponse[]; appSaw: string[] }> {
  const from = received.length;
  const sentinel = `GET /sentinel HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`;
  const bytes = await via(request + sentinel);
  return { responses: parseResponses(bytes, ['GET', 'GET']), appSaw: received.slice(from) };
}

/** Writes `bytes` to the HTTP ingress, its side kept open (the last request asks to close), and reads until the server closes. */
const overHttp = (bytes: string) => exchange(httpPort, [bytes], { halfClose: false });

/** Writes `bytes` over TLS to the TLS ingress (SNI HOST, Burrow's CA trusted) and reads until the server closes. */
async function overTls(bytes: string): Promise<Buffer> {
  const socket = tlsConnect({ host: '127.0.0.1', port: tlsPort, servername: HOST, ca: ingress.ca });
  await once(socket, 'secureConnect');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.write(bytes);
  await once(socket, 'close');
  return Buffer.concat(chunks);
}

const chunked = (body: string) => `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;

describe('request smuggling: the app gets each body as the body the policy saw, never as a request', () => {
  const cases: { name: string; head: string; body: string }[] = [
    ...['GET', 'DELETE', 'OPTIONS', 'POST'].map((method) => ({ name: `${method} with a chunked body`, head: `${method} /allowed HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n`, body: chunked(SMUGGLED) })),
    { name: 'GET with a Content-Length body', head: `GET /allowed HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: ${SMUGGLED.length}\r\n`, body: SMUGGLED },
    { name: 'GET whose Connection names Content-Length (hop-by-hop)', head: `GET /allowed HTTP/1.1\r\nHost: ${HOST}\r\nConnection: content-length\r\nContent-Length: ${SMUGGLED.length}\r\n`, body: SMUGGLED },
    { name: 'GET whose Connection names Transfer-Encoding', head: `GET /allowed HTTP/1.1\r\nHost: ${HOST}\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n`, body: chunked(SMUGGLED) },
  ];
  for (const { name, head, body } of cases) {
    for (const [over, via] of [['HTTP', overHttp], ['TLS', overTls]] as const) {
      test(`${name}, over ${over}`, async () => {
        const { responses, appSaw } = await sendThenSentinel(`${head}\r\n${body}`, via);
        const method = head.slice(0, head.indexOf(' '));
        assert.deepEqual(appSaw.sort(), [`${method} /allowed ${SMUGGLED.length}`, 'GET /sentinel 0'].sort(), JSON.stringify(responses.map((r) => [r.status, r.body.toString()])));
        assert.deepEqual(
          responses.map((response) => response.status),
          [200, 200],
        );
      });
    }
  }

  test('a transfer coding other than chunked alone is refused (501, or 400 where the parser refuses it) before it reaches the app', async () => {
    for (const [coding, status] of [['gzip, chunked', 501], ['chunked, chunked', 400]] as const) {
      const from = received.length;
      const responses = parseResponses(await overHttp(`POST /allowed HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: ${coding}\r\nConnection: close\r\n\r\n${chunked(chunked(SMUGGLED))}`), ['POST']);
      assert.deepEqual(
        responses.map((response) => response.status),
        [status],
        coding,
      );
      assert.match(responses[0]!.body.toString(), /Transfer-Encoding/);
      assert.deepEqual(received.slice(from), []);
    }
  });

  test('Content-Length beside Transfer-Encoding, or twice, is a 400 and the connection ends', async () => {
    for (const framing of [`Content-Length: 5\r\nTransfer-Encoding: chunked`, `Content-Length: 5\r\nContent-Length: 5`]) {
      const from = received.length;
      const responses = parseResponses(await overHttp(`POST /allowed HTTP/1.1\r\nHost: ${HOST}\r\n${framing}\r\n\r\n${chunked(SMUGGLED)}`), ['POST']);
      assert.deepEqual(
        responses.map((response) => response.status),
        [400],
      );
      assert.deepEqual(received.slice(from), []);
    }
  });

  test('a client that ends its side once its request is sent (printf … | nc) still gets its answer', async () => {
    const responses = parseResponses(await exchange(httpPort, [`GET /half-closed HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`]), ['GET']);
    assert.deepEqual(
      responses.map((response) => [response.status, response.body.toString()]),
      [[200, 'seen GET /half-closed']],
    );
  });

  test('the policy still denies the path itself', async () => {
    const { responses } = await sendThenSentinel(SMUGGLED, overHttp);
    assert.equal(responses[0]!.status, 403);
  });
});

describe('slow clients meet deadlines counted from connect', { concurrency: true }, () => {
  /** Writes `first`, then one byte of `dribble` every 500 ms; resolves with what the server sent and when it closed, in ms after connect. */
  async function dribble(port: number, first: Buffer, dribbled: Buffer): Promise<{ answer: string; closedAfterMs: number }> {
    const socket = netConnect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    await once(socket, 'connect');
    const started = performance.now();
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closed = once(socket, 'close').then(() => performance.now() - started);
    socket.write(first);
    let open = true;
    void closed.then(() => (open = false));
    for (let i = 0; open && i < dribbled.length; i++) {
      await sleep(500);
      if (open) socket.write(dribbled.subarray(i, i + 1));
    }
    const closedAfterMs = await closed;
    return { answer: Buffer.concat(chunks).toString('latin1'), closedAfterMs };
  }

  // The deadline plus node's check interval (500 ms) plus room for a loaded machine.
  const late = (deadline: number) => deadline + 3_000;

  test(`a request head dribbled a byte each 500 ms gets its 408 at ingress_head_ms (${LIMITS.ingress_head_ms.value} ms), not up to 30 s later`, async () => {
    const { answer, closedAfterMs } = await dribble(httpPort, Buffer.from(`GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Slow: `), Buffer.alloc(200, 'a'));
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.match(answer, /limit ingress_head_ms/);
    assert.ok(closedAfterMs >= LIMITS.ingress_head_ms.value - 100 && closedAfterMs < late(LIMITS.ingress_head_ms.value), `closed after ${closedAfterMs} ms`);
  });

  test(`a ClientHello dribbled a byte each 500 ms is cut at ingress_handshake_ms (${LIMITS.ingress_handshake_ms.value} ms), although bytes keep coming`, async () => {
    // A handshake record that announces 16,000 bytes of ClientHello, then sends them one by one.
    const header = Buffer.from([0x16, 0x03, 0x01, 0x3e, 0x80, 0x01, 0x00, 0x3e, 0x7c, 0x03, 0x03]);
    const { answer, closedAfterMs } = await dribble(tlsPort, header, Buffer.alloc(16_000, 1));
    assert.equal(answer, '');
    assert.ok(closedAfterMs >= LIMITS.ingress_handshake_ms.value - 100 && closedAfterMs < late(LIMITS.ingress_handshake_ms.value), `closed after ${closedAfterMs} ms`);
  });
});

describe('server names nobody configured cost no signing', () => {
  /** The certificate the TLS ingress presents for `servername` (not verified). */
  async function presented(servername: string): Promise<X509Certificate> {
    const options: ConnectionOptions = { host: '127.0.0.1', port: tlsPort, servername, rejectUnauthorized: false };
    const socket = tlsConnect(options);
    await once(socket, 'secureConnect');
    const certificate = new X509Certificate(socket.getPeerCertificate().raw);
    socket.destroy();
    return certificate;
  }

  test('200 made-up names all get the service zone\'s one wildcard certificate; a served name gets its own', async () => {
    const serials = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const certificate = await presented(`made-up-${i}.example${i % 7}.net`);
      assert.equal(certificate.subject, 'CN=*.burrow.internal');
      serials.add(certificate.serialNumber);
    }
    assert.equal(serials.size, 1, 'one certificate, signed once');
    assert.equal((await presented(HOST)).subject, `CN=${HOST}`);
  });
});

describe('raw fuzz of the HTTP ingress', () => {
  const CASES = Number(process.env.FUZZ_RUNS ?? 12) * 3;
  test(`${CASES} cases of hostile heads and bodies to the endpoint: the server stays up, answers well-formed HTTP, never a 500, and keeps its health`, async () => {
    const { fuzz, probes, loop } = await fuzzUnderProbes(ingress.server, CASES, 20261128, {
      port: httpPort,
      hosts: [HOST, 'nobody.example.com'],
      check: (response, _method, context) => assert.notEqual(response.status, 500, `${context}: ${response.body.toString()}`),
    });
    console.log(`# ingress fuzz: ${JSON.stringify(fuzz)}; health probes ${JSON.stringify(probes)}; server event loop ${JSON.stringify(loop)}`);
    assert.deepEqual({ failed: probes.failed, failures: probes.failures }, { failed: 0, failures: [] });
    assert.ok(loop.heldMs < 100, `the server's event loop was held ${loop.heldMs} ms`);
    assert.ok(!received.some((line) => line.includes('/forbidden')), 'nothing the policy denies reached the app');
    assert.equal((await sendThenSentinel('', overHttp)).responses[0]!.status, 200, 'the agent still serves');
  });
});

describe('raw fuzz of the TLS ingress', () => {
  const CASES = Number(process.env.FUZZ_RUNS ?? 12) * 5;

  /** The ClientHello node's TLS client sends for `servername`, as the bytes on the wire. */
  async function realClientHello(servername: string): Promise<Buffer> {
    const catcher = createNetServer();
    const caught = new Promise<Buffer>((resolve) => catcher.once('connection', (socket) => socket.once('data', (bytes: Buffer) => (resolve(bytes), socket.destroy()))));
    await new Promise<void>((resolve) => catcher.listen(0, '127.0.0.1', resolve));
    const client = tlsConnect({ host: '127.0.0.1', port: (catcher.address() as { port: number }).port, servername });
    client.on('error', () => undefined);
    const hello = await caught;
    client.destroy();
    catcher.close();
    return hello;
  }

  test(`${CASES} ClientHellos cut, flipped, stretched and spliced: each connection ends, the server's loop is never held, health keeps answering, served names still verify`, async () => {
    const hello = await realClientHello(HOST);
    const mutation = fc.oneof(
      fc.integer({ min: 0, max: hello.length }).map((at) => hello.subarray(0, at)),
      fc.array(fc.tuple(fc.integer({ min: 0, max: hello.length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }).map((flips) => {
        const bytes = Buffer.from(hello);
        for (const [at, value] of flips) bytes[at] = value;
        return bytes;
      }),
      // The length fields of the record, the handshake message and the extensions, set to anything.
      fc.tuple(fc.constantFrom(3, 6, hello.length > 50 ? 50 : 6), fc.integer({ min: 0, max: 0xffff })).map(([at, value]) => {
        const bytes = Buffer.from(hello);
        bytes.writeUInt16BE(value, at);
        return bytes;
      }),
      fc.uint8Array({ maxLength: 2000 }).map((random) => Buffer.concat([hello.subarray(0, 5), Buffer.from(random)])),
      fc.uint8Array({ minLength: 1, maxLength: 2000 }).map((random) => Buffer.from(random)),
      fc.integer({ min: 2, max: 40 }).map((records) => Buffer.concat(Array.from({ length: records }, () => Buffer.from([0x16, 0x03, 0x01, 0x00, 0x01, 0x01])))),
    );
    await eventLoopReport(ingress.server);
    const prober = await startHealthProber(ingress.server.url);
    let closed = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 6 }), async (hellos) => {
          await Promise.all(hellos.map(async (bytes) => (await exchange(tlsPort, [bytes], { limitMs: 5_000 }), closed++)));
        }),
        { numRuns: CASES, seed: 20261128, endOnFailure: true },
      );
    } finally {
      const probes = await prober.stop();
      const loop = await eventLoopReport(ingress.server);
      console.log(`# TLS ingress fuzz: ${closed} connections; health probes ${JSON.stringify(probes)}; server event loop ${JSON.stringify(loop)}`);
      assert.deepEqual({ failed: probes.failed, failures: probes.failures }, { failed: 0, failures: [] });
      assert.ok(loop.heldMs < 100, `the server's event loop was held ${loop.heldMs} ms`);
    }
    const still = (await overTls(`GET /after-fuzz HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`)).toString();
    assert.match(still, /^HTTP\/1\.1 200 /);
  });
});
