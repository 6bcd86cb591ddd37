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

  test("a name another account reserved is that account's, under the vendor's and the service's zones too (320); its own agent binds it", { timeout: 30_000 }, async (t) => {
    const { ingress, app } = await startServerAndApp(t);
    const { server } = ingress;
    const other = await server.request('POST', '/_burrow/accounts', { name: 'holder' }, { token: server.operatorToken! });
    assert.equal(other.status, 201, other.text);
    for (const domain of ['taken.ngrok.app', 'held.burrow.internal', '*.crew.ngrok.dev']) {
      assert.equal((await server.request('POST', '/reserved_domains', { domain }, { token: other.body.token })).status, 201);
    }
    const session = await ingress.agent(t);
    for (const domain of ['taken.ngrok.app', 'held.burrow.internal', 'api.crew.ngrok.dev']) {
      await assert.rejects(session.httpEndpoint().domain(domain).listen(false), (error: Error) => {
        assert.match(error.message, /ERR_BURROW_320/);
        assert.match(error.message, new RegExp(`${domain.replace(/\./g, '\\.')} is reserved for another account`));
        return true;
      });
    }
    const holder = await ingress.agent(t, other.body.token);
    const listener = await holder.httpEndpoint().domain('taken.ngrok.app').listenAndForward(`http://127.0.0.1:${app.port}`);
    assert.equal(listener.url(), 'https://taken.ngrok.app');
    assert.equal((await callIngress(ingress.port('http_ingress'), { host: 'taken.ngrok.app', path: '/' })).status, 200);
  });
});
