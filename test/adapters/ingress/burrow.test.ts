import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer, request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test, type TestContext } from 'node:test';
import { parseCli } from '../../../bin/burrow.ts';
import type { RunningServer } from '../../helpers.ts';
import { listenLocally, startIngressServer, startJsonApp, type IngressServer } from './fixtures.ts';

/**
 * `burrow serve --agent-addr … --http-ingress-addr …`: the vendor's agent connected to Burrow with a
 * tunnel credential's token, clients' requests through the ingress to its local app, and cloud
 * endpoints (POST /endpoints) served by their stored traffic policy.
 */

let ingress: IngressServer;
let server: RunningServer;
let ingressPort: number;
let app: Awaited<ReturnType<typeof startJsonApp>>;

before(async () => {
  ingress = await startIngressServer(['--http-ingress-addr', '127.0.0.1:0']);
  server = ingress.server;
  ingressPort = ingress.port('http_ingress');
  app = await startJsonApp();
});

after(async () => {
  await ingress?.stop();
  await app?.close();
});

const agent = (t: TestContext, token?: string) => ingress.agent(t, token);

/** One request to the ingress with `host` as its Host. */
async function call(host: string, path = '/'): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const req = request({ host: '127.0.0.1', port: ingressPort, path, headers: { host }, agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { status: res.statusCode ?? 0, headers: res.headers, body };
}

describe('the ingress options', () => {
  test('--http-ingress-addr HOST:PORT (or BURROW_HTTP_INGRESS_ADDR), off unless given', () => {
    assert.equal(parseCli([], {}).httpIngressAddr, undefined);
    assert.deepEqual(parseCli(['--http-ingress-addr', '0.0.0.0:8000'], {}).httpIngressAddr, { host: '0.0.0.0', port: 8000 });
    assert.deepEqual(parseCli([], { BURROW_HTTP_INGRESS_ADDR: '[::1]:0' }).httpIngressAddr, { host: '::1', port: 0 });
    assert.throws(() => parseCli(['--http-ingress-addr', '8000'], {}), /^Error: --http-ingress-addr must be HOST:PORT, e\.g\. 127\.0\.0\.1:4443 or \[::1\]:0 \(got 8000\)$/);
  });
});

describe('burrow serve --http-ingress-addr', () => {
  test('health lists the listener and the start-up says where it is', async () => {
    const health = await server.request('GET', '/_burrow/health', undefined, { token: null });
    assert.match(health.body.listeners.http_ingress, /^127\.0\.0\.1:\d+$/);
    await server.outputUntil((lines) => lines.some((line) => line.startsWith(`http ingress: ${health.body.listeners.http_ingress} `)));
  });

  test("a request by Host reaches the agent's app, on its random name and on a reserved domain", async (t) => {
    const session = await agent(t);
    const random = await session.httpEndpoint().listenAndForward(`http://127.0.0.1:${app.port}`);
    const name = new URL(random.url()!).hostname;
    assert.match(name, /^[0-9a-f]{16}\.burrow\.internal$/);
    const answered = await call(name, '/hello');
    assert.equal(answered.status, 200);
    assert.equal(JSON.parse(answered.body).url, '/hello');

    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'web.example.com' })).status, 201);
    await session.httpEndpoint().domain('web.example.com').listenAndForward(`http://127.0.0.1:${app.port}`);
    assert.equal(JSON.parse((await call('web.example.com', '/there')).body).url, '/there');
  });
});

describe('policies the vendor\'s agent binds with', () => {
  test('a policy the checker refuses (an unknown variable; the SDK\'s older req.Method form) refuses the bind, naming the spot, instead of a 500 per request', async (t) => {
    const session = await agent(t);
    const unknown = JSON.stringify({ on_http_request: [{ expressions: ["req.foo == 'x'"], actions: [{ type: 'deny' }] }] });
    await assert.rejects(session.httpEndpoint().trafficPolicy(unknown).listen(), /on_http_request\[0\]\.expressions\[0\]: unknown variable req\.foo/);
    const older = JSON.stringify({ inbound: [{ expressions: ["req.Method == 'GET'"], actions: [{ type: 'deny' }] }] });
    await assert.rejects(session.httpEndpoint().trafficPolicy(older).listen(), /traffic_policy/);
    const fine = await session.httpEndpoint().trafficPolicy(JSON.stringify({ on_http_request: [{ expressions: ["req.url.path == '/no'"], actions: [{ type: 'deny' }] }] })).listenAndForward(`http://127.0.0.1:${app.port}`);
    const name = new URL(fine.url()!).hostname;
    assert.equal((await call(name, '/no')).status, 403);
    assert.equal((await call(name, '/yes')).status, 200);
  });
});

describe('cloud endpoints on live traffic', () => {
  test('a cloud endpoint answers by its traffic policy and forwards to a live agent\'s internal endpoint of its own account only', async (t) => {
    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'shop.example.com' })).status, 201);
    const policy = JSON.stringify({
      on_http_request: [
        { expressions: ["req.url.path == '/hello'"], actions: [{ type: 'custom-response', config: { status_code: 200, body: 'hello from the cloud', headers: { 'content-type': 'text/plain' } } }] },
        { expressions: ["req.url.path == '/old'"], actions: [{ type: 'redirect', config: { to: 'https://shop.example.com/new', status_code: 302 } }] },
        { expressions: ["req.url.path.startsWith('/api')"], actions: [{ type: 'add-headers', config: { headers: { 'x-via': 'cloud' } } }, { type: 'forward-internal', config: { url: 'https://api.internal' } }] },
        { actions: [{ type: 'deny', config: { status_code: 404 } }] },
      ],
    });
    // A cloud endpoint's policy must answer every request itself: without the last rule it is refused (ERR_NGROK_2235).
    const unterminated = JSON.stringify({ on_http_request: JSON.parse(policy).on_http_request.slice(0, -1) });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://shop.example.com', traffic_policy: unterminated })).body.error_code, 'ERR_BURROW_2235');
    const created = await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://shop.example.com', traffic_policy: policy });
    assert.equal(created.status, 201, created.text);

    const hello = await call('shop.example.com', '/hello');
    assert.equal(hello.status, 200);
    assert.equal(hello.body, 'hello from the cloud');
    const moved = await call('shop.example.com', '/old');
    assert.equal(moved.status, 302);
    assert.equal(moved.headers.location, 'https://shop.example.com/new');

    // Nothing serves api.internal yet: offline.
    const offline = await call('shop.example.com', '/api/items');
    assert.equal(offline.status, 404);
    assert.equal(offline.headers['ngrok-error-code'], 'ERR_BURROW_3200');

    const session = await agent(t);
    const internal = await session.httpEndpoint().domain('api.internal').listenAndForward(`http://127.0.0.1:${app.port}`);
    assert.equal(internal.url(), 'https://api.internal');
    const endpoints = await server.request('GET', `/endpoints?url=${encodeURIComponent('https://api.internal')}`);
    assert.deepEqual(endpoints.body.endpoints.map((endpoint: any) => endpoint.bindings), [['internal']]);
    const forwarded = await call('shop.example.com', '/api/items?q=1');
    assert.equal(forwarded.status, 200);
    const seen = JSON.parse(forwarded.body);
    assert.equal(seen.url, '/api/items?q=1');
    assert.equal(seen.headers['x-via'], 'cloud');
    assert.equal(seen.headers.host, 'shop.example.com');
    // Clients cannot reach the internal endpoint directly.
    assert.equal((await call('api.internal', '/')).headers['ngrok-error-code'], 'ERR_BURROW_3200');

    // No other rule answered: the last one did.
    assert.equal((await call('shop.example.com', '/elsewhere')).status, 404);

    // Another account's cloud endpoint cannot reach this account's internal endpoint.
    const other = await server.request('POST', '/_burrow/accounts', { name: 'other' }, { token: server.operatorToken! });
    assert.equal(other.status, 201, other.text);
    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'other.example.com' }, { token: other.body.token })).status, 201);
    const forwardOnly = JSON.stringify({ on_http_request: [{ actions: [{ type: 'forward-internal', config: { url: 'https://api.internal' } }] }] });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://other.example.com', traffic_policy: forwardOnly }, { token: other.body.token })).status, 201);
    const isolated = await call('other.example.com', '/api');
    assert.equal(isolated.status, 404);
    assert.equal(isolated.headers['ngrok-error-code'], 'ERR_BURROW_3200');

    // A changed policy serves the next request; a deleted endpoint serves none.
    const teapot = JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { status_code: 418, body: 'changed' } }] }] });
    assert.equal((await server.request('PATCH', `/endpoints/${created.body.id}`, { traffic_policy: teapot })).status, 200);
    assert.equal((await call('shop.example.com', '/hello')).status, 418);
    assert.equal((await server.request('DELETE', `/endpoints/${created.body.id}`)).status, 204);
    assert.equal((await call('shop.example.com', '/hello')).headers['ngrok-error-code'], 'ERR_BURROW_3200');
  });

  test("http-request to a .internal URL reaches the account's internal endpoint through Burrow's routing (not DNS): the agent's app sees the request; another account's does not; a loop stops after 3 internal hops", async (t) => {
    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'lookup.example.com' })).status, 201);
    const session = await agent(t);
    await session.httpEndpoint().domain('users.internal').listenAndForward(`http://127.0.0.1:${app.port}`);
    const policy = JSON.stringify({
      on_http_request: [{ actions: [
        { type: 'http-request', config: { url: "https://users.internal/users?id=${req.url.query_params['id'][0]}", method: 'POST', headers: { 'x-from': 'cloud' }, body: 'who', on_error: 'halt' } },
        { type: 'custom-response', config: { body: '${actions.ngrok.http_request.res.status_code} ${actions.ngrok.http_request.res.resolved_ip} ${actions.ngrok.http_request.res.body}' } },
      ] }],
    });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://lookup.example.com', traffic_policy: policy })).status, 201);
    const looked = await call('lookup.example.com', '/?id=7');
    assert.equal(looked.status, 200, looked.body);
    const [status, address, ...rest] = looked.body.split(' ');
    assert.deepEqual([status, address], ['200', '127.0.0.1']);
    const seen = JSON.parse(rest.join(' '));
    assert.equal(seen.url, '/users?id=7');
    assert.equal(seen.headers.host, 'users.internal');
    assert.equal(seen.headers['x-from'], 'cloud');

    // Another account's endpoint: nothing of its own serves users.internal, which is offline to it.
    const other = await server.request('POST', '/_burrow/accounts', { name: 'caller' }, { token: server.operatorToken! });
    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'caller.example.com' }, { token: other.body.token })).status, 201);
    const probe = JSON.stringify({ on_http_request: [{ actions: [{ type: 'http-request', config: { url: 'https://users.internal/users' } }, { type: 'custom-response', config: { body: "${actions.ngrok.http_request.res.status_code} ${actions.ngrok.http_request.res.header['ngrok-error-code'][0]}" } }] }] });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://caller.example.com', traffic_policy: probe }, { token: other.body.token })).status, 201);
    assert.equal((await call('caller.example.com', '/')).body, '404 ERR_BURROW_3200');

    // An internal cloud endpoint that calls itself: each hop answers what the next one said, the fourth call fails.
    const loop = JSON.stringify({ on_http_request: [{ actions: [{ type: 'http-request', config: { url: 'https://loop.internal/' } }, { type: 'custom-response', config: { body: '${actions.ngrok.http_request.res.status_code}(${actions.ngrok.http_request.error.message}${actions.ngrok.http_request.res.body})' } }] }] });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://loop.internal', traffic_policy: loop })).status, 201);
    const entry = JSON.stringify({ on_http_request: [{ actions: [{ type: 'forward-internal', config: { url: 'https://loop.internal' } }] }] });
    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'loop.example.com' })).status, 201);
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://loop.example.com', traffic_policy: entry })).status, 201);
    const looped = await call('loop.example.com', '/');
    assert.equal(looped.body, '200(200(200(0(https://loop.internal/ is not requested: the request has looped through internal endpoints more than 3 times))))');
  });

  test("secrets.get('vault', 'name') reads the account's vault (traffic-policy/secrets.mdx): a changed secret serves the next request, a missing one answers 501 naming it", async () => {
    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'vaulted.example.com' })).status, 201);
    const vault = await server.request('POST', '/vaults', { name: 'prod' });
    assert.equal(vault.status, 201, vault.text);
    const secret = await server.request('POST', '/vault_secrets', { name: 'api_key', value: 'hunter2', vault_id: vault.body.id });
    assert.equal(secret.status, 201, secret.text);
    const policy = JSON.stringify({
      on_http_request: [
        { expressions: ["req.headers['x-api-key'][0] == secrets.get('prod', 'api_key')"], actions: [{ type: 'custom-response', config: { status_code: 200, body: 'welcome ${secrets.get("prod", "api_key").size()}' } }] },
        { expressions: ["req.url.path == '/missing'"], actions: [{ type: 'custom-response', config: { body: "${secrets.get('prod', 'nope')}" } }] },
        { actions: [{ type: 'deny', config: { status_code: 401 } }] },
      ],
    });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://vaulted.example.com', traffic_policy: policy })).status, 201);
    const send = async (key: string, path = '/', host = 'vaulted.example.com') => {
      const req = request({ host: '127.0.0.1', port: ingressPort, path, headers: { host, 'x-api-key': key }, agent: false });
      req.end();
      const [res] = (await once(req, 'response')) as [IncomingMessage];
      let body = '';
      for await (const chunk of res) body += String(chunk);
      return { status: res.statusCode, body };
    };
    assert.deepEqual(await send('hunter2'), { status: 200, body: 'welcome 7' });
    assert.equal((await send('guess')).status, 401);
    assert.equal((await server.request('PATCH', `/vault_secrets/${secret.body.id}`, { value: 'swordfish' })).status, 200);
    assert.equal((await send('swordfish')).status, 200);
    const missing = await send('x', '/missing');
    assert.equal(missing.status, 501);
    assert.match(missing.body, /secrets\.get\(&#34;prod&#34;, &#34;nope&#34;\) is not available: the account has no such vault or secret/);

    // Computed arguments: the vault named by a header, the secret by the path; read at request time.
    assert.equal((await server.request('POST', '/reserved_domains', { domain: 'computed.example.com' })).status, 201);
    const staging = await server.request('POST', '/vaults', { name: 'staging' });
    assert.equal((await server.request('POST', '/vault_secrets', { name: 'api_key', value: 'test-key', vault_id: staging.body.id })).status, 201);
    const computed = JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { body: "${secrets.get(req.headers['x-api-key'][0], req.url.path.substring(1))}" } }] }] });
    assert.equal((await server.request('POST', '/endpoints', { type: 'cloud', url: 'https://computed.example.com', traffic_policy: computed })).status, 201);
    const ask = (vaultName: string, path: string) => send(vaultName, path, 'computed.example.com');
    assert.deepEqual(await ask('prod', '/api_key'), { status: 200, body: 'swordfish' });
    assert.deepEqual(await ask('staging', '/api_key'), { status: 200, body: 'test-key' });
    const absent = await ask('staging', '/other');
    assert.equal(absent.status, 501);
    assert.match(absent.body, /secrets\.get\(&#34;staging&#34;, &#34;other&#34;\) is not available: the account has no such vault or secret/);
  });

  test('request-body-find-replace and response-body-find-replace (the reference\'s redaction example): the app gets the redacted body with its new Content-Length, the client the replaced (gzip-decoded) answer', async (t) => {
    const seen: { body: string; length: string | undefined }[] = [];
    const bodyApp = await listenLocally(
      createHttpServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => (body += chunk));
        req.on('end', () => {
          seen.push({ body, length: req.headers['content-length'] });
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(JSON.stringify({ owner: 'john.doe@example.com', ok: true })));
        });
      }),
    );
    t.after(() => bodyApp.close());
    const session = await agent(t);
    const policy = JSON.stringify({
      on_http_request: [{ actions: [{ type: 'request-body-find-replace', config: { replacements: [{ from: '"api_key":\\s*"[^"]*"', to: '"api_key": "[REDACTED]"' }, { from: '[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}', to: '[EMAIL REDACTED]' }] } }] }],
      on_http_response: [{ actions: [{ type: 'response-body-find-replace', config: { replacements: [{ from: '([a-z.]+)@example\\.com', to: '$1 at example' }] } }] }],
    });
    const listener = await session.httpEndpoint().trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${bodyApp.port}`);
    const sent = JSON.stringify({ api_key: 'sk-abc123secret', user_email: 'john.doe@example.com', message: 'Hello world' });
    const req = request({ host: '127.0.0.1', port: ingressPort, path: '/', method: 'POST', headers: { host: new URL(listener.url()!).host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(sent) }, agent: false });
    req.end(sent);
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    let answered = '';
    for await (const chunk of res) answered += String(chunk);
    const expected = JSON.stringify({ api_key: '[REDACTED]', user_email: '[EMAIL REDACTED]', message: 'Hello world' }).replace('"api_key":"[REDACTED]"', '"api_key": "[REDACTED]"');
    assert.deepEqual(seen, [{ body: expected, length: String(Buffer.byteLength(expected)) }]);
    assert.equal(res.statusCode, 200);
    assert.equal(answered, JSON.stringify({ owner: 'john.doe at example', ok: true }));
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(answered)));
  });

  test('on_event_stream_message with sse-find-replace (the reference\'s streaming redaction example): each message of a text/event-stream answer is rewritten as it passes, the rest of the stream untouched', async (t) => {
    const sseApp = await listenLocally(
      createHttpServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': keep-alive\n\nevent: delta\ndata: {"text": "my SSN is 123-45-');
        res.write('6789"}\nid: 1\n\ndata: mail john.doe@example.com\ndata: twice: a@b.io\n\ndata: nothing here\n\n');
        res.end();
      }),
    );
    t.after(() => sseApp.close());
    const session = await agent(t);
    const policy = JSON.stringify({
      on_event_stream_message: [
        { actions: [{ type: 'sse-find-replace', config: { replacements: [{ field: 'data', from: '\\d{3}-\\d{2}-\\d{4}', to: '[SSN REDACTED]' }, { field: 'data', from: '[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}', to: '[EMAIL REDACTED]' }] } }] },
      ],
    });
    const listener = await session.httpEndpoint().trafficPolicy(policy).listenAndForward(`http://127.0.0.1:${sseApp.port}`);
    const answered = await call(new URL(listener.url()!).host, '/events');
    assert.equal(answered.status, 200);
    assert.equal(answered.headers['content-type'], 'text/event-stream');
    assert.equal(answered.body, ': keep-alive\n\nevent: delta\ndata: {"text": "my SSN is [SSN REDACTED]"}\nid: 1\n\ndata: mail [EMAIL REDACTED]\ndata: twice: [EMAIL REDACTED]\n\ndata: nothing here\n\n');
  });
});
