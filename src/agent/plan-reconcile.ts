/**
 * What the warm pool does at start with the resource DB's view and the datastore's, pure. The
 * datastore is the truth about which addresses the node's warm handles hold:
 * - `gone`: the DB has them, the datastore does not (released by an operator, GC, a restore):
 *   forgotten, and every pod that used one loses its record (`dropPods`, with the addresses it
 *   still has, which go idle after the cooldown);
 * - `forgotten`: the datastore holds them, the DB does not (a crash between the refill's commit
 *   and the DB's): idle from `now + cooldownMs`, since nobody can say no pod still uses one;
 * - `inUse`: address → the pod key holding it, for the pods kept.
 */
import type { HeldRow, PodRow } from './resource-db.js';

export interface ReconcilePlan {
  readonly gone: readonly string[];
  readonly forgotten: readonly HeldRow[];
  readonly dropPods: readonly { readonly pod: PodRow; readonly keep: readonly string[] }[];
  readonly inUse: ReadonlyMap<string, string>;
}

export function planReconcile(db: { held: readonly HeldRow[]; pods: readonly PodRow[] }, datastore: ReadonlyMap<string, HeldRow>, now: number, cooldownMs: number): ReconcilePlan {
  const dbHeld = new Set(db.held.map((r) => r.addr));
  const gone = db.held.map((r) => r.addr).filter((a) => !datastore.has(a));
  const goneSet = new Set(gone);
  const forgotten = [...datastore.values()].filter((r) => !dbHeld.has(r.addr)).map((r) => ({ ...r, freeAt: now + cooldownMs }));
  const dropPods: { pod: PodRow; keep: string[] }[] = [];
  const inUse = new Map<string, string>();
  for (const p of db.pods) {
    // A pod naming an address the DB does not hold, or one another pod holds, is as broken as one that lost it.
    if (p.addrs.length === 0 || p.addrs.some((a) => goneSet.has(a) || !dbHeld.has(a) || inUse.has(a))) {
      dropPods.push({ pod: p, keep: p.addrs.filter((a) => dbHeld.has(a) && !goneSet.has(a) && !inUse.has(a)) });
      continue;
    }
    for (const a of p.addrs) inUse.set(a, p.key);
  }
  return { gone, forgotten, dropPods, inUse };
}
