// Burrow inside a plain node:http server, next to your own routes.
import { createServer } from 'node:http';
import { createBurrow } from 'burrow-tunnels';
import { createNodeListener } from 'burrow-tunnels/http';
import { MemoryStore } from 'burrow-tunnels/memory';

export async function start(port = 0) {
  const burrow = createBurrow({ store: new MemoryStore() });
  const { token } = await burrow.createAccount({ name: 'dev' });
  const api = createNodeListener(burrow);
  const server = createServer((req, res) => {
    if (req.url === '/hello') return void res.end('hello from my app');
    api(req, res);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, token, close: () => server.close() };
}
