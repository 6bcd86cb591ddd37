import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, test } from 'node:test';
import { body, harness, onRequest } from './helpers.ts';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const hmacKey = Buffer.from('a shared secret of thirty-two by');
const jwks = {
  keys: [
    { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
    { ...ec.publicKey.export({ format: 'jwk' }), kid: 'ec-1' },
    { kty: 'oct', kid: 'hs-1', k: hmacKey.toString('base64url') },
  ],
};
const inline = `data:application/json;base64,${Buffer.from(JSON.stringify(jwks)).toString('base64')}`;

const NOW = Date.parse('2026-03-01T12:00:00Z') / 1000;
const claims = { iss: 'https://issuer.example/', aud: ['urn:api', 'urn:other'], sub: 'user-1', exp: NOW + 300, nbf: NOW - 10 };

function jwt(alg: string, kid: string, payload: Record<string, unknown> = claims, key?: KeyObject): string {
  const head = Buffer.from(JSON.stringify({ alg, kid, typ: 'JWT' })).toString('base64url');
  const data = `${head}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  let signature: Buffer;
  if (alg === 'HS256') signature = createHmac('sha256', hmacKey).update(data).digest();
  else if (alg === 'ES256') signature = sign('sha256', Buffer.from(data), { key: key ?? ec.privateKey, dsaEncoding: 'ieee-p1363' });
  else signature = sign('sha256', Buffer.from(data), key ?? rsa.privateKey);
  return `${data}.${signature.toString('base64url')}`;
}

const policy = (jku = inline, extra = '', tokens = "[{type: access_token, method: header, name: Authorization, prefix: 'Bearer '}]") => `
on_http_request:
  - actions:
      - type: jwt-validation
        config:
          issuer: {allow_list: [{value: 'https://issuer.example/'}]}
          audience: {allow_list: [{value: 'urn:api'}]}
          http: {tokens: ${tokens}}
          jws: {allowed_algorithms: [RS256, ES256, HS256], keys: {sources: {additional_jkus: ['${jku}']}}}
${extra}`;
const bearer = (token: string) => ({ headers: [['Authorization', `Bearer ${token}`]] as [string, string][] });
const rejected = (message: string, code = 'ERR_NGROK_3401', status = 401) => ({ kind: 'error', error: { status, message: `jwt-validation: ${message}`, headers: [], code } });

describe('jwt-validation with keys made in the test', () => {
  const h = harness();

  test('RS256, ES256 and HS256 tokens signed by the JWKS keys pass', async () => {
    for (const [alg, kid] of [['RS256', 'rsa-1'], ['ES256', 'ec-1'], ['HS256', 'hs-1']] as const) {
      const outcome = await onRequest(h, policy(), bearer(jwt(alg, kid)));
      assert.equal(outcome.terminal, undefined, alg);
      assert.deepEqual(outcome.rules[0]!.actions, [{ type: 'jwt-validation', ended: false, note: '1 token verified' }]);
    }
  });

  test('the verified token is readable in actions.ngrok.jwt_validation', async () => {
    const outcome = await onRequest(h, policy(inline, "      - type: log\n        config: {metadata: {sub: '${actions.ngrok.jwt_validation.tokens[0].payload.sub}', ok: '${actions.ngrok.jwt_validation.tokens[0].verified}'}}"), bearer(jwt('RS256', 'rsa-1')));
    assert.deepEqual(outcome.logs, [{ phase: 'on_http_request', metadata: { sub: 'user-1', ok: true } }]);
  });

  test('a token signed by another key, or tampered with, is refused', async () => {
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    assert.deepEqual((await onRequest(h, policy(), bearer(jwt('RS256', 'rsa-1', claims, stranger)))).terminal, rejected('the signature of the token in Authorization does not verify with the configured keys'));
    const [head, , signature] = jwt('RS256', 'rsa-1').split('.');
    const forged = `${head}.${Buffer.from(JSON.stringify({ ...claims, sub: 'admin' })).toString('base64url')}.${signature}`;
    assert.deepEqual((await onRequest(h, policy(), bearer(forged))).terminal, rejected('the signature of the token in Authorization does not verify with the configured keys'));
  });

  test('issuer, audience, expiry and not-before are checked by the injected clock', async () => {
    assert.deepEqual((await onRequest(h, policy(), bearer(jwt('RS256', 'rsa-1', { ...claims, iss: 'https://issuer.example' })))).terminal, rejected('the issuer "https://issuer.example" is not allowed'));
    assert.deepEqual((await onRequest(h, policy(), bearer(jwt('RS256', 'rsa-1', { ...claims, aud: 'urn:nope' })))).terminal, rejected('the audience "urn:nope" is not allowed'));
    assert.deepEqual((await onRequest(h, policy(), bearer(jwt('RS256', 'rsa-1', { ...claims, nbf: NOW + 60 })))).terminal, rejected('the token in Authorization is not valid before 2026-03-01T12:01:00.000Z'));
    const later = harness();
    later.clock.advance(301);
    assert.deepEqual((await onRequest(later, policy(), bearer(jwt('RS256', 'rsa-1')))).terminal, rejected('the token in Authorization expired at 2026-03-01T12:05:00.000Z'));
  });

  test('algorithms outside allowed_algorithms, missing headers and prefixes answer the vendor codes', async () => {
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    assert.deepEqual((await onRequest(h, policy(), bearer(none))).terminal, rejected('the token\'s algorithm "none" is not allowed'));
    assert.deepEqual((await onRequest(h, policy())).terminal, rejected('the Authorization header was not found in the request', 'ERR_NGROK_3408'));
    assert.deepEqual((await onRequest(h, policy(), { headers: [['Authorization', `Token ${jwt('RS256', 'rsa-1')}`]] })).terminal, rejected('the configured prefix "Bearer " was not found in Authorization', 'ERR_NGROK_3413'));
    assert.deepEqual((await onRequest(h, policy(), bearer('not.a-token'))).terminal, rejected('the token in Authorization is not a signed JWT (three dot-separated parts)', 'ERR_NGROK_3416'));
  });

  test('tokens in a form or JSON body (POST, PUT, PATCH only); every configured token is required', async () => {
    const tokens = "[{type: access_token, method: header, name: Authorization, prefix: 'Bearer '}, {type: id_token, method: body, name: _id_token}]";
    const form = { method: 'POST', headers: [...bearer(jwt('RS256', 'rsa-1')).headers, ['Content-Type', 'application/x-www-form-urlencoded']] as [string, string][], body: body(`a=1&_id_token=${jwt('ES256', 'ec-1')}`) };
    assert.equal((await onRequest(h, policy(inline, '', tokens), form)).terminal, undefined);
    const json = { ...form, headers: [...bearer(jwt('RS256', 'rsa-1')).headers, ['Content-Type', 'application/json']] as [string, string][], body: body(JSON.stringify({ _ID_TOKEN: jwt('HS256', 'hs-1') })) };
    assert.equal((await onRequest(h, policy(inline, '', tokens), json)).terminal, undefined);
    assert.deepEqual((await onRequest(h, policy(inline, '', tokens), { ...form, body: body('a=1') })).terminal, rejected('the token _id_token could not be found in the body', 'ERR_NGROK_3406'));
    assert.deepEqual((await onRequest(h, policy(inline, '', tokens), { ...form, method: 'GET' })).terminal, rejected('tokens in the body are not supported for GET requests', 'ERR_NGROK_3415'));
  });
});

describe('jwt-validation: JWKS by URL through the injected fetcher', () => {
  test('fetched once and reused for 15 minutes by the injected clock', async () => {
    const fetched: string[] = [];
    const h = harness({
      async fetchJson(url) {
        fetched.push(url);
        return jwks;
      },
    });
    const document = policy('http://127.0.0.1:9999/.well-known/jwks.json');
    const token = jwt('ES256', 'ec-1', { ...claims, exp: NOW + 3600 });
    for (let i = 0; i < 3; i++) assert.equal((await onRequest(h, document, bearer(token))).terminal, undefined);
    assert.equal(fetched.length, 1);
    h.clock.advance(15 * 60);
    assert.equal((await onRequest(h, document, bearer(token))).terminal, undefined);
    assert.deepEqual(fetched, ['http://127.0.0.1:9999/.well-known/jwks.json', 'http://127.0.0.1:9999/.well-known/jwks.json']);
  });

  test('a JWKS that cannot be fetched answers ERR_NGROK_3422; without a fetcher the reason says so', async () => {
    const failing = harness({
      async fetchJson() {
        throw new Error('connection refused');
      },
    });
    assert.deepEqual((await onRequest(failing, policy('http://127.0.0.1:9/jwks'), bearer(jwt('RS256', 'rsa-1')))).terminal, rejected('failed to fetch the JWKS http://127.0.0.1:9/jwks: connection refused', 'ERR_NGROK_3422', 502));
    assert.deepEqual((await onRequest(harness(), policy('https://issuer.example/jwks'), bearer(jwt('RS256', 'rsa-1')))).terminal, rejected('failed to fetch the JWKS https://issuer.example/jwks: cannot fetch https://issuer.example/jwks here (no document fetcher was provided; a data: URL works offline)', 'ERR_NGROK_3422', 502));
  });
});
