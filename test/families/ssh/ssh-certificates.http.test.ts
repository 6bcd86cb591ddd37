import assert from 'node:assert/strict';
import { after, beforeEach, describe, test } from 'node:test';
import { assertError, createTestInstance, type TestInstance } from '../../helpers.ts';
import { inspectCertificate, sshKeygen, startSshd, tempDir, type Sshd } from '../../fixtures/openssh.ts';

const dir = tempDir('burrow-sshca-');
after(() => dir.remove());

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});


async function ca(body: Record<string, unknown> = {}) {
  const res = await api.request('POST', '/ssh_certificate_authorities', body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

describe('/ssh_certificate_authorities', () => {
  test('defaults to an ed25519 key; returns the public key and never the private key', async () => {
    const res = await api.request('POST', '/ssh_certificate_authorities', { description: 'prod hosts' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^sshca_/);
    assert.equal(res.body.key_type, 'ed25519');
    assert.match(res.body.public_key, /^ssh-ed25519 AAAA[\w+/=]+$/);
    assert.deepEqual(Object.keys(res.body).sort(), ['created_at', 'description', 'id', 'key_type', 'metadata', 'public_key', 'uri']);
    for (const read of [res, await api.request('GET', `/ssh_certificate_authorities/${res.body.id}`), await api.request('GET', '/ssh_certificate_authorities')]) {
      assert.ok(!read.text.includes('PRIVATE'), 'no private key in any response');
    }
  });

  test('each key type, size and curve spelling', async () => {
    assert.match((await ca({ private_key_type: 'rsa', key_size: 2048 })).public_key, /^ssh-rsa /);
    assert.match((await ca({ private_key_type: 'ecdsa' })).public_key, /^ecdsa-sha2-nistp256 /);
    assert.match((await ca({ private_key_type: 'ecdsa', elliptic_curve: 'secp384r1' })).public_key, /^ecdsa-sha2-nistp384 /);
    assert.match((await ca({ private_key_type: 'ecdsa', elliptic_curve: 'P-521' })).public_key, /^ecdsa-sha2-nistp521 /);
    assert.match((await ca({ private_key_type: 'ecdsa', elliptic_curve: 'prime256v1' })).public_key, /^ecdsa-sha2-nistp256 /);
  });

  test('an RSA 4096 key is the RSA default, and the server answers others while it is generated', async () => {
    const pending = api.request('POST', '/ssh_certificate_authorities', { private_key_type: 'rsa' });
    let answeredMeanwhile = false;
    const other = api.request('POST', '/ip_policies', {}).then((res) => {
      answeredMeanwhile = res.status === 201;
    });
    await other;
    const created = await pending;
    assert.ok(answeredMeanwhile, 'a write was answered while the key was being generated');
    assert.equal(created.status, 201);
    const blob = Buffer.from(created.body.public_key.split(' ')[1], 'base64');
    const exponentLength = blob.readUInt32BE(11);
    const modulusLength = blob.readUInt32BE(15 + exponentLength);
    assert.equal((modulusLength - 1) * 8, 4096, 'a 4096-bit modulus (with its sign byte)');
  });

  test('refuses bad types, sizes and curves with their codes', async () => {
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ private_key_type: 'dsa' }, 1909, /^private_key_type: must be one of rsa, ecdsa, ed25519/],
      [{ private_key_type: 'rsa', key_size: 1024 }, 1939, /^key_size: must be one of 2048, 4096 \(got 1024\)/],
      [{ private_key_type: 'ed25519', key_size: 2048 }, 1940, /^key_size: only allowed with private_key_type rsa/],
      [{ key_size: 4096 }, 1940, /only allowed with private_key_type rsa \(got ed25519\)/],
      [{ private_key_type: 'ecdsa', elliptic_curve: 'curve25519' }, 1941, /^elliptic_curve: must be one of P-256, P-384, P-521/],
      [{ private_key_type: 'rsa', elliptic_curve: 'P-256' }, 1942, /^elliptic_curve: only allowed with private_key_type ecdsa/],
      [{ private_key_type: 'rsa', key_size: 2048.5 }, 215, /^key_size: /],
    ];
    for (const [body, code, message] of cases) assertError(await api.request('POST', '/ssh_certificate_authorities', body), 400, code, message);
  });

  test('update, list and delete; a CA with certificates is not deleted', async () => {
    const authority = await ca();
    assert.equal((await api.request('PATCH', `/ssh_certificate_authorities/${authority.id}`, { description: 'renamed' })).body.description, 'renamed');
    assert.equal((await api.request('GET', '/ssh_certificate_authorities')).body.ssh_certificate_authorities.length, 1);
    const host = sshKeygen(dir.path, 'host-delete', 'ed25519');
    const cert = await api.request('POST', '/ssh_host_certificates', { ssh_certificate_authority_id: authority.id, public_key: host.publicKey });
    assertError(await api.request('DELETE', `/ssh_certificate_authorities/${authority.id}`), 409, 1964, new RegExp(cert.body.id));
    assert.equal((await api.request('DELETE', `/ssh_host_certificates/${cert.body.id}`)).status, 204);
    assert.equal((await api.request('DELETE', `/ssh_certificate_authorities/${authority.id}`)).status, 204);
    assertError(await api.request('GET', `/ssh_certificate_authorities/${authority.id}`), 404, 1949, /was not found/);
  });
});

describe('/ssh_host_certificates', () => {
  test('signs a host certificate that ssh-keygen reads back with the defaults', async () => {
    const authority = await ca({ private_key_type: 'ecdsa' });
    const host = sshKeygen(dir.path, 'host-defaults', 'rsa', 2048);
    const res = await api.request('POST', '/ssh_host_certificates', { ssh_certificate_authority_id: authority.id, public_key: host.publicKey, principals: ['db.internal', '10.0.0.5'] });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^shcrt_/);
    assert.equal(res.body.key_type, 'rsa');
    assert.equal(res.body.valid_after, '2026-03-01T12:00:00Z');
    assert.equal(res.body.valid_until, '2027-03-01T12:00:00Z');
    assert.deepEqual(res.body.principals, ['db.internal', '10.0.0.5']);
    const info = inspectCertificate(res.body.certificate);
    assert.equal(info.type, 'ssh-rsa-cert-v01@openssh.com host certificate');
    assert.match(info.signingCa, /^ECDSA SHA256:\S+ \(using ecdsa-sha2-nistp256\)$/);
    assert.equal(info.keyId, res.body.id);
    assert.deepEqual(info.principals, ['db.internal', '10.0.0.5']);
    assert.equal(info.valid, 'from 2026-03-01T12:00:00 to 2027-03-01T12:00:00');
    const got = await api.request('GET', `/ssh_host_certificates/${res.body.id}`);
    assert.equal(got.body.certificate, res.body.certificate);
  });

  test('empty or missing principals make it valid for every host', async () => {
    const authority = await ca();
    const host = sshKeygen(dir.path, 'host-any', 'ed25519');
    const res = await api.request('POST', '/ssh_host_certificates', { ssh_certificate_authority_id: authority.id, public_key: host.publicKey });
    assert.deepEqual(res.body.principals, []);
    assert.deepEqual(inspectCertificate(res.body.certificate).principals, []);
  });

  test('serials are random', async () => {
    const authority = await ca();
    const host = sshKeygen(dir.path, 'host-serial', 'ed25519');
    const serials = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const res = await api.request('POST', '/ssh_host_certificates', { ssh_certificate_authority_id: authority.id, public_key: host.publicKey });
      serials.add(inspectCertificate(res.body.certificate).serial);
    }
    assert.equal(serials.size, 3);
  });

  test('validation errors are clean envelopes', async () => {
    const authority = await ca();
    const host = sshKeygen(dir.path, 'host-errors', 'ed25519').publicKey;
    const post = (body: Record<string, unknown>) => api.request('POST', '/ssh_host_certificates', { ssh_certificate_authority_id: authority.id, public_key: host, ...body });
    assertError(await post({ public_key: undefined }), 400, 1952, /^public_key: the public key to sign is required/);
    assertError(await post({ public_key: 'ssh-ed25519 AAAAnope' }), 400, 1934, /^public_key: is not a valid SSH public key/);
    assertError(await post({ ssh_certificate_authority_id: 'sshca_missing' }), 404, 1949, /^ssh_certificate_authority_id: SSH certificate authority 'sshca_missing' was not found/);
    assertError(await post({ valid_after: '2026-05-01T00:00:00Z', valid_until: '2026-05-01T00:00:00Z' }), 400, 1963, /^valid_until: must be later than valid_after/);
    assertError(await post({ valid_until: 'next week' }), 400, 241, /^valid_until: must be an RFC 3339 time/);
    assertError(await post({ principals: ['a,b'] }), 400, 215, /^principals\[0\]: must not contain commas/);
    assertError(await post({ critical_options: {} }), 400, 214, /^critical_options: unknown field/);
  });

  test('accepts RFC 3339 times with offsets and answers them in UTC', async () => {
    const authority = await ca();
    const host = sshKeygen(dir.path, 'host-offset', 'ed25519');
    const res = await api.request('POST', '/ssh_host_certificates', {
      ssh_certificate_authority_id: authority.id, public_key: host.publicKey, valid_after: '2026-06-01T02:00:00+02:00', valid_until: '2026-06-02T00:00:00Z',
    });
    assert.equal(res.body.valid_after, '2026-06-01T00:00:00Z');
    assert.equal(inspectCertificate(res.body.certificate).valid, 'from 2026-06-01T00:00:00 to 2026-06-02T00:00:00');
  });

  test('only description and metadata change', async () => {
    const authority = await ca();
    const host = sshKeygen(dir.path, 'host-update', 'ed25519');
    const res = await api.request('POST', '/ssh_host_certificates', { ssh_certificate_authority_id: authority.id, public_key: host.publicKey });
    const updated = await api.request('PATCH', `/ssh_host_certificates/${res.body.id}`, { metadata: 'm' });
    assert.equal(updated.body.metadata, 'm');
    assert.equal(updated.body.certificate, res.body.certificate);
    assertError(await api.request('PATCH', `/ssh_host_certificates/${res.body.id}`, { principals: ['x'] }), 400, 214, /principals: unknown field/);
  });
});

describe('/ssh_user_certificates', () => {
  test('defaults: 24 hours, permit-pty and permit-user-rc; options and extensions reach the certificate', async () => {
    const authority = await ca({ private_key_type: 'rsa', key_size: 2048 });
    const user = sshKeygen(dir.path, 'user-defaults', 'ed25519');
    const plain = await api.request('POST', '/ssh_user_certificates', { ssh_certificate_authority_id: authority.id, public_key: user.publicKey, principals: ['deploy'] });
    assert.equal(plain.status, 201);
    assert.match(plain.body.id, /^sucrt_/);
    assert.equal(plain.body.valid_until, '2026-03-02T12:00:00Z');
    assert.deepEqual(plain.body.extensions, { 'permit-pty': '', 'permit-user-rc': '' });
    assert.deepEqual(plain.body.critical_options, {});
    const info = inspectCertificate(plain.body.certificate);
    assert.equal(info.type, 'ssh-ed25519-cert-v01@openssh.com user certificate');
    assert.match(info.signingCa, /\(using rsa-sha2-512\)$/);
    assert.deepEqual(info.extensions, ['permit-pty', 'permit-user-rc']);

    const restricted = await api.request('POST', '/ssh_user_certificates', {
      ssh_certificate_authority_id: authority.id,
      public_key: user.publicKey,
      critical_options: { 'force-command': '/usr/bin/uptime', 'source-address': '10.0.0.0/8, 192.0.2.7' },
      extensions: { 'permit-port-forwarding': '' },
    });
    assert.equal(restricted.status, 201, JSON.stringify(restricted.body));
    assert.deepEqual(restricted.body.critical_options, { 'force-command': '/usr/bin/uptime', 'source-address': '10.0.0.0/8,192.0.2.7' });
    const restrictedInfo = inspectCertificate(restricted.body.certificate);
    assert.deepEqual(restrictedInfo.criticalOptions, ['force-command /usr/bin/uptime', 'source-address 10.0.0.0/8,192.0.2.7']);
    assert.deepEqual(restrictedInfo.extensions, ['permit-port-forwarding']);
  });

  test('refuses unknown critical options, bad source addresses and bad extensions', async () => {
    const authority = await ca();
    const user = sshKeygen(dir.path, 'user-errors', 'ed25519').publicKey;
    const post = (body: Record<string, unknown>) => api.request('POST', '/ssh_user_certificates', { ssh_certificate_authority_id: authority.id, public_key: user, ...body });
    assertError(await post({ critical_options: { 'no-pty': '' } }), 400, 215, /^critical_options: supported critical options are force-command, source-address \(got no-pty\)/);
    assertError(await post({ critical_options: { 'source-address': '10.0.0.0/33' } }), 400, 215, /^critical_options\.source-address: "10\.0\.0\.0\/33" is not/);
    assertError(await post({ extensions: { 'permit-pty': 'yes' } }), 400, 215, /^extensions: standard extensions/);
    assertError(await post({ valid_after: '2026-03-02T00:00:00Z', valid_until: '2026-03-01T00:00:00Z' }), 400, 1962, /later than valid_after/);
  });
});

describe('Burrow certificates with real OpenSSH', () => {
  let sshd: Sshd | undefined;
  after(() => sshd?.stop());

  for (const [name, body] of [
    ['rsa', { private_key_type: 'rsa', key_size: 2048 }],
    ['ecdsa', { private_key_type: 'ecdsa', elliptic_curve: 'P-384' }],
    ['ed25519', { private_key_type: 'ed25519' }],
  ] as const) {
    test(`with a ${name} CA: ssh trusts the host through @cert-authority and the user through TrustedUserCAKeys`, async () => {
      api.clock.set(new Date(Date.now() - 60_000));
      const hostCa = await ca(body);
      const userCa = await ca(body);
      const hostKey = sshKeygen(dir.path, `sshd-host-${name}`, 'ed25519');
      const hostCert = await api.request('POST', '/ssh_host_certificates', { ssh_certificate_authority_id: hostCa.id, public_key: hostKey.publicKey, principals: ['127.0.0.1'] });
      await sshd?.stop();
      sshd = await startSshd(dir.path, { hostKey: hostKey.file, hostCertificate: hostCert.body.certificate, userCaKey: userCa.public_key });
      const user = sshKeygen(dir.path, `login-${name}`, 'ecdsa');
      const userCert = await api.request('POST', '/ssh_user_certificates', { ssh_certificate_authority_id: userCa.id, public_key: user.publicKey, principals: [sshd.user] });
      const login = await sshd.login({ identity: user.file, certificate: userCert.body.certificate, knownHosts: `@cert-authority * ${hostCa.public_key}` });
      assert.ok(login.ok, login.output);

      const foreignCa = await ca(body);
      const foreignCert = await api.request('POST', '/ssh_user_certificates', { ssh_certificate_authority_id: foreignCa.id, public_key: user.publicKey, principals: [sshd.user] });
      const refused = await sshd.login({ identity: user.file, certificate: foreignCert.body.certificate, knownHosts: `@cert-authority * ${hostCa.public_key}` });
      assert.equal(refused.ok, false, 'a certificate from another CA is refused');
      const wrongHostCa = await sshd.login({ identity: user.file, certificate: userCert.body.certificate, knownHosts: `@cert-authority * ${foreignCa.public_key}` });
      assert.equal(wrongHostCa.ok, false, 'the client refuses a host certificate from an untrusted CA');
    });
  }
});
