/**
 * The agent's own ADD latency (as `podipam agent status` reports it) under a burst, as a runtime
 * makes one when it starts many sandboxes at once: 16 ADDs through the shim into an agent that
 * has just started, in local mode and in cluster mode (SQLite). Before the agent warmed its
 * call path up and took the directory lock in one synchronous stretch with the work, that first
 * burst took 75-250 ms per call here (p99; loaded 2-core machine) and 300-800 ms under
 * containerd, against about 1-5 ms once warm; the bound below is generous for a loaded CI
 * machine and far under those. Then: with the directory lock held by another process, a burst
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
/** In-agent ADD p99 bound, ms: the old first burst was 75-800 ms. */
const P99_BOUND_MS = 50;

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
  test(`${mode} mode: a burst of ${BURST} ADDs into a just-started agent, in-agent p99 under ${P99_BOUND_MS} ms`, async (t) => {
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
      assert.ok(add.p99 < P99_BOUND_MS, `in-agent ADD p99 ${add.p99} ms (p50 ${add.p50} ms) under a burst of ${BURST}: bound ${P99_BOUND_MS} ms`);
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
