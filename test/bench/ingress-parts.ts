import ngrok from '@ngrok/ngrok';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { startAgentGateway, type LiveContext } from '../../adapters/agent-gateway/index.ts';
import { createIngress } from '../../adapters/ingress/index.ts';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { createBurrow } from '../../lib/index.ts';

/**
 * The processes of the ingress benchmark (test/bench/ingress.ts forks this file with a role):
 *
 * - `burrow`: an instance with its agent gateway and HTTP ingress, an account with a reserved
 *   domain and a tunnel credential; it tells the bench where they are; on `watch` it starts
 *   sampling its live memory (heap and buffers, each sample after a garbage collection, every
 *   20 ms) and answers its memory then; `memory` answers its memory now and the highest sample since;
 * - `agent`: the local app (GET / answers a small JSON body, POST /upload counts the body,
 *   GET /download?bytes=N sends N bytes in 64 KiB chunks) and the vendor's agent (@ngrok/ngrok)
 *   forwarding the reserved domain to it; it tells the bench the app's port.
 *
 * Each process exits when the bench that forked it goes.
 */

export interface BurrowPart {
  readonly ingressPort: number;
  readonly gatewayPort: number;
  readonly caPem: string;
  readonly token: string;
  readonly domain: string;
}

export interface AgentPart {
  readonly appPort: number;
}

export interface MemoryReport {
  /** Heap and buffers (`external`) after a garbage collection, bytes. */
  readonly live: number;
  /** The highest `live` sampled since `watch`. */
  readonly peakLive: number;
}

const DOMAIN = 'bench.example.com';
const CHUNK = Buffer.alloc(64 * 1024, 'x');
const SMALL = JSON.stringify({ ok: true, items: [1, 2, 3], name: 'bench' });

const send = (message: unknown) => process.send!(message);
process.on('disconnect', () => process.exit(0));

async function burrowPart(): Promise<void> {
  const burrow = createBurrow({ store: new MemoryStore() });
  const gateway = await startAgentGateway(burrow);
  const ingress = await createIngress(burrow, { sessions: () => gateway.sessions(), accountOf: (session) => (session.context as LiveContext).account, onError: (error) => console.error(error) });
  const account = await burrow.createAccount({ name: 'bench' });
  const client = burrow.client(account.token);
  await client.resource('reserved_domains').create({ domain: DOMAIN });
  const credential = (await client.resource('credentials').create({})) as unknown as { token: string };
  const live = () => {
    globalThis.gc!();
    const { heapUsed, external } = process.memoryUsage();
    return heapUsed + external;
  };
  let peakLive = 0;
  let sampler: NodeJS.Timeout | undefined;
  process.on('message', (message) => {
    if (message === 'watch') {
      peakLive = live();
      sampler = setInterval(() => (peakLive = Math.max(peakLive, live())), 20);
      send({ live: peakLive, peakLive } satisfies MemoryReport);
    } else if (message === 'memory') {
      clearInterval(sampler);
      const now = live();
      send({ live: now, peakLive: Math.max(peakLive, now) } satisfies MemoryReport);
    }
  });
  send({ ingressPort: ingress.http!.port, gatewayPort: gateway.address.port, caPem: (await burrow.services.ca()).certificatePem, token: credential.token, domain: DOMAIN } satisfies BurrowPart);
}

async function agentPart(): Promise<void> {
  const [message] = (await once(process, 'message')) as [BurrowPart];
  const app = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://app');
    if (req.method === 'POST') {
      let length = 0;
      for await (const chunk of req) length += (chunk as Buffer).length;
      return res.end(String(length));
    }
    if (url.pathname === '/download') {
      let left = Number(url.searchParams.get('bytes'));
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(left) });
      while (left > 0) {
        const piece = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
        left -= piece.length;
        if (!res.write(piece)) await once(res, 'drain');
      }
      return res.end();
    }
    res.setHeader('Content-Type', 'application/json');
    res.end(SMALL);
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  const appPort = (app.address() as { port: number }).port;
  const session = await new ngrok.SessionBuilder().authtoken(message.token).serverAddr(`localhost:${message.gatewayPort}`).caCert(Buffer.from(message.caPem)).connect();
  await session.httpEndpoint().domain(message.domain).listenAndForward(`http://127.0.0.1:${appPort}`);
  send({ appPort } satisfies AgentPart);
}

const role = process.argv[2];
if (role === 'burrow') await burrowPart();
else if (role === 'agent') await agentPart();
else throw new Error(`ingress-parts: the role must be burrow or agent (got ${role})`);
