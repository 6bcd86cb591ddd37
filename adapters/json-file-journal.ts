import { open, readFile, type FileHandle } from 'node:fs/promises';
import type { StoredRecord } from '../lib/store.ts';

/**
 * The JSON-file store's write-ahead journal (`<file>.journal`): one JSON line per group commit,
 * `[[scopeKey, id, record | null], …]`, appended and fdatasync'ed before the commit is
 * acknowledged. It makes a durable write cost O(change) instead of rewriting the whole file; the
 * store folds the journal into the JSON file from time to time (compaction) and then empties it.
 * Replaying is idempotent, so a crash between compaction and truncation loses nothing.
 */

export type JournalEntry = readonly [key: string, id: string, record: StoredRecord | null];

export class Journal {
  readonly path: string;
  #handle: FileHandle | undefined;
  #size = 0;

  constructor(path: string) {
    this.path = path;
  }

  /** Bytes currently in the journal. */
  get size(): number {
    return this.#size;
  }

  /**
   * The committed batches in the journal, oldest first. A last line without its newline is a
   * write that was never acknowledged (the process died mid-append) and is ignored; any other bad
   * line means damage, reported without touching the file.
   */
  async read(): Promise<JournalEntry[][]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const lines = text.split('\n');
    const complete = lines.slice(0, -1);
    this.#size = Buffer.byteLength(complete.map((line) => `${line}\n`).join(''));
    return complete.map((line, index) => {
      try {
        return JSON.parse(line) as JournalEntry[];
      } catch (error) {
        throw new Error(`journal ${this.path} is corrupt at line ${index + 1}: ${(error as Error).message}. Burrow left it untouched; restore it or move it away to start from the data file alone`);
      }
    });
  }

  async #open(): Promise<FileHandle> {
    if (!this.#handle) {
      this.#handle = await open(this.path, 'a');
      // A torn tail from a crash is cut off before anything is appended after it.
      await this.#handle.truncate(this.#size);
    }
    return this.#handle;
  }

  /** Appends one batch and makes it durable; on failure the journal is cut back to its old end. */
  async append(entries: readonly JournalEntry[]): Promise<void> {
    const handle = await this.#open();
    const line = Buffer.from(`${JSON.stringify(entries)}\n`, 'utf8');
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
    await this.#handle?.close();
    this.#handle = undefined;
  }
}
