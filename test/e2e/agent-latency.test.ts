/**
 * The agent's own ADD latency (as `podipam agent status` reports it) under a burst, as a runtime
 * makes one when it starts many sandboxes at once: 16 ADDs through the shim into an agent that
 * has just started, in local mode and in cluster mode (SQLite). Before the agent warmed its
 * call path up and took the directory lock in one synchronous stretch with the work, that first
 * burst took 56-236 ms per call here (p50; loaded 2-core machine) and 300-800 ms under
 * containerd, against about 1-5 ms once warm; the bounds below are generous for a loaded CI
 * machine and under those. Then: with the directory lock held by another process, a burst
 * waits for it (one call polls, the rest wait on it) and every call gets its own address once
 * it is released.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { type PluginRun, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { loadFlock } from '../../src/util/flock.js';

const BURST = 16;
/**
 * In-agent ADD bounds, ms. Measured here (2 cores shared, load 3-40) before the change: local
 * p50 66-236, p99 76-300; cluster p50 56-167, p99 80-243. After: p50 1.2-9 (local), 1.4-24
 * (cluster); p99 5-60 (local), 30-175 (cluster) — at load 40 the agent mostly waits for a CPU
 * (its run queue; BENCHMARKS.md), one such wait is the p99 of 16 calls. The p50 bound tells old
 * from new on any load; the p99 bound catches a burst that waits on itself again.
 */
const BOUNDS = { local: { p50: 40, p99: 120 }, cluster: { p50: 40, p99: 120 } } as const;

const dir = makeTempDir('agent-latency');
after(() => dir.remove());

const addresses = (runs: readonly PluginRun[]): string[] =>
  runs.flatMap((r) => {
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((i) => i.address);
  });

async function burst(sock: string, ipam: Record<string, unknown>, prefix: string): Promise<PluginRun[]> {
  const config = { cniVersion: '1.0.0', name: `lat-${prefix}`, ipam: { type: 'podipam', agent: sock, ...ipam } };
  return Promise.all(
    Array.from({ length: BURST }, (_, i) =>
      runPlugin(SHIM_BIN, { command: 'ADD', containerId: `${prefix}-${i}`, ifname: 'eth0', config, env: { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' } }),
    ),
  );
}

for (const mode of ['local', 'cluster'] as const) {
  const bound = BOUNDS[mode];
  test(`${mode} mode: a burst of ${BURST} ADDs into a just-started agent, in-agent p50 under ${bound.p50} ms and p99 under ${bound.p99} ms`, async (t) => {
    requireShim();
    const url = `sqlite:${join(dir.path, `${mode}.db`)}`;
    const pool = runCliSync(url, ['pool', 'create', 'lat', '--cidr', '10.91.0.0/20', '--block-size', '26']);
    assert.equal(pool.code, 0, pool.stderr);
    const sock = join(dir.path, 'run', `${mode}.sock`);
    const agent = await startAgent(sock, ['--node', 'lat-node', '--datastore', url]);
    try {
      const ipam = mode === 'local' ? { dataDir: join(dir.path, 'data'), ranges: [[{ subnet: '10.92.0.0/24' }]] } : { datastore: url, nodeName: 'lat-node' };
      const got = addresses(await burst(sock, ipam, mode));
      assert.equal(new Set(got).size, BURST, `no address twice: ${got.join(' ')}`);
      const s = await agent.status();
      const add = s.latencyMs.ADD!;
      assert.equal(add.n, BURST);
      assert.equal(s.backends[mode], BURST);
      t.diagnostic(`in-agent ADD p50 ${add.p50} ms, p99 ${add.p99} ms`);
      assert.ok(
        add.p50 < bound.p50 && add.p99 < bound.p99,
        `in-agent ADD p50 ${add.p50} ms, p99 ${add.p99} ms under a burst of ${BURST}: bounds ${bound.p50} / ${bound.p99} ms`,
      );
    } finally {
      await agent.stop();
    }
  });
}

test('local mode: a burst meets the directory lock held by another process, waits for it, and every call gets its own address', async () => {
  requireShim();
  const sock = join(dir.path, 'run', 'held.sock');
  const dataDir = join(dir.path, 'held-data');
  const netDir = join(dataDir, 'lat-held');
  mkdirSync(netDir, { recursive: true });
  const agent = await startAgent(sock, ['--node', 'lat-node']);
  const f = loadFlock();
  const fd = openSync(join(netDir, 'lock'), constants.O_RDONLY | constants.O_CREAT, 0o750); // as host-local creates it
  try {
    f.flock(fd, f.LOCK_EX); // this test process is "another process" to the agent (host-local, a per-pod plugin)
    const runs = burst(sock, { dataDir, ranges: [[{ subnet: '10.93.0.0/24' }]] }, 'held');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await agent.status()).latencyMs.ADD, undefined, 'no ADD finished while the lock was held');
    f.flock(fd, f.LOCK_UN);
    const got = addresses(await runs);
    assert.equal(new Set(got).size, BURST, `no address twice: ${got.join(' ')}`);
    assert.equal((await agent.status()).requests.ADD?.ok, BURST);
  } finally {
    closeSync(fd);
    await agent.stop();
  }
});
