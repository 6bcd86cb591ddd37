// Burrow behind Fastify: every method and path goes to the fetch handler.
import Fastify from 'fastify';
import { createBurrow } from 'burrow-tunnels';
import { createFetchHandler } from 'burrow-tunnels/http';
import { MemoryStore } from 'burrow-tunnels/memory';

export async function start(port = 0) {
  const burrow = createBurrow({ store: new MemoryStore() });
  const { token } = await burrow.createAccount();
  const handle = createFetchHandler(burrow, { sourceIp: (request) => request.headers.get('x-client-ip') ?? undefined });
  const app = Fastify();
  // Let Burrow read the raw body itself (it enforces the 1 MiB limit and reports bad JSON).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  app.all('/*', async (request, reply) => {
    const chunks: Buffer[] = [];
    if (request.body) for await (const chunk of request.body as AsyncIterable<Buffer>) chunks.push(chunk);
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    const headers = new Headers(request.headers as Record<string, string>);
    headers.set('x-client-ip', request.ip);
    const response = await handle(new Request(`http://${request.host}${request.url}`, { method: request.method, headers, ...(body ? { body } : {}) }));
    reply.code(response.status);
    response.headers.forEach((value, name) => void reply.header(name, value));
    return reply.send(await response.text());
  });
  await app.listen({ port, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, token, close: () => app.close() };
}
