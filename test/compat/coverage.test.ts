import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { GO_CLIENT_HEADERS } from '../fixtures/client-dialects.ts';
import { GO_V8_SERVICES } from './go-v8-operations.ts';
import { useOfficialClient } from './official-client.ts';

/**
 * Coverage of the official clients' services: docs/compatibility.md's table lists every service class of the
 * installed @ngrok/ngrok-api (0.11.0), the services only the newer clients have and every service
 * package of the Go client v8 (./go-v8-operations.ts); one operation of every 0.11.0 service and
 * every one of the Go client v8's 252 operations answer against a live server (not 404 `no API
 * route`, not 405).
 *
 * What Burrow does not serve yet is named below. These sets must only shrink: a service that
 * starts answering fails this test until it leaves its set (and its row there says "served").
 */

const require = createRequire(import.meta.url);
const SERVICES = require('@ngrok/ngrok-api/lib/services') as Record<string, new (httpClient: unknown) => any>;
const { Ngrok } = require('@ngrok/ngrok-api') as { Ngrok: new (config: { apiToken: string; baseUrl: string }) => any };

/** 0.11.0 service classes that Burrow does not serve yet (their paths answer 404 `no API route`). */
const PENDING_011 = new Set<string>();

/** What only the newer clients (0.12–0.17) call, probed over plain HTTP; `missing` tells "not served yet". */
const NEWER: Record<string, { method: string; path: string; body?: unknown; missing: (res: { status: number; code: string }) => boolean }> = {
  EdgeRouteTrafficPolicyModule: { method: 'GET', path: '/edges/https/edghts_probe/routes/edghtsrt_probe/traffic_policy', missing: noRoute },
  TCPEdgeTrafficPolicyModule: { method: 'GET', path: '/edges/tcp/edgtcp_probe/traffic_policy', missing: noRoute },
  TLSEdgeTrafficPolicyModule: { method: 'GET', path: '/edges/tls/edgtls_probe/traffic_policy', missing: noRoute },
  Vaults: { method: 'GET', path: '/vaults/vault_probe', missing: noRoute },
  Secrets: { method: 'GET', path: '/vault_secrets/secret_probe', missing: noRoute },
  // Cloud endpoints: a create on the endpoints collection (405 while only agent endpoints are listed).
  'Endpoints (cloud endpoint create)': { method: 'POST', path: '/endpoints', body: {}, missing: (res) => noRoute(res) || res.status === 405 },
  'filter list parameter': { method: 'GET', path: '/api_keys?filter=true', missing: (res) => res.status === 400 && res.code === 'ERR_BURROW_231' },
};

/** Newer-client services and parameters that Burrow does not serve yet. */
const PENDING_NEWER = new Set<string>([]);

/** Go client v8 service packages that Burrow does not serve yet. */
const PENDING_GO_V8 = new Set<string>();

function noRoute(res: { status: number; code: string }): boolean {
  return res.status === 404 && res.code === 'ERR_BURROW_9002';
}

/** The services reachable from `new Ngrok()`, by class name, with the property path that holds them. */
function reachable(client: any): Map<string, { path: string; service: any }> {
  const found = new Map<string, { path: string; service: any }>();
  for (const [key, value] of Object.entries(client)) {
    if (!value || typeof value !== 'object') continue;
    if (Object.getPrototypeOf(value) === Object.prototype) {
      for (const [inner, service] of Object.entries(value as object)) found.set((service as object).constructor.name, { path: `${key}.${inner}`, service });
    } else if ((value as object).constructor.name in SERVICES) {
      found.set((value as object).constructor.name, { path: key, service: value });
    }
  }
  return found;
}

/** The rows of the coverage table (docs/compatibility.md), by the service named in the first cell. */
function coverageRows(): Map<string, string[]> {
  const readme = readFileSync(new URL('../../docs/compatibility.md', import.meta.url), 'utf8');
  const start = readme.indexOf("### Coverage of the official clients' services");
  assert.ok(start >= 0, 'docs/compatibility.md has the coverage section');
  const section = readme.slice(start, readme.indexOf('\n#', start + 4));
  const rows = new Map<string, string[]>();
  for (const line of section.split('\n').filter((l) => l.startsWith('| `'))) {
    const cells = line.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, ''));
    rows.set(/^`([^`]+)`/.exec(cells[0]!)![1]!, cells);
  }
  return rows;
}

describe('the coverage table (docs/compatibility.md)', () => {
  const client = new Ngrok({ apiToken: 'unused', baseUrl: 'http://127.0.0.1:9' });
  const rows = coverageRows();

  test('lists every service class of the installed client, with where `new Ngrok()` holds it', () => {
    assert.equal(Object.keys(SERVICES).length, 56, 'the installed client is 0.11.0 with its 56 services');
    const places = reachable(client);
    for (const name of Object.keys(SERVICES)) {
      const row = rows.get(name);
      assert.ok(row, `the coverage table lists ${name}`);
      const place = places.get(name);
      assert.equal(row[1], place ? `\`${place.path}\`` : '– (class only)', `${name}: where the client holds it`);
    }
  });

  test("says 'not yet' exactly for the services in the pending sets", () => {
    for (const name of Object.keys(SERVICES)) {
      assert.equal(rows.get(name)![3]!.startsWith('not yet'), PENDING_011.has(name), `${name}: 0.11.0 status in docs/compatibility.md`);
    }
    for (const name of Object.keys(NEWER).filter((n) => rows.has(n))) {
      assert.equal(rows.get(name)![4]!.startsWith('not yet'), PENDING_NEWER.has(name), `${name}: newer-client status in docs/compatibility.md`);
    }
    for (const name of Object.keys(NEWER).filter((n) => /^[A-Z]\w+$/.test(n) && !(n in SERVICES))) assert.ok(rows.has(name), `the coverage table lists the newer client's ${name}`);
  });

  test('has a Go client v8 column: each package in its row, "not yet" exactly for the pending ones, "–" in rows no package has', () => {
    assert.equal(Object.keys(GO_V8_SERVICES).length, 61, 'the Go client v8 has 61 service packages');
    assert.equal(Object.values(GO_V8_SERVICES).flatMap((service) => service.operations).length, 252, 'and 252 operations');
    const packageOfRow = new Map(Object.entries(GO_V8_SERVICES).map(([name, service]) => [service.row, name]));
    assert.equal(packageOfRow.size, 61, 'one row per package');
    for (const [row, cells] of rows) {
      const name = packageOfRow.get(row);
      assert.equal(cells.length, 6, `${row}: six cells`);
      if (name === undefined) assert.equal(cells[5], '–', `${row}: no Go client v8 package`);
      else {
        assert.ok(cells[5]!.startsWith(`\`${name}\`: `), `${row}: the Go client v8 package ${name}`);
        assert.equal(cells[5]!.includes(': not yet'), PENDING_GO_V8.has(name), `${name}: Go client v8 status in docs/compatibility.md`);
      }
    }
    for (const row of packageOfRow.keys()) assert.ok(rows.has(row), `the coverage table lists ${row}`);
  });
});

describe('every service of the official client against a live server', () => {
  const official = useOfficialClient();

  test('one operation of each 0.11.0 service answers (not 404 `no API route`), except the named pending ones', async () => {
    const places = reachable(official.client);
    // Fits every `get`: a plain id for `get(id)`, the fields of `get({edgeId, id})` and `get({subscriptionId, type})`.
    const probe = { id: 'x_probe', edgeId: 'edghts_probe', subscriptionId: 'esb_probe', type: 'api_key_created.v0', toString: () => 'x_probe' };
    const missing: string[] = [];
    for (const name of Object.keys(SERVICES)) {
      const service = places.get(name)?.service ?? new SERVICES[name]!(official.client.httpClient);
      const outcome = await service.get(probe).then(
        () => ({ status: 200, code: '' }),
        (error: any) => ({ status: error.statusCode, code: error.errorCode ?? '' }),
      );
      assert.ok(typeof outcome.status === 'number', `${name}.get answered an API error body (${JSON.stringify(outcome)})`);
      if (noRoute(outcome)) missing.push(name);
      else assert.ok([200, 400, 404].includes(outcome.status), `${name}.get: ${JSON.stringify(outcome)}`);
    }
    assert.deepEqual(missing.sort(), [...PENDING_011].sort(), 'the services answering 404 `no API route` are exactly the pending ones');
  });

  test('what only the newer clients call: exactly the named pending ones are missing', async () => {
    const { server } = official;
    const missing: string[] = [];
    for (const [name, probe] of Object.entries(NEWER)) {
      const res = await server.request(probe.method, probe.path, probe.body);
      if (probe.missing({ status: res.status, code: res.body?.error_code ?? '' })) missing.push(name);
      else assert.ok(res.status < 500, `${name}: ${res.status} ${res.text}`);
    }
    assert.deepEqual(missing.sort(), [...PENDING_NEWER].sort());
  });

  test('every operation of the Go client v8, as it sends it: exactly the pending packages are missing', async () => {
    const { server } = official;
    const PLACEHOLDERS: Record<string, string> = { id: 'x_probe', edge_id: 'edghts_probe', subscription_id: 'esb_probe', type: 'api_key_created.v0' };
    const missing = new Set<string>();
    for (const [name, service] of Object.entries(GO_V8_SERVICES)) {
      for (const [operation, method, template, , query] of service.operations) {
        const path = template.replace(/\{(\w+)\}/g, (_m, param: string) => PLACEHOLDERS[param]!) + (query ? '?filter=true' : '');
        const res = await server.request(method, path, ['POST', 'PATCH', 'PUT'].includes(method) ? {} : undefined, { headers: GO_CLIENT_HEADERS });
        const code = res.body?.error_code ?? '';
        if (noRoute({ status: res.status, code }) || res.status === 405) missing.add(name);
        else {
          assert.ok(res.status < 500, `${name} ${operation}: ${res.status} ${res.text}`);
          assert.notEqual(code, 'ERR_BURROW_231', `${name} ${operation}: the query parameters the Go client sends are accepted`);
        }
      }
    }
    assert.deepEqual([...missing].sort(), [...PENDING_GO_V8].sort());
  });
});
