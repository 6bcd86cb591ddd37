import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useOfficialClient } from './official-client.ts';

const official = useOfficialClient();

describe('official client: tunnel sessions and agent ingresses', () => {
  test('lists and reads sessions of connected agents; commands go through plain fetch', async () => {
    const { client, server } = official;
    const credential = await client.credentials.create({ acl: ['bind:*.example.com'] });
    const connected = await server.request('POST', '/_burrow/agents', { token: credential.token, binds: { domains: ['app.example.com'] }, os: 'linux', agent_version: '3.1.1' }, { token: server.operatorToken! });
    assert.equal(connected.status, 201, JSON.stringify(connected.body));
    const sessions = await client.tunnelSessions.list();
    assert.deepEqual(sessions.map((s: any) => s.id), [connected.body.id]);
    const session = await client.tunnelSessions.get(connected.body.id);
    assert.equal(session.agentVersion, '3.1.1');
    assert.equal(session.credential.id, credential.id);
    assert.equal(session.transport, 'burrow/v2');
    // 0.11.0 posts the bare id as the body of restart/stop (reference-facts §7), which the
    // service refuses as it should; the commands themselves work with `{}`.
    await assert.rejects(client.tunnelSessions.stop(session.id), (error: any) => error.statusCode === 400);
    const stop = await fetch(`${server.url}/tunnel_sessions/${session.id}/stop`, {
      method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}',
    });
    assert.equal(stop.status, 204);
    assert.deepEqual(await client.tunnelSessions.list(), []);
  });

  test('creates, reads, updates and lists agent ingresses', async () => {
    const { client } = official;
    const ingress = await client.agentIngresses.create({ domain: 'connect.example.org', certificateManagementPolicy: { privateKeyType: 'ecdsa' } });
    assert.equal(ingress.domain, 'connect.example.org');
    assert.equal(ingress.uri, `/agent_ingresses/${ingress.id}`);
    assert.ok(ingress.regionDomains.includes('tunnel.us.connect.example.org'));
    assert.equal(ingress.certificateManagementPolicy.privateKeyType, 'ecdsa');
    assert.equal(ingress.certificateManagementStatus.provisioningJob.errorCode, null);
    const updated = await client.agentIngresses.update({ id: ingress.id, description: 'site-to-site' });
    assert.equal(updated.description, 'site-to-site');
    assert.equal((await client.agentIngresses.get(ingress.id)).nsTargets.length, 4);
    assert.ok((await client.agentIngresses.list()).some((i: any) => i.id === ingress.id));
    assert.equal(await official.deleteWithFetch(`/agent_ingresses/${ingress.id}`), 204);
  });
});
