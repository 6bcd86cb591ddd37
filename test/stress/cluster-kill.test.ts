import type { Session } from '@ngrok/ngrok';
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { callIngress, startApp } from '../adapters/ingress/helpers.ts';
import { bindWhenFree, connectAgent, startClusterNode, type ClusterNode } from '../fixtures/burrow-cluster.ts';
import { createDatabase, POSTGRES_MISSING, testCluster } from '../fixtures/postgres-cluster.ts';

/**
 * The long version of test/adapters/peer/cluster.test.ts: three servers on one PostgreSQL
 * database, clients sending requests without pause through every server while the server holding
 * the agent is killed with SIGKILL, CYCLES times (the killed server restarts; the agent moves to
 * the next server). Every answer is the app's or an error page (never a hang past the client's
 * timeout); each surviving server answers the offline page within OFFLINE_BOUND_MS of the kill; once
 * the agent binds on a surviving server, every server serves it again. Printed: per cycle, the
 * time to the offline page per server and the time until the name was free again.
 */

const cluster = await testCluster();
const OPERATOR = 'cluster-kill-operator-token';
const CYCLES = 3;
const OFFLINE_BOUND_MS = 3_000;

describe('kill -9 of the server holding the agent, under traffic through all three', { skip: cluster ? false : POSTGRES_MISSING }, () => {
  let url: string;
  let nodes: ClusterNode[];
  let token: string;
  let caPem: string;
  const sessions: Session[] = [];

  before(async () => {
    url = await createDatabase(cluster!, 'cluster_kill');
    const first = await startClusterNode(url, OPERATOR);
    nodes = [first, ...(await Promise.all([startClusterNode(url, OPERATOR), startClusterNode(url, OPERATOR)]))];
    token = first.server.token!;
    caPem = await (await fetch(`${first.server.url}/_burrow/ca.pem`)).text();
  });

  after(async () => {
    await Promise.all(sessions.map((session) => session.close().catch(() => undefined)));
    await Promise.all(nodes.map((node) => node.server.stop('SIGKILL')));
  });

  test(`${CYCLES} cycles: kill -9 the holder mid-traffic, offline everywhere within ${OFFLINE_BOUND_MS} ms, the agent on the next server is reached through all`, async (t: TestContext) => {
    const app = await startApp(t);
    const host = `stress-${Date.now()}.example.com`;
    assert.equal((await nodes[0]!.server.request('POST', '/reserved_domains', { domain: host }, { token })).status, 201);
    const agent = async (at: number) => {
      const session = await connectAgent(nodes[at]!, token, caPem);
      sessions.push(session);
      return session;
    };
    await bindWhenFree(await agent(0), host, app, 30_000);
    let holder = 0;
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const survivors = nodes.filter((_, i) => i !== holder);
      for (const node of nodes) assert.equal((await callIngress(node.http, { host })).status, 200, `cycle ${cycle}: served before the kill`);
      // Clients without pause through the survivors; each records when it first saw the offline page.
      let stop = false;
      const firstOffline = new Map<ClusterNode, number>();
      let killedAt = Number.POSITIVE_INFINITY;
      const statuses = new Map<number, number>();
      const client = async (node: ClusterNode) => {
        while (!stop) {
          const answer = await callIngress(node.http, { host });
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.headers['ngrok-error-code'] === 'ERR_BURROW_3200' && !firstOffline.has(node)) firstOffline.set(node, performance.now() - killedAt);
          if (firstOffline.size === survivors.length) stop = true;
        }
      };
      const clients = survivors.flatMap((node) => [client(node), client(node), client(node)]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      killedAt = performance.now();
      await nodes[holder]!.server.stop('SIGKILL');
      const bound = setTimeout(() => (stop = true), OFFLINE_BOUND_MS * 3);
      await Promise.all(clients);
      clearTimeout(bound);
      for (const node of survivors) assert.ok((firstOffline.get(node) ?? Infinity) < OFFLINE_BOUND_MS, `cycle ${cycle}: offline through a survivor after ${firstOffline.get(node)} ms`);
      for (const status of statuses.keys()) assert.ok([200, 404, 502].includes(status), `cycle ${cycle}: answered ${status}`);

      const next = (holder + 1) % nodes.length;
      const freeFrom = performance.now();
      await bindWhenFree(await agent(next), host, app, 30_000);
      const freeMs = performance.now() - freeFrom;
      for (const node of survivors) assert.equal((await callIngress(node.http, { host })).status, 200, `cycle ${cycle}: served after the move`);
      console.log(`# cluster stress cycle ${cycle}: offline after ${survivors.map((node) => `${firstOffline.get(node)!.toFixed(0)} ms`).join(' and ')}; name free ${freeMs.toFixed(0)} ms later; answers ${JSON.stringify(Object.fromEntries(statuses))}`);
      // The killed server comes back (another process, another id and address) and serves the agent through its peers.
      const restarted = await startClusterNode(url, OPERATOR);
      nodes[holder] = restarted;
      assert.equal((await callIngress(restarted.http, { host })).status, 200, `cycle ${cycle}: the restarted server reaches the agent`);
      holder = next;
    }
  });
});
