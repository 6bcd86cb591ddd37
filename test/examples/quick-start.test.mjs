// Testing tooling built on the vendor's official client, offline, in plain JavaScript.
import assert from 'node:assert/strict';
import { after, beforeEach, test } from 'node:test';
import { Ngrok } from '@ngrok/ngrok-api';
import { startBurrow } from 'burrow-tunnels/testing';

const burrow = await startBurrow();
const ngrok = new Ngrok({ apiToken: burrow.apiKey, baseUrl: burrow.url });
after(() => burrow.close());
beforeEach(() => burrow.reset());

test('my tool creates a credential that may bind only its domain', async () => {
  const credential = await ngrok.credentials.create({ acl: ['bind:app.example.com'] });
  assert.deepEqual(credential.acl, ['bind:app.example.com']);
});

test('each test starts afresh', async () => {
  assert.deepEqual(await ngrok.credentials.list(), []);
});

test('my tool sees the API fail', async () => {
  await burrow.faults.add({ operation: 'credentials.create', error: { status: 503 } });
  await assert.rejects(ngrok.credentials.create({}), (error) => error.statusCode === 503);
});
