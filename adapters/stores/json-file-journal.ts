import { open, readFile, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { StoredRecord } from '../../lib/store.ts';

/**
 * The JSON-file store's write-ahead journal (`<file>.journal`): one JSON line per group commit,
 * `{"seq": n, "changes": [[account, kind, id, record | null], …]}`, appended and fdatasync'ed before
 * the commit is acknowledged. It makes a durable write cost O(change) instead of rewriting the
 * whole file; the store folds the journal into the JSON file from time to time (compaction) and
 * then empties it.
 *
 * Sequence numbers make replay exactly-once: the data file records the last sequence it contains,
 * and replay skips the lines it covers (a crash between compaction and emptying the journal leaves
 * such lines behind). A line is one group of whole transactions, so a transaction is replayed whole
 * or, when its line was torn by a crash, not at all.
 */

export type JournalEntry = readonly [account: string, kind: string, id: string, record: StoredRecord | null];

/** One journal line. `seq` is absent in lines written by Burrow before sequences existed. */
export interface JournalLine {
  seq: number | undefined;
  changes: JournalEntry[];
}

export class Journal {
  readonly path: string;
  /** The open journal file, or its opening: one handle even when two writes start together. */
  #handle: Promise<FileHandle> | undefined;
  #size = 0;

  constructor(path: string) {
    this.path = path;
  }

  /** Bytes currently in the journal. */
  get size(): number {
    return this.#size;
  }

  /**
   * The committed lines in the journal, oldest first. A last line without its newline is a write
   * that was never acknowledged (the process died mid-append) and is ignored; any other bad line
   * means damage, reported without touching the file.
   */
  async read(): Promise<JournalLine[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const complete = text.split('\n').slice(0, -1);
    this.#size = Buffer.byteLength(complete.map((line) => `${line}\n`).join(''));
    return complete.map((text, index) => {
      let line: unknown;
      try {
        line = JSON.parse(text);
      } catch (error) {
        throw this.#corrupt(index, (error as Error).message);
      }
      const { seq, changes } = (Array.isArray(line) ? { seq: undefined, changes: line } : (line ?? {})) as { seq?: number; changes?: unknown };
      if (!(seq === undefined ? Array.isArray(line) : Number.isSafeInteger(seq)) || !Array.isArray(changes)) throw this.#corrupt(index, 'not a journal line');
      return {
        seq,
        changes: changes.map((change, n) => {
          const entry = journalEntry(change);
          if (!entry) throw this.#corrupt(index, `change ${n + 1} is not [account, kind, id, record or null] with the record's own id`);
          return entry;
        }),
      };
    });
  }

  #corrupt(index: number, reason: string): Error {
    return new Error(`journal ${this.path} is corrupt at line ${index + 1}: ${reason}. Burrow left it untouched; restore it or move it away to start from the data file alone`);
  }

  #open(): Promise<FileHandle> {
    this.#handle ??= this.#openFile().catch((error: unknown) => {
      this.#handle = undefined;
      throw error;
    });
    return this.#handle;
  }

  async #openFile(): Promise<FileHandle> {
    let created = true;
    const handle = await open(this.path, 'ax', 0o600).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
      created = false;
      return open(this.path, 'a', 0o600);
    });
    try {
      // A new file is durable only once its directory entry is.
      if (created) await syncDirectory(this.path);
      // A torn tail from a crash is cut off before anything is appended after it.
      else await handle.truncate(this.#size);
    } catch (error) {
      await handle.close();
      throw error;
    }
    return handle;
  }

  /** Appends one line and makes it durable; on failure the journal is cut back to its old end. */
  async append(seq: number, changes: readonly JournalEntry[]): Promise<void> {
    const handle = await this.#open();
    const line = Buffer.from(`${JSON.stringify({ seq, changes })}\n`, 'utf8');
    try {
      await handle.write(line, 0, line.length, null);
      await handle.datasync();
      this.#size += line.length;
    } catch (error) {
      await handle.truncate(this.#size).catch(() => undefined);
      throw error;
    }
  }

  /** Empties the journal once its content is in the data file. */
  async clear(): Promise<void> {
    const handle = await this.#open();
    await handle.truncate(0);
    await handle.sync();
    this.#size = 0;
  }

  async close(): Promise<void> {
    const opening = this.#handle;
    this.#handle = undefined;
    await (await opening?.catch(() => undefined))?.close();
  }
}

/**
 * A change as the journal holds it. Lines written before version 3 of the data file hold
 * `[scopeKey, id, record]`, the scope key being account and kind joined by a NUL; read as such.
 */
function journalEntry(change: unknown): JournalEntry | undefined {
  if (!Array.isArray(change)) return undefined;
  let entry: unknown[] = change;
  if (change.length === 3 && typeof change[0] === 'string') {
    const cut = change[0].indexOf('\u0000');
    if (cut < 0) return undefined;
    entry = [change[0].slice(0, cut), change[0].slice(cut + 1), change[1], change[2]];
  }
  const [account, kind, id, record] = entry;
  if (entry.length !== 4 || typeof account !== 'string' || typeof kind !== 'string' || typeof id !== 'string') return undefined;
  if (record !== null && !(isPlainRecord(record) && record.id === id)) return undefined;
  return [account, kind, id, record as StoredRecord | null];
}

/** A JSON object (not an array) with a string id, as every stored record is. */
export function isPlainRecord(value: unknown): value is StoredRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { id?: unknown }).id === 'string';
}

/** fsyncs the directory holding `path`, so a file created or renamed there survives power loss. */
export async function syncDirectory(path: string): Promise<void> {
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
