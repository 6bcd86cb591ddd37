import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, beforeEach, describe, test } from 'node:test';
import { eventCatalogue, RESOURCES } from '../../../lib/index.ts';
import { assertError, BASE, createTestInstance, type TestInstance } from '../../helpers.ts';
import { generateTestCertificates, type TestCertificates } from '../../fixtures/x509.ts';

let certs: TestCertificates;
let api: TestInstance;
before(() => {
  certs = generateTestCertificates();
});
beforeEach(async () => {
  api = await createTestInstance();
});


const rfc3339 = (openSslTime: string) => new Date(openSslTime).toISOString().replace(/\.\d{3}Z$/, 'Z');

describe('/certificate_authorities', () => {
  test('create answers what the certificate says', async () => {
    const res = await api.request('POST', '/certificate_authorities', { ca_pem: certs.ca, description: 'client CA' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const x509 = new X509Certificate(certs.ca);
    assert.match(res.body.id, /^ca_[0-9A-Za-z]{27}$/);
    assert.deepEqual(res.body, {
      id: res.body.id,
      uri: `${BASE}/certificate_authorities/${res.body.id}`,
      created_at: '2026-03-01T12:00:00Z',
      description: 'client CA',
      metadata: '',
      ca_pem: certs.ca,
      subject_common_name: 'Burrow Test Root',
      not_before: rfc3339(x509.validFrom),
      not_after: rfc3339(x509.validTo),
      key_usages: ['digital_signature', 'cert_sign', 'crl_sign'],
      extended_key_usages: ['client_auth'],
    });
  });

  test('a CA without usage extensions has empty usage lists', async () => {
    const res = await api.request('POST', '/certificate_authorities', { ca_pem: certs.otherCa });
    assert.deepEqual([res.body.subject_common_name, res.body.key_usages, res.body.extended_key_usages], ['Other Root', [], []]);
  });

  test('get, list, update and delete', async () => {
    const { body: ca } = await api.request('POST', '/certificate_authorities', { ca_pem: certs.ca });
    assert.equal((await api.request('GET', `/certificate_authorities/${ca.id}`)).body.subject_common_name, 'Burrow Test Root');
    assert.deepEqual((await api.request('GET', '/certificate_authorities')).body.certificate_authorities.map((c: any) => c.id), [ca.id]);
    const updated = await api.request('PATCH', `/certificate_authorities/${ca.id}`, { metadata: 'm' });
    assert.equal(updated.body.metadata, 'm');
    assert.equal(updated.body.ca_pem, certs.ca);
    assert.equal((await api.request('DELETE', `/certificate_authorities/${ca.id}`)).status, 204);
    assert.equal((await api.request('GET', `/certificate_authorities/${ca.id}`)).status, 404);
  });

  test('ca_pem cannot change', async () => {
    const { body: ca } = await api.request('POST', '/certificate_authorities', { ca_pem: certs.ca });
    assertError(await api.request('PATCH', `/certificate_authorities/${ca.id}`, { ca_pem: certs.otherCa }), 400, 214, /^ca_pem: unknown field/);
  });

  test('its audit events are certificate_authority_created/updated/deleted.v0', () => {
    const catalogue = eventCatalogue(RESOURCES);
    for (const action of ['created', 'updated', 'deleted']) assert.ok(catalogue.includes(`certificate_authority_${action}.v0`));
  });
});

describe('ca_pem rules', () => {
  test('a certificate that is not a CA is refused (1913)', async () => {
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: certs.leaf }), 400, 1913, /^ca_pem: the certificate "leaf\.example\.com" is not a CA/);
  });

  test('two certificates are refused, naming both (1912)', async () => {
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: certs.ca + certs.otherCa }), 400, 1912, /holds 2 certificates \("Burrow Test Root", "Other Root"\)/);
  });

  test('a private key is refused (1911)', async () => {
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: certs.caKey }), 400, 1911, /PEM block of type "PRIVATE KEY"/);
  });

  test('text without PEM (1920), an empty value (1919) and a broken certificate (1900) are refused', async () => {
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: 'not a certificate' }), 400, 1920, /no PEM block found/);
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: ' ' }), 400, 1919, /is empty/);
    const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: broken }), 400, 1900, /not a readable X\.509 certificate/);
  });

  test('PEM headers (1910) and more than 32 KiB (1921) are refused', async () => {
    const withHeader = certs.ca.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n');
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: withHeader }), 400, 1910, /PEM headers/);
    assertError(await api.request('POST', '/certificate_authorities', { ca_pem: certs.ca + ' '.repeat(33 * 1024) }), 400, 1921, /at most 32768 bytes/);
  });

  test('ca_pem is required', async () => {
    assertError(await api.request('POST', '/certificate_authorities', {}), 400, 215, /^ca_pem: is required/);
  });
});
