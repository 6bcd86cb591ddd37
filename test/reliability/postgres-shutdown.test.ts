import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { createDatabase, POSTGRES_MISSING, testCluster } from '../fixtures/postgres-cluster.ts';
import { startServer } from '../helpers.ts';

/**
 * SIGTERM to a server on PostgreSQL in the middle of a burst of writes. The database holds the
 * writers up (a table lock taken by the test) so that writes are certainly in flight when the
 * signal comes; the server must let them finish against an open store before it exits.
 */

const cluster = await testCluster();
/** Writes held up in the database when the signal comes. */
const HELD = 6;

describe('shutdown on the PostgreSQL store', { skip: cluster ? false : POSTGRES_MISSING }, () => {
  test('SIGTERM during a burst of writes: the writes in flight finish, every acknowledged write is in the database, no 500', async () => {
    const url = await createDatabase(cluster!, 'drain');
    const server = await startServer(['--data', url, '--api-key', 'drain-admin-token', '--operator-token', 'drain-operator-token']);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const acknowledged: string[] = [];
      const otherAnswers: { status: number; body: unknown }[] = [];
      let signalled = false;
      let answeredAfterSignal = 0;
      let cutOff = 0;
      const writer = async (n: number) => {
        for (let i = 0; ; i++) {
          const res = await server.request('POST', '/ip_policies', { description: `w${n}.${i}` }, { token: 'drain-admin-token' }).catch(() => undefined);
          if (!res) return void cutOff++;
          if (res.status !== 201) otherAnswers.push({ status: res.status, body: res.body });
          else {
            acknowledged.push(res.body.id);
            if (signalled) answeredAfterSignal++;
          }
        }
      };
      const writers = Array.from({ length: 12 }, (_, n) => writer(n));
      while (acknowledged.length < 60) await new Promise((resolve) => setTimeout(resolve, 5));
      // Writes now wait in the database: every writer's next request is in flight.
      await db.query('BEGIN');
      await db.query('LOCK TABLE burrow.records IN EXCLUSIVE MODE');
      const before = acknowledged.length;
      // Wait for the event the test needs, not for time: at least HELD writes waiting on the lock.
      const waiting = async () => (await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rows[0].n as number;
      while ((await waiting()) < HELD) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.ok(acknowledged.length - before <= 12, 'writes are held up by the lock');
      signalled = true;
      const exit = server.stop('SIGTERM');
      // The server is stopping (it says so once the signal is handled) while the writes are still held.
      await server.outputUntil((lines) => lines.some((line) => line.includes('SIGTERM received, shutting down')));
      await db.query('COMMIT');
      assert.equal(await exit, 0, server.output.join('\n'));
      await Promise.all(writers);

      assert.deepEqual(otherAnswers, []);
      assert.ok(answeredAfterSignal >= HELD, `writes in flight at SIGTERM were answered 201 (${answeredAfterSignal})`);
      const stored = new Set(
        (await db.query(`SELECT id FROM burrow.records WHERE kind = 'ip_policy'`)).rows.map((row: { id: string }) => row.id),
      );
      const lost = acknowledged.filter((id) => !stored.has(id));
      assert.deepEqual(lost, [], 'every acknowledged write is in the database');
      const log = server.output.join('\n');
      assert.doesNotMatch(log, /internal error/);
      assert.doesNotMatch(log, / 5\d\d (ERR_|\d+ms)/, 'no 5xx in the request log');
      assert.match(log, /SIGTERM received, shutting down/);
      console.log(
        `# shutdown: SIGTERM with ${answeredAfterSignal} writes held in the database; ${acknowledged.length} acknowledged, all stored; ${cutOff} writers refused afterwards; 0 500s`,
      );
    } finally {
      await db.end().catch(() => undefined);
      await server.stop('SIGKILL');
    }
  });
});
