import type { Store } from '../../lib/index.ts';

/**
 * Opens the store a URL names, loading only that store's code: nothing (or `memory:`) is a
 * MemoryStore, `postgres://…` (or `postgresql://…`) a PostgresStore shared by every server given
 * the same URL, anything else the path of a JSON file (`file:` URLs too). The CLI's `--data` and
 * `burrow-tunnels/testing` open stores only through this. A new store = its file + a line here + its call of
 * test/adapters/stores/conformance.ts.
 */
export async function openStore(url?: string): Promise<Store> {
  if (url === undefined || url === '' || url === 'memory:') {
    const { MemoryStore } = await import('./memory-store.ts');
    return new MemoryStore();
  }
  if (isPostgresUrl(url)) {
    const { openPostgresStore } = await import('./postgres-store.ts');
    return openPostgresStore({ url });
  }
  const { openJsonFileStore } = await import('./json-file-store.ts');
  return openJsonFileStore(url.startsWith('file:') ? new URL(url).pathname : url);
}

/** Whether a `--data` value names a PostgreSQL database. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}
