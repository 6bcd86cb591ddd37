import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import {
  canonicalCurve,
  generateCaKeyPair,
  parseSshPublicKey,
  signSshCertificate,
  SshKeyError,
  type SshKeyType,
} from '../../../lib/families/ssh/ssh-keys.ts';
import { inspectCertificate, sshKeygen, startSshd, tempDir } from '../../fixtures/openssh.ts';

const dir = tempDir('burrow-sshkeys-');
after(() => dir.remove());

describe('parseSshPublicKey', () => {
  test('reads authorized-keys lines and reports the ssh-keygen fingerprint', () => {
    for (const type of ['ed25519', 'rsa', 'ecdsa'] as const) {
      const key = sshKeygen(dir.path, `parse-${type}`, type);
      const parsed = parseSshPublicKey(`  ${key.publicKey}\n`);
      assert.equal(parsed.keyType, type);
      assert.equal(parsed.authorizedKey, key.publicKey.split(' ').slice(0, 2).join(' '));
      const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${key.file}.pub`], { encoding: 'utf8' }).split(' ')[1];
      assert.equal(parsed.fingerprint, fingerprint);
    }
  });

  test('reads PEM public keys', () => {
    const key = sshKeygen(dir.path, 'parse-pem', 'rsa', 2048);
    const pem = execFileSync('ssh-keygen', ['-e', '-m', 'PKCS8', '-f', `${key.file}.pub`], { encoding: 'utf8' });
    assert.equal(parseSshPublicKey(pem).authorizedKey, key.publicKey.split(' ').slice(0, 2).join(' '));
  });

  const refused: [string, () => string, RegExp][] = [
    ['garbage', () => 'not a key', /not a valid SSH public key/],
    ['a truncated key', () => sshKeygen(dir.path, 'cut', 'ed25519').publicKey.slice(0, 40), /not a valid SSH public key/],
    ['a private key', () => execFileSync('cat', [sshKeygen(dir.path, 'priv', 'ed25519').file], { encoding: 'utf8' }), /private key/],
    ['an RSA key under 2048 bits', () => sshKeygen(dir.path, 'small', 'rsa', 1024).publicKey, /at least 2048 bits/],
  ];
  for (const [name, input, reason] of refused) {
    test(`refuses ${name}`, () => {
      assert.throws(() => parseSshPublicKey(input()), (error: unknown) => error instanceof SshKeyError && reason.test(error.message));
    });
  }

  test('refuses a certificate', async () => {
    const ca = await generateCaKeyPair({ keyType: 'ed25519' });
    const { certificate } = signSshCertificate({
      caPrivateKeyPem: ca.privateKeyPem, publicKey: ca.publicKey, certType: 'user', keyId: 'k', serial: 1n,
      principals: [], validAfter: new Date(0), validBefore: new Date(1e12),
    });
    assert.throws(() => parseSshPublicKey(certificate), /certificate was given/);
  });
});

describe('canonicalCurve', () => {
  test('maps every accepted spelling and nothing else', () => {
    assert.equal(canonicalCurve('secp256r1'), 'P-256');
    assert.equal(canonicalCurve('nistp384'), 'P-384');
    assert.equal(canonicalCurve('P-521'), 'P-521');
    assert.equal(canonicalCurve('curve25519'), undefined);
  });
});

describe('signSshCertificate', () => {
  const cas: [string, { keyType: SshKeyType; keySize?: number; curve?: 'P-256' | 'P-384' | 'P-521' }, RegExp][] = [
    ['RSA 2048', { keyType: 'rsa', keySize: 2048 }, /^RSA SHA256:\S+ \(using rsa-sha2-512\)$/],
    ['ECDSA P-256', { keyType: 'ecdsa' }, /^ECDSA SHA256:\S+ \(using ecdsa-sha2-nistp256\)$/],
    ['ECDSA P-384', { keyType: 'ecdsa', curve: 'P-384' }, /^ECDSA SHA256:\S+ \(using ecdsa-sha2-nistp384\)$/],
    ['ECDSA P-521', { keyType: 'ecdsa', curve: 'P-521' }, /^ECDSA SHA256:\S+ \(using ecdsa-sha2-nistp521\)$/],
    ['Ed25519', { keyType: 'ed25519' }, /^ED25519 SHA256:\S+ \(using ssh-ed25519\)$/],
  ];
  for (const [name, options, signingCa] of cas) {
    test(`a ${name} CA signs certificates that ssh-keygen reads back field by field`, async () => {
      const ca = await generateCaKeyPair(options);
      const subject = sshKeygen(dir.path, `subject-${name.replace(/\W/g, '')}`, 'ecdsa');
      const { certificate, keyType } = signSshCertificate({
        caPrivateKeyPem: ca.privateKeyPem,
        publicKey: subject.publicKey,
        certType: 'user',
        keyId: 'sshuc_test',
        serial: 18446744073709551615n,
        principals: ['alice', 'deploy'],
        validAfter: new Date('2026-03-01T12:00:00Z'),
        validBefore: new Date('2027-03-01T12:00:00Z'),
        criticalOptions: { 'source-address': '10.0.0.0/8', 'force-command': '/bin/true' },
        extensions: { 'permit-pty': '', 'permit-agent-forwarding': '' },
      });
      assert.equal(keyType, 'ecdsa');
      const info = inspectCertificate(certificate);
      assert.equal(info.type, 'ecdsa-sha2-nistp256-cert-v01@openssh.com user certificate');
      assert.match(info.signingCa, signingCa);
      assert.equal(info.keyId, 'sshuc_test');
      assert.equal(info.serial, '18446744073709551615');
      assert.equal(info.valid, 'from 2026-03-01T12:00:00 to 2027-03-01T12:00:00');
      assert.deepEqual(info.principals, ['alice', 'deploy']);
      assert.deepEqual(info.criticalOptions, ['force-command /bin/true', 'source-address 10.0.0.0/8']);
      assert.deepEqual(info.extensions, ['permit-agent-forwarding', 'permit-pty']);
      assert.equal(ca.publicKey.split(' ').length, 2);
      assert.ok(!ca.publicKey.includes('PRIVATE'));
    });
  }

  test('host certificates are marked as host certificates', async () => {
    const ca = await generateCaKeyPair({ keyType: 'ed25519' });
    const host = sshKeygen(dir.path, 'host-type', 'ed25519');
    const { certificate } = signSshCertificate({
      caPrivateKeyPem: ca.privateKeyPem, publicKey: host.publicKey, certType: 'host', keyId: 'h', serial: 7n,
      principals: [], validAfter: new Date('2026-03-01T12:00:00Z'), validBefore: new Date('2026-03-02T12:00:00Z'),
    });
    const info = inspectCertificate(certificate);
    assert.equal(info.type, 'ssh-ed25519-cert-v01@openssh.com host certificate');
    assert.deepEqual(info.principals, []);
  });
});

describe('certificates against a real sshd on loopback', () => {
  let hostCa: Awaited<ReturnType<typeof generateCaKeyPair>>;
  let userCa: Awaited<ReturnType<typeof generateCaKeyPair>>;
  let sshd: Awaited<ReturnType<typeof startSshd>>;
  const now = Date.now();

  before(async () => {
    hostCa = await generateCaKeyPair({ keyType: 'ecdsa' });
    userCa = await generateCaKeyPair({ keyType: 'rsa', keySize: 2048 });
    const hostKey = sshKeygen(dir.path, 'sshd-host', 'ed25519');
    const hostCertificate = signSshCertificate({
      caPrivateKeyPem: hostCa.privateKeyPem, publicKey: hostKey.publicKey, certType: 'host', keyId: 'loopback', serial: 1n,
      principals: ['127.0.0.1'], validAfter: new Date(now - 60_000), validBefore: new Date(now + 3_600_000),
    }).certificate;
    sshd = await startSshd(dir.path, { hostKey: hostKey.file, hostCertificate, userCaKey: userCa.publicKey });
  });
  after(() => sshd?.stop());

  function userCertificate(publicKey: string, overrides: { principals?: string[]; validBefore?: Date; caPem?: string } = {}) {
    return signSshCertificate({
      caPrivateKeyPem: overrides.caPem ?? userCa.privateKeyPem, publicKey, certType: 'user', keyId: 'login', serial: 2n,
      principals: overrides.principals ?? [sshd.user], validAfter: new Date(now - 60_000),
      validBefore: overrides.validBefore ?? new Date(now + 3_600_000), extensions: { 'permit-pty': '' },
    }).certificate;
  }

  test('a user certificate logs in and the host certificate is trusted through @cert-authority', async () => {
    const user = sshKeygen(dir.path, 'login-ok', 'ed25519');
    const result = await sshd.login({ identity: user.file, certificate: userCertificate(user.publicKey), knownHosts: `@cert-authority * ${hostCa.publicKey}` });
    assert.ok(result.ok, result.output);
  });

  test('a certificate for another principal is refused', async () => {
    const user = sshKeygen(dir.path, 'login-principal', 'ed25519');
    const result = await sshd.login({ identity: user.file, certificate: userCertificate(user.publicKey, { principals: ['nobody-else'] }), knownHosts: `@cert-authority * ${hostCa.publicKey}` });
    assert.equal(result.ok, false);
  });

  test('an expired certificate is refused', async () => {
    const user = sshKeygen(dir.path, 'login-expired', 'ed25519');
    const result = await sshd.login({ identity: user.file, certificate: userCertificate(user.publicKey, { validBefore: new Date(now - 30_000) }), knownHosts: `@cert-authority * ${hostCa.publicKey}` });
    assert.equal(result.ok, false);
  });

  test('the client refuses a host whose certificate another CA signed', async () => {
    const user = sshKeygen(dir.path, 'login-hostca', 'ed25519');
    const otherCa = await generateCaKeyPair({ keyType: 'ed25519' });
    const result = await sshd.login({ identity: user.file, certificate: userCertificate(user.publicKey), knownHosts: `@cert-authority * ${otherCa.publicKey}` });
    assert.equal(result.ok, false);
    assert.match(result.output, /Host key verification failed|No .* host key is known/);
  });
});
