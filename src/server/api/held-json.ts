/** What a pool still holds (ClusterIpam.poolHeld), as the API answers it: POST …/drain and GET …/held. */
import type { PoolHeld } from '../../cluster/index.js';
import { poolState } from '../../cluster/records/index.js';

export function heldJson(h: PoolHeld): Record<string, unknown> {
  return {
    name: h.pool.name,
    state: poolState(h.pool),
    draining: h.pool.draining,
    disabled: h.pool.disabled,
    allocated: h.allocated,
    inUse: h.inUse,
    idle: h.idle,
    blocks: h.blocks,
    nodes: h.nodes,
  };
}
