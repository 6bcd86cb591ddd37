import { readFileSync } from 'node:fs';

/**
 * Ends the server when the process that launched it goes away, so that a killed test runner,
 * `npx burrow` or `npm start` never leaves a server behind, adopted by pid 1.
 *
 * The launcher is the nearest ancestor that is not a shell: `npx burrow` runs npm → sh → node, and
 * a signal to npm reaches neither of the others. So the watch holds the chain from the parent up
 * to that ancestor, and the launcher is gone once any link of it has a new parent (a process whose
 * parent exits is re-parented at once, even while the dead parent waits to be reaped as a zombie,
 * so this never reads a pid that may have been reused). It reads `/proc/<pid>/stat` on Linux;
 * elsewhere it watches the parent alone. A server started by pid 1 (a container's entry point, a
 * service manager) has no launcher to lose.
 */

/** How often the chain is read: the server stops within this and its shutdown of a launcher's exit. */
export const LAUNCHER_POLL_MS = 250;

/** Shells a launcher runs a command through (`sh -c`): they are links of the chain, not the launcher. */
const SHELLS = new Set(['sh', 'dash', 'bash', 'ash', 'zsh', 'busybox']);

interface Link {
  readonly pid: number;
  /** Its parent when the watch began. */
  readonly ppid: number;
}

/** The command name and parent pid of a process, or undefined when it is gone or /proc is absent. */
function stat(pid: number): { comm: string; ppid: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split at the last ')'.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const ppid = Number(text.slice(close + 2).split(' ')[1]);
  return { comm, ppid };
}

/** The links from the parent to the launcher, each with its parent now. */
function chainToLauncher(): Link[] {
  const links: Link[] = [];
  for (let pid = process.ppid; pid > 1 && links.length < 16; ) {
    const info = stat(pid);
    if (!info) break;
    links.push({ pid, ppid: info.ppid });
    if (!SHELLS.has(info.comm)) break;
    pid = info.ppid;
  }
  return links;
}

/** The launcher as the server found it when it started; `watch` once it serves. */
export interface Launcher {
  /** Calls `onGone` once when the launcher has gone (at the first look if it went already); answers a function that stops watching. */
  watch(onGone: () => void): () => void;
}

/**
 * Reads the chain to the launcher now, at the very start: a launcher killed while the server was
 * still starting (a slow store, a loaded machine) must still count as gone, and a chain first read
 * after that would already end at pid 1 through the shell, with no launcher left to lose. Nothing
 * is watched when the server's parent is pid 1 (or none).
 */
export function captureLauncher(): Launcher {
  const parent = process.ppid;
  const links = parent <= 1 ? undefined : chainToLauncher();
  return {
    watch(onGone) {
      if (!links) return () => {};
      const gone = () => process.ppid !== parent || links.slice(0, -1).some((link) => stat(link.pid)?.ppid !== link.ppid);
      const timer = setInterval(() => {
        if (!gone()) return;
        clearInterval(timer);
        onGone();
      }, LAUNCHER_POLL_MS);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}
