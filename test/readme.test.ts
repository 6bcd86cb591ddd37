import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { allErrors } from '../lib/index.ts';
import { LIMITS, limitErrors, type LimitName } from '../lib/limits.ts';

/**
 * The embedding examples (docs/embedding.md, and the first of them in the README) are the files in
 * test/examples/, verbatim, and each runs here: what a newcomer copies is what the suite checks.
 */

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const EXAMPLES = ['node-http', 'express', 'fastify', 'hono'] as const;
const SHOWN: Readonly<Record<string, readonly string[]>> = {
  'README.md': ['node-http'],
  'docs/embedding.md': [...EXAMPLES, 'in-process.test'],
};

describe('documented examples', () => {
  for (const [doc, names] of Object.entries(SHOWN)) {
    for (const name of names) {
      test(`test/examples/${name}.ts appears in ${doc} verbatim`, () => {
        assert.ok(read(doc).includes(read(`test/examples/${name}.ts`).trim()), `${doc} lacks the current text of test/examples/${name}.ts`);
      });
    }
  }

  for (const name of EXAMPLES) {
    test(`the ${name} example serves the API`, async () => {
      const { start } = (await import(`./examples/${name}.ts`)) as { start: () => Promise<{ url: string; token: string; close: () => unknown }> };
      const server = await start();
      try {
        const headers = { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' };
        const created = await fetch(`${server.url}/api_keys`, { method: 'POST', headers, body: JSON.stringify({ description: name }) });
        assert.equal(created.status, 201);
        const key = (await created.json()) as { id: string; uri: string };
        const got = await fetch(`${server.url}/api_keys/${key.id}`, { headers });
        assert.equal(((await got.json()) as { description: string }).description, name);
        assert.equal(key.uri, `${server.url}/api_keys/${key.id}`);
        assert.equal((await fetch(key.uri, { headers })).status, 200);
        // Page by page, one key a page, following next_page_uri where the example serves Burrow.
        const seen: string[] = [];
        for (let next: string | null = `${server.url}/api_keys?limit=1`; next !== null; ) {
          const page: Response = await fetch(next, { headers });
          assert.equal(page.status, 200, next);
          const body = (await page.json()) as { keys: { id: string }[]; next_page_uri: string | null };
          seen.push(...body.keys.map((k) => k.id));
          next = body.next_page_uri;
        }
        assert.equal(seen.length, 2);
        assert.ok(seen.includes(key.id));
        const bad = await fetch(`${server.url}/api_keys`, { method: 'POST', headers, body: '{not json' });
        assert.equal(bad.status, 400);
        assert.equal(((await bad.json()) as { error_code: string }).error_code, 'ERR_BURROW_213');
        assert.equal((await fetch(`${server.url}/api_keys/${key.id}`, { method: 'DELETE', headers })).status, 204);
      } finally {
        await server.close();
      }
    });
  }
});

describe('docs/limits.md', () => {
  test('the "Limits" table lists every row of lib/limits.ts, in order, with its value, what it bounds and its error', () => {
    const rows = (Object.keys(LIMITS) as LimitName[]).map((name) => {
      const { value, unit, bounds } = LIMITS[name];
      return `| \`${name}\` | ${value.toLocaleString('en-US')} ${unit} | ${bounds} | ${limitErrors(name, allErrors())} |`;
    });
    const expected = ['| Limit | Value | Bounds | Error |', '|---|---|---|---|', ...rows].join('\n');
    const section = read('docs/limits.md');
    const table = section.slice(section.indexOf('| Limit |'), section.indexOf('\n\n', section.indexOf('| Limit |')));
    assert.equal(table, expected, `docs/limits.md's table should read:\n${expected}`);
  });
});
