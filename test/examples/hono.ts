// Burrow as a Hono route through the fetch handler (the same handler works on any fetch runtime).
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createBurrow } from 'burrow-tunnels';
import { createFetchHandler } from 'burrow-tunnels/http';
import { MemoryStore } from 'burrow-tunnels/memory';

export async function start(port = 0) {
  const burrow = createBurrow({ store: new MemoryStore() });
  const { token } = await burrow.createAccount();
  const handle = createFetchHandler(burrow);
  const app = new Hono();
  app.get('/hello', (c) => c.text('hello from my app'));
  app.all('*', (c) => handle(c.req.raw));
  const { server, url } = await new Promise<{ server: ReturnType<typeof serve>; url: string }>((resolve) => {
    const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => resolve({ server, url: `http://127.0.0.1:${info.port}` }));
  });
  return { url, token, close: () => server.close() };
}
