import { after, before, test } from 'node:test';
import { assertStormSurvived, startFuzzedServer, stormWithBystander, type FuzzedServer } from './fuzz.ts';

/**
 * A short raw fuzz of the agent gateway (./fuzz.ts) against `burrow serve --agent-addr`, with the
 * vendor's agent connected beside it and a health probe every 10 ms from another process. Here the
 * bound is on the server's event loop's longest hold, measured in the server, which machine load
 * does not inflate; `npm run test:stress` runs the long fuzz with the bound on the probes' waits
 * (test/stress/agent-gateway-fuzz.test.ts).
 */

const CASES = Number(process.env.FUZZ_RUNS ?? 12) * 2;
const HELD_LIMIT_MS = 100;

let target: FuzzedServer;
before(async () => {
  target = await startFuzzedServer();
});
after(() => target.server.stop('SIGKILL'));

test(`${CASES} cases of hostile agent connections, before and after Auth: the server stays up, answers health, serves the SDK agent beside them and gives back their memory`, async () => {
  const figures = await stormWithBystander(target, CASES, 20261201);
  console.log(`# agent-gateway fuzz: ${JSON.stringify(figures)}`);
  assertStormSurvived(target, figures, HELD_LIMIT_MS);
});
