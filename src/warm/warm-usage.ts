/**
 * Idle vs in use, per node, for nodes whose agent keeps a warm pool (src/warm/warm-handle.ts):
 * an address is idle when a warm handle of node N holds it and no pod record of N names it;
 * every other allocated address is in use. Pure: fed the entries the summary already lists.
 *
 * A pod record is written behind (within WRITE_DELAY_MS, 1 s, of the ADD — src/warm/warm-options.ts —
 * later while the datastore is away), so an address just handed out can show as idle for that long.
 */
import { addrOfOrdinal } from '../alloc/block.js';
import { warmHandleNode } from './warm-handle.js';
import { POD_RECORD_PREFIX, tryDecodeWarmPodRecord } from '../model/warm-pod-record.js';
import { type Addr, formatAddr, type Prefix } from '../ip/index.js';
import type { Entry, Store } from '../store/index.js';
import { listAll } from '../store/list-all.js';

/** The addresses named by the agents' pod records, by node. */
export type PodAddresses = ReadonlyMap<string, ReadonlySet<string>>;

/** Reads the pod records (`agent-pods/…` entries); records that do not decode are skipped. */
export function podAddresses(entries: readonly Entry[]): PodAddresses {
  const out = new Map<string, Set<string>>();
  for (const e of entries) {
    const rec = tryDecodeWarmPodRecord(e.key, e.value);
    if (rec instanceof Error) continue;
    let set = out.get(rec.node);
    if (!set) out.set(rec.node, (set = new Set()));
    for (const a of rec.addrs) set.add(a);
  }
  return out;
}

/** The idle test of the datastore as it is now: its agents' pod records read once (the summary, `ipam show`). */
export async function warmIdleTest(store: Store): Promise<(handle: string, addr: Addr) => boolean> {
  return isIdleAllocation(podAddresses(await listAll(store, POD_RECORD_PREFIX)));
}

/** The `isIdle` of ClusterIpam.utilisation: a warm handle of node N holds it and no pod record of N names it. */
export function isIdleAllocation(inUse: PodAddresses): (handle: string, addr: Addr) => boolean {
  return (handle, addr) => {
    const node = warmHandleNode(handle);
    return node !== undefined && !inUse.get(node)?.has(formatAddr(addr));
  };
}

/**
 * Of one block's allocations (the stored `{"<ordinal>": "<handle>"}` object), how many are idle
 * warm addresses. Ordinals that are not integers within the block are skipped (ipam check reports them).
 */
export function idleInBlock(prefix: Prefix, allocations: object, inUse: PodAddresses): number {
  const isIdle = isIdleAllocation(inUse);
  let idle = 0;
  for (const [ord, handle] of Object.entries(allocations)) {
    if (typeof handle !== 'string') continue;
    let addr: Addr;
    try {
      addr = addrOfOrdinal(prefix, Number(ord));
    } catch {
      continue;
    }
    if (isIdle(handle, addr)) idle++;
  }
  return idle;
}
