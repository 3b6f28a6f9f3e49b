/**
 * One address, one holder, whatever an operator does: operator paths through the built CLI and
 * plugin that once put one address in two holders, each interleaved with a live pod.
 *
 * - An import (Whereabouts; Calico goes through the same applier) into a pool whose block size
 *   changed: the address of a live pod sits in an old-size block, which the import must see.
 * - `pool create` over the space an unfinished shrink still holds (the shrink is left unfinished
 *   by a crash point, as a killed `pool resize` leaves it): refused, naming the shrinking pool.
 *
 * After each: no two blocks overlap, no address has two holders, `ipam check` is clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeBlock } from '../../src/cluster/records/block-record.js';
import { BLOCK_PREFIX } from '../../src/cluster/records/keys.js';
import { formatAddr, formatPrefix, parseAddr, prefixOverlaps } from '../../src/ip/index.js';
import { ClusterIpam } from '../../src/cluster/index.js';
import { addrOfOrdinal } from '../../src/alloc/block.js';
import { openStore } from '../../src/store/index.js';
import { crashEnv } from '../helpers/crash-points.js';
import { PODIPAM_BIN, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { whereaboutsList } from '../helpers/whereabouts-fixture.js';
import { runCli } from './serve-harness.js';

/** Every block (CIDR text) and every address with its holders, read straight from the store. */
async function holders(datastore: string): Promise<{ blocks: string[]; overlaps: string[]; twice: string[]; byAddr: Map<string, string[]> }> {
  const s = await openStore(datastore);
  try {
    const bs = (await s.list(BLOCK_PREFIX)).map(decodeBlock);
    const overlaps: string[] = [];
    for (let i = 0; i < bs.length; i++)
      for (let j = i + 1; j < bs.length; j++)
        if (prefixOverlaps(bs[i]!.cidr, bs[j]!.cidr)) overlaps.push(`${formatPrefix(bs[i]!.cidr)} ~ ${formatPrefix(bs[j]!.cidr)}`);
    const byAddr = new Map<string, string[]>();
    for (const b of bs) {
      for (const [o, h] of b.allocations) {
        const a = formatAddr(addrOfOrdinal(b.cidr, o));
        byAddr.set(a, [...(byAddr.get(a) ?? []), h]);
      }
    }
    const twice = [...byAddr].filter(([, hs]) => hs.length > 1).map(([a, hs]) => `${a}: ${hs.join(', ')}`);
    return { blocks: bs.map((b) => formatPrefix(b.cidr)).sort(), overlaps, twice, byAddr };
  } finally {
    await s.close();
  }
}

test('import into a pool whose block size changed: the live pod in an old-size block keeps its address alone', { timeout: 90_000 }, async () => {
  const tmp = makeTempDir('one-holder-import');
  const datastore = `sqlite:${join(tmp.path, 'podipam.db')}`;
  const cli = (...args: string[]) => runCli(['--datastore', datastore, ...args]);
  try {
    assert.equal((await cli('pool', 'create', 'p', '--cidr', '10.61.0.0/24', '--block-size', '26')).code, 0);
    // A live pod on node-x gets 10.61.0.5: its node claims the /26 10.61.0.0/26.
    const conf = { cniVersion: '1.0.0', name: 'live-net', ipam: { type: 'podipam', datastore, nodeName: 'node-x', cacheDir: join(tmp.path, 'cache') } };
    const add = await runPlugin(PODIPAM_BIN, {
      command: 'ADD',
      containerId: 'c-live',
      ifname: 'eth0',
      args: 'IgnoreUnknown=1;IP=10.61.0.5;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=live',
      config: conf,
    });
    assert.equal(add.code, 0, add.stdout + add.stderr);
    // Future blocks are /28: the import's plan must still find the /26 holding .5 and .6's space.
    assert.equal((await cli('pool', 'set', 'p', '--block-size', '28')).code, 0);
    const file = join(tmp.path, 'wb.json');
    writeFileSync(
      file,
      JSON.stringify(
        whereaboutsList(
          [{ range: '10.61.0.0/24' }],
          [
            { containerId: 'c-old', podref: 'prod/old', ips: ['10.61.0.5'] },
            { containerId: 'c-new', podref: 'prod/new', ips: ['10.61.0.6'] },
          ],
        ),
      ),
    );
    const imp = await cli('import', 'whereabouts', file, '--pool', 'p', '--network', 'wb-net', '--skip-conflicts', '-o', 'json');
    assert.equal(imp.code, 0, imp.stdout + imp.stderr);
    const out = JSON.parse(imp.stdout) as { outcome: { adopted: number; conflicts: { kind: string; subject: string; detail: string }[] } };
    assert.deepEqual(
      out.outcome.conflicts.map((c) => [c.kind, c.subject]),
      [['address-held', '10.61.0.5']],
      imp.stdout,
    );
    assert.match(out.outcome.conflicts[0]!.detail, /prod\/live/);
    assert.equal(out.outcome.adopted, 1);

    const h = await holders(datastore);
    assert.deepEqual(h.overlaps, [], 'blocks overlap');
    assert.deepEqual(h.twice, [], 'an address has two holders');
    assert.deepEqual(h.blocks, ['10.61.0.0/26'], 'the import wrote a new-size block over the old one');
    assert.deepEqual(h.byAddr.get('10.61.0.5'), ['live-net:c-live:eth0']);
    assert.deepEqual(h.byAddr.get('10.61.0.6'), ['wb-net:c-new:eth0']);
    // Who holds it is found in the old-size block too (what `ipam release --ip` and the API ask).
    const s = await openStore(datastore);
    try {
      assert.equal((await new ClusterIpam(s).holderOfAddress(parseAddr('10.61.0.6')))?.handle, 'wb-net:c-new:eth0');
    } finally {
      await s.close();
    }
    const check = await cli('ipam', 'check', '--json');
    assert.equal(check.code, 0, check.stdout + check.stderr);
  } finally {
    tmp.remove();
  }
});

test('pool create over the space an unfinished shrink still holds is refused; the shrink then finishes', { timeout: 90_000 }, async () => {
  const tmp = makeTempDir('one-holder-shrink');
  const datastore = `sqlite:${join(tmp.path, 'podipam.db')}`;
  const cli = (...args: string[]) => runCli(['--datastore', datastore, ...args]);
  try {
    assert.equal((await cli('pool', 'create', 'p', '--cidr', '10.62.0.0/24', '--block-size', '26')).code, 0);
    // A pod in the upper half makes node-x claim 10.62.0.128/26; its DEL leaves the block empty but claimed.
    const conf = { cniVersion: '1.0.0', name: 'net', ipam: { type: 'podipam', datastore, nodeName: 'node-x', cacheDir: join(tmp.path, 'cache') } };
    const pod = { containerId: 'c1', ifname: 'eth0', args: 'IgnoreUnknown=1;IP=10.62.0.130;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web', config: conf };
    assert.equal((await runPlugin(PODIPAM_BIN, { command: 'ADD', ...pod })).code, 0);
    const kept = await runPlugin(PODIPAM_BIN, { command: 'ADD', containerId: 'c2', ifname: 'eth0', args: 'IgnoreUnknown=1;IP=10.62.0.5', config: conf });
    assert.equal(kept.code, 0, kept.stdout + kept.stderr);
    assert.equal((await runPlugin(PODIPAM_BIN, { command: 'DEL', ...pod })).code, 0);
    // The shrink to the lower half dies right after narrowing the CIDR: 10.62.0.128/26 is left behind.
    const killed = await runCli(['--datastore', datastore, 'pool', 'resize', 'p', '--cidr', '10.62.0.0/25'], crashEnv('cluster.pool.shrink-marked'));
    assert.equal(killed.code, null, `the resize was not killed: ${killed.stderr}`);
    assert.match(killed.stderr, /crash point cluster\.pool\.shrink-marked reached/);
    // Another pool over the space the shrink still holds, with smaller blocks, would overlap the leftover /26.
    const q = await cli('pool', 'create', 'q', '--cidr', '10.62.0.128/25', '--block-size', '27');
    assert.notEqual(q.code, 0, `pool create over an unfinished shrink succeeded:\n${q.stdout}${q.stderr}`);
    assert.match(q.stderr, /pool "p"/);
    assert.match(q.stderr, /10\.62\.0\.0\/24/);
    // Running the same resize again finishes it; then the space is free for q.
    const again = await cli('pool', 'resize', 'p', '--cidr', '10.62.0.0/25');
    assert.equal(again.code, 0, again.stdout + again.stderr);
    const q2 = await cli('pool', 'create', 'q', '--cidr', '10.62.0.128/25', '--block-size', '27');
    assert.equal(q2.code, 0, q2.stdout + q2.stderr);
    const h = await holders(datastore);
    assert.deepEqual(h.overlaps, []);
    assert.deepEqual(h.blocks, ['10.62.0.0/26']);
    const check = await cli('ipam', 'check', '--json');
    assert.equal(check.code, 0, check.stdout + check.stderr);
  } finally {
    tmp.remove();
  }
});
