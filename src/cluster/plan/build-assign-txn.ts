/**
 * The transaction a finished plan writes, as the last part of planAssign: compares on every
 * record the plan was derived from and on the node's DEL fence, the blocks and affinities it
 * writes, the handle record.
 */
import type { Block } from '../../alloc/block.js';
import { stampReleases } from '../../alloc/block-quarantine.js';
import type { Compare, Op } from '../../store/index.js';
import { nodeKey } from '../../model/node-record.js';
import { nodeTombstoneKey } from '../../model/node-tombstone.js';
import { encodeAffinity, encodeBlock, adjustHandle, encodeHandle, CONFIG_KEY, affinityKey, delFenceKey, handleKey, quarantineFor } from '../records/index.js';
import type { AssignPlan } from './assign-plan.js';
import type { PlanWork } from './plan-work.js';

/** The plan's transaction (kind 'txn') from everything `w` decided. */
export function buildAssignTxn(w: PlanWork): AssignPlan {
  const { req, snap, handle, now } = w.input;
  const compares: Compare[] = [{ key: CONFIG_KEY, rev: snap.configRev }];
  if (w.usedLabels) compares.push({ key: nodeKey(req.node), rev: w.input.labels!.rev });
  // A late landing of this txn after a DEL on the node (one that found the handle absent, too) fails here.
  compares.push({ key: delFenceKey(req.node), rev: w.input.delFence });
  const ops: Op[] = [];
  const claims: string[] = [];
  const guards: string[] = [];
  const blocks = new Map<string, Block>();
  for (const [key, w0] of w.work) {
    // Release entries whose quarantine is over go with this write (nothing is released here).
    const entry = { ...w0, block: stampReleases(null, w0.block, quarantineFor(snap.pools, w0.block.cidr, w.now)) };
    compares.push({ key, rev: entry.rev });
    ops.push({ type: 'put', key, value: encodeBlock(entry.block) });
    blocks.set(key, entry.block);
    if (entry.claimed) {
      claims.push(key);
      for (const g of w.guards.get(key) ?? []) if (!guards.includes(g)) guards.push(g);
      ops.push({ type: 'put', key: affinityKey(req.node, entry.block.cidr), value: encodeAffinity({ state: 'confirmed', claimedAt: now }) });
    }
  }
  // A claim registers the node (the affinity is its registration): a tombstone left by an
  // earlier deletion of its record no longer proves it gone (src/model/node-tombstone.ts).
  if (claims.length > 0) ops.push({ type: 'delete', key: nodeTombstoneKey(req.node) });
  for (const [key, rev] of w.verify) if (!w.work.has(key)) compares.push({ key, rev });
  for (const g of guards) if (!w.work.has(g) && !w.verify.has(g)) compares.push({ key: g, rev: 0 });
  compares.push({ key: handleKey(req.handle), rev: handle.rev });
  if (w.hold && req.takeOver !== undefined) {
    compares.push({ key: handleKey(req.takeOver), rev: w.hold.rev });
    if (w.hold.taken) ops.push({ type: 'delete', key: handleKey(req.takeOver) });
  }
  let record = handle.record;
  const writesHandle = w.added.length > 0;
  if (writesHandle) {
    record = adjustHandle(record ?? { node: req.node, ...req.attrs, since: w.input.now, blocks: new Map() }, w.delta);
    ops.push({ type: 'put', key: handleKey(req.handle), value: encodeHandle(record) });
  }
  const assignments = [...w.held, ...w.added].sort((a, b) => a.addr.family - b.addr.family || (a.addr.value < b.addr.value ? -1 : 1));
  return { kind: 'txn', compares, ops, assignments, blocks, handle: record, writesHandle, claims, guards, ...(w.hold?.taken ? { tookOver: true } : {}) };
}
