import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * An exclusive lock on a file that the kernel holds for this process: flock(2) on Linux, O_EXLOCK
 * on macOS and the BSDs, an unshared open on Windows.
 *
 * Why a kernel lock and not a pid in the file: the kernel releases the lock when the holder dies
 * (its descriptors close before it turns into a zombie), so a `kill -9` is followed by a free lock
 * at once, whoever reaps the corpse and whenever. No pid is ever compared, so a restarted server that
 * gets the dead one's pid (a fresh pid namespace in a container), a pid reused by an unrelated
 * process, or two containers sharing a volume with different pid namespaces cannot confuse it; and
 * taking the lock is one atomic step, so two processes racing for a stale lock file cannot both
 * win. A heartbeat lock (mkdir + mtime, as in proper-lockfile) would refuse a restart for its stale
 * period after a kill -9 and hand the lock to a second writer when a live holder stalls longer.
 *
 * Node has no flock(); on Linux the lock is taken by util-linux `flock(1)` on a descriptor this
 * process shares with it: flock(2) locks belong to the open file description, so the lock stays
 * ours after the helper exits and goes with our last descriptor. The file itself only says who holds
 * it (pid, host, start time), for the refusal message.
 */

/** Who holds a lock, as its holder wrote it into the lock file. */
export interface LockHolder {
  pid?: number;
  host?: string;
  since?: string;
}

/** The lock is held by another live process (or another open in this one). */
export class FileLockedError extends Error {
  readonly holder: LockHolder | undefined;
  constructor(path: string, holder: LockHolder | undefined) {
    super(`${path} is locked by ${describeHolder(holder)}`);
    this.name = 'FileLockedError';
    this.holder = holder;
  }
}

export interface FileLock {
  readonly path: string;
  /** Removes the lock file and lets the lock go. */
  release(): void;
}

export interface LockOptions {
  /** How long a held lock is retried before giving up, for a holder that is still exiting. */
  waitMs?: number;
}

/** How long `lockFile` waits for a holder that is shutting down, by default. */
export const LOCK_WAIT_MS = 1000;
const RETRY_EVERY_MS = 20;
/** O_EXLOCK | O_NONBLOCK on macOS and the BSDs; libuv's exclusive-sharing flag on Windows. */
const EXCLUSIVE_OPEN_FLAGS: Partial<Record<NodeJS.Platform, number>> = { darwin: 0x20 | 0x4, freebsd: 0x20 | 0x4, openbsd: 0x20 | 0x4, win32: 0x10000000 };

export function describeHolder(holder: LockHolder | undefined): string {
  if (holder?.pid === undefined) return 'another process';
  return `pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}${holder.since ? `, since ${holder.since}` : ''}`;
}

/**
 * Takes the exclusive lock on `path` (created 0600 when missing), retrying for `waitMs`.
 * Rejects with FileLockedError while another process holds it.
 */
export async function lockFile(path: string, options: LockOptions = {}): Promise<FileLock> {
  const deadline = Date.now() + (options.waitMs ?? LOCK_WAIT_MS);
  for (;;) {
    const fd = await openLocked(path);
    if (fd !== undefined) {
      // The previous holder removes the file while it still holds it; a lock on the removed file
      // is worth nothing, so the file is opened again.
      if (sameFile(fd, path)) return holdLock(path, fd);
      closeSync(fd);
      continue;
    }
    if (Date.now() >= deadline) throw new FileLockedError(path, readHolder(path));
    await sleep(RETRY_EVERY_MS);
  }
}

/** Opens `path` and takes the kernel lock: the descriptor, or undefined when the lock is held. */
async function openLocked(path: string): Promise<number | undefined> {
  const flags = EXCLUSIVE_OPEN_FLAGS[process.platform];
  if (flags !== undefined) {
    try {
      return openSync(path, constants.O_RDWR | constants.O_CREAT | flags, 0o600);
    } catch (error) {
      if (['EAGAIN', 'EWOULDBLOCK', 'EBUSY'].includes((error as NodeJS.ErrnoException).code ?? '')) return undefined;
      throw error;
    }
  }
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  try {
    if (await flock(fd)) return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  closeSync(fd);
  return undefined;
}

/** Runs `flock -n -x 3` on our descriptor: true when the lock is now ours. */
function flock(fd: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn('flock', ['-n', '-x', '3'], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'ENOENT' ? new Error('the flock command is missing: install util-linux (Debian, Ubuntu, Fedora) or busybox (Alpine) to lock the data file') : error),
    );
    child.once('close', (code) => {
      if (code === 0) resolve(true);
      else if (code === 1) resolve(false);
      else reject(new Error(`flock failed (exit ${code}): ${stderr.trim()}`));
    });
  });
}

function sameFile(fd: number, path: string): boolean {
  if (process.platform === 'win32') return true;
  try {
    const held = fstatSync(fd);
    const named = statSync(path);
    return held.ino === named.ino && held.dev === named.dev;
  } catch {
    return false;
  }
}

function holdLock(path: string, fd: number): FileLock {
  const holder: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  ftruncateSync(fd, 0);
  writeSync(fd, JSON.stringify(holder), 0);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.removeListener('exit', release);
    // Removed while still held (see lockFile); on Windows an unshared file can only go once closed.
    if (process.platform !== 'win32') unlinkQuietly(path);
    closeSync(fd);
    if (process.platform === 'win32') unlinkQuietly(path);
  };
  process.once('exit', release);
  return { path, release };
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone, or now someone else's
  }
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
    return typeof holder === 'object' && holder !== null ? holder : undefined;
  } catch {
    return undefined;
  }
}
