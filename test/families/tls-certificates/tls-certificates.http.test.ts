import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, beforeEach, describe, test } from 'node:test';
import { assertError, BASE, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';
import { generateTlsFixtures, type TlsFixtures } from '../../fixtures/tls.ts';

let tls: TlsFixtures;
let api: TestInstance;
before(() => {
  tls = generateTlsFixtures();
});
beforeEach(async () => {
  api = await createTestInstance();
});

const rfc3339 = (openSslTime: string) => new Date(openSslTime).toISOString().replace(/\.\d{3}Z$/, 'Z');
const upload = (certificate_pem: string, private_key_pem: string, extra: Record<string, unknown> = {}) =>
  api.request('POST', '/tls_certificates', { certificate_pem, private_key_pem, ...extra });

describe('POST /tls_certificates', () => {
  test('answers what the leaf of the chain says, and never the private key', async () => {
    const chain = tls.leaf.cert + tls.intermediate + tls.root;
    const res = await upload(chain, tls.leaf.key, { description: 'app', metadata: '{"team":"ops"}' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.match(res.body.id, /^cert_[0-9A-Za-z]{27}$/);
    const leaf = new X509Certificate(tls.leaf.cert);
    assert.deepEqual(res.body, {
      id: res.body.id,
      uri: `${BASE}/tls_certificates/${res.body.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'app',
      metadata: '{"team":"ops"}',
      certificate_pem: chain,
      subject_common_name: 'app.example.com',
      subject_alternative_names: { dns_names: ['app.example.com', '*.app.example.com'], ips: ['192.0.2.10', '2001:db8::1'] },
      issued_at: null,
      not_before: rfc3339(leaf.validFrom),
      not_after: rfc3339(leaf.validTo),
      key_usages: ['digital_signature', 'key_encipherment'],
      extended_key_usages: ['server_auth', 'client_auth'],
      private_key_type: 'rsa',
      issuer_common_name: 'Burrow Test Intermediate',
      serial_number: '0a1b2c3d4e5f',
      subject_organization: 'Acme, Inc',
      subject_organizational_unit: 'Ops',
      subject_locality: 'Berlin',
      subject_province: 'Berlin',
      subject_country: 'DE',
    });
    const got = await api.request('GET', `/tls_certificates/${res.body.id}`);
    assert.deepEqual(got.body, res.body);
    const list = await api.request('GET', '/tls_certificates');
    assert.deepEqual(list.body.tls_certificates, [res.body]);
    const keyBody = tls.leaf.key.split('\n')[1]!;
    for (const text of [res.text, got.text, list.text]) assert.ok(!text.includes(keyBody) && !text.includes('private_key_pem'));
  });

  test('reads ecdsa (SEC 1) and ed25519 keys', async () => {
    const ecdsa = await upload(tls.ecdsa.cert, tls.ecdsa.key);
    assert.equal(ecdsa.status, 201, JSON.stringify(ecdsa.body));
    assert.equal(ecdsa.body.private_key_type, 'ecdsa');
    assert.equal(ecdsa.body.subject_common_name, 'ecdsa.example.com');
    assert.equal(ecdsa.body.issuer_common_name, 'ecdsa.example.com');
    assert.deepEqual(ecdsa.body.subject_alternative_names, { dns_names: [], ips: [] });
    assert.equal(ecdsa.body.subject_organization, '');
    assert.equal((await upload(tls.ed25519.cert, tls.ed25519.key)).body.private_key_type, 'ed25519');
  });

  test('refuses a key that does not belong to the leaf, naming the field, without quoting the key', async () => {
    const res = await upload(tls.leaf.cert, tls.ecdsa.key);
    assertError(res, 400, 1923, /^private_key_pem: does not belong to the certificate "app\.example\.com"/);
    assert.ok(!res.text.includes(tls.ecdsa.key.split('\n')[1]!));
    assertError(await upload(tls.ecdsa.cert + tls.leaf.cert, tls.leaf.key), 400, 1926, /^certificate_pem: .*certificate 1 is not signed by certificate 2/);
  });

  test('refuses garbage, swapped, encrypted and unsupported PEM with the vendor codes', async () => {
    assertError(await upload('', tls.leaf.key), 400, 1922, /^certificate_pem: no PEM-encoded certificate/);
    assertError(await upload('not a certificate', tls.leaf.key), 400, 1922, /^certificate_pem: /);
    assertError(await upload('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', tls.leaf.key), 400, 1900, /^certificate_pem: certificate 1 is not a readable X\.509 certificate/);
    assertError(await upload(tls.leaf.key, tls.leaf.cert), 400, 1925, /^certificate_pem: holds a PRIVATE KEY block/);
    assertError(await upload(tls.leaf.cert, tls.leaf.cert), 400, 1924, /^private_key_pem: holds a CERTIFICATE block/);
    assertError(await upload(tls.leaf.cert, ''), 400, 1901, /^private_key_pem: no PEM-encoded private key/);
    assertError(await upload(tls.leaf.cert, tls.encryptedKey), 400, 1902, /^private_key_pem: the private key is encrypted/);
    assertError(await upload(tls.leaf.cert, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'), 400, 1903, /^private_key_pem: the PRIVATE KEY block is not a readable private key/);
    assertError(await upload(tls.leaf.cert, tls.leaf.key + tls.ecdsa.key), 400, 1903, /holds 2 PEM blocks/);
    assertError(await api.request('POST', '/tls_certificates', { certificate_pem: tls.leaf.cert }), 400, 215, /^private_key_pem: is required/);
    assert.deepEqual((await api.request('GET', '/tls_certificates')).body.tls_certificates, []);
  });

  test('no event, error or journal entry carries the private key', async () => {
    const keyBody = tls.leaf.key.split('\n')[1]!;
    const destination = await api.request('POST', '/event_destinations', { format: 'json', target: { logs: { auth: { role: { role_ref: 'r' } }, log_group_ref: 'g' } } });
    await api.request('POST', '/event_subscriptions', { destination_ids: [destination.body.id], sources: [{ type: 'tls_certificate_created.v0' }] });
    const created = await upload(tls.leaf.cert + tls.intermediate, tls.leaf.key);
    assert.equal(created.status, 201);
    await upload(tls.ecdsa.cert, tls.leaf.key);
    const outbox = await api.burrow.outbox(api.accountId, destination.body.id);
    assert.equal(outbox.events.length, 1);
    assert.equal((outbox.events[0] as any).object.id, created.body.id);
    const journal = await api.request('GET', `/_burrow/requests?account_id=${api.accountId}`, undefined, { token: OPERATOR_TOKEN });
    assert.equal(journal.body.requests.filter((entry: any) => entry.path === '/tls_certificates').length, 2);
    // The journal's messages may name the field (the refused upload's), never its value; nor does an entry's detail.
    const details = await Promise.all(journal.body.requests.map((entry: any) => api.request('GET', `/_burrow/requests/${entry.operation_id}`, undefined, { token: OPERATOR_TOKEN })));
    for (const text of [JSON.stringify(outbox), journal.text, ...details.map((detail) => detail.text)]) assert.ok(!text.includes(keyBody));
    assert.ok(!JSON.stringify(outbox).includes('private_key_pem'));
  });
});

describe('PATCH and DELETE /tls_certificates/{id}', () => {
  test('only description and metadata change', async () => {
    const created = await upload(tls.ecdsa.cert, tls.ecdsa.key);
    const patched = await api.request('PATCH', `/tls_certificates/${created.body.id}`, { id: created.body.id, description: 'renamed' });
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body, { ...created.body, description: 'renamed' });
    assertError(await api.request('PATCH', `/tls_certificates/${created.body.id}`, { certificate_pem: tls.leaf.cert }), 400, 215, /^certificate_pem: cannot be changed/);
    assertError(await api.request('PATCH', `/tls_certificates/${created.body.id}`, { private_key_pem: tls.leaf.key }), 400, 215, /^private_key_pem: cannot be changed/);
  });

  test('a certificate a reserved domain uses is not deleted until the domain lets go of it', async () => {
    const cert = (await upload(tls.leaf.cert, tls.leaf.key)).body;
    const domain = (await api.request('POST', '/reserved_domains', { domain: 'app.example.com', certificate_id: cert.id })).body;
    const refused = await api.request('DELETE', `/tls_certificates/${cert.id}`);
    assertError(refused, 409, 9007, new RegExp(`still used by reserved domain '${domain.id}'`));
    assert.equal(refused.body.details.used_by, domain.id);
    assert.equal((await api.request('DELETE', `/reserved_domains/${domain.id}/certificate`)).status, 204);
    assert.equal((await api.request('DELETE', `/tls_certificates/${cert.id}`)).status, 204);
    assertError(await api.request('GET', `/tls_certificates/${cert.id}`), 404, 1965, /TLS certificate 'cert_.*' was not found/);
  });
});
