/** `req.ipSet` as one part of planAssign: the set's lowest free address, or why none is free. */
import { assignOrdinal, holderOf, newBlock, ordinalOf } from '../../alloc/block.js';
import { excludedRole } from '../../alloc/block-addressing.js';
import { prefixOf } from '../../ip/index.js';
import { PlacementError } from '../../model/placement.js';
import { IpSetExhaustedError, NoIpSetError, ipSetBlocks, blockKey, poolUnusableWhy, poolUsable } from '../records/index.js';
import { NeedRead, type PlanWork } from './plan-work.js';

/**
 * `req.ipSet`: the lowest free address of the set (unless the handle holds one already), as a
 * specific address of its block — read, claimed when absent, borrowed from another node's
 * block unless strictAffinity. Other families are left to #assignAuto.
 */
export function assignFromSet(w: PlanWork): void {
  const { req, snap } = w.input;
  if (req.ipSet === undefined) return;
  const unusable = (problem: string): never => {
    if (req.placedBy) throw new PlacementError(req.placedBy.source, req.placedBy.pod, problem);
    throw new NoIpSetError(req.ipSet!, problem);
  };
  const set = snap.ipSets.find((s) => s.name === req.ipSet);
  if (!set) return unusable(`ip-set "${req.ipSet}" does not exist`);
  if ([...w.held, ...w.added].some((a) => set.addrs.contains(a.addr))) return;
  const pool = snap.pools.find((p) => p.name === set.pool);
  if (!pool) return unusable(`its pool "${set.pool}" does not exist`);
  if (!poolUsable(pool)) return unusable(`its pool "${pool.name}" is ${poolUnusableWhy(pool)}`);
  const size = Number(set.addrs.size());
  const keys = ipSetBlocks(set.addrs, pool.blockSize).map(blockKey);
  const missing = keys.filter((k) => w.state(k) === undefined);
  if (missing.length > 0) throw new NeedRead(missing);
  let held = 0;
  let foreign = 0;
  let quarantined = 0;
  let firstEnd = Infinity;
  for (const a of set.addrs.addrs()) {
    const cidr = prefixOf(a, pool.blockSize);
    const o = ordinalOf(cidr, a);
    if (excludedRole(cidr, o) !== undefined || snap.reserved.contains(a)) continue;
    const key = blockKey(cidr);
    const st = w.state(key)!;
    const block = st.block ?? newBlock(cidr, req.node);
    if (holderOf(block, o) !== undefined) {
      held++;
      continue;
    }
    const until = w.quarantine(block).get(o);
    if (until !== undefined) {
      quarantined++;
      firstEnd = Math.min(firstEnd, until);
      continue;
    }
    if (block.affinity !== req.node && snap.config.strictAffinity) {
      foreign++;
      continue;
    }
    w.put(key, st.rev, assignOrdinal(block, o, req.handle), st.block === null, [o]);
    return;
  }
  const why = [
    ...(foreign > 0 ? [`${foreign} free one${foreign === 1 ? ' is' : 's are'} in blocks of other nodes and strictAffinity is on`] : []),
    ...(quarantined > 0
      ? [
          `${quarantined} free one${quarantined === 1 ? ' is' : 's are'} quarantined after ${quarantined === 1 ? 'its' : 'their'} release (pool reuseAfter) until ${new Date(firstEnd).toISOString()} at the earliest`,
        ]
      : []),
  ];
  throw new IpSetExhaustedError(set.name, size, held, why.length > 0 ? why.join('; ') : undefined);
}
