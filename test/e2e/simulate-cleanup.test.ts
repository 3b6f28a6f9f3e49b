/**
 * `podipam simulate --cleanup` removes what it created — its pods' handles, its node records
 * (with the proof they are gone) and their blocks — and nothing else: `ipam check` is clean at
 * once, not after GC's grace period.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { api, runCli, startServe } from './serve-harness.js';

test('simulate --cleanup leaves no pod, node or block of its own and ipam check clean', { timeout: 120_000 }, async () => {
  const s = await startServe();
  const ds = ['--datastore', s.datastore];
  try {
    // Someone else's node and pod, which the cleanup must leave alone.
    assert.equal((await runCli([...ds, 'node', 'add', 'keep'])).code, 0);
    const kept = await api(s.url, 'POST', '/api/v1/allocations', { node: 'keep', containerId: 'k0' });
    assert.equal(kept.status, 201);

    const sim = await runCli(['simulate', '--server', s.dashboardUrl, '--nodes', '10', '--pods', '40', '--churn', '0.3', '--seed', '3', '--cleanup']);
    assert.equal(sim.code, 0, sim.stderr);
    assert.match(sim.stdout, /10 nodes joined, 52 pods added, 52 deleted, 0 failed .*; 0 pods alive/);

    const check = await runCli([...ds, 'ipam', 'check', '--json']);
    assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] }, check.stdout);
    assert.equal(check.code, 0, check.stderr);
    const nodes = JSON.parse((await runCli([...ds, 'node', 'list', '--json'])).stdout);
    assert.deepEqual(
      (nodes.items as { name: string }[]).map((n: { name: string }) => n.name),
      ['keep'],
    );
    const blocks = (await api(s.url, 'GET', '/api/v1/blocks')).body.items as { node: string | null }[];
    assert.deepEqual([...new Set(blocks.map((b) => b.node))], ['keep'], JSON.stringify(blocks));
    const ov = (await api(s.url, 'GET', '/api/v1/overview')).body;
    assert.equal(ov.totals.allocated, kept.body.ips.length, 'only the kept pod holds addresses');
  } finally {
    await s.stop();
  }
});
