// Burrow mounted in an Express app under /burrow (express 5).
import express from 'express';
import { createBurrow } from 'burrow-tunnels';
import { createNodeListener } from 'burrow-tunnels/http';
import { MemoryStore } from 'burrow-tunnels/memory';

export async function start(port = 0) {
  const burrow = createBurrow({ store: new MemoryStore() });
  const { token } = await burrow.createAccount();
  const app = express();
  const api = createNodeListener(burrow);
  // Express strips /burrow from req.url; Burrow reads it back from req.originalUrl, so every uri
  // and next_page_uri it answers starts with …/burrow and can be followed through Express.
  app.use('/burrow', (req, res) => api(req, res));
  const server = app.listen(port, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}/burrow`, token, close: () => server.close() };
}
