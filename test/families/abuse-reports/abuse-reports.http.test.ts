import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { assertError, createTestInstance, OPERATOR_TOKEN, type TestInstance } from '../../helpers.ts';

let api: TestInstance;
beforeEach(async () => {
  api = await createTestInstance();
});

const URLS = ['https://bad.example.com/phish', 'http://BAD.example.com/other', 'tcp://1.tcp.example.net:20000'];
const decide = (id: string, hostnames: Record<string, string>, accountId = api.accountId) =>
  api.request('POST', `/_burrow/accounts/${accountId}/abuse_reports/${id}/hostnames`, { hostnames }, { token: OPERATOR_TOKEN });

describe('POST /abuse_reports', () => {
  test('answers the report with its hostnames pending', async () => {
    const res = await api.request('POST', '/abuse_reports', { urls: URLS, metadata: '{"ticket":1}' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^abrp_[0-9A-Za-z]{27}$/);
    assert.deepEqual(res.body, {
      id: res.body.id,
      uri: `http://burrow.test/abuse_reports/${res.body.id}`,
      created_at: '2026-03-01T12:00:00Z',
      urls: URLS,
      metadata: '{"ticket":1}',
      status: 'PENDING',
      hostnames: [
        { hostname: 'bad.example.com', status: 'PENDING' },
        { hostname: '1.tcp.example.net', status: 'PENDING' },
      ],
    });
    assert.deepEqual((await api.request('GET', `/abuse_reports/${res.body.id}`)).body, res.body);
  });

  test('metadata defaults to ""', async () => {
    assert.equal((await api.request('POST', '/abuse_reports', { urls: ['https://a.example.com'] })).body.metadata, '');
  });

  test('refuses no URLs, relative or malformed URLs, too many, and unknown fields', async () => {
    assertError(await api.request('POST', '/abuse_reports', {}), 400, 215, /^urls: is required/);
    assertError(await api.request('POST', '/abuse_reports', { urls: [] }), 400, 215, /^urls: must list at least one URL/);
    assertError(await api.request('POST', '/abuse_reports', { urls: ['/phish'] }), 400, 215, /^urls\[0\]: must be an absolute URL with a hostname/);
    assertError(await api.request('POST', '/abuse_reports', { urls: ['https://ok.example.com', 'not a url'] }), 400, 215, /^urls\[1\]: must be an absolute URL/);
    assertError(await api.request('POST', '/abuse_reports', { urls: Array.from({ length: 101 }, (_, i) => `https://h${i}.example.com`) }), 400, 215, /^urls: must list at most 100 URLs/);
    assertError(await api.request('POST', '/abuse_reports', { urls: ['https://a.example.com'], description: 'x' }), 400, 214, /^description: unknown field; supported fields: urls, metadata/);
    assertError(await api.request('POST', '/abuse_reports', { urls: ['https://a.example.com'], metadata: 'x'.repeat(4097) }), 400, 215, /^metadata: must be at most 4096 bytes/);
  });

  test('there is no list, update or delete (405)', async () => {
    const id = (await api.request('POST', '/abuse_reports', { urls: ['https://a.example.com'] })).body.id;
    assert.equal((await api.request('GET', '/abuse_reports')).status, 405);
    assert.equal((await api.request('PATCH', `/abuse_reports/${id}`, {})).status, 405);
    assert.equal((await api.request('DELETE', `/abuse_reports/${id}`)).status, 405);
  });

  test('another account sees a 404', async () => {
    const id = (await api.request('POST', '/abuse_reports', { urls: ['https://a.example.com'] })).body.id;
    const other = await api.burrow.createAccount();
    assertError(await api.request('GET', `/abuse_reports/${id}`, undefined, { token: other.token }), 404, 9001, /abuse report 'abrp_\w+' was not found/);
  });
});

describe('processing', () => {
  test('undecided hostnames become IGNORE once the review hour has passed on the instance clock', async () => {
    const id = (await api.request('POST', '/abuse_reports', { urls: URLS })).body.id;
    api.clock.advance(3599);
    assert.equal((await api.request('GET', `/abuse_reports/${id}`)).body.status, 'PENDING');
    api.clock.advance(1);
    const done = (await api.request('GET', `/abuse_reports/${id}`)).body;
    assert.equal(done.status, 'PROCESSED');
    assert.deepEqual(done.hostnames.map((h: any) => h.status), ['IGNORE', 'IGNORE']);
  });

  test('the control plane decides hostnames: PARTIALLY_PROCESSED, then PROCESSED', async () => {
    const id = (await api.request('POST', '/abuse_reports', { urls: URLS })).body.id;
    const partly = await decide(id, { 'bad.example.com': 'BANNED' });
    assert.equal(partly.status, 200, partly.text);
    assert.equal(partly.body.status, 'PARTIALLY_PROCESSED');
    assert.deepEqual(partly.body.hostnames, [
      { hostname: 'bad.example.com', status: 'BANNED' },
      { hostname: '1.tcp.example.net', status: 'PENDING' },
    ]);
    assert.equal((await decide(id, { '1.tcp.example.net': 'UNBANNED' })).body.status, 'PROCESSED');
    api.clock.advance(7200);
    assert.deepEqual((await api.request('GET', `/abuse_reports/${id}`)).body.hostnames.map((h: any) => h.status), ['BANNED', 'UNBANNED'], 'decisions outlast the window');
  });

  test('the control plane refuses hostnames not in the report, bad decisions and foreign reports', async () => {
    const id = (await api.request('POST', '/abuse_reports', { urls: ['https://a.example.com'] })).body.id;
    assertError(await decide(id, { 'b.example.com': 'BANNED' }), 400, 215, /^hostnames\.b\.example\.com: not a hostname of abuse report/);
    assertError(await decide(id, { 'a.example.com': 'DESTROYED' }), 400, 215, /must be one of BANNED, UNBANNED, IGNORE/);
    const other = await api.burrow.createAccount();
    assert.equal((await decide(id, { 'a.example.com': 'BANNED' }, other.accountId)).status, 404);
    assert.equal((await api.request('GET', `/abuse_reports/${id}`)).body.status, 'PENDING');
  });

  test('the in-process client files and reads reports', async () => {
    const client = api.burrow.client(api.token, 'http://burrow.test');
    const reports = client.resource('abuse_reports');
    const report = await reports.create({ urls: ['https://a.example.com/x'] });
    assert.equal((await reports.get(report.id)).hostnames[0].hostname, 'a.example.com');
    await assert.rejects(reports.list(), /unknown operation abuse_reports\.list/);
  });
});
