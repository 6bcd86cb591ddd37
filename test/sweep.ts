import assert from 'node:assert/strict';
import type { ExampleSeed } from '../lib/engine/family.ts';
import type { Operation } from '../lib/index.ts';
import { sshKeygen, tempDir } from './fixtures/openssh.ts';
import { generateTlsFixtures } from './fixtures/tls.ts';
import { generateTestCertificates } from './fixtures/x509.ts';
import { OPERATOR_TOKEN, type TestInstance } from './helpers.ts';

/**
 * The sweeps' records: one representative record of every resource kind the instance serves,
 * created from the examples the families declare (lib/engine/family.ts `examples`), so the isolation,
 * fuzz and response-shape sweeps cover a new kind as soon as its family names an example. Key
 * material is made once per process by the real ssh-keygen and openssl.
 */

let material: { sshPublicKey: string; certificates: { ca: string; cert: string; key: string } } | undefined;

function keyMaterial() {
  if (!material) {
    const dir = tempDir('burrow-sweep-');
    try {
      const tls = generateTlsFixtures();
      material = { sshPublicKey: sshKeygen(dir.path, 'sweep', 'ed25519').publicKey, certificates: { ca: generateTestCertificates().ca, cert: tls.ecdsa.cert, key: tls.ecdsa.key } };
    } finally {
      dir.remove();
    }
  }
  return material;
}

/** Every served kind's record, by kind name, as the API answered its creation (tokens included). */
export type SweepRecords = ReadonlyMap<string, Record<string, any>>;

/** Creates one record of every kind of `api`'s instance in its account, dependencies first. */
export async function sweepRecords(api: TestInstance): Promise<SweepRecords> {
  const registry = api.burrow.registry;
  const made = new Map<string, Promise<Record<string, any>>>();
  let counter = 0;
  const seed: ExampleSeed = {
    accountId: api.accountId,
    id: async (name) => String((await seed.record(name)).id),
    record: (name) => {
      let record = made.get(name);
      if (!record) made.set(name, (record = create(name)));
      return record;
    },
    list: async (name) => {
      const kind = registry.kind(name)!;
      const res = await api.request('GET', kind.path);
      assert.equal(res.status, 200, `GET ${kind.path}: ${res.text}`);
      return res.body[kind.listKey];
    },
    sshPublicKey: () => keyMaterial().sshPublicKey,
    certificates: () => keyMaterial().certificates,
    unique: (prefix) => `${prefix}${++counter}`,
  };

  async function create(name: string): Promise<Record<string, any>> {
    const kind = registry.kind(name);
    const example = registry.example(name);
    assert.ok(kind && example, `family of kind ${name} has an example for the sweeps`);
    const body = await example.body(seed);
    if (!('control' in example)) {
      const res = await api.request('POST', kind.path, body);
      assert.equal(res.status, 201, `the example of ${name}: ${res.text}`);
      return res.body;
    }
    const operation = api.burrow.controlOperations.find((op) => op.id === example.control);
    assert.ok(operation, `control operation ${example.control}`);
    const res = await api.request(operation.method, `/_burrow${operation.path.replace(':account_id', api.accountId)}`, body, { token: OPERATOR_TOKEN });
    assert.equal(res.status, operation.status, `the example of ${name}: ${res.text}`);
    if (!example.pick) return res.body;
    const id = await example.pick(res.body, seed);
    const read = await api.request('GET', `${kind.path}/${id}`);
    assert.equal(read.status, 200, `the example of ${name}: ${read.text}`);
    return read.body;
  }

  for (const kind of registry.kinds) await seed.record(kind.name);
  return new Map(await Promise.all([...made].map(async ([name, record]) => [name, await record] as const)));
}

/** The field names the API's request bodies take (their schemas' top-level keys), for the fuzzers. */
export function bodyFieldNames(operations: readonly Operation[]): string[] {
  const names = new Set<string>();
  const visit = (schema: any, depth: number): void => {
    if (!schema || typeof schema !== 'object' || depth > 4) return;
    if (schema.entries && typeof schema.entries === 'object') for (const key of Object.keys(schema.entries)) names.add(key);
    for (const inner of [schema.wrapped, ...(Array.isArray(schema.options) ? schema.options : []), ...(Array.isArray(schema.pipe) ? schema.pipe.slice(0, 1) : [])]) if (inner !== schema) visit(inner, depth + 1);
  };
  for (const op of operations) visit(op.body, 0);
  return [...names].sort();
}
