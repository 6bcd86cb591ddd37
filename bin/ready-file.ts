import { renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * `--ready-file FILE`: one JSON object, written once the server answers, for tools in any language
 * to wait on instead of parsing log lines. Written to a temporary file and renamed, so a reader
 * never sees half of it; readable by the owner only (it holds the admin key and operator token);
 * removed when the server stops.
 */

/** The ready file's contents (docs/cli.md documents each field). */
export interface ReadyFile {
  /** Where the API and the control plane (`/_burrow/`) answer. */
  readonly url: string;
  /** The admin key's token when it was generated or given (`--api-key`); null for a default account kept from an earlier run. */
  readonly api_key: string | null;
  readonly operator_token: string;
  readonly account_id: string;
  /** The listeners the server has, by name, as health reports them (`null`: that one is off). */
  readonly listeners: Readonly<Record<string, string | null>>;
  readonly pid: number;
}

export function writeReadyFile(path: string, contents: ReadyFile): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(contents)}\n`, { mode: 0o600 });
    renameSync(temporary, path);
  } catch (error) {
    // The temporary file holds the admin key and the operator token: never leave it behind.
    rmSync(temporary, { force: true });
    throw error;
  }
}

export function removeReadyFile(path: string): void {
  rmSync(path, { force: true });
}
