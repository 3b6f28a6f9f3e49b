import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allocateOrdinals, newBlock } from '../../alloc/block.js';
import { parsePrefix } from '../../ip/index.js';
import { snapshotFromEntries } from './cluster-snapshot.js';
import { encodePool, validatePoolSpec } from '../records/pool-record.js';
import { ViewCache } from './view-cache.js';

describe('ViewCache save/restore', () => {
  it('restores the snapshot and one node’s blocks, labels and handle hints exactly', () => {
    const a = new ViewCache();
    a.snapshot = snapshotFromEntries({ key: 'config', value: '{"generation":3}', rev: 9 }, [
      { key: 'pools/p', value: encodePool(validatePoolSpec({ name: 'p', cidr: '10.0.0.0/16' })), rev: 4 },
    ]);
    const v = a.node('n1');
    v.noteNode({ key: 'nodes/n1', value: '{"labels":{"zone":"a","bad":1}}', rev: 5 });
    const block = allocateOrdinals(newBlock(parsePrefix('10.0.0.0/26'), 'n1'), 2, 'h').block;
    v.noteBlock('blocks/10.0.0.0-26', 12, block);
    v.noteBlock('blocks/10.0.1.0-26', 13, newBlock(parsePrefix('10.0.1.0/26'), 'other'));
    v.blocksLoaded = true;
    v.noteHandle('h', 12, { node: 'n1', blocks: new Map([['10.0.0.0/26', 2]]) });
    v.delFenceRev = 14;
    const b = new ViewCache();
    assert.equal(b.restore('n1', a.save('n1')), true);
    assert.equal(b.snapshot!.configRev, 9);
    assert.equal(b.snapshot!.config.generation, 3);
    assert.deepEqual(
      b.snapshot!.pools.map((p) => p.name),
      ['p'],
    );
    const w = b.node('n1');
    assert.deepEqual(w.labels, { rev: 5, labels: { zone: 'a' } });
    assert.deepEqual([...w.blocks.keys()], ['blocks/10.0.0.0-26'], 'a block affine to another node is not kept');
    assert.deepEqual(w.blocks.get('blocks/10.0.0.0-26'), { rev: 12, block });
    assert.equal(w.blocksLoaded, true);
    assert.equal(w.delFenceRev, 14, "the DEL fence's revision: the next plugin run's ADD does not fail on it");
    assert.deepEqual(w.handles.get('h'), {
      rev: 12,
      record: { node: 'n1', network: undefined, containerId: undefined, ifname: undefined, blocks: new Map([['10.0.0.0/26', 2]]) },
    });
  });

  it('ignores garbage, another node’s file and another format', () => {
    const c = new ViewCache();
    assert.equal(c.restore('n1', '{nope'), false);
    assert.equal(c.restore('n1', new ViewCache().save('n2')), false);
    assert.equal(c.restore('n1', JSON.stringify({ format: 99, node: 'n1' })), false);
    assert.equal(c.snapshot, undefined);
    assert.equal(c.node('n1').blocksLoaded, false);
  });
});
