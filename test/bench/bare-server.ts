// The practical ceiling: a bare node:http server answering the same shapes of JSON from a Map,
// with no validation, auth, ids or durability. Prints its URL.
import { createServer } from 'node:http';

const count = Number(process.argv[2] ?? 1000);
const items = new Map<string, Record<string, unknown>>();
for (let i = 0; i < count; i++) {
  const id = `ipp_${String(i).padStart(27, '0')}`;
  items.set(id, { id, uri: `http://127.0.0.1/ip_policies/${id}`, created_at: '2026-01-01T00:00:00Z', description: `policy ${i}`, metadata: '' });
}
const ordered = [...items.keys()].reverse();
let next = count;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://x');
    const id = url.pathname.split('/')[2];
    let status = 200;
    let body: unknown;
    if (req.method === 'GET' && !id) body = { ip_policies: ordered.slice(0, 100).map((k) => items.get(k)), uri: url.href, next_page_uri: null };
    else if (req.method === 'GET') body = items.get(id!) ?? ((status = 404), { msg: 'not found' });
    else if (req.method === 'POST') {
      const input = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      const newId = `ipp_${String(next++).padStart(27, '0')}`;
      body = { id: newId, uri: `http://127.0.0.1/ip_policies/${newId}`, created_at: '2026-01-01T00:00:00Z', description: input.description ?? '', metadata: '' };
      items.set(newId, body as Record<string, unknown>);
      status = 201;
    } else if (req.method === 'PATCH') {
      const input = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      body = { ...items.get(id!), ...input };
      items.set(id!, body as Record<string, unknown>);
    }
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${(server.address() as { port: number }).port}`));
