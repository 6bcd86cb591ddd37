import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';
import { storeKindOf } from '../../lib/engine/resource.ts';
import { createBurrow } from '../../lib/index.ts';

/**
 * Records are stored under their kind's store kind, which a definition states only where it is not
 * the singular of its name (lib/engine/resource.ts `storeKindOf`). The store kinds are part of the
 * stored format — a JSON file or a PostgreSQL database written by an earlier version keeps them —
 * so they are listed here, and a change to the rule or to a name shows as a failure, not as data
 * that is no longer found.
 */
const STORE_KINDS = [
  'api_key', 'credential', 'ssh_credential', 'ssh_certificate_authority', 'ssh_host_certificate', 'ssh_user_certificate',
  'ip_policy', 'ip_policy_rule', 'ip_restriction', 'event_destination', 'event_subscription', 'tunnel_session', 'tunnel',
  'endpoint', 'agent_ingress', 'reserved_domain', 'weighted_backend', 'failover_backend', 'http_response_backend',
  'tunnel_group_backend', 'static_backend', 'certificate_authority', 'tcp_edge', 'tls_edge', 'https_edge', 'bot', 'bot',
  'application_user', 'application_session', 'abuse_report', 'tls_certificate', 'reserved_addr', 'vault', 'secret',
  'ai_gateway_api_key', 'kubernetes_operator',
];

const registry = createBurrow({ store: new MemoryStore() }).registry;

test('every kind is stored under the store kind it always had', () => {
  assert.deepEqual(
    registry.kinds.map((def) => def.kind),
    STORE_KINDS,
  );
});

test('the store kind of a name is its singular', () => {
  assert.equal(storeKindOf('api_keys'), 'api_key');
  assert.equal(storeKindOf('ip_policies'), 'ip_policy');
  assert.equal(storeKindOf('ssh_certificate_authorities'), 'ssh_certificate_authority');
  assert.equal(storeKindOf('agent_ingresses'), 'agent_ingress');
  assert.equal(storeKindOf('reserved_addrs'), 'reserved_addr');
});

test("a family's exported *_KIND constant names a kind's store kind", async () => {
  const families = new URL('../../lib/families/', import.meta.url);
  const constants: [string, unknown][] = [];
  for (const file of readdirSync(families, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'))) {
    const module = (await import(new URL(file, families).href)) as Record<string, unknown>;
    constants.push(...Object.entries(module).filter(([name]) => /^[A-Z_]+_KIND$/.test(name)).map(([name, value]): [string, unknown] => [`${file} ${name}`, value]));
  }
  assert.ok(constants.length >= 10, `found ${constants.length} constants`);
  const storeKinds = new Set(STORE_KINDS);
  for (const [name, value] of constants) assert.ok(typeof value === 'string' && storeKinds.has(value), `${name} = ${JSON.stringify(value)} is no kind's store kind`);
});
