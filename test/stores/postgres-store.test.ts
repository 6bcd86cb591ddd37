import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openPostgresStore, PostgresStore } from '../../adapters/postgres-store.ts';
import { freshSchema, POSTGRES_MISSING, testCluster } from '../fixtures/postgres-cluster.ts';
import { runStoreConformance } from './conformance.ts';

const cluster = await testCluster();

if (!cluster) {
  test('postgres store', { skip: POSTGRES_MISSING }, () => {});
} else {
  runStoreConformance('postgres', { create: async () => openPostgresStore({ url: cluster.url, schema: freshSchema() }) });
}
