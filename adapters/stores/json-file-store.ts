import { chmod, open, readFile, rename, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Low, type Adapter } from 'lowdb';
import { StoreWriteError, type Scope, type StoredRecord } from '../../lib/store.ts';
import { describeHolder, FileLockedError, lockFile, type FileLock } from './file-lock.ts';
import { isPlainRecord, Journal, syncDirectory, type JournalEntry } from './json-file-journal.ts';
import { MemoryStore, type Change } from './memory-store.ts';

/**
 * The JSON-file store: the memory store's state, persisted to one JSON file through lowdb, plus a
 * write-ahead journal (`<file>.journal`, see json-file-journal.ts).
 *
 * A transaction resolves only once it is on disk: appended to the journal and fdatasync'ed, or
 * part of a full file write (temp file, fsync, rename, fsync of the directory). Transactions that
 * commit while a write is in flight are grouped into the next one. When the journal outgrows a
 * fraction of the file, the state is written to the JSON file and the journal emptied, so the file
 * stays the readable truth and a write costs O(change), amortised. Every write carries the next
 * sequence number; the file records the last one it contains, so journal lines it covers are never
 * replayed over it. If a write fails, every change not yet on disk is reverted in memory and its
 * transaction rejects with a StoreWriteError; what is on disk stays intact. The file is held with
 * a kernel lock on `<file>.lock` (file-lock.ts), and a corrupt or unknown-version file is refused
 * without being touched, as is one whose records are not objects under their own ids (a token
 * index damaged that way would make keys stop authenticating without a word). The data file and
 * the journal are made 0600 when opened and created 0600: the state holds token hashes, sealed
 * secrets and CA private keys.
 */

export const FILE_FORMAT = 'burrow-store';
/**
 * Version 2 added `sequence`; version 3 journal lines name account and kind apart (earlier ones
 * joined them with a NUL, which an account or kind may hold). Older files (and their journals) are
 * read and rewritten as 3, so an older Burrow refuses the file rather than misread the journal.
 */
export const FILE_VERSION = 3;
const READABLE_VERSIONS = [1, 2, 3];
/** The journal is folded into the file once it passes half the file's size, and at least this. */
const COMPACT_MIN_BYTES = 256 * 1024;

type Scopes = Record<string, Record<string, Record<string, StoredRecord>>>;
/** The state as it is read: records by id, by kind, by account. */
type State = Map<string, Map<string, Map<string, StoredRecord>>>;
interface FileData {
  format: string;
  version: number;
  /** The sequence number of the last write this file contains (0: none). */
  sequence: number;
  scopes: Scopes;
}

/** The steps of a compaction, in order, for crash tests. */
export type CompactionStep = 'temp-written' | 'renamed' | 'journal-truncating' | 'journal-truncated';

export interface JsonFileStoreOptions {
  /** Called before each file write; tests throw here to simulate a full or read-only disk. */
  beforeWrite?: () => void | Promise<void>;
  /** Called after each step of a compaction; crash tests kill the process here. */
  onCompactionStep?: (step: CompactionStep) => void;
  /** Fold the journal into the file once it passes this many bytes (default: half the file, at least 256 KiB). */
  compactAtBytes?: number;
  /** How long to wait for a holder of the file that is still exiting (default 1000 ms). */
  lockWaitMs?: number;
}

/** lowdb adapter writing atomically and durably; refuses files it does not understand. */
class DurableJsonFile implements Adapter<FileData> {
  readonly #path: string;
  readonly #onStep: (step: CompactionStep) => void;
  constructor(path: string, onStep: (step: CompactionStep) => void) {
    this.#path = path;
    this.#onStep = onStep;
  }

  async read(): Promise<FileData | null> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    // An empty file (what `mktemp` or `touch` makes for a test's state) holds no state to lose:
    // it starts a new one, as a missing file does (docs/storage.md).
    if (text.length === 0) return null;
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
    if (!READABLE_VERSIONS.includes(file.version as number)) {
      throw new Error(`data file ${this.#path} has format version ${JSON.stringify(file.version)}; this Burrow reads versions ${READABLE_VERSIONS.slice(0, -1).join(', ')} and ${READABLE_VERSIONS.at(-1)} only`);
    }
    if (!file.scopes || typeof file.scopes !== 'object') throw new Error(`data file ${this.#path} is corrupt: "scopes" is missing`);
    if (file.version === 1) file.sequence = 0;
    else if (!Number.isSafeInteger(file.sequence)) throw new Error(`data file ${this.#path} is corrupt: "sequence" is missing`);
    return file as FileData;
  }

  async write(data: FileData): Promise<void> {
    const temp = join(dirname(this.#path), `.${basename(this.#path)}.${process.pid}.tmp`);
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(JSON.stringify(data));
      await handle.sync();
    } finally {
      await handle.close();
    }
    this.#onStep('temp-written');
    await rename(temp, this.#path);
    this.#onStep('renamed');
    await syncDirectory(this.#path);
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
  override get location(): string {
    return this.path;
  }
  /** How many file writes were made (group commit makes this far lower than commits). */
  writes = 0;
  readonly #db: Low<FileData>;
  readonly #options: JsonFileStoreOptions;
  readonly #journal: Journal;
  #lock: FileLock | undefined;
  /** The sequence number of the last write on disk. */
  #sequence = 0;
  /** Bytes of the last full file write; the journal is folded in when it passes half of it. */
  #fileBytes = 0;
  #fileExists = false;
  #waiting: Waiting[] = [];
  #flushing: Promise<void> | undefined;
  #closed = false;

  private constructor(path: string, options: JsonFileStoreOptions) {
    super();
    this.path = path;
    this.#options = options;
    this.#db = new Low(new DurableJsonFile(path, (step) => options.onCompactionStep?.(step)), { format: FILE_FORMAT, version: FILE_VERSION, sequence: 0, scopes: {} });
    this.#journal = new Journal(`${path}.journal`);
  }

  /** Opens (or creates on first write) the data file at `path`. */
  static async open(path: string, options: JsonFileStoreOptions = {}): Promise<JsonFileStore> {
    const store = new JsonFileStore(path, options);
    store.#lock = await lockDataFile(path, options.lockWaitMs);
    try {
      for (const file of [path, store.#journal.path]) await ownerOnly(file);
      await store.#db.read();
      store.#fileExists = await readFile(path).then(() => true, () => false);
      store.#fileBytes = store.#fileExists ? JSON.stringify(store.#db.data).length : 0;
      const state = readState(path, store.#db.data.scopes);
      const upgrade = store.#replayJournal(await store.#journal.read(), state);
      for (const [account, kinds] of state) {
        for (const [kind, records] of kinds) store.load({ account, kind }, records.values());
      }
      if (upgrade) await store.#writeFile(store.#snapshot(), store.#sequence);
    } catch (error) {
      await store.#journal.close();
      store.#lock.release();
      throw error;
    }
    return store;
  }

  /**
   * Applies the journal lines the file does not contain, in order, and returns whether the state
   * must be rewritten in the current format (a version 1 file, or lines without sequence numbers).
   */
  #replayJournal(lines: Awaited<ReturnType<Journal['read']>>, state: State): boolean {
    const data = this.#db.data;
    let upgrade = this.#fileExists && data.version !== FILE_VERSION;
    let last = data.sequence;
    for (const [index, line] of lines.entries()) {
      if (line.seq === undefined) {
        // Written before sequences existed; next to a version 2 file, only an interrupted upgrade
        // leaves such lines, and the file already holds them.
        if (data.version !== 1) continue;
        upgrade = true;
      } else if (line.seq <= data.sequence) {
        continue;
      } else if (line.seq !== last + 1) {
        throw new Error(`journal ${this.#journal.path} does not continue data file ${this.path}: line ${index + 1} has sequence ${line.seq}, expected ${last + 1}. Burrow left both untouched; restore the pair that belongs together`);
      } else {
        last = line.seq;
      }
      for (const [account, kind, id, record] of line.changes) {
        const records = recordsOf(state, { account, kind });
        if (record === null) records.delete(id);
        else records.set(id, record);
      }
    }
    this.#sequence = last;
    return upgrade;
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
      const sequence = this.#sequence + 1;
      const limit = this.#options.compactAtBytes ?? Math.max(COMPACT_MIN_BYTES, this.#fileBytes / 2);
      // Taken at the cut, when memory holds exactly what is on disk plus this batch: a snapshot
      // taken later could hold newer commits that the file would then claim under this sequence.
      const snapshot = !this.#fileExists || this.#journal.size > limit ? this.#snapshot() : undefined;
      try {
        await this.#options.beforeWrite?.();
        if (snapshot) {
          await this.#writeFile(snapshot, sequence);
        } else {
          await this.#journal.append(sequence, batch.flatMap((waiting) => waiting.changes.map((c): JournalEntry => [c.scope.account, c.scope.kind, c.id, c.record ?? null])));
          this.#sequence = sequence;
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

  /**
   * Writes a snapshot holding every write up to `sequence` to the JSON file, then empties the
   * journal. Once the file is renamed into place the write is done: emptying the journal only saves
   * space (the lines it covers are skipped on replay), so a failure there is retried next time.
   */
  async #writeFile(scopes: Scopes, sequence: number): Promise<void> {
    this.#db.data = { format: FILE_FORMAT, version: FILE_VERSION, sequence, scopes };
    await this.#db.write();
    this.#sequence = sequence;
    this.#fileExists = true;
    this.#fileBytes = JSON.stringify(this.#db.data).length;
    this.#options.onCompactionStep?.('journal-truncating');
    await this.#journal.clear().then(() => this.#options.onCompactionStep?.('journal-truncated'), () => undefined);
  }

  #snapshot(): Scopes {
    // Objects without a prototype, so an account or kind named `__proto__` is a key like any other.
    const scopes: Scopes = Object.create(null);
    for (const [{ account, kind }, records] of this.entries()) {
      (scopes[account] ??= Object.create(null))[kind] = Object.fromEntries(records);
    }
    return scopes;
  }

  override async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await super.close();
    await this.#flushing;
    // Leave a compact file behind: the journal's content goes into the JSON file on a clean stop.
    if (this.#journal.size > 0) await this.#writeFile(this.#snapshot(), this.#sequence).catch(() => undefined);
    await this.#journal.close();
    this.#lock?.release();
  }
}

function recordsOf(state: State, { account, kind }: Scope): Map<string, StoredRecord> {
  let kinds = state.get(account);
  if (!kinds) state.set(account, (kinds = new Map()));
  let records = kinds.get(kind);
  if (!records) kinds.set(kind, (records = new Map()));
  return records;
}

/**
 * The records of a data file's `scopes`, checked: every scope an object of records, every record
 * an object under its own id. Anything else is damage that would lose records silently (a record
 * under another id is never found), so the file is refused, naming the first bad place.
 */
function readState(path: string, scopes: unknown): State {
  const corrupt = (where: string, what: string) => new Error(`data file ${path} is corrupt: ${where} ${what}. Burrow left it untouched; restore it or start with another file`);
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isObject(scopes)) throw corrupt('"scopes"', 'is not an object');
  const state: State = new Map();
  for (const [account, kinds] of Object.entries(scopes)) {
    if (!isObject(kinds)) throw corrupt(`scopes[${JSON.stringify(account)}]`, 'is not an object of kinds');
    for (const [kind, records] of Object.entries(kinds)) {
      const where = `scopes[${JSON.stringify(account)}][${JSON.stringify(kind)}]`;
      if (!isObject(records)) throw corrupt(where, 'is not an object of records by id');
      const loaded = recordsOf(state, { account, kind });
      for (const [id, record] of Object.entries(records)) {
        if (!isPlainRecord(record) || record.id !== id) throw corrupt(`${where}[${JSON.stringify(id)}]`, 'is not a record with that id');
        loaded.set(id, record);
      }
    }
  }
  return state;
}

/**
 * Makes an existing data or journal file readable by its owner only: files written by earlier
 * versions, or copied in, may be 0644, and they hold token hashes and sealed secrets.
 */
async function ownerOnly(file: string): Promise<void> {
  const mode = await stat(file).then((stats) => stats.mode & 0o777, (error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (mode === undefined || (mode & 0o077) === 0) return;
  await chmod(file, 0o600).catch((error: NodeJS.ErrnoException) => {
    throw new Error(`${file} is readable by others (mode 0${mode.toString(8)}) and Burrow could not make it 0600 (${error.code}); it holds token hashes and sealed secrets: fix its mode or owner`);
  });
}

async function lockDataFile(path: string, waitMs: number | undefined): Promise<FileLock> {
  try {
    return await lockFile(`${path}.lock`, waitMs === undefined ? {} : { waitMs });
  } catch (error) {
    if (error instanceof FileLockedError) throw new Error(`data file ${path} is in use by another Burrow process (${describeHolder(error.holder)}); stop it or use another file`);
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`cannot create data file ${path}: the directory ${dirname(path)} does not exist`);
    throw error;
  }
}

/** Opens the JSON-file store at `path`; see JsonFileStore for its guarantees. */
export function openJsonFileStore(path: string, options?: JsonFileStoreOptions): Promise<JsonFileStore> {
  return JsonFileStore.open(path, options);
}

