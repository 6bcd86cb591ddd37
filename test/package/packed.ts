/**
 * Packs Burrow with `npm pack` (which builds dist/ through `prepack`) and installs the tarball into
 * an empty project, as a user would, but offline: the project gets a lockfile made from this
 * repository's own, so `npm ci --offline` takes every dependency from the npm cache that this
 * repository's `npm ci` filled.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const REPO = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

export interface PackedInstall {
  /** The empty project Burrow was installed into. */
  dir: string;
  /** The tarball `npm pack` made. */
  tarball: string;
  /** The paths `npm pack` put in the tarball. */
  files: string[];
  /** The bytes of every file in the tarball, unpacked (what an install puts on disk for Burrow itself). */
  unpackedSize: number;
  /** `node_modules/.bin/burrow` of the project. */
  bin: string;
  /** What `npm ci` warned of (not counting warnings about this machine's own npm configuration). */
  installWarnings: string[];
  remove(): void;
}

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  link?: boolean;
  [key: string]: unknown;
}

export async function installPackedBurrow(): Promise<PackedInstall> {
  const dir = mkdtempSync(join(tmpdir(), 'burrow-packed-'));
  try {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: REPO, maxBuffer: 16 * 1024 * 1024 });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [{ filename: string; unpackedSize: number; files: { path: string }[] }];
    const tarball = `file:${packed.filename}`;
    const repoLock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const root = repoLock.packages['']!;
    const name = root.name as string;
    const packages: Record<string, unknown> = {
      '': { name: 'app', dependencies: { [name]: tarball } },
      [`node_modules/${name}`]: {
        version: root.version,
        resolved: tarball,
        integrity: `sha512-${createHash('sha512').update(readFileSync(join(dir, packed.filename))).digest('base64')}`,
        dependencies: root.dependencies,
        bin: root.bin,
        engines: root.engines,
      },
    };
    for (const [path, entry] of Object.entries(repoLock.packages)) {
      if (path.startsWith('node_modules/') && !entry.dev && !entry.devOptional && !entry.link) packages[path] = entry;
    }
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { [name]: tarball } }));
    writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name: 'app', lockfileVersion: 3, requires: true, packages }));
    const installed = await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: dir });
    return {
      dir,
      tarball: join(dir, packed.filename),
      files: packed.files.map((file) => file.path),
      unpackedSize: packed.unpackedSize,
      bin: join(dir, 'node_modules', '.bin', 'burrow'),
      installWarnings: installed.stderr.split('\n').filter((line) => /^npm warn/.test(line) && !/Unknown (user|env) config/.test(line)),
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
