// A traffic policy tested offline: the vendor's agent forwards a local app through Burrow.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, test } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { startBurrow } from 'burrow-tunnels/testing';

const burrow = await startBurrow({ ingress: true });
const app = createServer((req, res) => res.end(`hello from ${req.url}`)).listen(0);
const listener = await ngrok.forward({
  addr: app.address().port,
  ...(await burrow.agentConfig()),
  traffic_policy: `
    on_http_request:
      - expressions: ["req.url.path.startsWith('/admin')"]
        actions: [{ type: deny, config: { status_code: 403 } }]
  `,
});
after(async () => {
  await listener.close();
  app.close();
  await burrow.close();
});

test('the app answers through the agent', async () => {
  const answer = await burrow.fetch(`${listener.url()}/hello`);
  assert.equal(answer.status, 200);
  assert.equal(await answer.text(), 'hello from /hello');
});

test('the policy denies /admin before it reaches the app', async () => {
  assert.equal((await burrow.fetch(`${listener.url()}/admin`)).status, 403);
});
