import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { callIngress } from '../ingress/helpers.ts';
import { startServerAndApp } from '../../fixtures/cli-agent.ts';

/**
 * Names on the vendor's own base domains (ngrok-docs domains/index.mdx: ngrok.app, ngrok.dev,
 * ngrok.pizza, ngrok-free.app, ngrok-free.dev, ngrok-free.pizza, ngrok.io): the vendor lets an
 * account bind one label under them without reserving it, and asks a reservation for a nested
 * name (ERR_NGROK_354, errors/err_ngrok_354.mdx). Code written against the vendor binds them
 * unchanged, with the SDK, and the ingress routes them.
 */

describe("names on the vendor's base domains", () => {
  test('one label binds without a reservation and the ingress routes it; a nested name needs one (354)', { timeout: 30_000 }, async (t) => {
    const { ingress, app } = await startServerAndApp(t);
    const session = await ingress.agent(t);
    for (const domain of ['x.ngrok.app', 'd123456.ngrok.io', 'my-app.ngrok-free.dev', 'slice.ngrok.pizza']) {
      const listener = await session.httpEndpoint().domain(domain).listenAndForward(`http://127.0.0.1:${app.port}`);
      assert.equal(listener.url(), `https://${domain}`);
      const answer = await callIngress(ingress.port('http_ingress'), { host: domain, path: `/on/${domain}` });
      assert.equal(answer.status, 200, answer.body.toString());
      assert.equal((JSON.parse(answer.body.toString()) as { url: string }).url, `/on/${domain}`);
    }
    await assert.rejects(session.httpEndpoint().domain('a.b.ngrok.app').listen(false), (error: Error) => {
      assert.match(error.message, /nested subdomains of the base domain ngrok\.app must be reserved first/);
      assert.match(error.message, /try a-b\.ngrok\.app instead/);
      assert.match(error.message, /ERR_BURROW_354/);
      return true;
    });
    // Not a base domain of the vendor's: a reservation is needed, as for any name (9015).
    await assert.rejects(session.httpEndpoint().domain('x.ngrok.com').listen(false), /ERR_BURROW_9015/);
    // A nested name the account reserved binds.
    await ingress.reserve('api.team.ngrok.dev');
    const reserved = await session.httpEndpoint().domain('api.team.ngrok.dev').listenAndForward(`http://127.0.0.1:${app.port}`);
    assert.equal(reserved.url(), 'https://api.team.ngrok.dev');
    assert.equal((await callIngress(ingress.port('http_ingress'), { host: 'api.team.ngrok.dev', path: '/' })).status, 200);
  });
});
