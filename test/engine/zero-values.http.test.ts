import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, createTestInstance, type TestInstance } from '../helpers.ts';

/**
 * The bodies the vendor's newer typed clients send, byte for byte: the Python client (ngrok-api-
 * python, services.py) always sends its keyword defaults ("" / 0 / [] / {}; only None is dropped),
 * and the Go client (ngrok-api-go, datatypes.go) always sends plain struct fields such as a static
 * backend's `tls: {}`. Both send `ngrok-version: 2` instead of Burrow's version header.
 */

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const NEWER_CLIENT = { 'Service-Version': null, 'ngrok-version': '2' };

function send(method: string, path: string, body?: unknown) {
  return api.request(method, path, body, { headers: NEWER_CLIENT });
}

async function created(path: string, body: unknown) {
  const res = await send('POST', path, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

describe('SSH certificate authorities: ssh_certificate_authorities.create(…) with its defaults', () => {
  const defaults = { description: '', metadata: '', private_key_type: '', elliptic_curve: '', key_size: 0 };

  test('no arguments: the default ed25519 key', async () => {
    const ca = await created('/ssh_certificate_authorities', defaults);
    assert.equal(ca.key_type, 'ed25519');
    assert.match(ca.public_key, /^ssh-ed25519 /);
  });

  test('private_key_type rsa with key_size, elliptic_curve "" ignored', async () => {
    const ca = await created('/ssh_certificate_authorities', { ...defaults, private_key_type: 'rsa', key_size: 2048 });
    assert.equal(ca.key_type, 'rsa');
    assert.match(ca.public_key, /^ssh-rsa /);
  });

  test('private_key_type ecdsa alone, key_size 0 ignored: P-256', async () => {
    const ca = await created('/ssh_certificate_authorities', { ...defaults, private_key_type: 'ecdsa' });
    assert.match(ca.public_key, /^ecdsa-sha2-nistp256 /);
  });

  test('non-zero values are still checked, and unknown fields still refused', async () => {
    assertError(await send('POST', '/ssh_certificate_authorities', { ...defaults, key_size: 2048 }), 400, 1940, /^key_size: only allowed with private_key_type rsa/);
    assertError(await send('POST', '/ssh_certificate_authorities', { ...defaults, private_key_type: 'rsa', elliptic_curve: 'P-256' }), 400, 1942, /^elliptic_curve:/);
    assertError(await send('POST', '/ssh_certificate_authorities', { ...defaults, private_key_type: 'dsa' }), 400, 1909, /^private_key_type: must be one of/);
    assertError(await send('POST', '/ssh_certificate_authorities', { ...defaults, key_bits: 0 }), 400, 214, /^key_bits: unknown field/);
  });
});

describe('SSH user certificates: extensions {} and times "" mean the defaults', () => {
  test('ssh_user_certificates.create(…) with principals [], critical_options {}, extensions {}', async () => {
    const ca = await created('/ssh_certificate_authorities', { description: '', metadata: '', private_key_type: '', elliptic_curve: '', key_size: 0 });
    const userKey = (await created('/ssh_certificate_authorities', {})).public_key;
    const cert = await created('/ssh_user_certificates', {
      ssh_certificate_authority_id: ca.id,
      public_key: userKey,
      principals: [],
      critical_options: {},
      extensions: {},
      valid_after: '',
      valid_until: '',
      description: '',
      metadata: '',
    });
    assert.deepEqual(cert.extensions, { 'permit-pty': '', 'permit-user-rc': '' });
    assert.deepEqual(cert.critical_options, {});
    assert.equal(cert.valid_after, '2026-03-01T12:00:00Z');
    assert.equal(cert.valid_until, '2026-03-02T12:00:00Z');
  });
});

describe('backend updates keep what the zero values would have erased', () => {
  test('failover_backends.update(id, metadata=…) sends backends: []', async () => {
    const child = await created('/backends/http_response', { description: '', metadata: '', body: '', headers: {} });
    const parent = await created('/backends/failover', { description: '', metadata: '', backends: [child.id] });
    const res = await send('PATCH', `/backends/failover/${parent.id}`, { metadata: 'm', backends: [] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.metadata, res.body.backends], ['m', [child.id]]);
  });

  test('weighted_backends.update sends backends: {}, tunnel_group_backends.update labels: {}', async () => {
    const child = await created('/backends/http_response', { description: '', metadata: '', body: '', headers: {} });
    const weighted = await created('/backends/weighted', { description: '', metadata: '', backends: { [child.id]: 3 } });
    assert.deepEqual((await send('PATCH', `/backends/weighted/${weighted.id}`, { backends: {} })).body.backends, { [child.id]: 3 });
    const group = await created('/backends/tunnel_group', { description: '', metadata: '', labels: { app: 'web' } });
    assert.deepEqual((await send('PATCH', `/backends/tunnel_group/${group.id}`, { description: 'd', labels: {} })).body.labels, { app: 'web' });
  });

  test('static_backends.update sends address: "" (Python) and tls: {} (Go)', async () => {
    const backend = await created('/backends/static', { description: '', metadata: '', address: 'example.com:443', tls: { enabled: true } });
    const python = await send('PATCH', `/backends/static/${backend.id}`, { metadata: 'python', address: '' });
    assert.deepEqual([python.status, python.body.address, python.body.tls], [200, 'example.com:443', { enabled: true }]);
    const go = await send('PATCH', `/backends/static/${backend.id}`, { metadata: 'go', tls: {} });
    assert.deepEqual([go.status, go.body.address, go.body.tls], [200, 'example.com:443', { enabled: true }]);
    const off = await send('PATCH', `/backends/static/${backend.id}`, { tls: { enabled: false } });
    assert.deepEqual(off.body.tls, { enabled: false }, 'an explicit enabled: false still turns TLS off');
  });
});

describe('IP restrictions: ip_restrictions.update(id, enforced=True) sends ip_policy_ids: []', () => {
  test('the policies stay', async () => {
    const policy = await created('/ip_policies', { description: '', metadata: '' });
    const restriction = await created('/ip_restrictions', { type: 'agent', ip_policy_ids: [policy.id], description: '', metadata: '', enforced: false });
    const res = await send('PATCH', `/ip_restrictions/${restriction.id}`, { enforced: true, ip_policy_ids: [] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.enforced, true);
    assert.deepEqual(res.body.ip_policies.map((p: { id: string }) => p.id), [policy.id]);
  });
});

describe('HTTPS edge routes: edges.https_routes.update(…) sends match_type, match, description, metadata ""', () => {
  test('only the fields given change', async () => {
    const edge = await created('/edges/https', { description: '', metadata: '' });
    const route = await created(`/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/api', description: 'api', metadata: '' });
    const res = await send('PATCH', `/edges/https/${edge.id}/routes/${route.id}`, { match_type: '', match: '', description: '', metadata: 'v2' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.match_type, res.body.match, res.body.description, res.body.metadata], ['path_prefix', '/api', 'api', 'v2']);
  });

  test('a route create still needs match_type and match', async () => {
    const edge = await created('/edges/https', { description: '', metadata: '' });
    assertError(await send('POST', `/edges/https/${edge.id}/routes`, { match_type: '', match: '/', description: '', metadata: '' }), 400, 7130, /^match_type: is required/);
    assertError(await send('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '', description: '', metadata: '' }), 400, 7123, /^match: is required/);
  });
});

describe('modules: zero numbers and strings take the defaults', () => {
  test('circuit breaker zeros and TLS termination terminate_at ""', async () => {
    const edge = await created('/edges/https', { description: '', metadata: '' });
    const route = await created(`/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match: '/', description: '', metadata: '' });
    const breaker = await send('PUT', `/edges/https/${edge.id}/routes/${route.id}/circuit_breaker`, {
      enabled: true,
      tripped_duration: 0,
      rolling_window: 0,
      num_buckets: 0,
      volume_threshold: 0,
      error_threshold_percentage: 0,
    });
    assert.deepEqual(breaker.body, { enabled: true, tripped_duration: 10, rolling_window: 10, num_buckets: 10, volume_threshold: 20, error_threshold_percentage: 0.5 });
    const tls = await created('/edges/tls', { description: '', metadata: '' });
    const termination = await send('PUT', `/edges/tls/${tls.id}/tls_termination`, { terminate_at: '' });
    assert.deepEqual(termination.body, { enabled: true, terminate_at: 'edge', min_version: null });
  });
});

describe('event destinations: event_destinations.create(…) sends format: ""', () => {
  test('is the missing-format error (235), not a wrong-format one', async () => {
    const res = await send('POST', '/event_destinations', { metadata: '', description: '', format: '', target: { monitoring: { api_key: 'k' } } });
    assertError(res, 400, 235, /^format: the only supported format is json \(got nothing\)/);
  });
});
