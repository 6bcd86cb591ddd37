import { describe, test } from 'node:test';
import { checkFreshStarts, cliAgentBinary, cliAgentMissing } from '../fixtures/cli-agent.ts';

/** test/adapters/agent-gateway/cli-agent.test.ts, 200 times: the v2 CLI agent starts on the first try every time. */

const missing = cliAgentMissing();

describe('the v2 CLI agent, under stress', () => {
  test('200 fresh starts each hold their first connection, bring the tunnel up and carry a request to the app', { skip: missing, timeout: 300_000 }, async (t) => {
    await checkFreshStarts(t, cliAgentBinary()!, 200);
  });
});
