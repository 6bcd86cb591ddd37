import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { clientChainProblem } from '../../lib/policy/certificates.ts';
import { generateTlsFixtures, type TlsFixtures } from '../fixtures/tls.ts';
import { generateTestCertificates, type TestCertificates } from '../fixtures/x509.ts';
import { CONN, ENDPOINT, harness, interpolate, policyOf } from './helpers.ts';

let tls: TlsFixtures;
let other: TestCertificates;
let inside: Date;

before(() => {
  tls = generateTlsFixtures();
  other = generateTestCertificates();
  inside = new Date(Date.parse(new X509Certificate(tls.leaf.cert).validFrom) + 86_400_000);
});

describe('terminate-tls: the connect-time TLS decision', () => {
  test('versions, and client-certificate authorities given as PEM or as ids of the account', async () => {
    const h = harness({ async certificateAuthorities(ids) {
      return ids.map((id) => {
        if (id !== 'ca_root') throw new Error(`certificate authority ${id} was not found`);
        return tls.root;
      });
    } });
    const pem = JSON.stringify(other.ca);
    const policy = policyOf(h, `{"on_tcp_connect": [{"actions": [{"type": "terminate-tls", "config": {"min_version": "1.3", "mutual_tls_certificate_authorities": ["ca_root", ${pem}], "mutual_tls_verification_strategy": "require-any"}}]}]}`);
    assert.deepEqual(await h.engine.connect(policy, ENDPOINT, CONN), {
      tls: { minVersion: '1.3', maxVersion: '1.3', mutualTls: { certificateAuthorities: [other.ca, tls.root], strategy: 'require-any' } },
      logs: [],
      rules: [{ phase: 'on_tcp_connect', index: 0, source: 'traffic_policy', matched: true, actions: [{ type: 'terminate-tls', ended: false, note: 'terminate TLS 1.3–1.3, client certificates require-any' }] }],
    });
    const unknown = policyOf(h, 'on_tcp_connect: [{actions: [{type: terminate-tls, config: {mutual_tls_certificate_authorities: [ca_gone]}}]}]');
    assert.deepEqual((await h.engine.connect(unknown, ENDPOINT, CONN)).terminal, {
      kind: 'error',
      error: { status: 500, message: 'terminate-tls: mutual_tls_certificate_authorities: certificate authority ca_gone was not found', headers: [] },
    });
  });
});

describe("terminate-tls's result variables, actions.ngrok.terminate_tls.*", () => {
  test('with the ingress\'s handshake, the action terminates TLS as it runs: later rules read the session, and conn.tls.* too', async () => {
    const h = harness();
    const asked: unknown[] = [];
    const session = { version: '1.3', cipherSuite: 'TLS_AES_128_GCM_SHA256', sni: 'app.example', clientChain: [tls.leaf.cert, tls.intermediate], serverCertificate: other.leaf };
    const handshake = async (termination: unknown) => (asked.push(termination), { tls: session });
    const policy = policyOf(h, JSON.stringify({
      on_tcp_connect: [
        { actions: [{ type: 'terminate-tls', config: { mutual_tls_certificate_authorities: [tls.root], mutual_tls_verification_strategy: 'request' } }] },
        {
          expressions: ["actions.ngrok.terminate_tls.client.subject.common_name == 'app.example.com' && conn.tls.version == actions.ngrok.terminate_tls.version"],
          actions: [{ type: 'log', config: { metadata: {
            version: '${actions.ngrok.terminate_tls.version}',
            cipher: '${actions.ngrok.terminate_tls.cipher_suite}',
            sni: '${actions.ngrok.terminate_tls.sni}',
            client: '${actions.ngrok.terminate_tls.client.subject}',
            issuer: '${actions.ngrok.terminate_tls.client.issuer.common_name}',
            dns: '${actions.ngrok.terminate_tls.client.san.dns_names}',
            server: '${actions.ngrok.terminate_tls.server.subject.common_name}',
            extensions: '${actions.ngrok.terminate_tls.client.extensions.map(e, e.id).size()}',
            error: '${actions.ngrok.terminate_tls.error.code}',
            warnings: '${actions.ngrok.terminate_tls.warnings}',
          } } }],
        },
      ],
    }));
    const outcome = await h.engine.connect(policy, ENDPOINT, CONN, handshake);
    assert.deepEqual(asked, [{ minVersion: '1.2', maxVersion: '1.3', mutualTls: { certificateAuthorities: [tls.root], strategy: 'request' } }]);
    assert.equal(outcome.terminal, undefined);
    assert.deepEqual(outcome.logs[0]!.metadata, {
      version: '1.3',
      cipher: 'TLS_AES_128_GCM_SHA256',
      sni: 'app.example',
      client: 'CN=app.example.com,OU=Ops,O=Acme\\, Inc,L=Berlin,ST=Berlin,C=DE',
      issuer: 'Burrow Test Intermediate',
      dns: ['app.example.com', '*.app.example.com'],
      server: new X509Certificate(other.leaf).subject.match(/CN=(.*)/)![1],
      extensions: 6,
      error: '',
      warnings: [],
    });
  });

  test('a failed handshake closes the connection; before the action ran, or without a session, reading a result fails the rule', async () => {
    const h = harness();
    const closing = policyOf(h, 'on_tcp_connect: [{actions: [{type: terminate-tls}, {type: log}]}]');
    const failed = await h.engine.connect(closing, ENDPOINT, CONN, async () => ({ failed: 'no client certificate was presented' }));
    assert.deepEqual(failed.terminal, { kind: 'close', reason: 'TLS handshake failed: no client certificate was presented' });
    assert.deepEqual(failed.rules[0]!.actions.map((a) => [a.type, a.ended]), [['terminate-tls', true]]);

    const early = policyOf(h, "on_tcp_connect: [{expressions: [\"actions.ngrok.terminate_tls.sni == 'a'\"], actions: [{type: deny}]}, {actions: [{type: terminate-tls}]}]");
    const before = await h.engine.connect(early, ENDPOINT, CONN, async () => ({ failed: 'unused' }));
    assert.equal(before.terminal?.kind, 'error');
    assert.match(before.terminal?.kind === 'error' ? before.terminal.error.message : '', /actions\.ngrok\.terminate_tls\.sni: no terminate-tls action has terminated TLS before this point of on_tcp_connect/);
  });
});

describe('mutual TLS: the presented client chain', () => {
  test('a leaf signed through the presented intermediate to a trusted root passes', () => {
    assert.equal(clientChainProblem([tls.leaf.cert, tls.intermediate], [tls.root], inside), undefined);
    assert.equal(clientChainProblem([tls.leaf.cert], [`${tls.intermediate}${tls.root}`], inside), undefined, 'an authority bundle may hold the intermediate');
  });

  test('missing chains, unknown authorities, expired certificates and non-CA authorities fail with the reason', () => {
    assert.equal(clientChainProblem([], [tls.root], inside), 'no client certificate was presented');
    assert.equal(clientChainProblem([tls.leaf.cert, tls.intermediate], [other.ca], inside), 'the client certificate is not signed by a trusted certificate authority');
    assert.equal(clientChainProblem([tls.leaf.cert], [tls.root], inside), 'the client certificate is not signed by a trusted certificate authority', 'the intermediate is missing');
    assert.match(clientChainProblem([tls.leaf.cert, tls.intermediate], [tls.root], new Date(inside.getTime() + 400 * 86_400_000))!, /^certificate CN=app\.example\.com,.* is not valid at /);
    assert.equal(clientChainProblem([other.leaf], [other.leaf], new Date()), 'the client certificate is not signed by a trusted certificate authority', 'a non-CA certificate is no authority');
  });
});

describe('conn.tls.client.* from the presented certificate', () => {
  test('subject, issuer, SANs, serial, validity, algorithm and extensions as Go shows them', async () => {
    const h = harness();
    const conn = { tls: { version: '1.3', cipherSuite: 'TLS_AES_128_GCM_SHA256', sni: 'app.example', clientChain: [tls.leaf.cert, tls.intermediate] } };
    assert.equal(await interpolate(h, 'conn.tls.client.subject', {}, conn), 'CN=app.example.com,OU=Ops,O=Acme\\, Inc,L=Berlin,ST=Berlin,C=DE');
    assert.equal(
      await interpolate(h, '[conn.tls.client.subject.common_name, conn.tls.client.subject.organization, conn.tls.client.subject.country, conn.tls.client.issuer.common_name]', {}, conn),
      '["app.example.com",["Acme, Inc"],["DE"],"Burrow Test Intermediate"]',
    );
    assert.equal(await interpolate(h, '[conn.tls.client.san.dns_names, conn.tls.client.san.ip_addresses]', {}, conn), '[["app.example.com","*.app.example.com"],["192.0.2.10","2001:db8::1"]]');
    assert.equal(await interpolate(h, '[conn.tls.client.serial_number, conn.tls.client.signature_algorithm]', {}, conn), '["11111822610015","ECDSA-SHA256"]');
    assert.equal(await interpolate(h, 'conn.tls.client.extensions.map(e, e.id + (e.critical ? "!" : ""))', {}, conn), '["2.5.29.19!","2.5.29.15!","2.5.29.37","2.5.29.17","2.5.29.14","2.5.29.35"]');
    const validFrom = new Date(Date.parse(new X509Certificate(tls.leaf.cert).validFrom)).toISOString().replace('.000', '');
    assert.equal(await interpolate(h, 'conn.tls.client.validity.not_before', {}, conn), validFrom);
    assert.equal(await interpolate(h, "conn.tls.client.pem.startsWith('-----BEGIN CERTIFICATE-----')", {}, conn), 'true');
  });
});
