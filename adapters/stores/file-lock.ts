import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readFileSync, readlinkSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * An exclusive lock on a file that the kernel holds for this process: flock(2) on Linux, O_EXLOCK
 * on macOS and the BSDs, an unshared open on Windows.
 *
 * Why a kernel lock and not a pid in the file: the kernel releases the lock when the holder dies
 * (its descriptors close as its last thread exits, before anyone reaps it), so a `kill -9` is
 * followed by a free lock within milliseconds, whoever reaps the corpse and whenever. No pid is ever compared, so a restarted server that
 * gets the dead one's pid (a fresh pid namespace in a container), a pid reused by an unrelated
 * process, or two containers sharing a volume with different pid namespaces cannot confuse it; and
 * taking the lock is one atomic step, so two processes racing for a stale lock file cannot both
 * win. A heartbeat lock (mkdir + mtime, as in proper-lockfile) would refuse a restart for its stale
 * period after a kill -9 and hand the lock to a second writer when a live holder stalls longer.
 *
 * Node has no flock(); on Linux the lock is taken by `flock(1)` (util-linux or busybox) on a
 * descriptor this process shares with it: flock(2) locks belong to the open file description, so
 * the lock stays ours after the helper exits and goes with our last descriptor. The file itself
 * only says who holds it (pid, host, start time), for the refusal message.
 */

/** Who holds a lock, as its holder wrote it into the lock file. */
export interface LockHolder {
  pid?: number;
  host?: string;
  since?: string;
  /** Where /proc exists: the holder's start time (clock ticks since boot) and pid namespace. */
  start?: string;
  pidns?: string;
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
  if (holder?.pid === undefined) return 'a process that has not written its name';
  return `pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}${holder.since ? `, since ${holder.since}` : ''}`;
}

/**
 * Takes the exclusive lock on `path` (created 0600 when missing), retrying for `waitMs`.
 * Rejects with FileLockedError while another process holds it.
 */
export async function lockFile(path: string, options: LockOptions = {}): Promise<FileLock> {
  const deadline = Date.now() + (options.waitMs ?? LOCK_WAIT_MS);
  const holder = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString(), ...procIdentity('self') } satisfies LockHolder);
  for (;;) {
    const fd = await openLocked(path, holder);
    if (fd !== undefined) {
      // The previous holder removes the file while it still holds it; a lock on the removed file
      // is worth nothing, so the file is opened again.
      if (sameFile(fd, path)) return holdLock(path, fd);
      closeSync(fd);
      continue;
    }
    if (Date.now() >= deadline) throw new FileLockedError(path, await readHolder(path));
    await sleep(RETRY_EVERY_MS);
  }
}

/**
 * Opens `path`, takes the kernel lock and writes `holder` into the file: the descriptor, or
 * undefined when the lock is held.
 */
async function openLocked(path: string, holder: string): Promise<number | undefined> {
  const flags = EXCLUSIVE_OPEN_FLAGS[process.platform];
  if (flags !== undefined) {
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDWR | constants.O_CREAT | flags, 0o600);
    } catch (error) {
      if (['EAGAIN', 'EWOULDBLOCK', 'EBUSY'].includes((error as NodeJS.ErrnoException).code ?? '')) return undefined;
      throw error;
    }
    ftruncateSync(fd, 0);
    writeSync(fd, holder, 0);
    return fd;
  }
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  try {
    if (await flock(fd, holder)) return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  closeSync(fd);
  return undefined;
}

/**
 * Runs `flock -n -x 3` on our descriptor, then (in the same helper, right after) replaces the
 * file's content with `holder`: a process refused a moment later finds the new holder's name, not
 * that of a killed one. Resolves true when the lock is now ours.
 */
function flock(fd: number, holder: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const script = 'flock -n -x 3 || exit $?; printf "%s" "$1" > /dev/fd/3';
    const child = spawn('sh', ['-c', script, 'burrow-lock', holder], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(true);
      // A held lock is a silent exit 1; other failures (a file system without locks) say why.
      else if (code === 1 && stderr.trim() === '') resolve(false);
      else if (code === 127) reject(new Error('the flock command is missing: install util-linux (Debian, Ubuntu, Fedora) or busybox (Alpine) to lock the data file'));
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

/**
 * Who holds the lock, for the refusal message only (the lock itself never looks at pids). A holder
 * that has just taken the lock gets a moment to write its name over that of a killed one; a name
 * is taken as stale when /proc shows that process gone, a zombie, or started at another time.
 */
async function readHolder(path: string): Promise<LockHolder | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      const holder = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
      if (typeof holder === 'object' && holder !== null && !isStale(holder)) return holder;
    } catch {
      // empty or half-written: the holder is writing it now
    }
    if (attempt === 25) return undefined;
    await sleep(RETRY_EVERY_MS);
  }
}

function isStale(holder: LockHolder): boolean {
  const self = procIdentity('self');
  if (!self || holder.start === undefined || holder.pid === undefined || holder.pidns !== self.pidns || holder.host !== hostname()) return false;
  return procIdentity(holder.pid)?.start !== holder.start;
}

/** A live (not zombie) process's start time and pid namespace from /proc, where there is one. */
function procIdentity(pid: number | 'self'): { start: string; pidns: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the parenthesised command name: state (field 3) … starttime (field 22).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
    return { start: fields[19]!, pidns: readlinkSync(`/proc/${pid}/ns/pid`) };
  } catch {
    return undefined;
  }
}
