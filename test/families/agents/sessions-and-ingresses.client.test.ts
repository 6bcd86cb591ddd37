import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useOfficialClient } from '../../compat/official-client.ts';

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
    // 0.11.0 posts the bare id as the body of restart/stop (docs/compatibility.md), which the
    // service refuses as it should; the commands themselves work with `{}`.
    await assert.rejects(client.tunnelSessions.stop(session.id), (error: any) => error.statusCode === 400);
    const stop = await fetch(`${server.url}/tunnel_sessions/${session.id}/stop`, {
      method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}',
    });
    assert.equal(stop.status, 204);
    assert.deepEqual(await client.tunnelSessions.list(), []);
  });

  test("the client's known defects against correct answers: what happened and what it reports", async () => {
    const { client, server } = official;
    const credential = await client.credentials.create({});
    const connect = () => server.request('POST', '/_burrow/agents', { token: credential.token, os: 'linux', agent_version: '3.1.1' }, { token: server.operatorToken! });
    const session = (await connect()).body;
    const command = (name: string) =>
      fetch(`${server.url}/tunnel_sessions/${session.id}/${name}`, { method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}' });

    // update() sends {id}, which Burrow accepts; the agent starts updating (a second update is
    // refused because one is under way), but the client parses the correct empty 204 as JSON.
    await assert.rejects(client.tunnelSessions.update({ id: session.id }), (error: any) => error instanceof SyntaxError && !('statusCode' in error));
    const again = await command('update');
    assert.equal(again.status, 409);
    assert.match(((await again.json()) as { msg: string }).msg, /is already updating to 3\.18\.4/);

    // stop() and restart() post the bare id, not JSON: refused with 213 as the vendor does (its
    // issue ngrok-api-typescript#23); the session is untouched.
    await assert.rejects(client.tunnelSessions.stop(session.id), (error: any) => error.statusCode === 400 && error.errorCode === 'ERR_BURROW_213');
    await assert.rejects(client.tunnelSessions.restart(session.id), (error: any) => error.statusCode === 400 && error.errorCode === 'ERR_BURROW_213');
    assert.deepEqual((await client.tunnelSessions.list()).map((s: any) => s.id), [session.id]);
    assert.equal((await command('stop')).status, 204);

    // delete() parses the empty 204 too: the record is gone although the call rejects.
    const policy = await client.ipPolicies.create({});
    await assert.rejects(client.ipPolicies.delete(policy.id), (error: any) => error instanceof SyntaxError);
    await assert.rejects(client.ipPolicies.get(policy.id), (error: any) => error.statusCode === 404);
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
