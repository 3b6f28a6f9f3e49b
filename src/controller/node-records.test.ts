import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../store/memory/memory-store.js';
import { addNode } from './add-node.js';
import { deleteNode, recordNodeGone } from './delete-node.js';
import { decodeNodeTombstone, nodeTombstoneKey } from '../model/node-tombstone.js';
import { CidrClaimedError, NodeExistsError, UnknownNodeError } from './errors.js';
import { listNodes } from './list-nodes.js';
import { decodeNodeCidrClaim, nodeCidrClaimKey } from './node-cidr-claim.js';
import { decodeNodeRecord, encodeNodeRecord, nodeKey } from '../model/node-record.js';
import { writeNodeRecord } from './write-node-record.js';

test('addNode writes a record once and claims the CIDRs it brings; nothing is written on error', async () => {
  const store = new MemoryStore();
  const rec = await addNode(store, { name: 'a', labels: { zone: 'x' }, podCIDRs: ['10.0.1.0/24'] }, new Date('2026-01-02T03:04:05Z'));
  assert.deepEqual(rec, { name: 'a', labels: { zone: 'x' }, podCIDRs: ['10.0.1.0/24'], createdAt: '2026-01-02T03:04:05.000Z' });
  assert.equal(decodeNodeCidrClaim((await store.get(nodeCidrClaimKey('10.0.1.0/24')))?.value ?? ''), 'a');
  const rev = (await store.txn([], [])).rev;
  await assert.rejects(
    addNode(store, { name: 'a' }),
    (e: unknown) => e instanceof NodeExistsError && e.node === 'a' && e.message === 'node "a" already exists',
  );
  await assert.rejects(
    addNode(store, { name: 'b', podCIDRs: ['10.0.1.0/24'] }),
    (e: unknown) => e instanceof CidrClaimedError && e.owner === 'a' && e.cidr === '10.0.1.0/24',
  );
  await assert.rejects(addNode(store, { name: 'B' }), /invalid node name "B"/);
  assert.equal((await store.txn([], [])).rev, rev, 'nothing written');
});

test('deleteNode removes the record and its claims in one write; unknown nodes are named', async () => {
  const store = new MemoryStore();
  await addNode(store, { name: 'a', podCIDRs: ['10.0.1.0/24', 'fd00::/64'] });
  await addNode(store, { name: 'b' });
  const gone = await deleteNode(store, 'a', { by: 'cli' });
  assert.deepEqual(gone.podCIDRs, ['10.0.1.0/24', 'fd00::/64']);
  assert.deepEqual(await store.list('nodecidrs/'), []);
  assert.deepEqual(
    (await listNodes(store)).map((n) => n.record.name),
    ['b'],
  );
  await assert.rejects(
    deleteNode(store, 'a', { by: 'cli' }),
    (e: unknown) => e instanceof UnknownNodeError && e.node === 'a' && e.message === 'node "a" not found',
  );
});

test("a deletion writes the node's tombstone in its transaction; adding the node again removes it", async () => {
  const store = new MemoryStore();
  await addNode(store, { name: 'a' });
  const tomb = async () => {
    const e = await store.get(nodeTombstoneKey('a'));
    return e ? decodeNodeTombstone(e.key, e.value) : undefined;
  };
  assert.equal(await tomb(), undefined);
  const before = (await store.txn([], [])).rev;
  await deleteNode(store, 'a', { by: 'api' });
  const e = await store.get(nodeTombstoneKey('a'));
  assert.equal(e?.rev, before + 1, 'one transaction: record gone and tombstone written at one revision');
  assert.equal((await tomb())?.by, 'api');
  assert.ok(Date.now() - Date.parse((await tomb())!.deletedAt) < 60_000);
  await addNode(store, { name: 'a' });
  assert.equal(await tomb(), undefined, 'a re-added node is not gone');

  // recordNodeGone: a node with no record gets a tombstone (the operator's word); with one, a deletion.
  assert.equal(await recordNodeGone(store, 'never', { by: 'cli' }), undefined);
  assert.equal((await store.get(nodeTombstoneKey('never'))) !== undefined, true);
  assert.equal((await recordNodeGone(store, 'a', { by: 'cli' }))?.name, 'a');
  assert.equal(await store.get(nodeKey('a')), undefined);
  assert.equal((await tomb())?.by, 'cli');
  assert.throws(() => decodeNodeTombstone(nodeTombstoneKey('x'), '{"name":"y","deletedAt":"t","by":"cli"}'), /node tombstone nodes-deleted\/x does not hold/);
});

test('writeNodeRecord is compare-and-swap on the record and on each new claim', async () => {
  const store = new MemoryStore();
  await addNode(store, { name: 'a' });
  await addNode(store, { name: 'b', podCIDRs: ['10.0.2.0/24'] });
  const e = await store.get(nodeKey('a'));
  const prev = decodeNodeRecord(e!.key, e!.value);
  // Another node's claim: nothing written, the owner named.
  const lost = await writeNodeRecord(store, { name: 'a', rev: e!.rev, prev }, { ...prev, podCIDRs: ['10.0.2.0/24'] });
  assert.deepEqual(lost, { ok: false, stale: false, claimedBy: new Map([['10.0.2.0/24', 'b']]), ownClaims: new Map() });
  // A leftover claim naming this node: reported with its rev, taken over when passed back.
  await store.txn([], [{ type: 'put', key: nodeCidrClaimKey('10.0.3.0/24'), value: JSON.stringify({ node: 'a' }) }]);
  const own = await writeNodeRecord(store, { name: 'a', rev: e!.rev, prev }, { ...prev, podCIDRs: ['10.0.3.0/24'] });
  assert.equal(own.ok, false);
  const ownClaims = own.ok ? new Map() : own.ownClaims;
  assert.equal(ownClaims.size, 1);
  const won = await writeNodeRecord(store, { name: 'a', rev: e!.rev, prev }, { ...prev, podCIDRs: ['10.0.3.0/24'] }, ownClaims);
  assert.equal(won.ok, true);
  // A stale base: nothing written, `stale` set.
  const stale = await writeNodeRecord(store, { name: 'a', rev: e!.rev, prev }, { ...prev, podCIDRs: ['10.0.4.0/24'] });
  assert.equal(stale.ok === false && stale.stale, true);
  assert.equal(await store.get(nodeCidrClaimKey('10.0.4.0/24')), undefined);
  // Dropping a CIDR deletes its claim.
  const cur = await store.get(nodeKey('a'));
  const r = decodeNodeRecord(cur!.key, cur!.value);
  assert.equal((await writeNodeRecord(store, { name: 'a', rev: cur!.rev, prev: r }, { ...r, podCIDRs: [] })).ok, true);
  assert.equal(await store.get(nodeCidrClaimKey('10.0.3.0/24')), undefined);
});

test('decodeNodeRecord rejects records of the wrong shape, naming the key', () => {
  assert.throws(() => decodeNodeRecord('nodes/a', '{'), /node record nodes\/a is not valid JSON/);
  assert.throws(() => decodeNodeRecord('nodes/a', '{"name":"b","labels":{},"podCIDRs":[],"createdAt":"x"}'), /nodes\/a does not hold/);
  assert.throws(() => decodeNodeRecord('nodes/a', '{"name":"a","labels":{"k":1},"podCIDRs":[],"createdAt":"x"}'), /does not hold/);
  const rec = { name: 'a', labels: {}, podCIDRs: ['10.0.0.0/24'], createdAt: 'x', deleting: true };
  assert.deepEqual(decodeNodeRecord('nodes/a', encodeNodeRecord(rec)), rec);
});
