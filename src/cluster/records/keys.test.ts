import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix, parsePrefix } from '../../ip/index.js';
import { affinityKey, affinityPrefix, blockKey, cidrSegment, handleKey, parseAffinityKey, parseBlockKey, parseCidrSegment, poolKey } from './keys.js';
import { checkHandle } from '../../model/handle-id.js';
import { checkNodeName } from '../../model/node-name.js';
import { checkResourceName } from '../../model/names.js';

describe('datastore keys', () => {
  it('writes block CIDRs with "-" for "/" and parses them back', () => {
    for (const c of ['10.0.0.64/26', 'fd00::40/122', '::/128', '255.255.255.255/32']) {
      const p = parsePrefix(c);
      assert.equal(formatPrefix(parseBlockKey(blockKey(p))!), c);
      assert.ok(!cidrSegment(p).includes('/'));
    }
    assert.equal(blockKey(parsePrefix('10.0.0.64/26')), 'blocks/10.0.0.64-26');
  });

  it('refuses keys that are not canonical block CIDRs', () => {
    for (const k of ['blocks/10.0.0.65-26', 'blocks/10.0.0.64', 'blocks/x-1', 'pools/10.0.0.0-8', 'blocks/FD00::-122']) {
      assert.equal(parseBlockKey(k), undefined, k);
    }
    assert.equal(parseCidrSegment('10.0.0.0-33'), undefined);
  });

  it('keys affinities under their node so one list finds a node’s blocks', () => {
    const p = parsePrefix('fd00::/122');
    const k = affinityKey('node-a', p);
    assert.equal(k, 'affinities/node-a/fd00::-122');
    assert.ok(k.startsWith(affinityPrefix('node-a')));
    assert.ok(!k.startsWith(affinityPrefix('node')), 'node "node" does not see node-a’s blocks');
    assert.deepEqual(parseAffinityKey(k), { node: 'node-a', cidr: p });
    assert.equal(parseAffinityKey('affinities/x'), undefined);
    assert.equal(parseAffinityKey('affinities//10.0.0.0-26'), undefined);
    assert.equal(poolKey('p'), 'pools/p');
    assert.equal(handleKey('net.c.eth0'), 'handles/net.c.eth0');
  });
});

describe('names', () => {
  it('accepts resource, node and handle names and refuses the rest naming field and value', () => {
    checkResourceName('pool name', 'pool-1.v4');
    checkNodeName('node name', 'worker-1.example.com');
    // One node-name rule (src/model/node-name.ts): upper case and "_" are not Kubernetes node names.
    assert.throws(() => checkNodeName('node name', 'Worker_1.example.com'), /invalid node name "Worker_1.example.com"/);
    checkHandle('handle', 'k8s-pod-network.0123abcd.eth0');
    assert.throws(() => checkResourceName('pool name', 'Pool'), /invalid pool name "Pool"/);
    assert.throws(() => checkResourceName('pool name', 'a/b'), TypeError);
    assert.throws(() => checkResourceName('pool name', 'x'.repeat(254)), TypeError);
    assert.throws(() => checkNodeName('node name', 'a/b'), /invalid node name "a\/b"/);
    assert.throws(() => checkNodeName('node name', ''), TypeError);
    assert.throws(() => checkNodeName('node name', 7), /invalid node name 7/);
    for (const h of ['', 'a b', 'a/b', 'a\tb', 'x'.repeat(1025)]) assert.throws(() => checkHandle('handle', h), TypeError, JSON.stringify(h));
  });
});
