/**
 * `node --import tsx test/bench/listener.ts [get|post|keys]`: Burrow's own CPU time per request, without
 * sockets or node's HTTP parser: the node:http listener (adapters/http/node.ts) is handed stand-ins
 * for node's request and response, on a memory store holding 1,000 IP policies. Prints five runs'
 * µs of CPU per request and their median. Steadier than a run over HTTP, so a change to the hot
 * path shows here first: run it in two worktrees in turns (A, B, A, B, …) and compare medians.
 * Over HTTP the same request costs more (the socket write, node's parsing, colder caches):
 * `npm run bench -- --hot` and test/bench/profile.ts measure that.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createNodeListener } from '../../adapters/http/node.ts';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { createBurrow } from '../../lib/index.ts';

const TOKEN = 'bench-admin-token-0123456789';
const which = process.argv[2] ?? 'both';
const burrow = createBurrow({ store: new MemoryStore() });
await burrow.ensureDefaultAccount(TOKEN);
const listener = createNodeListener(burrow, { operatorToken: 'bench-operator-token', onError: (error) => console.error(error) });
const socket = { remoteAddress: '127.0.0.1', localAddress: '127.0.0.1', localPort: 4040 };

/** What the listener reads of node's request: method, url, headers, socket and the body's events. */
class StandInRequest extends EventEmitter {
  readonly headers: Record<string, string>;
  readonly rawHeaders: string[];
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  readonly socket = socket;

  constructor(readonly method: string, readonly url: string, readonly body?: string) {
    super();
    this.headers = { host: '127.0.0.1:4040', authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'service-version': '2', ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) };
    this.rawHeaders = Object.entries(this.headers).flat();
  }

  override on(event: string, listener: (...args: any[]) => void): this {
    super.on(event, listener);
    // As node does: the body (one chunk) and its end arrive once someone listens.
    if (event === 'data') {
      process.nextTick(() => {
        if (this.body) this.emit('data', Buffer.from(this.body));
        this.emit('end');
      });
    }
    return this;
  }

  resume(): this {
    return this;
  }
}

/** One request through the listener; resolves with the status and body it answered. */
function request(method: string, url: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    let status = 0;
    const res = Object.assign(new EventEmitter(), {
      headersSent: false,
      socket: {},
      writeHead: (code: number) => void (status = code),
      end: (text: string) => resolve({ status, body: text }),
    });
    listener(new StandInRequest(method, url, body) as unknown as IncomingMessage, res as unknown as ServerResponse);
  });
}

const seeded = await request('POST', '/ip_policies', '{"description":"seed"}');
const id = (JSON.parse(seeded.body) as { id: string }).id;
for (let i = 0; i < 999; i++) await request('POST', '/ip_policies', '{"description":"seed"}');
const check = await request('GET', `/ip_policies/${id}`);
if (check.status !== 200) throw new Error(`GET answered ${check.status}: ${check.body}`);

/** Warms the JIT, then five runs of `count` requests; prints µs of CPU per request. */
async function measure(title: string, send: () => Promise<unknown>, count: number): Promise<void> {
  for (let i = 0; i < 5000; i++) await send();
  const runs: number[] = [];
  for (let run = 0; run < 5; run++) {
    const before = process.cpuUsage();
    for (let i = 0; i < count; i++) await send();
    const used = process.cpuUsage(before);
    runs.push((used.user + used.system) / count);
  }
  runs.sort((a, b) => a - b);
  console.log(`${title}: ${runs.map((us) => us.toFixed(1)).join(' ')} µs CPU per request (median ${runs[2]!.toFixed(1)})`);
}

if (which === 'both' || which === 'get') await measure('GET /ip_policies/{id}', () => request('GET', `/ip_policies/${id}`), 20_000);
if (which === 'both' || which === 'post') await measure('POST /ip_policies', () => request('POST', '/ip_policies', '{"description":"bench"}'), 10_000);
if (which === 'both' || which === 'keys') await measure('POST /api_keys', () => request('POST', '/api_keys', '{"description":"bench"}'), 10_000);
