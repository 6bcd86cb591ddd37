import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useOfficialClient } from '../../compat/official-client.ts';

const official = useOfficialClient();

describe('official client: tunnels and endpoints', () => {
  test("lists and reads the tunnels and agent endpoints of a connected agent, and a cloud endpoint made over raw HTTP", async () => {
    const { client, server } = official;
    const credential = await client.credentials.create({});
    const backend = await client.backends.tunnelGroupBackends.create({ labels: { env: 'prod' } });
    const connected = await server.request(
      'POST', '/_burrow/agents',
      { token: credential.token, binds: { domains: ['app.example.com'], labels: { env: 'prod' } }, region: 'eu', forwards_to: 'http://localhost:3000' },
      { token: server.operatorToken! },
    );
    assert.equal(connected.status, 201, JSON.stringify(connected.body));

    const tunnels = await client.tunnels.list();
    assert.equal(tunnels.length, 2);
    const https = tunnels.find((t: any) => t.proto === 'https');
    const labeled = tunnels.find((t: any) => t.proto === '');
    assert.equal(https.publicUrl, 'https://app.example.com');
    assert.equal(https.forwardsTo, 'http://localhost:3000');
    assert.equal(https.region, 'eu');
    assert.equal(https.tunnelSession.id, connected.body.id);
    assert.ok(https.startedAt instanceof Date || typeof https.startedAt === 'string');
    assert.deepEqual(labeled.backends.map((b: any) => b.id), [backend.id]);
    assert.equal(labeled.endpoint, null);
    assert.deepEqual((await client.backends.tunnelGroupBackends.get(backend.id)).tunnels.map((t: any) => t.id), [labeled.id]);
    assert.equal((await client.tunnels.get(https.id)).publicUrl, 'https://app.example.com');

    const domain = await client.reservedDomains.create({ domain: 'cloud.example.com' });
    const created = await server.request('POST', '/endpoints', { url: 'https://cloud.example.com', type: 'cloud', traffic_policy: 'on_http_request: [{actions: [{type: deny}]}]' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((await client.endpoints.get(created.body.id)).domain.id, domain.id);
    const endpoints = await client.endpoints.list();
    assert.deepEqual(endpoints.map((e: any) => e.type), ['cloud', 'agent']);
    const agentEndpoint = await client.endpoints.get(https.endpoint.id);
    assert.equal(agentEndpoint.publicUrl, 'https://app.example.com');
    assert.equal(agentEndpoint.hostport, 'app.example.com:443');
    assert.equal(agentEndpoint.proto, 'https');
    assert.equal(agentEndpoint.tunnel.id, https.id);
    assert.equal(agentEndpoint.region, 'eu');
    await assert.rejects(client.endpoints.get('ep_missing'), (error: any) => error.statusCode === 404);

    assert.equal((await fetch(`${server.url}/tunnel_sessions/${connected.body.id}/stop`, {
      method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}',
    })).status, 204);
    assert.deepEqual(await client.tunnels.list(), []);
    assert.deepEqual((await client.endpoints.list()).map((e: any) => e.id), [created.body.id]);
  });

  test('pages tunnels past 100 with its beforeId parameter', async () => {
    const { client, server } = official;
    const credential = await client.credentials.create({});
    const domains = Array.from({ length: 103 }, (_, i) => `t${i}.example.net`);
    const connected = await server.request('POST', '/_burrow/agents', { token: credential.token, binds: { domains } }, { token: server.operatorToken! });
    assert.equal(connected.status, 201, JSON.stringify(connected.body));
    const all = await client.tunnels.list();
    assert.equal(all.length, 103);
    assert.equal(new Set(all.map((t: any) => t.id)).size, 103);
    assert.equal((await client.endpoints.list()).filter((e: any) => e.type === 'agent').length, 103);
  });
});
