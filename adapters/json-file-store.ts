import { closeSync, fsyncSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { open, readFile, rename } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Low, type Adapter } from 'lowdb';
import { StoreWriteError, type StoredRecord } from '../lib/store.ts';
import { Journal, type JournalEntry } from './json-file-journal.ts';
import { MemoryStore, type Change } from './memory-store.ts';

/**
 * The JSON-file store: the memory store's state, persisted to one JSON file through lowdb, plus a
 * write-ahead journal (`<file>.journal`, see json-file-journal.ts).
 *
 * A transaction resolves only once it is on disk: appended to the journal and fdatasync'ed, or
 * part of a full file write (temp file, fsync, rename, fsync of the directory). Transactions that
 * commit while a write is in flight are grouped into the next one. When the journal outgrows a
 * fraction of the file, the state is written to the JSON file and the journal emptied, so the file
 * stays the readable truth and a write costs O(change), amortised. If a write fails, every change
 * not yet on disk is reverted in memory and its transaction rejects with a StoreWriteError; what
 * is on disk stays intact. The file is held with `<file>.lock` (pid), and a corrupt or
 * unknown-version file is refused without being touched.
 */

export const FILE_FORMAT = 'burrow-store';
export const FILE_VERSION = 1;
/** The journal is folded into the file once it passes half the file's size, and at least this. */
const COMPACT_MIN_BYTES = 256 * 1024;

type Scopes = Record<string, Record<string, Record<string, StoredRecord>>>;
interface FileData {
  format: string;
  version: number;
  scopes: Scopes;
}

export interface JsonFileStoreOptions {
  /** Called before each file write; tests throw here to simulate a full or read-only disk. */
  beforeWrite?: () => void | Promise<void>;
}

/** lowdb adapter writing atomically and durably; refuses files it does not understand. */
class DurableJsonFile implements Adapter<FileData> {
  readonly #path: string;
  constructor(path: string) {
    this.#path = path;
  }

  async read(): Promise<FileData | null> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (error) {
      throw new Error(`data file ${this.#path} is corrupt: ${(error as Error).message}. Burrow left it untouched; restore it or start with another file`);
    }
    const file = data as Partial<FileData> | null;
    if (!file || typeof file !== 'object' || file.format !== FILE_FORMAT) {
      throw new Error(`data file ${this.#path} is not a Burrow data file (no "format": "${FILE_FORMAT}"); Burrow left it untouched`);
    }
    if (file.version !== FILE_VERSION) {
      throw new Error(`data file ${this.#path} has format version ${JSON.stringify(file.version)}; this Burrow reads version ${FILE_VERSION} only`);
    }
    if (!file.scopes || typeof file.scopes !== 'object') throw new Error(`data file ${this.#path} is corrupt: "scopes" is missing`);
    return file as FileData;
  }

  async write(data: FileData): Promise<void> {
    const temp = join(dirname(this.#path), `.${basename(this.#path)}.${process.pid}.tmp`);
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(JSON.stringify(data));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, this.#path);
    const dir = await open(dirname(this.#path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}

interface Waiting {
  changes: readonly Change[];
  resolve: () => void;
  reject: (error: Error) => void;
}

export class JsonFileStore extends MemoryStore {
  override readonly name = 'json-file';
  readonly path: string;
  /** How many file writes were made (group commit makes this far lower than commits). */
  writes = 0;
  readonly #db: Low<FileData>;
  readonly #options: JsonFileStoreOptions;
  readonly #lock: string;
  readonly #journal: Journal;
  /** Bytes of the last full file write; the journal is folded in when it passes half of it. */
  #fileBytes = 0;
  #fileExists = false;
  #waiting: Waiting[] = [];
  #flushing: Promise<void> | undefined;
  #closed = false;
  readonly #releaseOnExit = () => this.#releaseLock();

  private constructor(path: string, options: JsonFileStoreOptions) {
    super();
    this.path = path;
    this.#options = options;
    this.#lock = `${path}.lock`;
    this.#db = new Low(new DurableJsonFile(path), { format: FILE_FORMAT, version: FILE_VERSION, scopes: {} });
    this.#journal = new Journal(`${path}.journal`);
  }

  /** Opens (or creates on first write) the data file at `path`. */
  static async open(path: string, options: JsonFileStoreOptions = {}): Promise<JsonFileStore> {
    const store = new JsonFileStore(path, options);
    store.#acquireLock();
    try {
      await store.#db.read();
      store.#fileExists = (await readFile(path).then(() => true, () => false));
      store.#fileBytes = store.#fileExists ? JSON.stringify(store.#db.data).length : 0;
      for (const batch of await store.#journal.read()) {
        for (const [key, id, record] of batch) {
          const [account, kind] = key.split('\u0000') as [string, string];
          const records = ((store.#db.data.scopes[account] ??= {})[kind] ??= {});
          if (record === null) delete records[id];
          else records[id] = record;
        }
      }
      for (const [account, kinds] of Object.entries(store.#db.data.scopes)) {
        for (const [kind, records] of Object.entries(kinds)) store.load({ account, kind }, Object.values(records));
      }
    } catch (error) {
      store.#releaseLock();
      throw error;
    }
    return store;
  }

  protected override afterCommit(changes: readonly Change[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ changes, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#flushing) return;
    this.#flushing = this.#flush().finally(() => {
      this.#flushing = undefined;
      if (this.#waiting.length > 0) this.#schedule();
    });
  }

  async #flush(): Promise<void> {
    while (this.#waiting.length > 0) {
      const batch = this.#waiting;
      this.#waiting = [];
      try {
        await this.#options.beforeWrite?.();
        if (!this.#fileExists || this.#journal.size > Math.max(COMPACT_MIN_BYTES, this.#fileBytes / 2)) {
          await this.#writeFile();
        } else {
          await this.#journal.append(batch.flatMap((waiting) => waiting.changes.map((c): JournalEntry => [c.key, c.id, c.record ?? null])));
        }
        this.writes++;
        for (const waiting of batch) waiting.resolve();
      } catch (cause) {
        const code = (cause as NodeJS.ErrnoException).code;
        const error = new StoreWriteError(`the data file ${this.path} could not be written (${code ?? (cause as Error).message})`, { cause });
        await this.exclusive(() => {
          const failed = [...batch, ...this.#waiting];
          this.#waiting = [];
          for (let i = failed.length - 1; i >= 0; i--) this.revert(failed[i]!.changes);
          for (const waiting of failed) waiting.reject(error);
        });
      }
    }
  }

  /** Writes the whole state to the JSON file, then empties the journal it now contains. */
  async #writeFile(): Promise<void> {
    this.#db.data = { format: FILE_FORMAT, version: FILE_VERSION, scopes: this.#snapshot() };
    await this.#db.write();
    this.#fileExists = true;
    this.#fileBytes = JSON.stringify(this.#db.data).length;
    await this.#journal.clear();
  }

  #snapshot(): Scopes {
    const scopes: Scopes = {};
    for (const [key, data] of this.entries()) {
      if (data.records.size === 0) continue;
      const [account, kind] = key.split('\u0000') as [string, string];
      (scopes[account] ??= {})[kind] = Object.fromEntries(data.records);
    }
    return scopes;
  }

  #acquireLock(): void {
    const claim = () => writeFileSync(this.#lock, JSON.stringify({ pid: process.pid, host: hostname() }), { flag: 'wx' });
    try {
      claim();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new Error(`cannot create data file ${this.path}: the directory ${dirname(this.path)} does not exist`);
      if (code !== 'EEXIST') throw error;
      const holder = readLockHolder(this.#lock);
      if (holder && isAlive(holder.pid)) {
        throw new Error(`data file ${this.path} is in use by another Burrow process (pid ${holder.pid}); stop it or use another file`);
      }
      unlinkSync(this.#lock);
      claim();
    }
    const fd = openSync(this.#lock, 'r');
    fsyncSync(fd);
    closeSync(fd);
    process.once('exit', this.#releaseOnExit);
  }

  #releaseLock(): void {
    process.removeListener('exit', this.#releaseOnExit);
    try {
      unlinkSync(this.#lock);
    } catch {
      // already gone
    }
  }

  override async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await super.close();
    await this.#flushing;
    // Leave a compact file behind: the journal's content goes into the JSON file on a clean stop.
    if (this.#journal.size > 0) await this.#writeFile().catch(() => undefined);
    await this.#journal.close();
    this.#releaseLock();
  }
}

function readLockHolder(path: string): { pid: number } | undefined {
  try {
    const holder = JSON.parse(readFileSync(path, 'utf8')) as { pid?: unknown };
    return typeof holder.pid === 'number' ? { pid: holder.pid } : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Opens the JSON-file store at `path`; see JsonFileStore for its guarantees. */
export function openJsonFileStore(path: string, options?: JsonFileStoreOptions): Promise<JsonFileStore> {
  return JsonFileStore.open(path, options);
}

