import { describe, test } from 'node:test';
import { checkFreshStarts, cliAgentBinary, cliAgentMissing } from '../../fixtures/cli-agent.ts';

/**
 * The vendor's v2 CLI agent (Go, agent 2.3.41) against `burrow serve`. Its muxado sends stream ids
 * out of order and its Binds before the Auth reply; a gateway stricter than that lost about one
 * fresh start in ten. 200 starts: test/stress/cli-agent-starts.test.ts.
 */

const missing = cliAgentMissing();

describe('the v2 CLI agent', () => {
  test('20 fresh starts each hold their first connection, bring the tunnel up and carry a request to the app', { skip: missing, timeout: 60_000 }, async (t) => {
    await checkFreshStarts(t, cliAgentBinary()!, 20);
  });
});
