import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { LIMITS } from '../../lib/index.ts';
import { BodyBudget, type KeptBodies } from '../../lib/journal/detail.ts';
import { createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const asOperator = { token: OPERATOR_TOKEN };
const detail = async (operationId: string) => {
  const res = await api.request('GET', `/_burrow/requests/${operationId}`, undefined, asOperator);
  assert.equal(res.status, 200, res.text);
  return res.body;
};
const opId = (res: { headers: Headers }) => res.headers.get('burrow-operation-id')!;

describe('GET /_burrow/requests/{operation_id}', () => {
  test('answers the headers and bodies both ways, the error message and the operation', async () => {
    const sent = await api.request('POST', '/credentials', { description: 'ci', acl: 'bind:oops' });
    assert.equal(sent.status, 400);
    const entry = await detail(opId(sent));
    assert.equal(entry.operation, 'credentials.create');
    assert.equal(entry.status, 400);
    assert.equal(entry.message, sent.body.msg, 'the error message, as the envelope gave it');
    assert.deepEqual(JSON.parse(entry.request.body.data), { description: 'ci', acl: 'bind:oops' });
    assert.equal(entry.request.body.bytes, Buffer.byteLength(JSON.stringify({ description: 'ci', acl: 'bind:oops' })));
    assert.equal(entry.request.body.truncated, false);
    assert.deepEqual(JSON.parse(entry.response.body.data), sent.body);
    assert.ok(entry.request.headers.some(([name, value]: [string, string]) => name.toLowerCase() === 'content-type' && value === 'application/json'));
    assert.ok(entry.response.headers.some(([name, value]: [string, string]) => name === 'Burrow-Operation-Id' && value === opId(sent)));
    assert.match(entry.curl, /^curl -X POST 'http:\/\/burrow\.test\/credentials' /);
    assert.match(entry.curl, /-H "[Aa]uthorization: Bearer \$BURROW_KEY"/);
    assert.match(entry.curl, /--data-binary '\{"description":"ci","acl":"bind:oops"\}'/);
  });

  test('list entries carry the error message', async () => {
    const sent = await api.request('GET', '/credentials/cr_missing');
    const list = await api.request('GET', '/_burrow/requests', undefined, asOperator);
    assert.equal(list.body.requests[0].message, sent.body.msg);
  });

  test('never keeps a secret: API keys, cookies, vendor auth headers and secret fields of bodies are masked', async () => {
    const created = await api.request('POST', '/credentials', { description: 'x' }, { headers: { Cookie: 'session=s3cret', 'X-Api-Key': 'k3y', 'Ngrok-Authtoken': 'tok3n' } });
    assert.equal(created.status, 201);
    const entry = await detail(opId(created));
    const text = JSON.stringify(entry);
    for (const secret of [api.token, created.body.token, 's3cret', 'k3y', 'tok3n']) assert.ok(!text.includes(secret), `${secret} is not in the entry`);
    const headers = Object.fromEntries(entry.request.headers.map(([name, value]: [string, string]) => [name.toLowerCase(), value]));
    assert.equal(headers.authorization, 'Bearer REDACTED');
    assert.equal(headers.cookie, 'REDACTED');
    assert.equal(headers['x-api-key'], 'REDACTED');
    assert.equal(JSON.parse(entry.response.body.data).token, 'REDACTED');
    assert.equal(JSON.parse(entry.response.body.data).id, created.body.id);
  });

  test('cuts a body at journal_body_bytes and says so', async () => {
    const description = 'd'.repeat(200);
    const metadata = 'm'.repeat(4000);
    const big = JSON.stringify({ description, metadata, padding: 'p'.repeat(LIMITS.journal_body_bytes.value) });
    const sent = await api.request('POST', '/credentials', undefined, { rawBody: big, headers: { 'Content-Type': 'application/json' } });
    const entry = await detail(opId(sent));
    assert.equal(entry.request.body.truncated, true);
    assert.equal(entry.request.body.bytes, Buffer.byteLength(big));
    assert.equal(Buffer.byteLength(entry.request.body.data), LIMITS.journal_body_bytes.value);
  });

  test('an entry the journal no longer has is a 404 in the envelope', async () => {
    const res = await api.request('GET', '/_burrow/requests/op_gone', undefined, asOperator);
    assert.equal(res.status, 404);
    assert.equal(res.body.error_code, 'ERR_BURROW_9001');
    assert.match(res.body.msg, /no request op_gone/);
  });
});

describe('journal_bodies_bytes', () => {
  test('past the total the oldest bodies are let go, and their entries say so', () => {
    // Each holder counts its bytes and 64 for itself.
    const budget = new BodyBudget(250);
    const kept = (n: number): KeptBodies => ({ request: { data: 'x'.repeat(n), truncated: false }, held: 0, evicted: false });
    const [a, b, c] = [kept(40), kept(40), kept(40)];
    budget.add(a);
    budget.add(b);
    assert.equal(budget.total, 208);
    budget.add(c);
    assert.deepEqual([a.evicted, b.evicted, c.evicted], [true, false, false]);
    assert.equal(a.request!.data, undefined);
    assert.equal(a.request!.bytes, 40, 'the size stays known');
    assert.equal(budget.total, 208);
    budget.release(b);
    assert.equal(budget.total, 104, 'an entry its ring dropped no longer counts');
  });

  test('entries a ring overwrites release their bodies', async () => {
    const small = await createTestInstance({ requestJournalSize: 2 });
    for (let i = 0; i < 5; i++) await small.request('POST', '/credentials', { description: `c${i}` });
    assert.ok((small.burrow.requests as any).bodies.total < 1000, 'two entries\' bodies, not five');
  });
});

describe('POST /_burrow/requests/{operation_id}/replay', () => {
  test('without the key the answer says that the journal never keeps one', async () => {
    const sent = await api.request('POST', '/credentials', { description: 'first' });
    const res = await api.request('POST', `/_burrow/requests/${opId(sent)}/replay`, {}, asOperator);
    assert.equal(res.status, 400);
    assert.match(res.body.msg, /headers\.authorization: the journal never keeps API keys/);
  });

  test('sends the request again through the pipeline with the key given, and answers the new entry; edits change it', async () => {
    const sent = await api.request('POST', '/credentials', { description: 'first' });
    const res = await api.request('POST', `/_burrow/requests/${opId(sent)}/replay`, { headers: { authorization: `Bearer ${api.token}` }, body: { description: 'again' } }, asOperator);
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.operation_id, opId(sent));
    assert.equal(res.body.status, 201);
    assert.equal(res.body.operation, 'credentials.create');
    assert.equal(JSON.parse(res.body.response.body.data).description, 'again');
    assert.ok(!res.text.includes(api.token), 'the key given is masked in the new entry too');
    const list = await api.request('GET', '/credentials', undefined);
    assert.deepEqual(list.body.credentials.map((c: any) => c.description).sort(), ['again', 'first']);
  });

  test('replays as recorded when no edit is given: method, path, query and body', async () => {
    const sent = await api.request('GET', '/credentials/cr_missing?x=1');
    const res = await api.request('POST', `/_burrow/requests/${opId(sent)}/replay`, { headers: { Authorization: `Bearer ${api.token}` } }, asOperator);
    assert.deepEqual([res.body.method, res.body.path, res.body.query, res.body.status], ['GET', '/credentials/cr_missing', 'x=1', 404]);
  });

  test('refuses unknown edits and answers 404 for an entry that is gone', async () => {
    const sent = await api.request('GET', '/credentials');
    const bad = await api.request('POST', `/_burrow/requests/${opId(sent)}/replay`, { verb: 'GET' }, asOperator);
    assert.equal(bad.status, 400);
    const gone = await api.request('POST', '/_burrow/requests/op_gone/replay', {}, asOperator);
    assert.equal(gone.status, 404);
  });
});
