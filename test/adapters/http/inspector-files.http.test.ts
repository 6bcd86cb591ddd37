import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createFetchHandler } from '../../../adapters/http/fetch-handler.ts';
import { createTestInstance, OPERATOR_TOKEN, sendRequest } from '../../helpers.ts';

/** The inspector's files as the HTTP adapter serves them (the page itself: test/browser/). */

describe('GET /_burrow/', () => {
  test('serves the page without a token, with a policy that allows only its own files', async () => {
    const api = await createTestInstance();
    const res = await api.request('GET', '/_burrow/', undefined, { token: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(res.headers.get('content-security-policy'), "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    assert.match(res.text, /<script type="module" src="inspector.js"><\/script>/);
    assert.doesNotMatch(res.text, /https?:\/\//, 'nothing is loaded from another origin');
  });

  test('serves its script and style sheet, and nothing else from the directory', async () => {
    const api = await createTestInstance();
    const script = await api.request('GET', '/_burrow/inspector.js', undefined, { token: null });
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.match(script.text, /sessionStorage/);
    assert.match((await api.request('GET', '/_burrow/inspector.css', undefined, { token: null })).headers.get('content-type') ?? '', /^text\/css/);
    assert.equal((await api.request('GET', '/_burrow/index.html', undefined, { token: null })).status, 404);
    assert.equal((await api.request('GET', '/_burrow/../package.json', undefined, { token: null })).status, 404);
  });

  test('/_burrow redirects relatively to /_burrow/, and HEAD answers without a body', async () => {
    const api = await createTestInstance();
    const redirect = await api.request('GET', '/_burrow', undefined, { token: null });
    assert.equal(redirect.status, 308);
    assert.equal(new URL(redirect.headers.get('location')!, 'http://burrow.test/mounted/_burrow').pathname, '/mounted/_burrow/');
    const head = await api.request('HEAD', '/_burrow/', undefined, { token: null });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
  });

  test('the page is not journaled', async () => {
    const api = await createTestInstance();
    await api.request('GET', '/_burrow/', undefined, { token: null });
    assert.deepEqual(api.burrow.requests.list(), []);
  });
});

describe('the inspector under a basePath', () => {
  test('is served below it, and its relative calls reach the control plane below it too', async () => {
    const api = await createTestInstance();
    const fetch = createFetchHandler(api.burrow, { basePath: '/ngrok', operatorToken: OPERATOR_TOKEN });
    const page = await sendRequest(fetch, 'http://burrow.test/ngrok/_burrow/', 'GET', undefined, {});
    assert.equal(page.status, 200);
    const redirect = await sendRequest(fetch, 'http://burrow.test/ngrok/_burrow', 'GET', undefined, {});
    assert.equal(new URL(redirect.headers.get('location')!, 'http://burrow.test/ngrok/_burrow').pathname, '/ngrok/_burrow/');
    // The page calls `accounts` relative to its own URL.
    const accounts = await sendRequest(fetch, new URL('accounts', 'http://burrow.test/ngrok/_burrow/').href, 'GET', undefined, { token: OPERATOR_TOKEN });
    assert.equal(accounts.status, 200);
    assert.equal(accounts.body.accounts[0].id, api.accountId);
  });
});
