/**
 * A sticky pod's next incarnation taking over its hold, as one part of planAssign (plan-work.ts
 * holds the shared state).
 */
import type { Block } from '../../alloc/block.js';
import { ordinalsOf } from '../../alloc/block.js';
import { type Family, parsePrefix, prefixContainsPrefix } from '../../ip/index.js';
import { blockKey, handleKey } from '../records/index.js';
import { NeedRead, type PlanWork } from './plan-work.js';

/**
 * A sticky pod's next incarnation takes over what its hold keeps (src/cluster/records/sticky-hold-id.ts):
 * the hold's ordinals change holder to this handle, the hold record is deleted, all in this
 * txn, comparing the hold and its blocks. Only for an automatic request of a handle holding
 * nothing yet, and only all of the hold or none of it: an expired hold (GC's), one whose
 * addresses this request could not be given (a pool it does not draw from, disabled, not
 * selecting the node; a block of another node under strictAffinity; more addresses of a
 * family than asked for) is left alone and the request is served as usual. The hold is
 * compared even when absent or left alone, so a hold written meanwhile is seen on the retry.
 */
export function takeOverHold(w: PlanWork): void {
  const { req, now } = w.input;
  if (req.takeOver === undefined || !req.auto || (req.ips?.length ?? 0) > 0 || w.held.length > 0) return;
  const hs = w.input.hold;
  if (hs === undefined) throw new NeedRead([handleKey(req.takeOver)]);
  w.hold = { rev: hs.rev, taken: false };
  const rec = hs.record;
  if (!rec || rec.stickyUntil === undefined || Date.parse(rec.stickyUntil) <= Date.parse(now)) return;
  const keys = [...rec.blocks.keys()].map((c) => blockKey(parsePrefix(c)));
  const missing = keys.filter((k) => w.state(k) === undefined);
  if (missing.length > 0) throw new NeedRead(missing);
  const moves: { key: string; rev: number; block: Block; ordinals: number[] }[] = [];
  const perFamily = new Map<Family, number>();
  for (const key of keys) {
    const st = w.state(key)!;
    w.verify.set(key, st.rev);
    if (!st.block) continue;
    const ordinals = ordinalsOf(st.block, req.takeOver);
    if (ordinals.length === 0) continue;
    const family = st.block.cidr.family;
    const pool = w.candidates(family).find((p) => prefixContainsPrefix(p.cidr, st.block!.cidr));
    if (!pool) return;
    if (st.block.affinity !== req.node && w.input.snap.config.strictAffinity) return;
    perFamily.set(family, (perFamily.get(family) ?? 0) + ordinals.length);
    moves.push({ key, rev: st.rev, block: st.block, ordinals });
  }
  for (const [family, n] of perFamily) if (n > (req.auto === 'each-family' ? 1 : (req.auto[family] ?? 0))) return;
  if (moves.length === 0) return;
  for (const m of moves) {
    const allocations = new Map(m.block.allocations);
    for (const o of m.ordinals) allocations.set(o, req.handle);
    w.put(m.key, m.rev, { ...m.block, allocations }, false, m.ordinals);
  }
  w.hold.taken = true;
}
