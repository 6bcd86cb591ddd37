/**
 * Packs Burrow with `npm pack` (which builds dist/ through `prepack`) and installs the tarball into
 * an empty project with the command a user types, `npm install ./burrow-tunnels-….tgz`, preferring
 * the npm cache that this repository's `npm ci` filled (the registry is asked only for what the
 * cache lacks). What npm prints there is what a user sees: its warnings are kept.
 */
import { execFile } from 'node:child_process';
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
  /** What `npm install` warned of (not counting warnings about this machine's own npm configuration). */
  installWarnings: string[];
  remove(): void;
}

export async function installPackedBurrow(): Promise<PackedInstall> {
  const dir = mkdtempSync(join(tmpdir(), 'burrow-packed-'));
  try {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: REPO, maxBuffer: 16 * 1024 * 1024 });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [{ filename: string; unpackedSize: number; files: { path: string }[] }];
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    const installed = await run('npm', ['install', `./${packed.filename}`, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir });
    return {
      dir,
      tarball: join(dir, packed.filename),
      files: packed.files.map((file) => file.path),
      unpackedSize: packed.unpackedSize,
      bin: join(dir, 'node_modules', '.bin', 'burrow'),
      installWarnings: `${installed.stdout}\n${installed.stderr}`.split('\n').filter((line) => /^npm warn/i.test(line) && !/Unknown (user|env) config/.test(line)),
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
