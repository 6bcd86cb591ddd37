import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { MemoryStore } from '../../../adapters/stores/memory-store.ts';
import { createBurrow } from '../../../lib/index.ts';
import { startLiveIngress } from '../../fixtures/live-ingress.ts';

/**
 * Bodies stream through the ingress and the vendor's agent both ways, never held whole: each test
 * makes one side wait for the other to have seen the first bytes before it sends the rest, which
 * can only finish if every hop passes bytes on as they come (a hop that held the body would never
 * let the first bytes through; the timeout ends such a run). No timing is asserted.
 */

const CHUNK = Buffer.alloc(64 * 1024, 'b');
const CHUNKS = 160; // 10 MiB

/** A promise and the function that resolves it, for one side to wait on the other. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function readAll(res: IncomingMessage, onFirst?: () => void): Promise<number> {
  let total = 0;
  for await (const chunk of res) {
    if (total === 0) onFirst?.();
    total += (chunk as Buffer).length;
  }
  return total;
}

/** A GET of `path` for the live ingress's domain, on a connection of its own; resolves with the answer's head. */
async function get(live: { port: number; domain: string }, path: string): Promise<IncomingMessage> {
  const req = request({ host: '127.0.0.1', port: live.port, path, headers: { host: live.domain }, agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  return res;
}

describe('HTTP ingress: bodies stream through', () => {
  test('an upload: the app sees the first bytes before the client has sent the last', { timeout: 120_000 }, async (t) => {
    const live = await startLiveIngress(t, createBurrow({ store: new MemoryStore() }), {
      app: (req, res) => {
        let total = 0;
        req.on('data', (chunk: Buffer) => {
          // The first bytes: answer at once, before the client sends the rest.
          if (total === 0) res.writeHead(200, { 'Content-Type': 'text/plain' }).write('first bytes arrived\n');
          total += chunk.length;
        });
        req.on('end', () => res.end(`${total}\n`));
      },
    });
    const session = await live.agent();
    await session.httpEndpoint().domain(live.domain).listenAndForward(live.appUrl);

    const req = request({ host: '127.0.0.1', port: live.port, method: 'POST', path: '/upload', headers: { host: live.domain, 'Content-Type': 'application/octet-stream' }, agent: false });
    req.write(CHUNK);
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    assert.equal(res.statusCode, 200);
    res.setEncoding('utf8');
    const [first] = (await once(res, 'data')) as [string];
    assert.equal(first, 'first bytes arrived\n', 'the app answered while the client had sent one chunk of 160');
    for (let i = 1; i < CHUNKS; i++) if (!req.write(CHUNK)) await once(req, 'drain');
    req.end();
    let rest = '';
    for await (const chunk of res) rest += chunk;
    assert.equal(rest, `${CHUNK.length * CHUNKS}\n`, 'the app received all 10 MiB');
    assert.deepEqual(live.errors, []);
  });

  test('a download: the client sees the first bytes before the app has sent the last', { timeout: 120_000 }, async (t) => {
    const clientGotFirst = signal();
    const live = await startLiveIngress(t, createBurrow({ store: new MemoryStore() }), {
      app: async (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        res.write(CHUNK);
        await clientGotFirst.promise;
        for (let i = 1; i < CHUNKS; i++) if (!res.write(CHUNK)) await once(res, 'drain');
        res.end();
      },
    });
    const session = await live.agent();
    await session.httpEndpoint().domain(live.domain).listenAndForward(live.appUrl);

    const res = await get(live, '/download');
    assert.equal(res.statusCode, 200);
    assert.equal(await readAll(res, clientGotFirst.resolve), CHUNK.length * CHUNKS);
    assert.deepEqual(live.errors, []);
  });

  test("an answer the app cuts short is cut short for the client too (never completed, never hung); the next request is served", { timeout: 120_000 }, async (t) => {
    const live = await startLiveIngress(t, createBurrow({ store: new MemoryStore() }), {
      app: (req, res) => {
        if (req.url !== '/cut') return void res.end('whole');
        res.writeHead(200, { 'Content-Length': String(CHUNK.length * 4) });
        res.write(CHUNK, () => res.socket?.destroy());
      },
    });
    const agent = await live.agent();
    await agent.httpEndpoint().domain(live.domain).listenAndForward(live.appUrl);

    const res = await get(live, '/cut');
    assert.equal(res.statusCode, 200);
    let received = 0;
    await assert.rejects(
      (async () => {
        for await (const chunk of res) received += (chunk as Buffer).length;
      })(),
      /aborted|ECONNRESET|premature/i,
    );
    assert.ok(received < CHUNK.length * 4, `the client got ${received} bytes of an answer the app cut`);

    const whole = await get(live, '/');
    assert.equal(whole.statusCode, 200);
    let text = '';
    for await (const chunk of whole) text += String(chunk);
    assert.equal(text, 'whole');
  });
});
