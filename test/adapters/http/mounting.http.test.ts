import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { describe, test } from 'node:test';
import { createBurrow, type Burrow } from '../../../lib/index.ts';
import { MemoryStore } from '../../../adapters/stores/memory-store.ts';
import { createFetchHandler, createNodeListener, type RequestLog } from '../../../adapters/http/index.ts';

/** Burrow served under a path: every uri and next_page_uri must be followable where it is mounted. */

async function instance(): Promise<{ burrow: Burrow; token: string }> {
  const burrow = createBurrow({ store: new MemoryStore() });
  const { token } = await burrow.createAccount();
  return { burrow, token };
}

const auth = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe('basePath', () => {
  test('the fetch handler routes under basePath and puts it in every uri and next_page_uri', async () => {
    const { burrow, token } = await instance();
    const handle = createFetchHandler(burrow, { basePath: '/tools/burrow/' });
    const created = await handle(new Request('http://app.test/tools/burrow/api_keys', { method: 'POST', headers: auth(token), body: '{}' }));
    assert.equal(created.status, 201);
    const key = (await created.json()) as { id: string; uri: string };
    assert.equal(key.uri, `http://app.test/tools/burrow/api_keys/${key.id}`);
    const page = (await (await handle(new Request('http://app.test/tools/burrow/api_keys?limit=1', { headers: auth(token) }))).json()) as { uri: string; next_page_uri: string };
    assert.equal(page.uri, 'http://app.test/tools/burrow/api_keys');
    assert.match(page.next_page_uri, /^http:\/\/app\.test\/tools\/burrow\/api_keys\?limit=1&before_id=ak_/);
    const second = await handle(new Request(page.next_page_uri, { headers: auth(token) }));
    assert.equal(second.status, 200);
    assert.equal(((await second.json()) as { keys: unknown[] }).keys.length, 1);
  });

  test('a path outside basePath is a 404 naming the path', async () => {
    const { burrow, token } = await instance();
    const handle = createFetchHandler(burrow, { basePath: '/burrow' });
    for (const path of ['/api_keys', '/burrowed/api_keys']) {
      const response = await handle(new Request(`http://app.test${path}`, { headers: auth(token) }));
      assert.equal(response.status, 404);
      const body = (await response.json()) as { error_code: string; msg: string };
      assert.equal(body.error_code, 'ERR_BURROW_9002');
      assert.ok(body.msg.includes(path), body.msg);
    }
  });

  test('the control plane answers under basePath too', async () => {
    const { burrow } = await instance();
    const handle = createFetchHandler(burrow, { basePath: '/burrow' });
    assert.equal((await handle(new Request('http://app.test/burrow/_burrow/health'))).status, 200);
  });

  test('the node listener honours basePath next to routes of its own', async () => {
    const { burrow, token } = await instance();
    const api = createNodeListener(burrow, { basePath: '/burrow' });
    const server = createServer((req, res) => (req.url?.startsWith('/burrow') ? api(req, res) : res.end('mine')));
    try {
      const url = await listen(server);
      const list = (await (await fetch(`${url}/burrow/api_keys`, { headers: auth(token) })).json()) as { uri: string; keys: { uri: string }[] };
      assert.equal(list.uri, `${url}/burrow/api_keys`);
      assert.equal((await fetch(list.keys[0]!.uri, { headers: auth(token) })).status, 200);
      assert.equal(await (await fetch(`${url}/other`)).text(), 'mine');
    } finally {
      server.close();
    }
  });
});

describe("a host framework's mount path (req.originalUrl)", () => {
  /** Strips a mount path from req.url and keeps originalUrl, as Express and Connect do. */
  function mount(prefix: string, listener: (req: IncomingMessage, res: any) => void) {
    return createServer((req, res) => {
      const original = req.url!;
      if (!original.startsWith(prefix)) return void res.writeHead(404).end();
      Object.assign(req, { originalUrl: original, url: original.slice(prefix.length) || '/' });
      listener(req, res);
    });
  }

  test('is put in front of every uri, and composes with basePath', async () => {
    const { burrow, token } = await instance();
    const server = mount('/app', createNodeListener(burrow, { basePath: '/v1' }));
    try {
      const url = await listen(server);
      const created = (await (await fetch(`${url}/app/v1/credentials`, { method: 'POST', headers: auth(token), body: '{}' })).json()) as { id: string; uri: string };
      assert.equal(created.uri, `${url}/app/v1/credentials/${created.id}`);
      assert.equal((await fetch(created.uri, { headers: auth(token) })).status, 200);
    } finally {
      server.close();
    }
  });

  test('a request for the mount path itself and one with a trailing slash keep the mount', async () => {
    const { burrow } = await instance();
    const logs: RequestLog[] = [];
    const server = mount('/app', createNodeListener(burrow, { log: (entry) => logs.push(entry) }));
    try {
      const url = await listen(server);
      const root = await fetch(`${url}/app`);
      assert.equal(root.status, 200);
      assert.equal((await root.json()).inspector_uri, `${url}/app/_burrow/`);
      assert.equal((await fetch(`${url}/app/api_keys/?limit=2`)).status, 401);
      assert.deepEqual(logs.map((entry) => [entry.path, entry.query, entry.status]), [
        ['/app/', '', 200],
        ['/app/api_keys/', '?limit=2', 401],
      ]);
    } finally {
      server.close();
    }
  });
});

describe('request log entries', () => {
  test('carry an ISO time, the query string, and the error code of an error', async () => {
    const { burrow, token } = await instance();
    const logs: RequestLog[] = [];
    const handle = createFetchHandler(burrow, { log: (entry) => logs.push(entry) });
    await handle(new Request('http://app.test/api_keys?limit=1', { headers: auth(token) }));
    await handle(new Request('http://app.test/api_keys?limit=1000&api_key=sk_live_1&before_id=x', { headers: auth(token) }));
    const [ok, failed] = logs;
    assert.match(ok!.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(ok!.query, '?limit=1');
    assert.equal(ok!.errorCode, undefined);
    assert.equal(failed!.status, 400);
    assert.match(failed!.errorCode!, /^ERR_BURROW_2\d\d$/);
    assert.equal(failed!.query, '?limit=1000&api_key=***&before_id=x');
    assert.ok(!JSON.stringify(logs).includes(token));
  });
});
