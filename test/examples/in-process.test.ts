// A test suite of your own that uses Burrow in-process: one isolated account per test, a fixed
// clock and seed so ids and times are the same on every run. No server, no port.
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { createBurrow, ManualClock, type BurrowClient } from 'burrow-tunnels';
import { MemoryStore } from 'burrow-tunnels/memory';

const burrow = createBurrow({ store: new MemoryStore(), clock: new ManualClock('2026-01-01T00:00:00Z'), seed: 'my-suite' });
let client: BurrowClient;

beforeEach(async () => {
  const { token } = await burrow.createAccount();
  client = burrow.client(token);
});

test('my tooling creates a credential restricted to its domain', async () => {
  const credential = await client.resource('credentials').create({ acl: ['bind:*.example.com'], description: 'ci' });
  assert.deepEqual(credential.acl, ['bind:*.example.com']);
  assert.equal(credential.created_at, '2026-01-01T00:00:00Z');
});

test('each test starts from an empty account', async () => {
  const { credentials } = await client.resource('credentials').list();
  assert.deepEqual(credentials, []);
});
