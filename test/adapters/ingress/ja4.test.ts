import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientHelloOf, ClientHelloError } from '../../../adapters/ingress/client-hello.ts';
import { ja4Fingerprint, type Ja4Hello } from '../../../adapters/ingress/ja4.ts';

/**
 * The JA4 fingerprint of a ClientHello (conn.tls.ja4_fingerprint), against FoxIO's published
 * values: ClientHellos captured in the pcaps of github.com/FoxIO-LLC/ja4 (pcap/), each with the JA4
 * its test data gives (python/test/testdata/*.json, rust/ja4/src/snapshots/), and the worked
 * examples of its specification (technical_details/JA4.md).
 */

/** A ClientHello record (its TLS record as captured) and the JA4 FoxIO published for it. */
const PUBLISHED: [capture: string, serverName: string, ja4: string, base64: string][] = [
  // TLS 1.2 without supported_versions; signature algorithms 0xefef, 0xeeee, 0xeded (not GREASE).
  ['pcap/tls-alpn-h2.pcap', 'www.cloudflare.com', 't12d4605h2_85626a9a5f7f_aaf95bb78ec9', 'FgMBAOgBAADkAwOFgibAT7rt3vQkYJO0z9qzj53P7xRTYOQXaGV1ysSccAAAXMAwwCzAKMAkwBTACgCfAGsAOcypzKjMqv+FAMQAiACBAJ0APQA1AMAAhMAvwCvAJ8AjwBPACQCeAGcAMwC+AEUAnAA8AC8AugBBwBHABwAFAATAEsAIABYACgD/AQAAXwAAABcAFQAAEnd3dy5jbG91ZGZsYXJlLmNvbQALAAIBAAAKAAgABgAdABcAGAANABwAGgYBBgPv7wUBBQMEAQQD7u7t7QMBAwMCAQIDABAADgAMAmgyCGh0dHAvMS4x'],
  // Firefox, TLS 1.3.
  ['pcap/tls12.pcap', 'contile.services.mozilla.com', 't13d1715h2_5b57614c22b0_3d5424432f57', 'FgMBAgABAAH8AwPssmka3bK/bFmceqriPeX0JWHMBOtBAprMb8BQoWrB0iBG+GF7WArJNY4qpE4wbVJGa8yYnIfIymQwn1+vULp7TQAiEwETAxMCwCvAL8ypzKjALMAwwArACcATwBQAnACdAC8ANQEAAZEAAAAhAB8AABxjb250aWxlLnNlcnZpY2VzLm1vemlsbGEuY29tABcAAP8BAAEAAAoADgAMAB0AFwAYABkBAAEBAAsAAgEAACMAAAAQAA4ADAJoMghodHRwLzEuMQAFAAUBAAAAAAAiAAoACAQDBQMGAwIDADMAawBpAB0AIIkJhY++tu0vEki6W54peL6tDoQBEBksYdrtAJZ5ixhEABcAQQRNGD2R9e7TV5H6mCRk47AhSqpfXRt4YW2bn768ItEfU1svlMaGFDE2qnleblqHXWwIBkrVt21Eyq12biSDASdIACsABQQDBAMDAA0AGAAWBAMFAwYDCAQIBQgGBAEFAQYBAgMCAQAtAAIBAQAcAAJAAQAVAHoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=='],
  // Chrome, with GREASE cipher suites, extensions, groups and versions: the specification's example fingerprint.
  ['pcap/tls3.pcapng', 'darksail.ai', 't13d1516h2_8daaf6152771_e5627efa2ab1', 'FgMBAgABAAH8AwOThgmPoWfhPI++cQWxGrYelI1TAnxEPe5BNIOWvrnMCiC4j9tgp36c57bop5/29jBbQsalsUkKnTOubfMhXfNTuAAgWloTARMCEwPAK8AvwCzAMMypzKjAE8AUAJwAnQAvADUBAAGTiooAAAAjAAAAMwArAClaWgABAAAdACDif9m3w/JQfQo1PZzZfcLoBpJVxXdCasbMJgKS7/FKff8BAAEAAAoACgAIWloAHQAXABgAEgAAAAUABQEAAAAAABcAAERpAAUAAwJoMgAAABAADgAAC2RhcmtzYWlsLmFpABsAAwIAAgANABIAEAQDCAQEAQUDCAUFAQgGBgEALQACAQEACwACAQAAKwAHBhoaAwQDAwAQAA4ADAJoMghodHRwLzEuMRoaAAEAABUAzAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=='],
];

/** The specification's example hello: 15 cipher suites, 16 extensions, ALPN h2, in the order sent. */
const EXAMPLE: Ja4Hello = {
  version: 0x0303,
  supportedVersions: [0x0304, 0x0303],
  cipherSuites: [0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035],
  extensions: [0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012, 0x002b, 0xff01, 0x000b, 0x000a, 0x0015],
  signatureAlgorithms: [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601],
  firstAlpn: Buffer.from('h2'),
};

describe('the JA4 fingerprint of a ClientHello', () => {
  test("captured ClientHellos give the JA4 FoxIO published for them, and their server name", () => {
    for (const [capture, serverName, ja4, base64] of PUBLISHED) {
      assert.deepEqual(clientHelloOf(Buffer.from(base64, 'base64')), { serverName, ja4Fingerprint: ja4 }, capture);
    }
  });

  test("the specification's worked example, with and without signature algorithms", () => {
    assert.equal(ja4Fingerprint(EXAMPLE), 't13d1516h2_8daaf6152771_e5627efa2ab1');
    assert.equal(ja4Fingerprint({ ...EXAMPLE, signatureAlgorithms: [] }), 't13d1516h2_8daaf6152771_6d807ffa2a79');
  });

  test('GREASE values are left out of every list and count; no SNI is `i`; counts stop at 99; empty lists hash to zeros', () => {
    const greased = {
      ...EXAMPLE,
      supportedVersions: [0x7a7a, ...EXAMPLE.supportedVersions!],
      cipherSuites: [0x0a0a, ...EXAMPLE.cipherSuites],
      extensions: [0xfafa, ...EXAMPLE.extensions, 0x1a1a],
      signatureAlgorithms: [0x2a2a, ...EXAMPLE.signatureAlgorithms],
    };
    assert.equal(ja4Fingerprint(greased), ja4Fingerprint(EXAMPLE));
    assert.match(ja4Fingerprint({ ...EXAMPLE, extensions: EXAMPLE.extensions.filter((type) => type !== 0) }), /^t13i1515h2_/);
    assert.match(ja4Fingerprint({ ...EXAMPLE, cipherSuites: Array.from({ length: 120 }, (_, i) => i + 1) }), /^t13d9916h2_/);
    assert.equal(ja4Fingerprint({ version: 0x0303, cipherSuites: [], extensions: [], signatureAlgorithms: [] }), 't12i000000_000000000000_000000000000');
    // Without supported_versions the hello's own version counts; an unknown one is `00`.
    assert.match(ja4Fingerprint({ ...EXAMPLE, supportedVersions: undefined } as Ja4Hello), /^t12d/);
    assert.match(ja4Fingerprint({ ...EXAMPLE, supportedVersions: [0x0305] }), /^t00d/);
  });

  test('the ALPN mark: first and last character of the first value, else of its hex, `00` without one', () => {
    const mark = (alpn?: number[]) => ja4Fingerprint({ ...EXAMPLE, ...(alpn ? { firstAlpn: Buffer.from(alpn) } : { firstAlpn: undefined }) }).slice(8, 10);
    assert.equal(mark([...Buffer.from('http/1.1')]), 'h1');
    assert.equal(mark([...Buffer.from('h')]), 'hh');
    assert.equal(mark(undefined), '00');
    assert.equal(mark([]), '00');
    // The specification's examples (technical_details/JA4.md, "ALPN Extension Value").
    const examples: [number[], string][] = [
      [[0xab], 'ab'], [[0x20], '20'], [[0xab, 0xcd], 'ad'], [[0x20, 0x61], '21'], [[0x30, 0xab], '3b'],
      [[0x61, 0x20], '60'], [[0x30, 0x31, 0xab, 0xcd], '3d'], [[0x30, 0xab, 0xcd, 0x31], '01'],
    ];
    for (const [alpn, expected] of examples) assert.equal(mark(alpn), expected, Buffer.from(alpn).toString('hex'));
  });

  test('a hello whose extensions are malformed is no ClientHello', () => {
    const hello = Buffer.from(PUBLISHED[1]![3], 'base64');
    // supported_versions (0x002b, 5 bytes: length 4, 0x0304, 0x0303) claiming 5 bytes of versions.
    const at = hello.indexOf(Buffer.from('002b00050403040303', 'hex'));
    assert.ok(at > 0);
    const lying = Buffer.from(hello);
    lying[at + 4] = 5;
    assert.throws(() => clientHelloOf(lying), ClientHelloError);
  });
});
