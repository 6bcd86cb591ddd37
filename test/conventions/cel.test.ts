import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { celSyntaxProblem, compileFilter, FilterProblem, MAX_FILTER_LENGTH } from '../../lib/conventions/cel.ts';
import { LIMITS } from '../../lib/limits.ts';

const now = () => new Date('2026-01-10T00:00:00Z');
const key = {
  id: 'ak_2tEpN0yrxDI4j8jVnhVRoTNN2Tx',
  uri: 'https://api.example/api_keys/ak_2tEpN0yrxDI4j8jVnhVRoTNN2Tx',
  created_at: '2026-01-05T12:00:00Z',
  description: 'ci cowbell',
  metadata: '',
  owner_id: 'usr_1',
  acl: [],
  key_size: 4096,
  token: null,
};

const matches = (expression: string, obj: Record<string, unknown> = key) => compileFilter(expression, now)(obj);
const problem = (expression: string, obj: Record<string, unknown> = key) => {
  try {
    matches(expression, obj);
  } catch (error) {
    assert.ok(error instanceof FilterProblem, String(error));
    return error.message;
  }
  assert.fail(`expected ${expression} to be refused`);
};

describe('filters (CEL over obj)', () => {
  test('the vendor guide examples evaluate over the response object', () => {
    assert.equal(matches('obj.description.contains("cowbell")'), true);
    assert.equal(matches('obj.owner_id == "usr_1" && (obj.metadata == "" || obj.token == null)'), true);
    assert.equal(matches('obj.description in ["a", "b"] || obj.key_size >= 2048'), true);
    assert.equal(matches('!obj.description.startsWith("ci")'), false);
    assert.equal(matches('size(obj.acl) == 0 && obj.description.endsWith("bell")'), true);
  });

  test('times are timestamps; now() and daysAgo(n) read the injected clock', () => {
    assert.equal(matches('obj.created_at < timestamp("2026-01-05T13:00:00+01:00")'), false);
    assert.equal(matches('obj.created_at >= timestamp("2026-01-05T12:00:00Z")'), true);
    assert.equal(matches('obj.created_at >= daysAgo(7)'), true);
    assert.equal(matches('obj.created_at >= daysAgo(4)'), false);
    assert.equal(matches('obj.created_at < now()'), true);
  });

  test('refuses what the vendor leaves out of its subset', () => {
    assert.match(problem('obj.key_size + 1 > 2'), /'\+' is not supported/);
    assert.match(problem('obj.acl[0] == "x"'), /'a\[index\]' is not supported/);
    assert.match(problem('true ? true : false'), /'cond \? a : b' is not supported/);
    assert.match(problem('obj.description.matches("c.*")'), /matches\(\) is not supported/);
    assert.match(problem('type(obj.id) == string'), /type\(\) is not supported/);
    assert.match(problem('obj.acl.exists(a, a == "x")'), /exists\(\) is not supported/);
    assert.match(problem('key == 1'), /unknown name 'key'/);
  });

  test('substring checks on ids are refused (compare ids with ==)', () => {
    assert.match(problem('obj.id.startsWith("ak_")'), /not allowed on the id field obj\.id/);
    assert.match(problem('obj.owner_id.contains("usr")'), /not allowed on the id field obj\.owner_id/);
    assert.equal(matches('obj.id == "ak_2tEpN0yrxDI4j8jVnhVRoTNN2Tx"'), true);
  });

  test('bad syntax, unknown fields, non-bool results and overlong expressions are problems', () => {
    assert.match(problem('obj.description =='), /Unexpected token/);
    assert.match(problem('obj.nope == "x"'), /No such key: nope/);
    assert.match(problem('obj.description'), /must be a condition/);
    assert.match(problem(' '), /must not be empty/);
  });

  test('the structural bounds are named after lib/limits.ts', () => {
    assert.equal(problem(`obj.description == "${'x'.repeat(MAX_FILTER_LENGTH)}"`), `must be at most ${MAX_FILTER_LENGTH} characters (got ${MAX_FILTER_LENGTH + 21}) (limit filter_length)`);
    assert.equal(problem(Array.from({ length: 150 }, () => 'obj.a==1').join('||')), `more than ${LIMITS.filter_nodes.value} syntax nodes (limit filter_nodes)`);
    assert.equal(problem(`${'('.repeat(40)}true${')'.repeat(40)}`), `nested deeper than ${LIMITS.cel_depth.value} levels (limit cel_depth)`);
    assert.equal(problem(`obj.description in [${Array(101).fill('"x"').join(',')}]`), `more than ${LIMITS.cel_list_elements.value} elements (limit cel_list_elements)`);
    assert.equal(celSyntaxProblem(`{${Array.from({ length: 101 }, (_, i) => `${i}: 1`).join(',')}}`), `more than ${LIMITS.cel_map_entries.value} entries (limit cel_map_entries)`);
  });

  test('a compiled filter knows what an evaluation costs: its syntax nodes, a timestamp() counting 25', () => {
    assert.equal(compileFilter('obj.description == "x"', now).cost, 4);
    assert.equal(compileFilter(Array.from({ length: 40 }, (_, i) => `obj.description == "d${i}"`).join(' || '), now).cost, 199);
    assert.equal(compileFilter('size(obj.acl) > 0 && obj.description.startsWith("ci")', now).cost, 10);
    assert.equal(compileFilter('obj.created_at > timestamp("2026-01-01T00:00:00Z")', now).cost, 3 + 1 + 25);
  });

  test('celSyntaxProblem checks traffic-policy expressions without knowing their variables', () => {
    assert.equal(celSyntaxProblem("req.url.path.startsWith('/api') && conn.client_ip in ['10.0.0.1']"), undefined);
    assert.equal(celSyntaxProblem("inCidrRange(conn.client_ip, '10.0.0.0/8')"), undefined);
    assert.match(celSyntaxProblem('req.url.path ==')!, /Unexpected token/);
  });
});
