import assert from 'node:assert/strict';
import { after, beforeEach, describe, test } from 'node:test';
import { connectAgent, disconnectAgent, type AgentConnect } from '../../../lib/index.ts';
import { sshKeygen, tempDir } from '../../fixtures/openssh.ts';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

const dir = tempDir('burrow-agents-');
after(() => dir.remove());

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance({ simulation: { agentVersions: ['2.3.40', '2.3.41', '3.0.0', '3.2.0', '3.5.0'] } });
});


async function credential(acl: string[] = []) {
  const res = await api.request('POST', '/credentials', { acl });
  assert.equal(res.status, 201);
  return res.body as { id: string; token: string };
}

/** Connects through the control plane, as a test harness over HTTP would. */
async function connect(body: AgentConnect) {
  return api.request('POST', '/_burrow/agents', body, { token: OPERATOR_TOKEN });
}

async function session(body: Partial<AgentConnect> = {}) {
  const cred = await credential();
  const res = await connect({ token: cred.token, ...body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

const command = (id: string, name: string, body: unknown = {}) => api.request('POST', `/tunnel_sessions/${id}/${name}`, body);

describe('connecting agents', () => {
  test('a credential token starts a burrow/v2 session that the API lists', async () => {
    const cred = await credential(['bind:*.example.com']);
    const res = await connect({ token: cred.token, binds: { domains: ['app.example.com'] }, os: 'darwin', agent_version: '3.2.0', region: 'eu', ip: '198.51.100.4', metadata: '{"host":"ci"}' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^ts_/);
    assert.equal(res.body.account_id, api.accountId);
    const got = await api.request('GET', `/tunnel_sessions/${res.body.id}`);
    assert.deepEqual(got.body, {
      id: res.body.id,
      uri: `http://burrow.test/tunnel_sessions/${res.body.id}`,
      agent_version: '3.2.0',
      credential: { id: cred.id, uri: `http://burrow.test/credentials/${cred.id}` },
      ip: '198.51.100.4',
      metadata: '{"host":"ci"}',
      os: 'darwin',
      region: 'eu',
      started_at: '2026-03-01T12:00:00Z',
      transport: 'burrow/v2',
    });
    assert.deepEqual((await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions.map((s: any) => s.id), [res.body.id]);
  });

  test('an SSH key registered as an SSH credential starts an ssh session', async () => {
    const key = sshKeygen(dir.path, 'agent-ssh', 'ed25519');
    const sshCredential = await api.request('POST', '/ssh_credentials', { public_key: key.publicKey });
    const res = await connect({ account_id: api.accountId, ssh_public_key: key.publicKey });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.transport, 'ssh');
    assert.equal(res.body.credential.id, sshCredential.body.id);
    assert.equal(res.body.credential.uri, `http://burrow.test/ssh_credentials/${sshCredential.body.id}`);
    const other = sshKeygen(dir.path, 'agent-ssh-unknown', 'ed25519');
    assertError(await connect({ account_id: api.accountId, ssh_public_key: other.publicKey }), 401, 9013, /no SSH credential/);
    assertError(await connect({ ssh_public_key: key.publicKey }), 400, 215, /account_id: required/);
  });

  test('unknown, deleted or API-key tokens are refused; a token of the wrong shape is 105', async () => {
    assertError(await connect({ token: 'nope' }), 401, 105, /token: not of the shape of a tunnel credential's token/);
    assertError(await connect({ token: `${'A'.repeat(27)}_${'b'.repeat(27)}` }), 401, 9013, /not the token of a tunnel credential/);
    assertError(await connect({ token: api.token }), 401, 9013, /not the token of a tunnel credential/);
    const cred = await credential();
    await api.request('DELETE', `/credentials/${cred.id}`);
    assertError(await connect({ token: cred.token }), 401, 9013, /not the token/);
    assertError(await connect({}), 400, 215, /exactly one of token/);
  });

  test('every bind must pass the credential ACL; the error names the bind and the rules', async () => {
    const cred = await credential(['bind:*.example.com', 'bind:1.tcp.example.com:20001', 'bind:env=ci']);
    assert.equal((await connect({ token: cred.token, binds: { domains: ['a.example.com'], addresses: ['1.tcp.example.com:20001'], labels: { env: 'ci' } } })).status, 201);
    assertError(await connect({ token: cred.token, binds: { domains: ['a.example.com', 'evil.test'] } }), 403, 9014, /^binds\.domains\[1\]: tunnel credential 'cr_\w+' may not bind evil\.test; its acl: bind:\*\.example\.com, bind:1\.tcp\.example\.com:20001, bind:env=ci/);
    assertError(await connect({ token: cred.token, binds: { addresses: ['1.tcp.example.com:20002'] } }), 403, 9014, /binds\.addresses\[0\]/);
    assertError(await connect({ token: cred.token, binds: { labels: { env: 'prod' } } }), 403, 9014, /binds\.labels: .* may not bind env=prod/);
    assert.equal((await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions.length, 1, 'refused agents leave no session');
  });

  test('ip must be an IPv4 or IPv6 address without a zone id; a 400 names the field', async () => {
    const cred = await credential();
    for (const ip of ['<img src=x>', '10.0.0.7%eth0', 'fe80::1%eth0', '10.0.0', '[::1]', '']) {
      const res = await connect({ token: cred.token, ip });
      assertError(res, 400, 215, /^ip: /);
      assert.equal(res.body.msg, `ip: must be an IPv4 or IPv6 address without a zone id (got ${JSON.stringify(ip)})`);
    }
    assert.deepEqual((await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions, []);
    for (const ip of ['10.0.0.7', '2001:db8::7', '::ffff:10.0.0.7']) assert.equal((await connect({ token: cred.token, ip })).status, 201, ip);
  });

  test('an address with a zone id does not pass an agent restriction that allows its network', async () => {
    const policy = await api.request('POST', '/ip_policies', {});
    await api.request('POST', '/ip_policy_rules', { ip_policy_id: policy.body.id, cidr: '10.0.0.0/8', action: 'allow' });
    await api.request('POST', '/ip_restrictions', { type: 'agent', enforced: true, ip_policy_ids: [policy.body.id] });
    const cred = await credential();
    assertError(await connect({ token: cred.token, ip: '10.0.0.7%eth0' }), 400, 215, /^ip: /);
    assertError(await connect({ token: cred.token, ip: '<img src=x>' }), 400, 215, /^ip: /);
    assert.equal((await connect({ token: cred.token, ip: '10.0.0.7' })).status, 201);
  });

  test('an enforced agent IP restriction refuses a denied address; an unenforced one does not', async () => {
    const policy = await api.request('POST', '/ip_policies', {});
    await api.request('POST', '/ip_policy_rules', { ip_policy_id: policy.body.id, cidr: '10.0.0.0/8', action: 'allow' });
    const restriction = await api.request('POST', '/ip_restrictions', { type: 'agent', enforced: true, ip_policy_ids: [policy.body.id] });
    const cred = await credential();
    assert.equal((await connect({ token: cred.token, ip: '10.1.2.3' })).status, 201);
    assertError(await connect({ token: cred.token, ip: '192.0.2.1' }), 403, 220, new RegExp(`agent IP restriction '${restriction.body.id}' denies 192\\.0\\.2\\.1`));
    await api.request('PATCH', `/ip_restrictions/${restriction.body.id}`, { enforced: false });
    assert.equal((await connect({ token: cred.token, ip: '192.0.2.1' })).status, 201);
  });

  test('disconnect and credential deletion end sessions', async () => {
    const cred = await credential();
    const a = (await connect({ token: cred.token })).body;
    const b = (await connect({ token: cred.token })).body;
    assert.equal((await api.request('DELETE', `/_burrow/accounts/${api.accountId}/tunnel_sessions/${a.id}`, undefined, { token: OPERATOR_TOKEN })).status, 204);
    assert.equal((await api.request('GET', `/tunnel_sessions/${a.id}`)).status, 404);
    await api.request('DELETE', `/credentials/${cred.id}`);
    assert.equal((await api.request('GET', `/tunnel_sessions/${b.id}`)).status, 404);
  });

  test('in-process: connectAgent and disconnectAgent', async () => {
    const cred = await credential();
    const started = await connectAgent(api.burrow, { token: cred.token, os: 'linux' });
    assert.equal((await api.request('GET', `/tunnel_sessions/${started.id}`)).status, 200);
    await disconnectAgent(api.burrow, api.accountId, String(started.id));
    assert.equal((await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions.length, 0);
  });
});

describe('POST /tunnel_sessions/{id}/stop', () => {
  test('the agent exits and its session disappears', async () => {
    const s = await session();
    const res = await command(s.id, 'stop');
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assert.equal((await api.request('GET', `/tunnel_sessions/${s.id}`)).status, 404);
    assert.equal((await command(s.id, 'stop')).status, 404);
  });

  test('the body must be an empty object', async () => {
    const s = await session();
    assertError(await command(s.id, 'stop', { force: true }), 400, 214, /force: unknown field/);
    assert.equal((await command(s.id, 'stop', { id: s.id })).status, 204, 'the path id in the body is tolerated');
  });
});

describe('POST /tunnel_sessions/{id}/restart', () => {
  test('reconnects under a new id with the same credential, binds and version', async () => {
    const cred = await credential(['bind:a.example.com']);
    const s = (await connect({ token: cred.token, binds: { domains: ['a.example.com'] }, agent_version: '3.2.0', ip: '10.0.0.9' })).body;
    api.clock.advance(30);
    assert.equal((await command(s.id, 'restart')).status, 204);
    const sessions = (await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions;
    assert.equal(sessions.length, 1);
    assert.notEqual(sessions[0].id, s.id);
    assert.equal(sessions[0].credential.id, cred.id);
    assert.equal(sessions[0].agent_version, '3.2.0');
    assert.equal(sessions[0].ip, '10.0.0.9');
    assert.equal(sessions[0].started_at, '2026-03-01T12:00:30Z');
  });

  test('is refused on Windows', async () => {
    const s = await session({ os: 'windows' });
    assertError(await command(s.id, 'restart'), 400, 804, /Windows/);
    assert.equal((await api.request('GET', `/tunnel_sessions/${s.id}`)).status, 200);
  });
});

describe('POST /tunnel_sessions/{id}/update', () => {
  test('updates within the major version; restart after 10 seconds runs the new version', async () => {
    const s = await session({ agent_version: '3.0.0' });
    assert.equal((await command(s.id, 'update')).status, 204);
    assertError(await command(s.id, 'update'), 409, 9011, /already updating to 3\.5\.0/);
    api.clock.advance(9);
    assertError(await command(s.id, 'restart'), 409, 9011, /still updating to 3\.5\.0; restart it at least 10 seconds/);
    api.clock.advance(1);
    assertError(await command(s.id, 'update'), 409, 9012, /has updated to 3\.5\.0; restart it/);
    assert.equal((await api.request('GET', `/tunnel_sessions/${s.id}`)).body.agent_version, '3.0.0', 'the old code runs until the restart');
    assert.equal((await command(s.id, 'restart')).status, 204);
    const [restarted] = (await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions;
    assert.equal(restarted.agent_version, '3.5.0');
    assertError(await command(restarted.id, 'update'), 409, 9010, /no update is available for agent version 3\.5\.0/);
  });

  test('never crosses a major version', async () => {
    const s = await session({ agent_version: '2.3.40' });
    assert.equal((await command(s.id, 'update')).status, 204);
    api.clock.advance(10);
    await command(s.id, 'restart');
    const [restarted] = (await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions;
    assert.equal(restarted.agent_version, '2.3.41');
    assertError(await command(restarted.id, 'update'), 409, 9010, /within major version 2/);
  });

  test('fails when update checks are disabled', async () => {
    const s = await session({ agent_version: '3.0.0', update_checks: false });
    assertError(await command(s.id, 'update'), 400, 806, /update checks disabled/);
  });
});

describe('session events', () => {
  test('connect, restart and stop emit agent_session_start/stop', async () => {
    const dest = await api.request('POST', '/event_destinations', { format: 'json', target: { logs: { auth: { role: { role_ref: 'r' } }, log_group_ref: 'g' } } });
    await api.request('POST', '/event_subscriptions', { sources: [{ type: 'agent_session_start.v0' }, { type: 'agent_session_stop.v0' }], destination_ids: [dest.body.id] });
    const s = await session();
    await command(s.id, 'restart');
    const [restarted] = (await api.request('GET', '/tunnel_sessions')).body.tunnel_sessions;
    await command(restarted.id, 'stop');
    const events = (await api.burrow.outbox(api.accountId, dest.body.id)).events;
    assert.deepEqual(events.map((e) => [e.event_type, (e.object as any).id]), [
      ['agent_session_start.v0', s.id],
      ['agent_session_stop.v0', s.id],
      ['agent_session_start.v0', restarted.id],
      ['agent_session_stop.v0', restarted.id],
    ]);
  });
});

describe('tunnel group backends', () => {
  test('list the tunnels of online agents whose labels match, and drop them when the agents go', async () => {
    const backend = await api.request('POST', '/backends/tunnel_group', { labels: { app: 'web' } });
    const cred = await credential(['bind:app=*', 'bind:env=*']);
    const web = (await connect({ token: cred.token, binds: { labels: { app: 'web', env: 'prod' } } })).body;
    await connect({ token: cred.token, binds: { labels: { app: 'api' } } });
    const tunnels = (await api.request('GET', `/backends/tunnel_group/${backend.body.id}`)).body.tunnels;
    assert.deepEqual(tunnels.map((t: any) => t.id), [`tn_${web.id.slice(3)}`]);
    await command(web.id, 'stop');
    assert.deepEqual((await api.request('GET', `/backends/tunnel_group/${backend.body.id}`)).body.tunnels, []);
  });
});

