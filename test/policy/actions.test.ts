import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { IpRule } from '../../lib/conventions/cidr.ts';
import { CONN, ENDPOINT, exchange, harness, onRequest, policyOf, requestFacts } from './helpers.ts';

const h = harness();

describe('deny, custom-response, redirect, close-connection', () => {
  test('deny answers 403 without a body, or its status_code', async () => {
    assert.deepEqual((await onRequest(h, 'on_http_request: [{actions: [{type: deny}]}]')).terminal, { kind: 'respond', response: { status: 403, headers: [], body: '' } });
    assert.deepEqual((await onRequest(h, 'on_http_request: [{actions: [{type: deny, config: {status_code: 404}}]}]')).terminal, { kind: 'respond', response: { status: 404, headers: [], body: '' } });
  });

  test('custom-response: status 200 by default, interpolated body and headers, inferred content type', async () => {
    const json = await onRequest(h, `on_http_request: [{actions: [{type: custom-response, config: {body: '{"path": "\${req.url.path}"}'}}]}]`);
    assert.deepEqual(json.terminal, { kind: 'respond', response: { status: 200, headers: [['content-type', 'application/json']], body: '{"path": "/api/items"}' } });
    const html = await onRequest(h, `on_http_request: [{actions: [{type: custom-response, config: {status_code: 503, content: '<html><body>down</body></html>', headers: {X-Ip: '\${conn.client_ip}'}}}]}]`);
    assert.deepEqual(html.terminal, { kind: 'respond', response: { status: 503, headers: [['x-ip', '203.0.113.7'], ['content-type', 'text/html; charset=utf-8']], body: '<html><body>down</body></html>' } });
  });

  test('redirect: RE2 from/to with groups over the whole URL, 302 by default, extra headers', async () => {
    const moved = await onRequest(h, `on_http_request: [{actions: [{type: redirect, config: {from: '^https://([^/]+)/api/(?P<rest>.*)$', to: 'https://$1/v2/$rest', headers: {x-why: moved}}}]}]`);
    assert.deepEqual(moved.terminal, {
      kind: 'respond',
      response: { status: 302, headers: [['location', 'https://app.example/v2/items?sort=asc&tag=a&tag=b'], ['x-why', 'moved']], body: '' },
    });
    const permanent = await onRequest(h, `on_http_request: [{actions: [{type: redirect, config: {to: 'https://other.example\${req.url.path}', status_code: 301}}]}]`);
    assert.deepEqual(permanent.terminal, { kind: 'respond', response: { status: 301, headers: [['location', 'https://other.example/api/items']], body: '' } });
  });

  test('redirect does nothing when the URL would not change; the phase goes on', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: redirect, config: {from: '/nowhere', to: '/elsewhere'}}, {type: add-headers, config: {headers: {x-after: '1'}}}]}]`);
    assert.equal(outcome.terminal, undefined);
    assert.deepEqual(outcome.rules[0]!.actions, [
      { type: 'redirect', ended: false, note: 'the URL did not change; no redirect' },
      { type: 'add-headers', ended: false, note: 'added x-after' },
    ]);
  });

  test('close-connection closes without an answer', async () => {
    assert.deepEqual((await onRequest(h, 'on_http_request: [{actions: [{type: close-connection}]}]')).terminal, { kind: 'close', reason: 'closed by the traffic policy' });
  });
});

describe('url-rewrite', () => {
  test('replaces every match in the whole URL, as the vendor example /products → /products.php', async () => {
    const outcome = await onRequest(h, 'on_http_request: [{actions: [{type: url-rewrite, config: {from: /products, to: /products.php}}]}]', { url: 'https://app.example/products' });
    assert.equal(outcome.request.url, 'https://app.example/products.php');
    assert.deepEqual(outcome.rules[0]!.actions, [{ type: 'url-rewrite', ended: false, note: 'https://app.example/products → https://app.example/products.php' }]);
  });

  test('capture groups follow Go: $1, $name, $1x names a group "1x" (empty), $$ is a dollar', async () => {
    const rewrite = async (from: string, to: string, url: string) => (await onRequest(h, JSON.stringify({ on_http_request: [{ actions: [{ type: 'url-rewrite', config: { from, to } }] }] }), { url })).request.url;
    assert.equal(await rewrite('/users/(?P<id>\\d+)', '/u?id=$id', 'https://app.example/users/42'), 'https://app.example/u?id=42');
    assert.equal(await rewrite('/(a)(b)', '/$2$1', 'https://app.example/ab/ab'), 'https://app.example/ba/ba');
    assert.equal(await rewrite('/(a)$', '/$1x-$$', 'https://app.example/a'), 'https://app.example/-$');
    assert.equal(await rewrite('^.*$', 'https://app.example/fixed', 'https://app.example/anything?x'), 'https://app.example/fixed');
  });

  test('interpolation runs before the pattern: ${req.url.authority} anchors on the path', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: url-rewrite, config: {from: '\${req.url.authority}/api/', to: '\${req.url.authority}/internal/'}}]}]`);
    assert.equal(outcome.request.url, 'https://app.example/internal/items?sort=asc&tag=a&tag=b');
  });

  test('a pattern that is no RE2 after interpolation answers ERR_NGROK_3901', async () => {
    const outcome = await onRequest(h, "on_http_request: [{actions: [{type: set-vars, config: {vars: [{p: '(?=x)'}]}}, {type: url-rewrite, config: {from: '${vars.p}', to: /}}]}]");
    assert.deepEqual(outcome.terminal, {
      kind: 'error',
      error: { status: 500, code: 'ERR_NGROK_3901', message: 'CEL interpolation in action url-rewrite field from did not result in a valid regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`', headers: [] },
    });
  });
});

describe('add-headers and remove-headers', () => {
  test('on the request: names lower-cased, values appended, host replaced, user-agent untouchable', async () => {
    const outcome = await onRequest(
      h,
      `on_http_request: [{actions: [
        {type: remove-headers, config: {headers: [Accept, User-Agent]}},
        {type: add-headers, config: {headers: {X-Client-IP: '\${conn.client_ip}', Host: internal.example, User-Agent: spoofed, x-twice: '2'}}}]}]`,
      { headers: [['Host', 'app.example'], ['User-Agent', 'curl/8'], ['Accept', '*/*'], ['X-Twice', '1']] },
    );
    assert.deepEqual(outcome.request.headers, [['User-Agent', 'curl/8'], ['X-Twice', '1'], ['x-client-ip', '203.0.113.7'], ['host', 'internal.example'], ['x-twice', '2']]);
    assert.deepEqual(outcome.rules[0]!.actions, [
      { type: 'remove-headers', ended: false, note: 'removed accept; user-agent may not be removed' },
      { type: 'add-headers', ended: false, note: 'added x-client-ip, host, x-twice; user-agent may not be added' },
    ]);
  });

  test('on the response', async () => {
    const { response } = await exchange(
      h,
      `on_http_response: [{actions: [{type: remove-headers, config: {headers: [server]}}, {type: add-headers, config: {headers: {x-status: '\${res.status_code}'}}}]}]`,
      { status: 201, headers: [['Server', 'upstream/1'], ['Content-Type', 'text/plain']] },
    );
    assert.deepEqual(response.response, { status: 201, headers: [['Content-Type', 'text/plain'], ['x-status', '201']] });
  });
});

describe('restrict-ips', () => {
  const rules: Record<string, IpRule[]> = {
    ipp_office: [{ cidr: '203.0.113.0/24', action: 'allow' }, { cidr: '203.0.113.7/32', action: 'deny' }],
    ipp_open: [{ cidr: '0.0.0.0/0', action: 'allow' }],
  };
  const withPolicies = harness({
    async ipPolicyRules(ids) {
      return ids.flatMap((id) => {
        if (!rules[id]) throw new Error(`IP policy ${id} was not found`);
        return rules[id]!;
      });
    },
  });

  test('allowed only when an allowed CIDR matches and no denied one does; the result is in actions.ngrok.restrict_ips', async () => {
    const document = `on_http_request: [{actions: [{type: restrict-ips, config: {allow: [203.0.113.0/24], deny: [203.0.113.128/25]}}, {type: custom-response, config: {body: '\${actions.ngrok.restrict_ips.action} \${actions.ngrok.restrict_ips.matched_cidr}'}}]}]`;
    assert.deepEqual((await onRequest(h, document)).terminal, { kind: 'respond', response: { status: 200, headers: [['content-type', 'text/plain; charset=utf-8']], body: 'allow 203.0.113.0/24' } });
    const denied = await onRequest(h, document, {}, { clientIp: '203.0.113.200' });
    assert.deepEqual(denied.terminal, { kind: 'error', error: { status: 403, code: 'ERR_NGROK_3205', message: 'Request blocked by IP restriction: 203.0.113.200 is denied by 203.0.113.128/25', headers: [] } });
    const outside = await onRequest(h, document, {}, { clientIp: '198.51.100.9' });
    assert.deepEqual(outside.terminal, { kind: 'error', error: { status: 403, code: 'ERR_NGROK_3205', message: 'Request blocked by IP restriction: 198.51.100.9 matches no allowed CIDR', headers: [] } });
  });

  test('IPv6 and IPv4-mapped addresses; enforce: false only records', async () => {
    assert.equal((await onRequest(h, 'on_http_request: [{actions: [{type: restrict-ips, config: {allow: ["2001:db8::/32"]}}]}]', {}, { clientIp: '2001:db8::5' })).terminal, undefined);
    assert.equal((await onRequest(h, 'on_http_request: [{actions: [{type: restrict-ips, config: {allow: [10.0.0.0/8]}}]}]', {}, { clientIp: '::ffff:10.1.2.3' })).terminal, undefined);
    const logged = await onRequest(h, `on_http_request: [{actions: [{type: restrict-ips, config: {enforce: false, allow: [10.0.0.0/8]}}, {type: log, config: {metadata: {would: '\${actions.ngrok.restrict_ips.action}', code: '\${actions.ngrok.restrict_ips.error.code}'}}}]}]`);
    assert.deepEqual(logged.logs, [{ phase: 'on_http_request', metadata: { would: 'deny', code: 'ERR_NGROK_3205' } }]);
  });

  test('ip_policies contribute their allow and deny rules; an unknown policy answers 500', async () => {
    const document = 'on_http_request: [{actions: [{type: restrict-ips, config: {ip_policies: [ipp_office]}}]}]';
    assert.equal((await onRequest(withPolicies, document, {}, { clientIp: '203.0.113.8' })).terminal, undefined);
    assert.equal((await onRequest(withPolicies, document)).terminal?.kind, 'error');
    const unknown = await onRequest(withPolicies, 'on_http_request: [{actions: [{type: restrict-ips, config: {ip_policies: [ipp_gone]}}]}]');
    assert.deepEqual(unknown.terminal, { kind: 'error', error: { status: 500, message: 'restrict-ips: ip_policies: IP policy ipp_gone was not found', headers: [] } });
    const noLookup = await onRequest(h, document);
    assert.deepEqual(noLookup.terminal, { kind: 'error', error: { status: 501, message: 'restrict-ips: ip_policies: IP policies cannot be read here (no lookup was provided)', headers: [] } });
  });

  test('on_tcp_connect a denied address closes the connection', async () => {
    const policy = policyOf(h, 'on_tcp_connect: [{actions: [{type: restrict-ips, config: {allow: [10.0.0.0/8]}}]}]');
    assert.deepEqual((await h.engine.connect(policy, ENDPOINT, CONN)).terminal, { kind: 'close', reason: '203.0.113.7 matches no allowed CIDR' });
  });
});

describe('basic-auth', () => {
  const document = 'on_http_request: [{actions: [{type: basic-auth, config: {credentials: ["alice:correct horse", "bob:b:with:colons"]}}]}]';
  const auth = (user: string, password: string) => ({ headers: [['Authorization', `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`]] as [string, string][] });

  test('no or wrong credentials: 401 with a Basic challenge', async () => {
    assert.deepEqual((await onRequest(h, document)).terminal, {
      kind: 'error',
      error: { status: 401, message: 'Unauthorized: no Basic credentials were presented', headers: [['www-authenticate', 'Basic realm="burrow"']] },
    });
    assert.deepEqual((await onRequest(h, document.replace('}}]}]', ', realm: staging}}]}]'), auth('alice', 'wrong'))).terminal, {
      kind: 'error',
      error: { status: 401, message: 'Unauthorized: the credentials of "alice" are not valid', headers: [['www-authenticate', 'Basic realm="staging"']] },
    });
  });

  test('right credentials pass (the first colon splits user and password)', async () => {
    assert.deepEqual((await onRequest(h, document, auth('alice', 'correct horse'))).rules[0]!.actions, [{ type: 'basic-auth', ended: false, note: 'authorized alice' }]);
    assert.equal((await onRequest(h, document, auth('bob', 'b:with:colons'))).terminal, undefined);
  });

  test('enforce: false lets the request on and records the result', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: basic-auth, config: {enforce: false, credentials: ["alice:correct horse"]}}, {type: log, config: {metadata: {result: '\${actions.ngrok.basic_auth.credentials}'}}}]}]`, auth('mallory', 'x'));
    assert.deepEqual(outcome.logs, [{ phase: 'on_http_request', metadata: { result: { presented: true, username: 'mallory', authorized: false } } }]);
  });
});

describe('forward-internal', () => {
  const targets = harness({
    async forwardInternal(url) {
      return url === 'https://api.internal' ? undefined : { status: 404, code: 'ERR_NGROK_3200', message: `The endpoint ${url} is offline.`, headers: [] };
    },
  });

  test('forwards to an internal endpoint the host accepts; nothing after it runs', async () => {
    const outcome = await onRequest(targets, 'on_http_request: [{actions: [{type: forward-internal, config: {url: "https://api.internal"}}, {type: deny}]}]');
    assert.deepEqual(outcome.terminal, { kind: 'forward', url: 'https://api.internal' });
  });

  test('on_error halt answers the host error; continue goes on to the next action', async () => {
    const halted = await onRequest(targets, 'on_http_request: [{actions: [{type: forward-internal, config: {url: "https://gone.internal"}}]}]');
    assert.deepEqual(halted.terminal, { kind: 'error', error: { status: 404, code: 'ERR_NGROK_3200', message: 'The endpoint https://gone.internal is offline.', headers: [] } });
    const fallback = await onRequest(targets, 'on_http_request: [{actions: [{type: forward-internal, config: {url: "https://gone.internal", on_error: continue}}, {type: forward-internal, config: {url: "https://api.internal"}}]}]');
    assert.deepEqual(fallback.terminal, { kind: 'forward', url: 'https://api.internal' });
  });
});

describe('log', () => {
  test('records interpolated metadata for the traffic event', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: log, config: {metadata: {path: '\${req.url.path}', n: 2, ok: true}}}]}]`);
    assert.deepEqual(outcome.logs, [{ phase: 'on_http_request', metadata: { path: '/api/items', n: 2, ok: true } }]);
  });
});

describe('compress-response', () => {
  const upstream = { status: 200, headers: [['Content-Type', 'application/json']] as [string, string][] };
  const compress = 'on_http_response: [{actions: [{type: compress-response}]}]';

  test('negotiates with q-values; the best supported algorithm wins', async () => {
    const run = async (accept: string, document = compress) => (await exchange(h, document, upstream, { headers: [['Accept-Encoding', accept]] })).response.compression;
    assert.equal(await run('gzip;q=1.0, br; q=0.5, *;q=0'), 'gzip');
    assert.equal(await run('br, gzip;q=0.8'), 'br');
    assert.equal(await run('deflate;q=0.2, *;q=0.1'), 'deflate');
    assert.equal(await run('compress'), undefined);
    assert.equal(await run('identity'), undefined);
    assert.equal(await run('br, gzip', 'on_http_response: [{actions: [{type: compress-response, config: {algorithms: [gzip]}}]}]'), 'gzip');
  });

  test('no Accept-Encoding or an encoded upstream body: no compression (recorded in actions.ngrok.compress)', async () => {
    assert.equal((await exchange(h, compress, upstream)).response.compression, undefined);
    const { response } = await exchange(h, `${compress.slice(0, -3)}, {type: log, config: {metadata: {c: '\${actions.ngrok.compress}'}}}]}]`, { status: 200, headers: [['Content-Encoding', 'gzip']] }, { headers: [['Accept-Encoding', 'gzip']] });
    assert.equal(response.compression, undefined);
    assert.deepEqual(response.logs[0]!.metadata, { c: { already_compressed: true, negotiated_algorithm: '' } });
  });

  test('in on_http_request it applies to the response when it comes', async () => {
    const { response } = await exchange(h, 'on_http_request: [{actions: [{type: compress-response}]}]', upstream, { headers: [['Accept-Encoding', 'gzip']] });
    assert.equal(response.compression, 'gzip');
  });
});

describe('set-vars', () => {
  test('variables are visible to later rules of the phase', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: set-vars, config: {vars: [{limit: 5}, {api: "\${req.url.path.startsWith('/api')}"}]}}]}, {expressions: ['vars.api && vars.limit == 5'], actions: [{type: deny}]}]`);
    assert.equal(outcome.terminal?.kind, 'respond');
  });
});

describe('request facts are not changed by the engine', () => {
  test('the ingress description stays as it was', async () => {
    const facts = requestFacts();
    const before = JSON.stringify(facts);
    await h.engine.http(policyOf(h, 'on_http_request: [{actions: [{type: add-headers, config: {headers: {x: y}}}, {type: url-rewrite, config: {to: /z}}]}]'), ENDPOINT, CONN, facts).request();
    assert.equal(JSON.stringify(facts), before);
  });
});
