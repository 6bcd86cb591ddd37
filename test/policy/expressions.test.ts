import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { harness, interpolate, matches } from './helpers.ts';

describe('policy expressions: request variables', () => {
  const h = harness();

  test('req.method, req.url and its parts, as the vendor names them', async () => {
    assert.equal(await interpolate(h, 'req.method'), 'GET');
    assert.equal(await interpolate(h, 'req.url'), 'https://app.example/api/items?sort=asc&tag=a&tag=b');
    assert.equal(await interpolate(h, 'req.url.path'), '/api/items');
    assert.equal(await interpolate(h, 'req.url.query'), 'sort=asc&tag=a&tag=b');
    assert.equal(await interpolate(h, 'req.url.query_params'), '{"sort":["asc"],"tag":["a","b"]}');
    assert.equal(await interpolate(h, 'req.url.scheme'), 'https');
    assert.equal(await interpolate(h, 'req.url.host'), 'app.example');
    assert.equal(await interpolate(h, 'req.url.authority'), 'app.example');
    assert.equal(await interpolate(h, 'req.url.port'), '0');
    assert.equal(await interpolate(h, 'req.url.uri'), '/api/items?sort=asc&tag=a&tag=b');
    assert.equal(await interpolate(h, 'req.url.raw_path', { url: 'https://u:p@app.example:8443/a/../b%2Fc' }), '/a/../b%2Fc');
    assert.equal(await interpolate(h, 'req.url.path', { url: 'https://u:p@app.example:8443/a/../b%2Fc' }), '/b%2Fc');
    assert.equal(await interpolate(h, 'req.url.port', { url: 'https://u:p@app.example:8443/' }), '8443');
    assert.equal(await interpolate(h, 'req.url.user_password', { url: 'https://u:p@app.example:8443/' }), 'u:p');
    assert.equal(await interpolate(h, 'req.url.raw', { url: 'https://app.example/x?y' }), 'https://app.example/x?y');
  });

  test('req.headers maps lower-case names to lists; req.host, req.version, req.user_agent', async () => {
    const request = { headers: [['Host', 'app.example'], ['X-Trace', 'a'], ['x-trace', 'b'], ['User-Agent', 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1']] as const };
    assert.equal(await matches(h, "req.headers['x-trace'] == ['a', 'b']", request), true);
    assert.equal(await matches(h, "'Fizz' in req.headers['x-trace']", request), false);
    assert.equal(await matches(h, "!('authorization' in req.headers)", request), true);
    assert.equal(await interpolate(h, 'req.host', request), 'app.example');
    assert.equal(await interpolate(h, 'req.version', request), '1.1');
    assert.equal(await interpolate(h, '[req.user_agent.name, req.user_agent.version, req.user_agent.os, req.user_agent.os_version, req.user_agent.device]', request), '["Safari","17.2","iOS","17.2","iPhone"]');
    assert.equal(await interpolate(h, '[req.user_agent.is_mobile, req.user_agent.is_tablet, req.user_agent.is_desktop, req.user_agent.is_bot]', request), '[true,false,false,false]');
    assert.equal(await matches(h, "req.user_agent.contains('Safari')", request), true);
    assert.equal(await interpolate(h, '[req.user_agent.is_bot, req.user_agent.name, req.user_agent.url]', { headers: [['User-Agent', 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)']] }), '[true,"Googlebot","http://www.google.com/bot.html"]');
  });

  test('content type, length, encoding and cookies of the request', async () => {
    const request = {
      method: 'POST',
      headers: [['Content-Type', 'application/JSON; Charset="utf-8"'], ['Content-Length', '12'], ['Content-Encoding', 'gzip, br'], ['Cookie', 'session=abc; theme=dark'], ['Cookie', 'session=def']] as const,
    };
    assert.equal(await interpolate(h, '[req.content_type, req.content_type.raw]', request), '["application/json","application/JSON; Charset=\\"utf-8\\""]');
    assert.equal(await interpolate(h, 'req.content_type.parameters', request), '{"charset":"utf-8"}');
    assert.equal(await interpolate(h, 'req.content_length', request), '12');
    assert.equal(await interpolate(h, 'req.content_encoding', request), '["gzip","br"]');
    assert.equal(await interpolate(h, "req.cookies['session'].map(c, c.value)", request), '["abc","def"]');
    assert.equal(await interpolate(h, 'size(req.cookies)', request), '2');
  });

  test('time.now is RFC 3339 from the injected clock; req.ts.header_received and conn.ts.start are timestamps', async () => {
    assert.equal(await interpolate(h, 'time.now'), '2026-03-01T12:00:00Z');
    assert.equal(await matches(h, "timestamp(time.now) - req.ts.header_received == duration('0s')"), true);
    assert.equal(await matches(h, "conn.ts.start < timestamp('2026-03-01T12:00:00Z')"), true);
  });
});

describe('policy expressions: connection and endpoint variables', () => {
  const h = harness();

  test('conn.client_ip, conn.client_port, conn.server_ip, conn.server_port, conn.server_region, bytes', async () => {
    assert.equal(await interpolate(h, '[conn.client_ip, conn.server_ip, conn.server_region]'), '["203.0.113.7","127.0.0.1","local"]');
    assert.equal(await interpolate(h, '[conn.client_port, conn.server_port, conn.bytes_in, conn.bytes_out]', {}, { bytesIn: 10, bytesOut: 20 }), '[51234,443,10,20]');
  });

  test('endpoint.id, url, protocol, host, port, addr', async () => {
    assert.equal(await interpolate(h, '[endpoint.id, endpoint.url, endpoint.protocol, endpoint.host, string(endpoint.port), endpoint.addr]'), '["ep_2tEpN0yrxDI4j8jVnhVRoTNN2Tx","https://app.example","https","app.example","443","app.example:443"]');
  });

  test('conn.geo reads the location the ingress provides; without one it is a 501 naming the variable', async () => {
    const geo = { city: 'Berlin', country: 'Germany', country_code: 'DE', latitude: '52.5', longitude: '13.4', radius: '10', subdivision: 'Berlin' };
    assert.equal(await matches(h, "conn.geo.country_code == 'DE' && conn.client_ip.geo.location.city == 'Berlin'", {}, { geo }), true);
    await assert.rejects(matches(h, "conn.geo.country_code == 'DE'"), /"status":501.*conn\.geo\.country_code is not available: Burrow has no GeoIP data offline/);
  });

  test('IP intelligence and pod identity compile and answer 501 naming the variable', async () => {
    await assert.rejects(matches(h, "'proxy.anonymous.tor' in conn.client_ip.categories"), /"status":501.*conn\.client_ip\.categories is not available: Burrow has no IP intelligence data offline/);
    await assert.rejects(matches(h, "conn.k8s.pod.metadata.namespace == 'x'"), /conn\.k8s\.pod\.metadata\.namespace is not available: Burrow has no Kubernetes pod identity offline/);
  });

  test('conn.tls.* needs a TLS connection', async () => {
    await assert.rejects(matches(h, "conn.tls.version == '1.3'"), /conn\.tls\.version is not available: the connection is not TLS/);
    assert.equal(await interpolate(h, '[conn.tls.version, conn.tls.sni, conn.tls.cipher_suite, conn.tls.client.pem]', {}, { tls: { version: '1.3', cipherSuite: 'TLS_AES_128_GCM_SHA256', sni: 'app.example' } }), '["1.3","app.example","TLS_AES_128_GCM_SHA256",""]');
  });
});

describe('policy expressions: functions (the vendor macros)', () => {
  const h = harness();

  test('inCidrRange and inCidrRanges (host bits allowed, invalid CIDRs never match)', async () => {
    assert.equal(await matches(h, "inCidrRange(conn.client_ip, '203.0.113.1/24')"), true);
    assert.equal(await matches(h, "inCidrRange('192.168.1.100', '192.168.1.0/24')"), true);
    assert.equal(await matches(h, "inCidrRange(conn.client_ip, 'nonsense')"), false);
    assert.equal(await matches(h, "inCidrRanges(conn.client_ip, ['10.0.0.0/8', '2001:4860::/32', '203.0.113.0/28'])"), true);
    assert.equal(await matches(h, "inCidrRanges('::ffff:10.1.2.3', ['10.0.0.0/8'])"), true);
    assert.equal(await matches(h, "'192.168.1.1'.isPrivateIp() && !conn.client_ip.isPrivateIp()"), true);
  });

  test('request helpers: getReqHeader, hasReqHeader, getQueryParam, hasQueryParam, getReqCookie, hasReqCookie', async () => {
    const request = { headers: [['User-Agent', 'Google-Images/1.0'], ['Cookie', 'session=abc']] as const };
    assert.equal(await matches(h, "getReqHeader('User-Agent').exists(v, v.matches('(?i)google-images'))", request), true);
    assert.equal(await matches(h, "hasReqHeader('Authorization')", request), false);
    assert.equal(await matches(h, "getQueryParam('tag') == ['a', 'b'] && hasQueryParam('sort') && !hasQueryParam('q')", request), true);
    assert.equal(await matches(h, "hasReqCookie('session') && getReqCookie('session').value == 'abc'", request), true);
  });

  test('matches() is RE2: Go syntax works; a pattern from the request that RE2 refuses or that costs too much is an evaluation error (500)', async () => {
    assert.equal(await matches(h, "req.url.path.matches('^/api/(?P<rest>.*)$')"), true);
    await assert.rejects(matches(h, "req.url.path.matches(req.headers['x-pattern'][0])", { headers: [['X-Pattern', '(?=x)']] }), /"status":500.*matches\(\): not an RE2 regular expression/);
    await assert.rejects(matches(h, "req.url.path.matches(req.headers['x-pattern'][0])", { headers: [['X-Pattern', '(?:a{1000}){1000}']] }), /"status":500.*matches\(\): the pattern costs about \d+ cost units to compile, more than 2000 \(limit re2_pattern_cost\)/);
  });

  test('hash, base64, json, url and query string helpers give the vendor examples', async () => {
    assert.equal(await interpolate(h, "[hash.md5('hello'), hash.sha1('hello'), hash.crc32('hello'), hash.crc64('hello'), hash.sha256('hello', 'base64')]"), '["5d41402abc4b2a76b9719d911017c592","aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d","3610a686","3c3eeee2d8100000","LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="]');
    assert.equal(await interpolate(h, "'hello'.sha512('hex').size()"), '128');
    assert.equal(await matches(h, "base64.decode('aGVsbG8=') == b'hello' && base64.encode(b'hello') == 'aGVsbG8='"), true);
    assert.equal(await interpolate(h, "basic_auth.encode('username', 'password1')"), 'Basic dXNlcm5hbWU6cGFzc3dvcmQx');
    assert.equal(await interpolate(h, '\'c29tZTp0aGluZw==\'.decodeBase64() + "|" + \'some:thing\'.encodeBase64()'), 'some:thing|c29tZTp0aGluZw==');
    assert.equal(await matches(h, 'json.decode(\'{"a":"b"}\')["a"] == "b" && json.encode(["a","b","c"]) == \'["a","b","c"]\''), true);
    assert.equal(await interpolate(h, "'i;md/r/$y'.escapeUrl() + ' ' + 'i%3Bmd%2Fr%2F%24y'.unescapeUrl()"), 'i%3Bmd%2Fr%2F%24y i;md/r/$y');
    assert.equal(await matches(h, "queryString.decode(req.url.query)['sort'] == 'asc' && queryString.encode({'q': 'policy'}) == 'q=policy'"), true);
    assert.equal(await matches(h, "'https://ngrok.com'.isURL() && !'not a url'.isURL() && '{\"a\":1}'.isJson() && 'a=b&c=d'.isQueryString()"), true);
    assert.equal(await interpolate(h, "'https://ngrok.com/a?b=c'.parseUrl()"), '{"scheme":"https","host":"ngrok.com","path":"/a","raw_query":"b=c","fragment":"","user":""}');
  });

  test('string and list helpers', async () => {
    assert.equal(await interpolate(h, "['ÄRGER'.lower(), 'école'.upper(), 'abc'.reverse(), 'hello'.charAt(4), 'hello mellow'.replace('l', 'L', 2)]"), '["ärger","ÉCOLE","cba","o","heLLo mellow"]');
    assert.equal(await interpolate(h, "'hello %s, %d, %.2f, %x, %b'.format(['world', 42, 3.14159, 26, 5])"), 'hello world, 42, 3.14, 1a, 101');
    assert.equal(await interpolate(h, "[[1, 2, 2, 3].distinct(), [1, [2, [3, 4]]].flatten(), [3, 1, 2].sort(), [1, 2, 3, 4].slice(1, 3), lists.range(3)]"), '[[1,2,3],[1,2,[3,4]],[1,2,3],[2,3],[0,1,2]]');
    assert.equal(await interpolate(h, "'hello mellow'.split()"), '["hello","mellow"]');
  });

  test('rand.* reads the injected randomness', async () => {
    assert.equal(await matches(h, 'rand.double() >= 0.0 && rand.double() < 1.0 && rand.int(5, 5) == 5'), true);
  });

  test('an evaluation is bounded: past the step budget it stops with a 500, whatever it iterates', async () => {
    const started = performance.now();
    await assert.rejects(matches(h, 'lists.range(10000).all(x, lists.range(10000).all(y, x + y >= 0))'), /"status":500.*the expression took more than 50000 evaluation steps \(limit policy_evaluation_steps\)/);
    assert.ok(performance.now() - started < 5000, 'stopped long before 10⁸ iterations');
    assert.equal(await matches(h, 'lists.range(50).all(x, lists.range(50).all(y, x + y >= 0))'), true, 'thousands of iterations fit');
  });

  // traffic-policy/macros/index.mdx, each documented example and its documented result.
  const DOCUMENTED: [string, string][] = [
    ["'hello mellow'.split()", '["hello","mellow"]'],
    ["'hello mellow'.split(' ', 1)", '["hello"]'],
    ["'hello,mellow,hi'.split(',')", '["hello","mellow","hi"]'],
    ['"Ärger in Österreich, ÉCOLE, İSTANBUL, ЙОГА!".lower()', 'ärger in österreich, école, istanbul, йога!'],
    ["'TacoCat'.lowerAscii()", 'tacocat'],
    ["'TacoCÆt Xii'.lowerAscii()", 'tacocÆt xii'],
    ['strings.quote(\'single-quote with "double quote"\')', '"single-quote with \\"double quote\\""'],
    ['strings.quote("two escape sequences \\a\\n")', '"two escape sequences \\a\\n"'],
  ];

  test('sorting fails for elements that do not compare, even when the sort compares none of them', async () => {
    await assert.rejects(interpolate(h, '[[2], [1]].sort()'), /sort: the elements must be of one comparable type/);
    await assert.rejects(interpolate(h, '[[1]].sort()'), /sort: the elements must be of one comparable type/);
  });

  // traffic-policy/macros/index.mdx: 'hello' → 26c7827d889f6da3 / JseCfYifbaM=; the others are XXH64's published test vectors (seed 0).
  const XXHASH64: [string, string][] = [
    ["hash.xxhash64('hello')", '26c7827d889f6da3'],
    ["hash.xxhash64('hello', 'hex')", '26c7827d889f6da3'],
    ["hash.xxhash64('hello', 'base64')", 'JseCfYifbaM='],
    ["'hello'.xxhash64()", '26c7827d889f6da3'],
    ["'hello'.xxhash64('base64')", 'JseCfYifbaM='],
    ["hash.xxhash64('')", 'ef46db3751d8e999'],
    ["hash.xxhash64('a')", 'd24ec4f1a98c6e5b'],
    ["hash.xxhash64('abc')", '44bc2cf5ad770999'],
    ["hash.xxhash64('Nobody inspects the spammish repetition')", 'fbcea83c8a378bf1'],
  ];
  for (const [expression, expected] of [...DOCUMENTED, ...XXHASH64]) {
    test(`${expression} is ${expected}`, async () => {
      assert.equal(await interpolate(h, expression), expected);
    });
  }

  test("has() takes the reference's form has(req.headers['x-custom-header']) (a map entry), and field selections as before", async () => {
    const request = { headers: [['X-Custom-Header', 'a']] as const };
    assert.equal(await matches(h, "has(req.headers['x-custom-header'])", request), true);
    assert.equal(await matches(h, "has(req.headers['x-other'])", request), false);
    assert.equal(await matches(h, "!has(vars.missing) && !has({'a': 1}['b']) && has(req.headers['x-custom-header'])", request), true);
  });
});
