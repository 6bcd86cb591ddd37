import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { inspectCertificate, sshKeygen, tempDir } from '../../fixtures/openssh.ts';
import { useOfficialClient } from '../../compat/official-client.ts';

const official = useOfficialClient();
const dir = tempDir('burrow-compat-ssh-');
after(() => dir.remove());

describe('official client: SSH certificate authorities and certificates', () => {
  test('creates and reads CAs, host certificates and user certificates', async () => {
    const { client } = official;
    const ca = await client.sshCertificateAuthorities.create({ description: 'hosts', privateKeyType: 'ecdsa', ellipticCurve: 'P-256' });
    assert.equal(ca.keyType, 'ecdsa');
    assert.match(ca.publicKey, /^ecdsa-sha2-nistp256 /);
    assert.equal((await client.sshCertificateAuthorities.get(ca.id)).publicKey, ca.publicKey);
    assert.ok((await client.sshCertificateAuthorities.list()).some((c: any) => c.id === ca.id));

    const key = sshKeygen(dir.path, 'compat', 'ed25519');
    const host = await client.sshHostCertificates.create({ sshCertificateAuthorityId: ca.id, publicKey: key.publicKey, principals: ['build.internal'] });
    assert.equal(host.keyType, 'ed25519');
    assert.deepEqual(host.principals, ['build.internal']);
    assert.equal(inspectCertificate(host.certificate).type, 'ssh-ed25519-cert-v01@openssh.com host certificate');
    assert.equal((await client.sshHostCertificates.get(host.id)).certificate, host.certificate);

    const user = await client.sshUserCertificates.create({ sshCertificateAuthorityId: ca.id, publicKey: key.publicKey, principals: ['ci'], criticalOptions: { 'force-command': '/bin/true' } });
    // The 0.11.0 client camel-cases the keys of every map it receives.
    assert.deepEqual(user.extensions, { permitPty: '', permitUserRc: '' });
    assert.deepEqual(inspectCertificate(user.certificate).criticalOptions, ['force-command /bin/true']);
    assert.equal(inspectCertificate(user.certificate).keyId, user.id);
    assert.equal((await client.sshUserCertificates.update({ id: user.id, description: 'ci login' })).description, 'ci login');

    assert.equal(await official.deleteWithFetch(`/ssh_certificate_authorities/${ca.id}`), 409);
    assert.equal(await official.deleteWithFetch(`/ssh_user_certificates/${user.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/ssh_host_certificates/${host.id}`), 204);
    assert.equal(await official.deleteWithFetch(`/ssh_certificate_authorities/${ca.id}`), 204);
  });
});
