import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { connect, createServer } from 'node:tls';
import { checkCertificateAuthority, generateCertificateAuthority, signClientCertificate, signServerCertificate, type CertificateAuthority } from '../../lib/ca/certificate-authority.ts';
import { ipAddressBytes, readCertificationRequest, tlv } from '../../lib/conventions/x509.ts';
import { generateCertificateRequest } from '../fixtures/x509.ts';

const NOW = new Date('2026-11-23T12:00:00Z');
const HOUR = 3600 * 1000;
const DAY = 24 * HOUR;

/** Runs the real openssl on PEM files in a temporary directory; answers stdout. */
function openssl(files: Record<string, string>, ...args: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'burrow-ca-'));
  try {
    for (const [name, pem] of Object.entries(files)) writeFileSync(join(dir, name), pem);
    return execFileSync('openssl', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A CA made by openssl itself (RSA, with its own subjectKeyIdentifier), as a user would bring one. */
function opensslRsaCa(): CertificateAuthority {
  const dir = mkdtempSync(join(tmpdir(), 'burrow-ca-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '30', '-subj', '/C=DE/O=Acme Ops/CN=Acme Private Root', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], { cwd: dir, stdio: 'ignore' });
    return { certificatePem: readFileSync(join(dir, 'ca.pem'), 'utf8'), privateKeyPem: readFileSync(join(dir, 'ca.key'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('generateCertificateAuthority', () => {
  test('makes a self-signed P-256 CA certificate that openssl reads as a CA, valid from an hour before now for 3650 days', async () => {
    const ca = await generateCertificateAuthority({ now: NOW, commonName: 'Burrow Test Root' });
    const certificate = new X509Certificate(ca.certificatePem);
    assert.equal(certificate.ca, true);
    assert.equal(certificate.subject, 'O=Burrow\nCN=Burrow Test Root');
    assert.equal(certificate.issuer, certificate.subject);
    assert.equal(new Date(certificate.validFrom).getTime(), NOW.getTime() - HOUR);
    assert.equal(new Date(certificate.validTo).getTime(), NOW.getTime() + 3650 * DAY);
    assert.ok(certificate.verify(certificate.publicKey), 'self-signed');
    const text = openssl({ 'ca.pem': ca.certificatePem }, 'x509', '-in', 'ca.pem', '-noout', '-text');
    assert.match(text, /X509v3 Basic Constraints: critical\s+CA:TRUE/);
    assert.match(text, /X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/);
    assert.match(text, /X509v3 Subject Key Identifier/);
    assert.match(text, /ASN1 OID: prime256v1/);
    checkCertificateAuthority(ca);
  });

  test('dates from 2050 on are GeneralizedTime (RFC 5280), which openssl reads', async () => {
    const ca = await generateCertificateAuthority({ now: new Date('2045-06-01T00:00:00Z') });
    assert.equal(new Date(new X509Certificate(ca.certificatePem).validTo).toISOString(), '2055-05-30T00:00:00.000Z');
    assert.match(openssl({ 'ca.pem': ca.certificatePem }, 'x509', '-in', 'ca.pem', '-noout', '-enddate'), /notAfter=May 30 00:00:00 2055 GMT/);
  });
});

describe('signServerCertificate', () => {
  test('signs a certificate for DNS names and IPv4/IPv6 addresses that openssl verifies against the CA', async () => {
    const ca = await generateCertificateAuthority({ now: NOW });
    const server = await signServerCertificate(ca, { now: NOW, dnsNames: ['localhost', 'agent.burrow.test'], ipAddresses: ['127.0.0.1', '::1', '2001:db8::42:1'] });
    const certificate = new X509Certificate(server.certificatePem);
    assert.equal(certificate.subject, 'CN=localhost');
    assert.equal(certificate.issuer, 'O=Burrow\nCN=Burrow Root CA');
    assert.equal(certificate.subjectAltName, 'DNS:localhost, DNS:agent.burrow.test, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:42:1');
    assert.equal(certificate.ca, false);
    assert.ok(certificate.checkIssued(new X509Certificate(ca.certificatePem)));
    assert.equal(new Date(certificate.validTo).getTime(), NOW.getTime() + 397 * DAY);
    const files = { 'ca.pem': ca.certificatePem, 'server.pem': server.certificatePem };
    const atNow = `-attime=${Math.floor(NOW.getTime() / 1000)}`;
    assert.match(openssl(files, 'verify', '-x509_strict', atNow, '-purpose', 'sslserver', '-CAfile', 'ca.pem', 'server.pem'), /server\.pem: OK/);
    const text = openssl(files, 'x509', '-in', 'server.pem', '-noout', '-text');
    assert.match(text, /X509v3 Extended Key Usage: \s+TLS Web Server Authentication/);
    assert.match(text, /X509v3 Authority Key Identifier/);
  });

  test('the certificate serves real TLS: a client trusting only the CA connects by name and by address, and refuses other names', async (t) => {
    const now = new Date();
    const ca = await generateCertificateAuthority({ now });
    const server = await signServerCertificate(ca, { now, dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    const listener = createServer({ cert: server.certificatePem, key: server.privateKeyPem }, (socket) => socket.end('hello'));
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    t.after(() => listener.close());
    const port = (listener.address() as { port: number }).port;
    const handshake = async (options: { servername?: string }) => {
      const socket = connect({ host: '127.0.0.1', port, ca: ca.certificatePem, ...options });
      try {
        await once(socket, 'secureConnect');
        return socket.authorized;
      } finally {
        socket.destroy();
      }
    };
    assert.equal(await handshake({ servername: 'localhost' }), true);
    assert.equal(await handshake({}), true, 'by IP address (127.0.0.1 in the SAN)');
    await assert.rejects(handshake({ servername: 'other.example.com' }), /ERR_TLS_CERT_ALTNAME_INVALID/);
  });

  test('a CA brought from elsewhere (openssl, RSA) signs too: the issuer is its subject and the key identifier its own', async () => {
    const ca = opensslRsaCa();
    checkCertificateAuthority(ca);
    const server = await signServerCertificate(ca, { now: new Date(), dnsNames: ['burrow.internal'] });
    const certificate = new X509Certificate(server.certificatePem);
    assert.equal(certificate.issuer, 'C=DE\nO=Acme Ops\nCN=Acme Private Root');
    assert.match(openssl({ 'ca.pem': ca.certificatePem, 'server.pem': server.certificatePem }, 'verify', '-x509_strict', '-CAfile', 'ca.pem', 'server.pem'), /OK/);
    const caKeyId = /Subject Key Identifier:\s+([0-9A-F:]+)/.exec(openssl({ 'ca.pem': ca.certificatePem }, 'x509', '-in', 'ca.pem', '-noout', '-text'))![1];
    assert.match(openssl({ 'server.pem': server.certificatePem }, 'x509', '-in', 'server.pem', '-noout', '-text'), new RegExp(`Authority Key Identifier:\\s+(keyid:)?${caKeyId}`));
  });

  test('needs at least one name', async () => {
    const ca = await generateCertificateAuthority({ now: NOW });
    await assert.rejects(signServerCertificate(ca, { now: NOW, dnsNames: [] }), /at least one DNS name or IP address/);
    await assert.rejects(signServerCertificate(ca, { now: NOW, dnsNames: ['bad name'] }), /'bad name' is not a DNS name/);
    await assert.rejects(signServerCertificate(ca, { now: NOW, dnsNames: [], ipAddresses: ['300.1.1.1'] }), /'300\.1\.1\.1' is not an IP address/);
  });
});

describe('readCertificationRequest and signClientCertificate', () => {
  test("signs a client certificate for the request's key that openssl verifies for client use, by Burrow's CA and by an RSA one", async () => {
    // The real time: openssl's RSA CA is valid from when it is made.
    const now = new Date();
    const request = generateCertificateRequest();
    const { publicKey } = readCertificationRequest(request.csr);
    for (const ca of [await generateCertificateAuthority({ now }), opensslRsaCa()]) {
      const signed = signClientCertificate(ca, { now, publicKey, commonName: 'k8sop_x', validDays: 365 });
      assert.deepEqual([signed.notBefore.getTime(), signed.notAfter.getTime()], [now.getTime() - HOUR, now.getTime() + 365 * DAY]);
      const at = String(Math.floor((now.getTime() + DAY) / 1000));
      assert.match(openssl({ 'ca.pem': ca.certificatePem, 'leaf.pem': signed.certificatePem }, 'verify', '-x509_strict', '-purpose', 'sslclient', '-attime', at, '-CAfile', 'ca.pem', 'leaf.pem'), /leaf\.pem: OK/);
      assert.throws(() => openssl({ 'ca.pem': ca.certificatePem, 'leaf.pem': signed.certificatePem }, 'verify', '-purpose', 'sslserver', '-attime', at, '-CAfile', 'ca.pem', 'leaf.pem'), /unsuitable certificate purpose/);
      assert.equal(new X509Certificate(signed.certificatePem).publicKey.export({ type: 'spki', format: 'pem' }), request.publicKey);
    }
  });

  test('refuses what is not a request, a request with bytes after it, and one whose signature does not verify', () => {
    const { csr } = generateCertificateRequest();
    const der = Buffer.from(csr.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    const pem = (bytes: Buffer) => `-----BEGIN CERTIFICATE REQUEST-----\n${bytes.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    assert.throws(() => readCertificationRequest('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'), /^TypeError: not a PEM certificate request/);
    assert.throws(() => readCertificationRequest(pem(der.subarray(0, 40))), /^TypeError: not a PKCS#10 certificate request \(truncated DER\)/);
    assert.throws(() => readCertificationRequest(pem(Buffer.concat([der, Buffer.from([0])]))), /^TypeError: not a PKCS#10 certificate request \(not a DER SEQUENCE\)/);
    assert.throws(() => readCertificationRequest(pem(tlv(0x30, tlv(0x02, Buffer.from([0]))))), /^TypeError: not a PKCS#10 certificate request/);
    const forged = Buffer.from(der);
    forged[forged.length - 3]! ^= 0x01;
    assert.throws(() => readCertificationRequest(pem(forged)), /^TypeError: its signature does not verify with the key it carries/);
    const renamed = Buffer.from(der);
    renamed[renamed.indexOf(Buffer.from('2a8648ce3d040304', 'hex')) + 7] = 0x01;
    assert.throws(() => readCertificationRequest(pem(renamed)), /^TypeError: signed with an unsupported algorithm/);
  });
});

describe('checkCertificateAuthority', () => {
  test('says what is wrong with a CA that cannot sign', async () => {
    const ca = await generateCertificateAuthority({ now: NOW });
    const other = await generateCertificateAuthority({ now: NOW });
    const leaf = await signServerCertificate(ca, { now: NOW, dnsNames: ['localhost'] });
    assert.throws(() => checkCertificateAuthority({ certificatePem: 'not a certificate', privateKeyPem: ca.privateKeyPem }), /not a PEM X\.509 certificate/);
    assert.throws(() => checkCertificateAuthority({ certificatePem: leaf.certificatePem, privateKeyPem: leaf.privateKeyPem }), /\(CN=localhost\) is not a CA certificate/);
    assert.throws(() => checkCertificateAuthority({ certificatePem: ca.certificatePem, privateKeyPem: 'nope' }), /not a PEM private key/);
    assert.throws(() => checkCertificateAuthority({ certificatePem: ca.certificatePem, privateKeyPem: other.privateKeyPem }), /does not belong to the CA certificate/);
  });
});

describe('DER pieces', () => {
  test('lengths use the fewest bytes, at every size', () => {
    assert.deepEqual([...tlv(0x04, Buffer.alloc(5)).subarray(0, 2)], [0x04, 5]);
    assert.deepEqual([...tlv(0x04, Buffer.alloc(200)).subarray(0, 3)], [0x04, 0x81, 200]);
    assert.deepEqual([...tlv(0x04, Buffer.alloc(70000)).subarray(0, 5)], [0x04, 0x83, 0x01, 0x11, 0x70]);
  });

  test('IP addresses become 4 or 16 bytes; anything else is refused', () => {
    assert.deepEqual([...ipAddressBytes('192.0.2.1')], [192, 0, 2, 1]);
    assert.deepEqual([...ipAddressBytes('::1')], [...Array(15).fill(0), 1]);
    assert.deepEqual([...ipAddressBytes('2001:db8::42:1')], [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42, 0, 1]);
    assert.deepEqual([...ipAddressBytes('::ffff:192.0.2.1')], [...Array(10).fill(0), 0xff, 0xff, 192, 0, 2, 1]);
    for (const bad of ['1.2.3', '256.1.1.1', '01.2.3.4', 'fe80::1%eth0', 'localhost', '1:2:3:4:5:6:7:8:9']) assert.throws(() => ipAddressBytes(bad), /is not an IP address/, bad);
  });
});
