import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import type { Operation } from '../../lib/index.ts';
import { createTestInstance, type TestInstance, type TestResponse } from '../helpers.ts';
import { tempDir } from '../fixtures/openssh.ts';
import { createRepresentatives, moduleExamples, type ModuleHolder, type Representatives } from '../fixtures/representative-records.ts';
import { GO_V8_SERVICES } from './go-v8-operations.ts';
import { VENDOR_SCHEMAS, type VendorSchemaName } from './vendor-schemas.ts';

/**
 * Response shapes against the vendor's published schemas (./vendor-schemas.ts). Example records of
 * every kind are created (test/fixtures/representative-records.ts), then read, listed, updated and
 * their modules replaced; every answer of every API operation is checked against the schema the
 * vendor's Go client v8 decodes it into (./go-v8-operations.ts): each declared field present, of
 * its declared type (nested objects, arrays and maps included), and no field the vendor does not
 * declare. What Burrow answers differently on purpose is listed below, with the reason, and shown
 * in docs/vendor-schemas.md; a listed difference that no answer shows any more fails the test too.
 */

interface Difference {
  readonly schema: VendorSchemaName;
  readonly field: string;
  /** `extra`: a field the vendor does not declare; `null`: null where the vendor's type is not nullable. */
  readonly answer: 'extra' | 'null';
  readonly reason: string;
}

const POLICY_MODULE_REASON = "the 0.11.0 clients' `policy` module (the spec's), answered beside `traffic_policy` (`null` unless set) so that both client generations read their module";
const SECRET_REASON = 'a secret: stored, never answered after it is written (the vendor types it as a plain string)';

const DOCUMENTED_DIFFERENCES: readonly Difference[] = [
  { schema: 'TCPEdge', field: 'policy', answer: 'extra', reason: POLICY_MODULE_REASON },
  { schema: 'TLSEdge', field: 'policy', answer: 'extra', reason: POLICY_MODULE_REASON },
  { schema: 'HTTPSEdgeRoute', field: 'policy', answer: 'extra', reason: POLICY_MODULE_REASON },
  { schema: 'EndpointWebhookValidation', field: 'secret', answer: 'null', reason: SECRET_REASON },
  { schema: 'EventTargetAzureLogsIngestion', field: 'client_secret', answer: 'null', reason: SECRET_REASON },
];

/** Operations Burrow serves that the vendor's Go client v8 has not (so no vendor schema applies). */
const VENDORLESS_OPERATIONS: readonly { readonly path: string; readonly reason: string }[] = [
  { path: '/edges/tcp/{id}/policy', reason: "the 0.11.0 clients' policy module (removed from the vendor's clients in 0.12, still in the spec)" },
  { path: '/edges/tls/{id}/policy', reason: "the 0.11.0 clients' policy module (removed from the vendor's clients in 0.12, still in the spec)" },
  { path: '/edges/https/{edge_id}/routes/{id}/policy', reason: "the 0.11.0 clients' policy module (removed from the vendor's clients in 0.12, still in the spec)" },  { path: '/users/{id}', reason: "the user a reference's `uri` names (owners, principals, `created_by`): the vendor's references point under `/users`, but it publishes no users API" },
];

/** What a sweep found: problems (deduplicated), and the documented differences it met. */
class Report {
  readonly problems = new Set<string>();
  readonly used = new Set<Difference>();

  /** Checks `value` against the vendor type `type` (notation: ./vendor-schemas.ts); `where` names it in problems. */
  check(value: unknown, type: string, where: string, owner?: { schema: VendorSchemaName; field: string }): void {
    if (type.endsWith('?')) {
      if (value === null) return;
      type = type.slice(0, -1);
    } else if (value === null) {
      const documented = owner && this.#difference(owner.schema, owner.field, 'null');
      if (!documented) this.problems.add(`${where}: null, but the vendor declares ${type}`);
      return;
    }
    const wrong = (): void => void this.problems.add(`${where}: ${JSON.stringify(value)?.slice(0, 60)} is not the vendor's ${type}`);
    if (type.endsWith('[]')) {
      if (!Array.isArray(value)) return wrong();
      value.forEach((item, index) => this.check(item, type.slice(0, -2), `${where}[${index}]`));
      return;
    }
    const map = /^map<(.+)>$/.exec(type);
    if (map) {
      if (!isPlainObject(value)) return wrong();
      for (const [key, item] of Object.entries(value)) this.check(item, map[1]!, `${where}[${JSON.stringify(key)}]`);
      return;
    }
    if (type === 'string' || type === 'boolean' || type === 'number') return void (typeof value !== type && wrong());
    if (type === 'integer') return void (!Number.isInteger(value) && wrong());
    if (!(type in VENDOR_SCHEMAS)) return void this.problems.add(`${where}: the table names an unknown type ${type}`);
    this.#object(value, type as VendorSchemaName, where, wrong);
  }

  #object(value: unknown, schema: VendorSchemaName, where: string, wrong: () => void): void {
    if (!isPlainObject(value)) return wrong();
    const fields: Record<string, string> = VENDOR_SCHEMAS[schema];
    for (const [field, type] of Object.entries(fields)) {
      if (field in value) this.check(value[field], type, `${where}.${field}`, { schema, field });
      else this.problems.add(`${where}.${field}: missing (the vendor's ${schema} declares ${type})`);
    }
    for (const field of Object.keys(value).filter((key) => !(key in fields))) {
      if (!this.#difference(schema, field, 'extra')) this.problems.add(`${where}.${field}: not in the vendor's ${schema}`);
    }
  }

  #difference(schema: VendorSchemaName, field: string, answer: Difference['answer']): boolean {
    const found = DOCUMENTED_DIFFERENCES.find((d) => d.schema === schema && d.field === field && d.answer === answer);
    if (found) this.used.add(found);
    return found !== undefined;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The vendor's answer schema of each (method, path) of the Go client v8, paths in OpenAPI style. */
const VENDOR_ANSWERS = new Map(Object.values(GO_V8_SERVICES).flatMap((service) => service.operations.map(([, method, path, answer]): [string, VendorSchemaName | null] => [`${method} ${path}`, answer])));

const openApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

/** The operation that serves `method path` (query string ignored), in routing order. */
function operationFor(operations: readonly Operation[], method: string, path: string): Operation | undefined {
  const bare = path.split('?')[0]!;
  return operations.find((op) => op.method === method && new RegExp(`^${op.path.replace(/:[A-Za-z_]+/g, '[^/]+')}$`).test(bare));
}

/**
 * Runs the sweep: creates the example records through a checking sender, then reads, lists and
 * updates every one and replaces every module. Answers the report and the ids of the operations
 * whose answers were checked.
 */
async function sweep(api: TestInstance, keysDir: string): Promise<{ report: Report; checked: Set<string> }> {
  const report = new Report();
  const checked = new Set<string>();
  const send = async (method: string, path: string, body?: unknown, init: { token?: string | null } = {}): Promise<TestResponse> => {
    const res = await api.request(method, path, body, init);
    if (path.startsWith('/_burrow/')) return res;
    const op = operationFor(api.burrow.operations, method, path);
    assert.ok(op, `no operation serves ${method} ${path}`);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
    if (res.status === 204) return res;
    checked.add(op.id);
    const vendorPath = openApiPath(op.path);
    const answer = VENDOR_ANSWERS.get(`${method} ${vendorPath}`);
    if (answer) report.check(res.body, answer, `${op.id}: ${answer}`);
    else if (!VENDORLESS_OPERATIONS.some((vendorless) => vendorless.path === vendorPath)) report.problems.add(`${op.id}: the vendor has no ${method} ${vendorPath}`);
    return res;
  };
  const served = (method: string, path: string) => operationFor(api.burrow.operations, method, path) !== undefined;

  const representatives = await createRepresentatives(send, api.accountId, keysDir);
  for (const { path, id, fixed } of representatives.records) {
    await send('GET', `${path}/${id}`);
    if (!fixed && served('PATCH', `${path}/${id}`)) await send('PATCH', `${path}/${id}`, {});
  }
  for (const path of new Set(representatives.records.map((record) => record.path))) {
    if (!served('GET', path)) continue;
    await send('GET', path);
    await send('GET', `${path}?limit=1`);
  }
  const sources = `/event_subscriptions/${representatives.subscription}/sources`;
  await send('POST', sources, { type: 'api_key_created.v0' });
  await send('GET', sources);
  await send('GET', `${sources}/api_key_created.v0`);
  await send('PATCH', `${sources}/api_key_created.v0`, {});
  await send('GET', `/vaults/${representatives.vault}/secrets`);
  await send('GET', `/users/${api.userId}`);
  const bound = await send('GET', `/kubernetes_operators/${representatives.operator}/bound_endpoints`);
  assert.equal(bound.body.endpoints.length, 1, 'the operator binds the kubernetes endpoint');
  await replaceEveryModule(api, representatives, send);
  return { report, checked };
}

/** PUT, GET and the holder's GET for every module endpoint, each module alone on its holder. */
async function replaceEveryModule(api: TestInstance, representatives: Representatives, send: (method: string, path: string, body?: unknown) => Promise<TestResponse>): Promise<void> {
  const { tcp, tls, https, route } = representatives.edges;
  const holders: Record<ModuleHolder, string> = { tcp: `/edges/tcp/${tcp}`, tls: `/edges/tls/${tls}`, https: `/edges/https/${https}`, route: `/edges/https/${https}/routes/${route}` };
  const templates: Record<string, ModuleHolder> = { '/edges/tcp/:id': 'tcp', '/edges/tls/:id': 'tls', '/edges/https/:id': 'https', '/edges/https/:edge_id/routes/:id': 'route' };
  for (const op of api.burrow.operations.filter((candidate) => candidate.method === 'PUT')) {
    const module = op.path.slice(op.path.lastIndexOf('/') + 1);
    const holder = templates[op.path.slice(0, op.path.lastIndexOf('/'))];
    assert.ok(holder, `a module holder for ${op.path}`);
    const path = `${holders[holder]}/${module}`;
    await send('PUT', path, moduleExamples(representatives.moduleTargets, holder)[module]!.body);
    await send('GET', path);
    await send('GET', holders[holder]);
    await send('DELETE', path);
  }
}

describe("answers against the vendor's published schemas", () => {
  const dir = tempDir('burrow-schemas-');
  let api: TestInstance;
  let result: Awaited<ReturnType<typeof sweep>>;
  before(async () => {
    api = await createTestInstance();
    result = await sweep(api, dir.path);
  });
  after(() => dir.remove());

  test('every answer of every served kind has the declared fields, of the declared types, and no others', () => {
    assert.deepEqual([...result.report.problems].sort(), []);
  });

  test('the sweep checked an answer of every operation that answers with a body', () => {
    const answering = api.burrow.operations.filter((op) => op.status !== 204).map((op) => op.id);
    assert.deepEqual(answering.filter((id) => !result.checked.has(id)), []);
  });

  test('every documented difference is still shown by some answer', () => {
    assert.deepEqual(DOCUMENTED_DIFFERENCES.filter((difference) => !result.report.used.has(difference)), []);
  });

  test('every vendorless operation is served, and the vendor indeed has none of them', () => {
    const servedPaths = new Set(api.burrow.operations.map((op) => openApiPath(op.path)));
    for (const { path } of VENDORLESS_OPERATIONS) {
      assert.ok(servedPaths.has(path), path);
      assert.ok(![...VENDOR_ANSWERS.keys()].some((key) => key.endsWith(` ${path}`)), path);
    }
  });
});

describe('the check itself', () => {
  const apiKey = { id: 'ak_1', uri: 'http://burrow.test/api_keys/ak_1', description: '', metadata: '', created_at: '2026-03-01T12:00:00Z', token: null, owner_id: 'usr_1' };
  const problems = (value: unknown, type: string) => {
    const report = new Report();
    report.check(value, type, type);
    return [...report.problems];
  };

  test('passes a conforming answer and a list envelope of it', () => {
    assert.deepEqual(problems(apiKey, 'APIKey'), []);
    assert.deepEqual(problems({ keys: [apiKey], uri: 'http://burrow.test/api_keys', next_page_uri: null }, 'APIKeyList'), []);
  });

  test('fails when a field disappears, changes type, or is not declared', () => {
    const { owner_id: _gone, ...withoutOwner } = apiKey;
    assert.deepEqual(problems(withoutOwner, 'APIKey'), ["APIKey.owner_id: missing (the vendor's APIKey declares string?)"]);
    assert.deepEqual(problems({ ...apiKey, created_at: 1772366400 }, 'APIKey'), ["APIKey.created_at: 1772366400 is not the vendor's string"]);
    assert.deepEqual(problems({ ...apiKey, id: null }, 'APIKey'), ['APIKey.id: null, but the vendor declares string']);
    assert.deepEqual(problems({ ...apiKey, scopes: [] }, 'APIKey'), ["APIKey.scopes: not in the vendor's APIKey"]);
  });

  test('checks nested objects, array items, map values and envelopes', () => {
    assert.deepEqual(problems({ keys: [{ ...apiKey, token: 7 }], uri: 'u' }, 'APIKeyList'), [
      "APIKeyList.keys[0].token: 7 is not the vendor's string",
      "APIKeyList.next_page_uri: missing (the vendor's APIKeyList declares string?)",
    ]);
    const backend = { id: 'bkdwd_1', uri: 'u', created_at: 't', description: '', metadata: '', backends: { bkdhr_1: 1.5 } };
    assert.deepEqual(problems(backend, 'WeightedBackend'), ['WeightedBackend.backends["bkdhr_1"]: 1.5 is not the vendor\'s integer']);
    assert.deepEqual(problems({ enabled: true, ip_policies: [{ id: 'ipp_1' }] }, 'EndpointIPPolicy'), ["EndpointIPPolicy.ip_policies[0].uri: missing (the vendor's Ref declares string)"]);
  });

  test('every type the table names exists in it', () => {
    const named = Object.values(VENDOR_SCHEMAS).flatMap((fields) => Object.values(fields as Record<string, string>)).map((type) => type.replace(/\?$/, '').replace(/(\[\])+$/, '').replace(/^map<(.+)>$/, '$1'));
    const primitive = new Set(['string', 'integer', 'number', 'boolean']);
    assert.deepEqual([...new Set(named.filter((type) => !primitive.has(type) && !(type in VENDOR_SCHEMAS)))], []);
  });
});

describe('docs/vendor-schemas.md', () => {
  const doc = readFileSync(new URL('../../docs/vendor-schemas.md', import.meta.url), 'utf8');
  const rows = (heading: string) => {
    const start = doc.indexOf(`## ${heading}`);
    assert.ok(start >= 0, `the document has the section ${heading}`);
    const end = doc.indexOf('\n## ', start + 3);
    return doc.slice(start, end < 0 ? undefined : end).split('\n').filter((line) => line.startsWith('| `')).map((line) => line.split(' | ').map((cell) => cell.replace(/^\| |\s*\|$/g, '')));
  };

  test('shows exactly the documented differences, with their reasons', () => {
    assert.deepEqual(rows('Documented differences'), DOCUMENTED_DIFFERENCES.map((d) => [`\`${d.schema}.${d.field}\``, d.answer === 'extra' ? 'answered, not declared' : 'answered `null`', d.reason]));
  });

  test('shows exactly the operations the vendor does not have', () => {
    assert.deepEqual(rows('Operations the vendor does not have'), VENDORLESS_OPERATIONS.map((o) => [`\`${o.path}\``, o.reason]));
  });
});

/**
 * The table against the reference files themselves, when they are at hand: BURROW_VENDOR_OPENAPI
 * names the vendor's `ngrok.yaml`, BURROW_VENDOR_GO_DATATYPES the Go client v8's `datatypes.go`.
 */
describe('the table against the reference files', () => {
  const openapiFile = process.env.BURROW_VENDOR_OPENAPI;
  const datatypesFile = process.env.BURROW_VENDOR_GO_DATATYPES;

  test('every schema the OpenAPI document has: the same fields and JSON types', { skip: openapiFile && existsSync(openapiFile) ? false : 'BURROW_VENDOR_OPENAPI does not name the vendor\'s ngrok.yaml' }, () => {
    const components = (parseYaml(readFileSync(openapiFile!, 'utf8')) as { components: { schemas: Record<string, { properties?: Record<string, any> }> } }).components.schemas;
    const oasType = (property: any): string => {
      if (property.$ref) return property.$ref.split('/').at(-1);
      if (property.type === 'array') return `${oasType(property.items)}[]`;
      return property.type === 'object' ? 'map' : property.type;
    };
    const mismatches: string[] = [];
    for (const [name, fields] of Object.entries(VENDOR_SCHEMAS)) {
      const properties = components[name]?.properties;
      if (!properties) continue;
      const ours = Object.fromEntries(Object.entries(fields as Record<string, string>).map(([field, type]) => [field, type.replace(/\?$/, '').replace(/^map<.+>$/, 'map')]));
      for (const field of new Set([...Object.keys(ours), ...Object.keys(properties)])) {
        // Fields newer than the document (resolves_to, vault_name) come from the Go client.
        if (!(field in properties)) continue;
        if (ours[field] !== oasType(properties[field])) mismatches.push(`${name}.${field}: ours ${ours[field]}, the document ${oasType(properties[field])}`);
      }
    }
    assert.deepEqual(mismatches, []);
  });

  test("every schema the Go client v8 decodes: the same fields, types and nullability (pointers)", { skip: datatypesFile && existsSync(datatypesFile) ? false : 'BURROW_VENDOR_GO_DATATYPES does not name the Go client\'s datatypes.go' }, () => {
    const source = readFileSync(datatypesFile!, 'utf8');
    const goType = (type: string): string => {
      const nullable = type.startsWith('*') ? '?' : '';
      const bare = type.replace(/^\*/, '');
      if (bare.startsWith('[]')) return `${goType(bare.slice(2))}[]${nullable}`;
      if (bare.startsWith('map[string]')) return `map<${goType(bare.slice('map[string]'.length))}>${nullable}`;
      const primitive: Record<string, string> = { string: 'string', bool: 'boolean', float64: 'number', int32: 'integer', int64: 'integer', uint32: 'integer', uint64: 'integer' };
      return `${primitive[bare] ?? bare}${nullable}`;
    };
    const structs = new Map<string, Record<string, string>>();
    for (const [, name, body] of source.matchAll(/^type (\w+) struct \{\n([\s\S]*?)^\}/gm)) {
      structs.set(name!, Object.fromEntries([...body!.matchAll(/^\s*\w+\s+(\S+)\s+`json:"([^",]+)/gm)].map(([, type, field]) => [field!, goType(type!)])));
    }
    const mismatches: string[] = [];
    for (const [name, fields] of Object.entries(VENDOR_SCHEMAS)) {
      const theirs = structs.get(name);
      if (!theirs) {
        mismatches.push(`${name}: not in datatypes.go`);
        continue;
      }
      for (const field of new Set([...Object.keys(fields), ...Object.keys(theirs)])) {
        const ours = (fields as Record<string, string>)[field];
        if (ours !== theirs[field]) mismatches.push(`${name}.${field}: ours ${ours}, the Go client ${theirs[field]}`);
      }
    }
    const answered = new Set(Object.values(GO_V8_SERVICES).flatMap((service) => service.operations.map(([, , , answer]) => answer).filter((answer) => answer !== null)));
    for (const name of answered) if (!structs.has(name)) mismatches.push(`${name}: an answer the Go client does not decode`);
    assert.deepEqual(mismatches, []);
  });
});
