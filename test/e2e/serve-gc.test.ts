/**
 * Cluster GC inside `serve`: a node deleted through the API loses its pods' addresses and its
 * blocks after the grace period; a leaked address is freed; nothing is touched before the
 * grace period ends; the GC counters show it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store/index.js';
import { handleKey } from './serve-keys.js';
import { api, gcRuns, startServe, waitFor } from './serve-harness.js';

const GRACE_MS = 6000;

test('serve gc: releases the blocks of a deleted node and a leak, only after the grace period', { timeout: 90_000 }, async () => {
  const s = await startServe({ args: ['--gc-interval', '200ms', '--gc-grace', `${GRACE_MS}ms`] });
  try {
    for (const name of ['gc-a', 'gc-b']) assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name })).status, 201);
    for (let i = 0; i < 3; i++) assert.equal((await api(s.url, 'POST', '/api/v1/allocations', { node: 'gc-a', containerId: `a${i}` })).status, 201);
    const kept = await api(s.url, 'POST', '/api/v1/allocations', { node: 'gc-b', containerId: 'b0' });
    const leaky = await api(s.url, 'POST', '/api/v1/allocations', { node: 'gc-b', containerId: 'b1' });
    assert.equal(leaky.status, 201);
    const store = await openStore(s.datastore);
    try {
      const h = await store.get(handleKey('podipam:b1:eth0'));
      assert.ok(h && (await store.txn([{ key: h.key, rev: h.rev }], [{ type: 'delete', key: h.key }])).succeeded);
    } finally {
      await store.close();
    }
    const leakedAt = Date.now();
    const runsBefore = await gcRuns(s.url);
    assert.equal((await api(s.url, 'DELETE', '/api/v1/nodes/gc-a')).status, 200);
    const deletedAt = Date.now();

    // Within the grace period nothing is released: once GC has run twice more since the delete
    // (it has seen the findings; an event, not a sleep), they are all still there. The grace is
    // long (30 runs) so that a loaded machine still checks well inside it, which is asserted.
    await waitFor('two GC runs after the delete', 30_000, async () => ((await gcRuns(s.url)) >= runsBefore + 2 ? true : undefined));
    const early = await api(s.url, 'GET', '/api/v1/check?maxAge=0');
    const checkedAfter = Date.now() - leakedAt;
    assert.ok(checkedAfter < GRACE_MS, `the early check came ${checkedAfter} ms after the leak, past the ${GRACE_MS} ms grace: it proves nothing`);
    assert.equal(early.body.leaks.length, 2);
    assert.equal(early.body.problems.filter((p: any) => p.kind === 'block-node-deleted').length, 2);
    assert.match((await api(s.url, 'GET', '/metrics')).body as string, /^podipam_gc_released_total\{kind="block"\} 0$/m);

    await waitFor('gc to clean up', GRACE_MS + 30_000, async () => {
      const c = (await api(s.url, 'GET', '/api/v1/check?maxAge=0')).body;
      return c.leaks.length === 0 && c.problems.length === 0 ? c : undefined;
    });
    assert.ok(Date.now() - deletedAt >= GRACE_MS, 'not before the grace period');
    const blocks = (await api(s.url, 'GET', '/api/v1/blocks')).body.items;
    assert.deepEqual([...new Set(blocks.map((b: any) => b.node))], ['gc-b'], "gc-a's blocks are gone");
    const ov = (await api(s.url, 'GET', '/api/v1/overview')).body;
    assert.equal(ov.totals.allocated, 2, "only gc-b's pod b0 still holds addresses");
    assert.deepEqual(
      (await api(s.url, 'GET', '/api/v1/allocations?handle=podipam:b0:eth0')).body.items.map((a: any) => a.ip).sort(),
      [...kept.body.ips].sort(),
    );
    const m = (await api(s.url, 'GET', '/metrics')).body as string;
    assert.match(m, /^podipam_gc_released_total\{kind="leak"\} 2$/m);
    assert.match(m, /^podipam_gc_released_total\{kind="handle"\} 3$/m);
    assert.match(m, /^podipam_gc_released_total\{kind="block"\} 2$/m);
    assert.match(m, /^podipam_gc_runs_total\{result="ok"\} [1-9]\d*$/m);
    assert.match(s.stderr(), /gc:? node "gc-a" is gone: released 3 of its pods' handle\(s\) and block 10\.244\./);
  } finally {
    await s.stop();
  }
});
