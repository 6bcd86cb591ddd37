import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { checkPolicy, testPolicy } from '../../adapters/testing/index.ts';

/** `burrow policy check|test`, run as the command, and the same two as burrow-tunnels/testing's checkPolicy/testPolicy. */

const run = promisify(execFile);
const BIN = new URL('../../bin/burrow.ts', import.meta.url).pathname;
/** The command's exit code, stdout and stderr (a non-zero exit is an answer here, not a failure). */
const burrow = (args: string[]) =>
  run(process.execPath, ['--import', 'tsx', BIN, ...args]).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );

let dir: string;
let good: string;
let bad: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'burrow-policy-'));
  good = join(dir, 'good.yml');
  writeFileSync(good, ['on_http_request:', '  - expressions: ["\'x-debug\' in req.headers"]', '    actions: [{type: custom-response, config: {status_code: 418, body: debug}}]', '  - actions: [{type: add-headers, config: {headers: {x-seen: "${req.method}"}}}]', ''].join('\n'));
  bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ on_http_request: [{ expressions: ['req.foo'], actions: [{ type: 'deny' }] }, { actions: [{ type: 'deny', config: { status_code: 9 } }] }] }, null, 2));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('burrow policy check', () => {
  test('exit 0 and no output for a valid file; exit 1 with FILE:LINE:COL: message (code) for each problem', async () => {
    assert.deepEqual(await burrow(['policy', 'check', good]), { code: 0, stdout: '', stderr: '' });
    const failed = await burrow(['policy', 'check', good, bad]);
    assert.equal(failed.code, 1);
    assert.equal(
      failed.stdout,
      `${bad}:5:10: on_http_request[0].expressions[0]: unknown variable req.foo at column 1 (ERR_NGROK_2200)\n` +
        `${bad}:18:28: on_http_request[1].actions[0].config.status_code: must be an integer from 100 to 599 (got 9) (ERR_NGROK_2204)\n`,
    );
  });

  test('--cloud-endpoint applies the rule that a cloud endpoint always answers; a usage error exits 2', async () => {
    const cloud = await burrow(['policy', 'check', '--cloud-endpoint', good]);
    assert.equal(cloud.code, 1);
    assert.match(cloud.stdout, /good\.yml:1:1: the traffic policy is not guaranteed to handle traffic.*\(ERR_NGROK_2235\)\n$/);
    const usage = await burrow(['policy', 'check']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /policy check needs at least one FILE/);
  });
});

describe('burrow policy test', () => {
  test('prints the phases, the rules that matched, the actions and the answer', async () => {
    const answered = await burrow(['policy', 'test', good, '--request', 'GET https://app.example/x', '-H', 'X-Debug: 1']);
    assert.equal(answered.code, 0, answered.stderr);
    assert.equal(answered.stdout, 'on_tcp_connect:\n  (no rules)\non_http_request:\n  rule 0: matched\n    custom-response (ended the phase)\nanswer: 418\n  content-type: text/plain; charset=utf-8\n\ndebug\n');
  });

  test('or the request the upstream would receive (--json: the report as data)', async () => {
    const passed = await burrow(['policy', 'test', good, '--request', 'POST https://app.example/x', '--client-ip', '192.0.2.1', '--json']);
    assert.equal(passed.code, 0, passed.stderr);
    assert.deepEqual(JSON.parse(passed.stdout).upstream, { method: 'POST', url: 'https://app.example/x', headers: [['Host', 'app.example'], ['x-seen', 'POST']] });
  });

  test('an invalid policy exits 1 naming its problems; a bad request line exits 2', async () => {
    const invalid = await burrow(['policy', 'test', bad, '--request', 'GET https://app.example/']);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /is no valid traffic policy:\n.*bad\.json:5:10: .*unknown variable req\.foo/);
    const usage = await burrow(['policy', 'test', good, '--request', 'GET /x']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /absolute http\(s\) URL/);
  });
});

describe('burrow-tunnels/testing: checkPolicy and testPolicy', () => {
  test('the same check and test as functions', async () => {
    const checked = await checkPolicy([good, bad]);
    assert.equal(checked.ok, false);
    assert.deepEqual(checked.problems.map((p) => [p.file, p.line, p.col, p.code]), [[bad, 5, 10, 'ERR_NGROK_2200'], [bad, 18, 28, 'ERR_NGROK_2204']]);
    const tested = await testPolicy(good, { request: 'GET https://app.example/x', headers: ['X-Debug: 1'] });
    assert.deepEqual(tested.terminal, { kind: 'respond', response: { status: 418, headers: [['content-type', 'text/plain; charset=utf-8']], body: 'debug' } });
    assert.match(tested.text, /answer: 418/);
  });
});
