import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { Agent, request } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import { createServer as createNetServer, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { http1Call } from '../../../adapters/ingress/http1-upstream.ts';
import { KeptStreams } from '../../../adapters/ingress/kept-streams.ts';
import { MemoryStore } from '../../../adapters/stores/memory-store.ts';
import { createBurrow, type HttpTraffic, type Traffic } from '../../../lib/index.ts';
import { exchange, parseResponses } from '../../fixtures/raw-http.ts';
import { startLiveIngress } from '../../fixtures/live-ingress.ts';
import { listenLocally } from './fixtures.ts';
import { callIngress, next } from './helpers.ts';

/**
 * The HTTP ingress's own HTTP/1.1 relay down a client connection's kept proxy stream
 * (adapters/ingress/http1-upstream.ts), which took the place of node's HTTP client there: the head
 * it writes is the one node's client wrote, the journal says which way each request went
 * (`upstream.relay`), and an app that answers wrongly (garbage, two answers to one request, an
 * answer cut short, a byte nobody asked for) fails that request alone and never answers the next
 * one. The real parts: the vendor's agent on Burrow's gateway and ingress, and raw TCP apps behind
 * it that write exactly the bytes a test scripts.
 */

const HOST = 'relay.example.com';

/** A stand-in stream that keeps what is written to it. */
function recorder(): { stream: Duplex; written: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  return { stream, written: () => Buffer.concat(chunks).toString('latin1') };
}

describe('the request as it goes down a kept stream', () => {
  test("is written byte for byte as node's HTTP client wrote it, with the body framed as the head says", async () => {
    const cases: [string, [string, string][], string[]][] = [
      ['GET', [['Host', 'a.example'], ['X-Forwarded-For', '127.0.0.1']], []],
      ['POST', [['Host', 'a.example']], []],
      ['DELETE', [['Host', 'a.example']], []],
      ['OPTIONS', [['Host', 'a.example'], ['Content-Length', '0']], []],
      ['POST', [['Host', 'a.example'], ['Content-Length', '11']], ['hello', ' world']],
      ['PUT', [['Host', 'a.example'], ['Transfer-Encoding', 'chunked']], ['one', '', 'three']],
      ['GET', [['Host', 'a.example'], ['Transfer-Encoding', 'chunked']], ['GET /smuggled HTTP/1.1\r\nHost: a.example\r\n\r\n']],
      ['PATCH', [['Host', 'a.example'], ['Expect', '100-continue'], ['Content-Length', '1']], ['x']],
      ['HEAD', [['host', 'a.example'], ['x-latin1', 'caf\u00e9']], []],
    ];
    for (const [method, headers, body] of cases) {
      const theirs = recorder();
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      (agent as unknown as { createConnection: () => Duplex }).createConnection = () => theirs.stream;
      const sent = request({ agent, method, path: '/p?q=1', headers: headers.flat(), setHost: false });
      sent.on('error', () => undefined);
      const ours = recorder();
      const client = new EventEmitter() as unknown as Socket;
      const call = http1Call(new KeptStreams(client), 'key', () => ours.stream, { method, path: '/p?q=1', headers });
      // Before the body: nothing yet (the head goes with the body's first bytes or its end), or the head alone with an Expect.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(ours.written(), theirs.written(), `before the body: ${method} ${JSON.stringify(headers)}`);
      for (const chunk of body) sent.write(chunk);
      sent.end();
      for (const chunk of body) call.write(chunk);
      call.end();
      await Promise.all([once(sent, 'finish'), once(call, 'finish')]);
      assert.equal(ours.written(), theirs.written(), `${method} ${JSON.stringify(headers)}`);
      agent.destroy();
      call.destroy();
    }
  });

  test("refuses a field node's client refused, with node's error", () => {
    const client = new EventEmitter() as unknown as Socket;
    const open = () => recorder().stream;
    assert.throws(() => http1Call(new KeptStreams(client), 'key', open, { method: 'GET', path: '/', headers: [['X-Bad', 'a\r\nInjected: yes']] }), { code: 'ERR_INVALID_CHAR' });
    assert.throws(() => http1Call(new KeptStreams(client), 'key', open, { method: 'GET', path: '/', headers: [['Bad Name', 'x']] }), { code: 'ERR_INVALID_HTTP_TOKEN' });
    assert.throws(() => http1Call(new KeptStreams(client), 'key', open, { method: 'GET', path: '/a b', headers: [] }), { code: 'ERR_UNESCAPED_CHARACTERS' });
  });
});

describe('the kept stream between requests', () => {
  /** A pool of kept streams for a stand-in client connection, each stream a recorder; `opened` lists them. */
  function pool() {
    const opened: ReturnType<typeof recorder>[] = [];
    const streams = new KeptStreams(new EventEmitter() as unknown as Socket);
    const open = () => {
      const made = recorder();
      opened.push(made);
      return made.stream;
    };
    const get = (path: string) => {
      const call = http1Call(streams, 'key', open, { method: 'GET', path, headers: [['Host', 'a.example']] });
      call.end();
      return call;
    };
    return { opened, get };
  }
  /** The status and body of `call`'s answer (asked for before the answer's bytes arrive: a stream pushed to emits at once). */
  const answerOf = async (call: Duplex | import('node:stream').Writable) => {
    const [answer] = (await once(call, 'response')) as [import('node:stream').Readable & { statusCode: number }];
    let body = '';
    for await (const chunk of answer) body += String(chunk);
    return [answer.statusCode, body];
  };

  test('a request waits for the one before to be answered; the stream is kept for the next', async () => {
    const { opened, get } = pool();
    const first = get('/first');
    const second = get('/second');
    await once(first, 'finish');
    assert.equal(opened.length, 1);
    assert.doesNotMatch(opened[0]!.written(), /second/, 'the second head waits');
    const firstAnswer = answerOf(first);
    opened[0]!.stream.push(OK);
    assert.deepEqual(await firstAnswer, [200, 'ok']);
    // The second request went down the stream as the first was answered.
    assert.match(opened[0]!.written(), /GET \/second/);
    const secondAnswer = answerOf(second);
    opened[0]!.stream.push(OK);
    assert.deepEqual(await secondAnswer, [200, 'ok']);
    assert.deepEqual([opened.length, (second as unknown as { reusedSocket: boolean }).reusedSocket], [1, true]);
  });

  test('a byte while no request waits closes the stream; so does an answer that keeps nothing alive', async () => {
    const { opened, get } = pool();
    const answers = [OK, 'HTTP/1.1 200 OK\r\nKeep-Alive: timeout=1\r\nContent-Length: 2\r\n\r\nok', 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok'];
    for (const [i, answer] of answers.entries()) {
      const call = get(`/${i}`);
      assert.equal(opened.length, i + 1, 'each request took a new stream');
      const { stream } = opened[i]!;
      const closed = once(stream, 'close');
      const answered = answerOf(call);
      stream.push(answer);
      assert.deepEqual(await answered, [200, 'ok']);
      // The first stream is kept until a byte comes that no request asked for; Keep-Alive:
      // timeout=1 leaves no time to reuse the second (node's agent kept one 1 s less than the hint).
      if (i === 0) stream.push('HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstray!');
      await closed;
    }
  });

  test('a kept stream the upstream ends while it idles is closed; the next request takes a new one', async () => {
    const { opened, get } = pool();
    const first = get('/first');
    const answered = answerOf(first);
    opened[0]!.stream.push(OK);
    assert.deepEqual(await answered, [200, 'ok']);
    const closed = once(opened[0]!.stream, 'close');
    opened[0]!.stream.push(null);
    await closed;
    const second = get('/second');
    assert.deepEqual([opened.length, (second as unknown as { reusedSocket: boolean }).reusedSocket], [2, false]);
    second.destroy();
  });
});

/** What a scripted app saw: each connection's bytes. */
interface AppConnection {
  readonly socket: Socket;
  received: string;
}

/**
 * A raw TCP app: for each request head it reads (by its path), `script` answers the bytes to write
 * (or a function that acts on the socket). Request bodies are ignored; tests here send none.
 */
async function scriptedApp(t: TestContext, script: (path: string, socket: Socket) => string | undefined) {
  const connections: AppConnection[] = [];
  const server = createNetServer((socket) => {
    const connection: AppConnection = { socket, received: '' };
    connections.push(connection);
    let pending = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      connection.received += chunk.toString('latin1');
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        const path = head.split(' ')[1]!;
        const answer = script(path, socket);
        if (answer !== undefined) socket.write(answer);
      }
    });
  });
  const app = await listenLocally(server);
  t.after(() => app.close());
  return { url: `http://127.0.0.1:${app.port}`, connections };
}

async function setUp(t: TestContext) {
  const burrow = createBurrow({ store: new MemoryStore() });
  const live = await startLiveIngress(t, burrow, { domain: HOST });
  /** The next exchange the journal records for `path` (subscribe before the request is sent). */
  const journaled = (path: string, host = HOST) =>
    next<Traffic>((listener) => burrow.traffic.watch(listener), (traffic) => traffic.protocol === 'http' && new URL(traffic.request.url).pathname === path && new URL(traffic.request.url).host === host) as Promise<HttpTraffic>;
  return { ...live, journaled };
}

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';

describe('answers through the kept stream', () => {
  test('a connection\'s requests share one kept stream, journaled as relay kept_stream; a pipelining client gets its answers in order', async (t) => {
    const { agent, port, journaled } = await setUp(t);
    const app = await scriptedApp(t, (path) => `HTTP/1.1 200 OK\r\nContent-Length: ${path.length}\r\n\r\n${path}`);
    await (await agent()).httpEndpoint().domain(HOST).listenAndForward(app.url);
    const client = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => client.destroy());
    const first = journaled('/one');
    assert.equal((await callIngress(port, { host: HOST, path: '/one', agent: client })).body.toString(), '/one');
    const second = journaled('/two');
    const again = await callIngress(port, { host: HOST, path: '/two', agent: client });
    assert.deepEqual([again.body.toString(), again.reusedSocket], ['/two', true]);
    assert.deepEqual([(await first).upstream?.relay, (await first).response?.connectionReused], ['kept_stream', false]);
    assert.deepEqual([(await second).upstream?.relay, (await second).response?.connectionReused], ['kept_stream', true]);
    assert.equal(app.connections.length, 1, 'one connection to the app for the client connection');

    // Three requests in one write: each waits for the kept stream, and the answers come in order.
    const pipelined = ['/a', '/b', '/c'].map((path, i) => `GET ${path} HTTP/1.1\r\nHost: ${HOST}\r\n${i === 2 ? 'Connection: close\r\n' : ''}\r\n`).join('');
    const responses = parseResponses(await exchange(port, [pipelined], { halfClose: false }), ['GET', 'GET', 'GET']);
    assert.deepEqual(
      responses.map((response) => [response.status, response.body.toString()]),
      [
        [200, '/a'],
        [200, '/b'],
        [200, '/c'],
      ],
    );
    assert.equal(app.connections.length, 2);
    assert.deepEqual(app.connections[1]!.received.match(/^GET \S+/gm), ['GET /a', 'GET /b', 'GET /c']);
  });

  test('an app that answers wrongly fails that request alone, and a second answer to one request never answers the next', async (t) => {
    const { agent, port, journaled, errors } = await setUp(t);
    const app = await scriptedApp(t, (path, socket) => {
      switch (path) {
        case '/garbage':
          return 'NOT HTTP AT ALL\r\n\r\n';
        case '/double':
          return 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirstHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled';
        case '/hang-up':
          return void socket.destroy();
        case '/cut':
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial');
          return void setImmediate(() => socket.destroy());
        case '/informational':
          return `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n${OK}`;
        case '/until-close':
          socket.end('HTTP/1.1 200 OK\r\n\r\nread until the app closes');
          return undefined;
        case '/closing':
          return 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok';
        case '/switch':
          return 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\n';
        default:
          return OK;
      }
    });
    await (await agent()).httpEndpoint().domain(HOST).listenAndForward(app.url);
    const client = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => client.destroy());
    const call = (path: string) => callIngress(port, { host: HOST, path, agent: client });
    const connectionsBefore = () => app.connections.length;

    const garbage = await call('/garbage');
    assert.equal(garbage.status, 502);
    assert.match(garbage.body.toString(), /not a complete HTTP response: Parse Error: /);

    const double = await call('/double');
    assert.deepEqual([double.status, double.body.toString()], [200, 'first']);
    let before = connectionsBefore();
    const afterDouble = await call('/ok');
    assert.deepEqual([afterDouble.status, afterDouble.body.toString()], [200, 'ok'], 'the smuggled answer is dropped with its stream');
    assert.equal(app.connections.length, before + 1, 'the next request took a new stream');

    const hungUp = await call('/hang-up');
    assert.equal(hungUp.status, 502);
    assert.match(hungUp.body.toString(), /socket hang up/);

    await assert.rejects(call('/cut'), 'an answer cut short cuts the client connection');

    const informational = await call('/informational');
    assert.deepEqual([informational.status, informational.body.toString()], [200, 'ok']);

    const untilClose = await call('/until-close');
    assert.deepEqual([untilClose.status, untilClose.body.toString()], [200, 'read until the app closes']);

    assert.equal((await call('/closing')).status, 200);
    before = connectionsBefore();
    assert.equal((await call('/ok')).status, 200);
    assert.equal(app.connections.length, before + 1, 'Connection: close: the next request took a new stream');

    const switched = journaled('/switch');
    const switchedAnswer = await call('/switch');
    assert.equal(switchedAnswer.status, 502);
    assert.equal((await switched).response?.status, 502);
    assert.deepEqual(errors, []);
  });

  test('smuggling over a raw socket: a body that holds a request stays a body on the kept stream, framed as parsed', async (t) => {
    const { agent, port, appUrl } = await setUp(t);
    // The default app answers each request's path and body length; `received` is what the app's parser made of the stream.
    await (await agent()).httpEndpoint().domain(HOST).listenAndForward(appUrl);
    const smuggled = `GET /smuggled HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`;
    const chunked = `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
    const bytes = [
      `POST /first HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}`,
      `GET /second HTTP/1.1\r\nHost: ${HOST}\r\nConnection: transfer-encoding\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      `GET /third HTTP/1.1\r\nHost: ${HOST}\r\nConnection: content-length\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}`,
      `GET /last HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`,
    ];
    const responses = parseResponses(await exchange(port, bytes, { halfClose: false }), ['POST', 'GET', 'GET', 'GET']);
    assert.deepEqual(
      responses.map((response) => JSON.parse(response.body.toString())),
      [
        { url: '/first', length: smuggled.length },
        { url: '/second', length: smuggled.length },
        { url: '/third', length: smuggled.length },
        { url: '/last', length: 0 },
      ],
    );
  });
});

describe('what does not take the kept stream', () => {
  test('an upgrade goes down a stream of its own through node\'s client; an HTTP/2 upstream gets HTTP/2', async (t) => {
    const { agent, port, journaled } = await setUp(t);
    const app = await scriptedApp(t, (path, socket) => {
      if (path !== '/ws') return OK;
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (chunk: Buffer) => chunk.toString().startsWith('ping') && socket.end('pong'));
      return undefined;
    });
    const session = await agent();
    await session.httpEndpoint().domain(HOST).listenAndForward(app.url);
    const upgraded = journaled('/ws');
    const switched = await exchange(port, [`GET /ws HTTP/1.1\r\nHost: ${HOST}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`, 'ping'], { halfClose: false });
    assert.match(switched.toString('latin1'), /^HTTP\/1\.1 101 [^]*\r\n\r\npong$/);
    assert.equal((await upgraded).upstream?.relay, 'own_stream');

    const h2app = await listenLocally(createHttp2Server((req, res) => res.end('h2 answer')) as unknown as import('node:net').Server);
    t.after(() => h2app.close());
    const h2 = await session.httpEndpoint().appProtocol('http2').listenAndForward(`http://127.0.0.1:${h2app.port}`);
    const h2Host = new URL(h2.url()!).host;
    const viaH2 = journaled('/h2', h2Host);
    const answered = await callIngress(port, { host: h2Host, path: '/h2' });
    assert.deepEqual([answered.status, answered.body.toString()], [200, 'h2 answer']);
    assert.equal((await viaH2).upstream?.relay, 'http2');
  });
});
