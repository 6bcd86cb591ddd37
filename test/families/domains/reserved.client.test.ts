import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { generateTlsFixtures, type TlsFixtures } from '../../fixtures/tls.ts';
import { useOfficialClient } from '../../compat/official-client.ts';

const official = useOfficialClient();
let tls: TlsFixtures;
before(() => {
  tls = generateTlsFixtures();
});

/** 0.11.0 parses the correct empty 204 of these calls as JSON and rejects (docs/compatibility.md): the call still took effect. */
const rejectsEmpty204 = (call: Promise<unknown>) => assert.rejects(call, (error: any) => error instanceof SyntaxError);

describe('official client: TLS certificates, reserved domains and reserved addresses', () => {
  test('tlsCertificates: create, get, list, update; the key never comes back', async () => {
    const { client } = official;
    const cert = await client.tlsCertificates.create({ certificatePem: tls.leaf.cert + tls.intermediate, privateKeyPem: tls.leaf.key, description: 'app' });
    assert.match(cert.id, /^cert_/);
    assert.equal(cert.subjectCommonName, 'app.example.com');
    assert.deepEqual(cert.subjectAlternativeNames, { dnsNames: ['app.example.com', '*.app.example.com'], ips: ['192.0.2.10', '2001:db8::1'] });
    assert.equal(cert.privateKeyType, 'rsa');
    assert.equal(cert.issuerCommonName, 'Burrow Test Intermediate');
    assert.equal(cert.serialNumber, '0a1b2c3d4e5f');
    assert.deepEqual(cert.extendedKeyUsages, ['server_auth', 'client_auth']);
    assert.equal(cert.subjectOrganization, 'Acme, Inc');
    assert.ok(!('privateKeyPem' in cert));
    assert.equal((await client.tlsCertificates.get(cert.id)).notAfter, cert.notAfter);
    assert.equal((await client.tlsCertificates.update({ id: cert.id, metadata: 'm' })).metadata, 'm');
    assert.ok((await client.tlsCertificates.list()).some((c: any) => c.id === cert.id));
    await assert.rejects(client.tlsCertificates.create({ certificatePem: tls.leaf.cert, privateKeyPem: tls.ecdsa.key }), (error: any) =>
      error.statusCode === 400 && error.errorCode === 'ERR_BURROW_1923' && /^private_key_pem: /.test(error.msg));
    assert.equal(await official.deleteWithFetch(`/tls_certificates/${cert.id}`), 204);
  });

  test('reservedDomains: create with a certificate or a policy, update, list, detach both', async () => {
    const { client } = official;
    const cert = await client.tlsCertificates.create({ certificatePem: tls.ecdsa.cert, privateKeyPem: tls.ecdsa.key });
    const domain = await client.reservedDomains.create({ domain: 'app.example.com', region: '', certificateId: cert.id });
    assert.match(domain.id, /^rd_/);
    assert.equal(domain.region, '');
    assert.match(domain.cnameTarget, /\.cname\.burrow\.internal$/);
    assert.equal(domain.certificate.id, cert.id);
    assert.equal(domain.certificateManagementPolicy, null);
    await rejectsEmpty204(client.reservedDomains.deleteCertificate(domain.id));
    assert.equal((await client.reservedDomains.get(domain.id)).certificate, null);

    const managed = await client.reservedDomains.update({ id: domain.id, certificateManagementPolicy: { authority: 'letsencrypt', privateKeyType: 'rsa' } });
    assert.deepEqual(managed.certificateManagementPolicy, { authority: 'letsencrypt', privateKeyType: 'rsa' });
    assert.equal(managed.certificateManagementStatus.provisioningJob.msg, 'provisioning a certificate');
    await rejectsEmpty204(client.reservedDomains.deleteCertificateManagementPolicy(domain.id));
    assert.equal((await client.reservedDomains.get(domain.id)).certificateManagementStatus, null);

    const wildcard = await client.reservedDomains.create({ domain: '*.example.org', region: 'eu', certificateManagementPolicy: { authority: '', privateKeyType: '' } });
    assert.equal(wildcard.certificateManagementPolicy.privateKeyType, 'ecdsa');
    assert.match(wildcard.acmeChallengeCnameTarget, /\.acme\.burrow\.internal$/);
    assert.deepEqual((await client.reservedDomains.list()).map((d: any) => d.id), [wildcard.id, domain.id]);
    await assert.rejects(client.reservedDomains.create({ domain: 'app.example.com', region: '' }), (error: any) => error.statusCode === 409 && error.errorCode === 'ERR_BURROW_413');
    for (const id of [domain.id, wildcard.id]) assert.equal(await official.deleteWithFetch(`/reserved_domains/${id}`), 204);
  });

  test('reservedAddrs: create in a region, get, list, update', async () => {
    const { client } = official;
    const addr = await client.reservedAddrs.create({ region: 'eu', description: 'SSH for device #001' });
    assert.match(addr.id, /^ra_/);
    assert.match(addr.addr, /^[1-9]\.tcp\.eu\.burrow\.internal:\d{5}$/);
    assert.equal(addr.region, 'eu');
    assert.equal((await client.reservedAddrs.get(addr.id)).addr, addr.addr);
    assert.equal((await client.reservedAddrs.update({ id: addr.id, metadata: '{"device":1}' })).metadata, '{"device":1}');
    assert.deepEqual((await client.reservedAddrs.list()).map((a: any) => a.addr), [addr.addr]);
    await assert.rejects(client.reservedAddrs.create({ region: 'mars' }), (error: any) => error.statusCode === 400 && error.errorCode === 'ERR_BURROW_500');
    assert.equal(await official.deleteWithFetch(`/reserved_addrs/${addr.id}`), 204);
  });
});
