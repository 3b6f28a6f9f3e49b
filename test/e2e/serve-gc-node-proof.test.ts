/**
 * Cluster GC frees a node's pods only on proof the node is gone. A node
 * that never had a record — the newcomer's: the conflist `serve` prints names one, and
 * install-cni and the agent register nothing — is not gone: its pod keeps its address however
 * long GC runs, CHECK keeps answering 0 and `ipam check` says why GC leaves the block alone.
 * Giving proof (`podipam node add` then `podipam node delete`: a record that existed and was
 * deleted) makes GC free its pods after the grace period.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterCall, PODIPAM_BIN, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, gcRuns, runCli, startServe, waitFor } from './serve-harness.js';

const GRACE_MS = 3000;

/**
 * Waits until GC has had a finding present now in its schedule for longer than the grace
 * period, by events: a fresh check (which GC's next runs reuse or outdo), a GC run started
 * after it (GC has seen the finding by its end), the grace period from then, and two more
 * runs (by which GC has acted on anything it would act on).
 */
async function gcPastGrace(url: string): Promise<void> {
  assert.equal((await api(url, 'GET', '/api/v1/check?maxAge=0')).status, 200);
  const checked = await gcRuns(url);
  await waitFor('a GC run after a fresh check', 60_000, async () => ((await gcRuns(url)) >= checked + 2 ? true : undefined));
  const seenBy = Date.now();
  await waitFor('the grace period to pass', GRACE_MS + 30_000, async () => (Date.now() - seenBy > GRACE_MS ? true : undefined));
  const after = await gcRuns(url);
  await waitFor('two GC runs past the grace period', 60_000, async () => ((await gcRuns(url)) >= after + 2 ? true : undefined));
}

test('serve gc: a node that never had a record keeps its pods; a deleted record is the proof that frees them', { timeout: 180_000 }, async () => {
  const s = await startServe({ args: ['--gc-interval', '100ms', '--gc-grace', `${GRACE_MS}ms`] });
  const cache = makeTempDir('gc-node-proof');
  const ds = ['--datastore', s.datastore];
  const call = (command: string, id: string, prevResult?: unknown) => {
    const c = clusterCall('pods', s.datastore, cache.path, command, id, 'newcomer');
    return runPlugin(PODIPAM_BIN, prevResult === undefined ? c : { ...c, config: { ...(c.config as object), prevResult } });
  };
  /** What serve logged (its log lines go to stdout, its banner too). */
  const logged = (): string => s.stdout() + s.stderr();
  try {
    // One node record exists (as `podipam node add` or `simulate` makes), the newcomer has none.
    const added = await runCli([...ds, 'node', 'add', 'registered']);
    assert.equal(added.code, 0, added.stderr);
    const add = await call('ADD', 'pod-1');
    assert.equal(add.code, 0, add.stderr);
    const ip = stdoutJson(add).ips[0].address as string;

    await gcPastGrace(s.url);
    const check = await call('CHECK', 'pod-1', stdoutJson(add));
    assert.equal(check.code, 0, `CHECK of the running pod: ${check.stdout}${check.stderr}`);
    const next = await call('ADD', 'pod-2');
    assert.equal(next.code, 0, next.stderr);
    assert.notEqual(stdoutJson(next).ips[0].address, ip, "the next pod got the running pod's address");
    assert.doesNotMatch(logged(), /is gone/, 'GC released the pods of a node that never had a record');

    // ipam check reports the block, says GC will not act and what the operator can do.
    const report = await runCli([...ds, 'ipam', 'check', '--json']);
    const problems = JSON.parse(report.stdout).problems as { kind: string; message: string }[];
    const unregistered = problems.filter((p) => p.kind === 'block-node-unregistered');
    assert.ok(unregistered.length >= 1, report.stdout);
    assert.match(unregistered[0]!.message, /node "newcomer".*no record.*GC.*podipam node add newcomer.*podipam node delete newcomer.*ipam release/s);

    // A record makes the node known: nothing to report.
    assert.equal((await runCli([...ds, 'node', 'add', 'newcomer'])).code, 0);
    const known = JSON.parse((await runCli([...ds, 'ipam', 'check', '--json'])).stdout);
    assert.deepEqual(known.problems, []);

    // Deleting that record is the proof: after the grace period GC frees the pods and blocks.
    const del = await runCli([...ds, 'node', 'delete', 'newcomer']);
    assert.equal(del.code, 0, del.stderr);
    const deletedAt = Date.now();
    const deleted = JSON.parse((await runCli([...ds, 'ipam', 'check', '--json'])).stdout).problems as { kind: string }[];
    assert.ok(
      deleted.some((p) => p.kind === 'block-node-deleted'),
      JSON.stringify(deleted),
    );
    await waitFor('gc to free the deleted node', GRACE_MS + 60_000, async () =>
      /node "newcomer" is gone: released 2 of its pods' handle\(s\)/.test(logged()) ? true : undefined,
    );
    assert.ok(Date.now() - deletedAt >= GRACE_MS, 'not before the grace period');
    const clean = await waitFor('a clean check', 30_000, async () => {
      const c = JSON.parse((await runCli([...ds, 'ipam', 'check', '--json'])).stdout);
      return c.leaks.length === 0 && c.problems.length === 0 ? c : undefined;
    });
    assert.deepEqual(clean.problems, []);
  } finally {
    await s.stop();
    cache.remove();
  }
});
