import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { REPO } from './packed.ts';

const run = promisify(execFile);

// A dry run reads the lockfile and checks every package's engines against this Node (20 on CI)
// without installing anything; a development dependency that wants Node 22 is an EBADENGINE here.
test("`npm ci` of this repository's lockfile warns of nothing on this Node (a dry run)", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'burrow-lockfile-'));
  try {
    for (const name of ['package.json', 'package-lock.json']) copyFileSync(join(REPO, name), join(dir, name));
    const { stdout, stderr } = await run('npm', ['ci', '--dry-run', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], { cwd: dir });
    const warnings = `${stdout}\n${stderr}`.split('\n').filter((line) => /^npm warn/i.test(line) && !/Unknown (user|env) config/.test(line));
    assert.deepEqual(warnings, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
