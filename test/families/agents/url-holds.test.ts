import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bindAgentTunnel, closeAgentSession, openAgentSession, releaseExpiredUrlHolds } from '../../../lib/index.ts';
import { LIMITS } from '../../../lib/limits.ts';
import { createTestInstance, type TestInstance } from '../../helpers.ts';

/**
 * The session path's hold on the URLs of an agent whose connection was lost (closeAgentSession with
 * holdUrls): its credential binds them again, another is refused (9017) until the hold passes, and
 * the sweep (releaseExpiredUrlHolds) frees what passed; reserved names are not held.
 */

async function agentOf(api: TestInstance) {
  const credential = await api.request('POST', '/credentials', {});
  const open = () => openAgentSession(api.burrow, { proof: { token: credential.body.token }, ip: '192.0.2.1', os: 'linux', agent_version: '3.0.0', metadata: '', region: 'us', update_checks: false });
  return { open, bind: async (sessionId: string, hostname: string) => bindAgentTunnel(api.burrow, api.accountId, sessionId, { proto: 'https', hostname }) };
}

describe('URLs held for a reconnecting agent', () => {
  test('its credential takes them back; another is refused until the hold passes; the sweep frees passed holds; reserved names are not held', async () => {
    const api = await createTestInstance();
    const mine = await agentOf(api);
    const other = await agentOf(api);
    assert.equal((await api.request('POST', '/reserved_domains', { domain: 'kept.example.com' })).status, 201);
    const first = await mine.open();
    await mine.bind(first.session.id, 'held.burrow.internal');
    await mine.bind(first.session.id, 'kept.example.com');
    assert.equal(await closeAgentSession(api.burrow, api.accountId, first.session.id, { holdUrls: true }), true);

    const stranger = await other.open();
    await assert.rejects(other.bind(stranger.session.id, 'held.burrow.internal'), (error: any) => error.code === 9017 && /is held for the agent that bound it, which lost its connection, until 2026-03-01T12:00:30\.000Z/.test(error.message));
    // A reserved name is the account's to bind from any of its credentials: not held.
    assert.equal((await other.bind(stranger.session.id, 'kept.example.com')).url, 'https://kept.example.com');

    // The agent back (a new session of the same credential) takes its URL at once.
    const back = await mine.open();
    assert.equal((await mine.bind(back.session.id, 'held.burrow.internal')).url, 'https://held.burrow.internal');
    assert.equal(await closeAgentSession(api.burrow, api.accountId, back.session.id, { holdUrls: true }), true);

    // Once the hold has passed, the sweep frees it and anyone binds the name.
    assert.equal(await releaseExpiredUrlHolds(api.burrow), 0);
    api.clock.advance(LIMITS.agent_reconnect_hold_ms.value / 1000);
    assert.equal(await releaseExpiredUrlHolds(api.burrow), 1);
    assert.equal((await other.bind(stranger.session.id, 'held.burrow.internal')).url, 'https://held.burrow.internal');
  });
});
