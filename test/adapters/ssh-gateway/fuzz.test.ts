import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPENSSH_MISSING } from './helpers.ts';
import { fuzzSshAndTcp, startSshTcpTarget, type SshTcpFuzzTarget } from './fuzz.ts';

/**
 * The SSH gateway and the ingress's TCP ports under a short raw fuzz (./fuzz.ts): the server stays
 * up, answers every health probe, keeps serving a real tunnel, and gives back the memory of the
 * storm. As in test/reliability/raw-socket.test.ts, the bound here is the event loop's longest hold
 * measured in the server, which machine load does not inflate; `npm run test:stress` runs the long
 * version with the bound on the probes' waits (test/stress/ssh-tcp-fuzz.test.ts).
 */

const skip = OPENSSH_MISSING ? 'OpenSSH (ssh-keygen) is not installed' : false;
const CASES = Number(process.env.FUZZ_RUNS ?? 12);
const HELD_LIMIT_MS = 100;
/** What the server may keep of the storm once its connections closed (allocator slack, JIT, caches). */
const RSS_GROWTH_LIMIT_MB = 128;

let target: SshTcpFuzzTarget;
before(async () => {
  if (!skip) target = await startSshTcpTarget();
});
after(() => target?.stop());

describe('raw fuzz of the SSH gateway and the TCP ingress', { skip }, () => {
  test(`${CASES} cases of one to eight hostile SSH and TCP connections: the server stays up, answers health, the tunnel keeps echoing, memory comes back`, async () => {
    const figures = await fuzzSshAndTcp(target, CASES, 20261201);
    console.log(`# ssh/tcp fuzz: ${JSON.stringify(figures)}`);
    assert.equal(target.server.process.exitCode, null, `the server exited:\n${target.server.output.join('\n')}`);
    assert.doesNotMatch(target.server.output.join('\n'), /internal error/);
    assert.ok(figures.probes.probes > 0);
    assert.deepEqual({ failed: figures.probes.failed, failures: figures.probes.failures }, { failed: 0, failures: [] }, 'every health probe answered 200');
    assert.ok(figures.loop.heldMs < HELD_LIMIT_MS, `the server's event loop was held ${figures.loop.heldMs} ms`);
    assert.ok(figures.rssMb.after - figures.rssMb.before < RSS_GROWTH_LIMIT_MB, `the server grew from ${figures.rssMb.before} MB to ${figures.rssMb.after} MB`);
  });
});
