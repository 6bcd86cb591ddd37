import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { createDatabase, POSTGRES_MISSING, testCluster } from '../fixtures/postgres-cluster.ts';
import { startServer, type RunningServer } from '../helpers.ts';

/**
 * Two `burrow serve` processes on one PostgreSQL database, written through both; in each cycle one
 * of them (A and B in turn) is killed with SIGKILL at a random moment and started again at once.
 * Every acknowledged write must be in the database; the surviving server must answer every
 * request it gets with 201. `STRESS_CYCLES` sets the number of cycles (default 20).
 */

const cluster = await testCluster();
const CYCLES = Number(process.env.STRESS_CYCLES ?? 20);
const WRITERS = 8;
const KEY = 'stress-two-servers-admin-token';

test(`${CYCLES} kill -9 cycles of one of two servers on one PostgreSQL database, written through both: nothing acknowledged lost`, { skip: cluster ? false : POSTGRES_MISSING, timeout: 20 * 60_000 }, async () => {
  const url = await createDatabase(cluster!, 'stress');
  const serve = () => startServer(['--data', url, '--quiet', '--api-key', KEY, '--operator-token', 'stress-two-servers-operator']);
  const servers: RunningServer[] = [await serve(), await serve()];
  after(() => Promise.all(servers.map((server) => server.stop('SIGKILL'))));
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const figures = { cycles: CYCLES, attempted: 0, acknowledged: 0, lost: 0, cutOff: 0, otherAnswers: 0, slowestRestartMs: 0 };
  try {
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const victim = cycle % 2;
      const acknowledged: string[] = [];
      const others: unknown[] = [];
      let killed = false;
      const writer = async (server: RunningServer) => {
        while (!killed || server !== servers[victim]) {
          figures.attempted++;
          const res = await server.request('POST', '/ip_policies', { description: `cycle ${cycle}` }, { token: KEY }).catch(() => undefined);
          if (!res) {
            figures.cutOff++;
            return;
          }
          if (res.status === 201) acknowledged.push(res.body.id);
          else others.push({ status: res.status, body: res.body });
          // The survivor writes on for a moment after the kill, then the cycle ends.
          if (killed && acknowledged.length > 0 && server !== servers[victim] && Math.random() < 0.2) return;
        }
      };
      const writers = servers.flatMap((server) => Array.from({ length: WRITERS }, () => writer(server)));
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 400));
      killed = true;
      await servers[victim]!.stop('SIGKILL');
      await Promise.all(writers);
      const started = performance.now();
      servers[victim] = await serve();
      figures.slowestRestartMs = Math.max(figures.slowestRestartMs, Math.round(performance.now() - started));

      const stored = new Set((await db.query(`SELECT id FROM burrow.records WHERE kind = 'ip_policy' AND id = ANY($1)`, [acknowledged])).rows.map((row: { id: string }) => row.id));
      figures.acknowledged += acknowledged.length;
      figures.lost += acknowledged.filter((id) => !stored.has(id)).length;
      figures.otherAnswers += others.length;
      assert.deepEqual(others, [], `cycle ${cycle}: every answer was 201`);
    }
  } finally {
    await db.end();
  }
  console.log(`# two servers on PostgreSQL, kill -9 stress: ${JSON.stringify(figures)}`);
  assert.equal(figures.lost, 0);
  assert.ok(figures.acknowledged > 0);
});
