import records from './migrations/0001-records.ts';

/**
 * The schema's history, oldest first: one file per change under migrations/, applied in order on
 * start and recorded in the `schema_migrations` table. Never edit a released migration; add one.
 * They are TypeScript modules so that the package build ships them with the code.
 */
export const MIGRATIONS: readonly { readonly version: number; readonly name: string; readonly sql: string }[] = [
  { version: 1, name: 'records', sql: records },
];
