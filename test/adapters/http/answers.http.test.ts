import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createBurrow } from '../../../lib/index.ts';
import { MemoryStore } from '../../../adapters/stores/memory-store.ts';
import { createNodeListener } from '../../../adapters/http/index.ts';

/**
 * The node listener writes the answers ready in one turn of the event loop together at its end:
 * each must still reach its own connection, in order on a connection, and one that cannot be
 * written must fail alone.
 */

let server: Server;
let port: number;
let token: string;

before(async () => {
  const burrow = createBurrow({ store: new MemoryStore() });
  ({ token } = await burrow.createAccount());
  const listener = createNodeListener(burrow);
  server = createServer((req, res) => {
    // A response whose head cannot be written, as a broken socket or a bug in a wrapper would make it.
    if (req.headers['x-break-answer']) {
      res.writeHead = () => {
        throw new Error('this answer cannot be written');
      };
    }
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface Answer {
  status: number;
  body: string;
}

/** One request on a connection of its own, sent at once; `abandon` closes it right after sending. */
function send(method: string, path: string, body?: string, extra: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', method, path, agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...extra } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('answers written together at the end of a turn', () => {
  test('many answers ready at once each reach their own connection', async () => {
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => send('POST', '/ip_policies', JSON.stringify({ description: `policy ${i}` }))));
    answers.forEach((answer, i) => {
      assert.equal(answer.status, 201, answer.body);
      assert.equal(JSON.parse(answer.body).description, `policy ${i}`);
    });
  });

  test('pipelined requests on one connection are answered in the order they came', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(JSON.parse((await send('POST', '/ip_policies', JSON.stringify({ description: `ordered ${i}` }))).body).id);
    const socket = connect(port, '127.0.0.1');
    const text = await new Promise<string>((resolve, reject) => {
      let received = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
      const lines = ids.map((id, i) => `GET /ip_policies/${id} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n${i === ids.length - 1 ? 'Connection: close\r\n' : ''}\r\n`);
      socket.end(lines.join(''));
    });
    const bodies = text.split(/HTTP\/1\.1 /).slice(1);
    assert.equal(bodies.length, 3, text);
    bodies.forEach((answer, i) => {
      assert.match(answer, /^200 /);
      assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).id, ids[i]);
    });
  });

  // Bounded: a failure that escaped the batch would leave the other answers unwritten, not fail.
  test('an answer that cannot be written closes its own connection and holds up no other', { timeout: 60_000 }, async () => {
    const broken = Array.from({ length: 3 }, () => send('GET', '/ip_policies', undefined, { 'x-break-answer': '1' }).then(
      () => assert.fail('a broken answer was answered'),
      (error: NodeJS.ErrnoException) => error.code,
    ));
    const healthy = Array.from({ length: 12 }, () => send('GET', '/ip_policies'));
    assert.deepEqual(await Promise.all(broken), ['ECONNRESET', 'ECONNRESET', 'ECONNRESET']);
    for (const answer of await Promise.all(healthy)) assert.equal(answer.status, 200, answer.body);
    assert.equal((await send('GET', '/ip_policies')).status, 200);
  });
});

describe('headers through the node listener', () => {
  test('an unsupported version is refused and named as the header it came in, whatever its case', async () => {
    const answer = await send('GET', '/api_keys', undefined, { 'NGROK-VERSION': '3' });
    assert.equal(answer.status, 400);
    assert.equal(JSON.parse(answer.body).msg, 'Ngrok-Version "3" is not supported; supported versions: 2');
  });
});

describe('a client that closes before its body ends', () => {
  test('is a 400 (212) in the journal, not an internal error in the log', { timeout: 60_000 }, async () => {
    const errors: unknown[] = [];
    const burrow = createBurrow({ store: new MemoryStore() });
    const account = await burrow.createAccount();
    const cut = createServer(createNodeListener(burrow, { onError: (error) => errors.push(error) }));
    await new Promise<void>((resolve) => cut.listen(0, '127.0.0.1', resolve));
    try {
      const socket = connect((cut.address() as { port: number }).port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      // The head and 12 of the 100 bytes it announces; then the connection closes.
      socket.end(`POST /api_keys HTTP/1.1\r\nHost: burrow.test\r\nAuthorization: Bearer ${account.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"descripti`);
      // Read whatever node's server says to the cut request (its 400), to the connection's close.
      socket.resume();
      await new Promise((resolve) => socket.once('close', resolve));
      // The server answers into a closed connection; the journal shows when it has.
      const deadline = Date.now() + 30_000;
      while (burrow.requests.list({ account: account.accountId }).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      const [entry] = burrow.requests.list({ account: account.accountId });
      assert.equal(entry?.status, 400, JSON.stringify(entry));
      assert.equal(entry?.error_code, 'ERR_BURROW_212');
      assert.match(entry?.message ?? '', /the client closed its connection before the rest/);
      assert.deepEqual(errors, [], 'nothing reported as an internal error');
    } finally {
      await new Promise<void>((resolve) => cut.close(() => resolve()));
    }
  });
});
