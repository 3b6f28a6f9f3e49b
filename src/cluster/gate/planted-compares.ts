/**
 * The compares the gate sends for a write marked `plantable` (assignments: one pod's txn, a
 * node's group commit, a warm refill): all of them, unless the test-only planted bug
 * 'assign-skips-block-cas' is armed (src/util/planted-bug.ts), which drops those on blocks — after
 * the gate's checks — so the partition rig can prove its history checker catches a writer that
 * overwrites a block it saw stale.
 */
import type { Compare } from '../../store/index.js';
import { plantedBug } from '../../util/planted-bug.js';
import { BLOCK_PREFIX } from '../records/index.js';

export function plantedCompares(compares: readonly Compare[]): readonly Compare[] {
  return plantedBug('assign-skips-block-cas') ? compares.filter((c) => !c.key.startsWith(BLOCK_PREFIX)) : compares;
}
