/**
 * What the warm pool does at start with the resource DB's view and the datastore's, pure. The
 * datastore is the truth about which addresses the node's warm handles hold, and its pod
 * records (written behind) are evidence of which are in use; an address is idle only with
 * proof: the resource DB had it idle, or a refill the DB recorded the intent of put it there.
 * - `gone`: the DB has them (held or quarantined), the datastore does not (released by an
 *   operator, GC, a restore): forgotten, and every pod that used one loses its record
 *   (`dropPods`, with the addresses it still has, which go idle after the cooldown);
 * - `adopt`: pods the datastore's records name that the DB does not have (a lost or older
 *   resource DB) and whose DEL or GC the DB has not recorded (`released`): in use again, with
 *   the addresses of theirs the node still holds (`rows`: those the DB must learn);
 * - `forgotten`: held by the datastore, not by the DB, named by no pod record, of a refill whose
 *   intent the DB recorded (it stopped between the datastore's commit and its own): idle from
 *   `now + cooldownMs`;
 * - `quarantine`: the same but of a warm handle the DB never knew (a lost or older resource
 *   DB): nobody can say no pod uses one — a pod ADDed but not yet written behind when the DB
 *   was lost has no record — so they stay out of the idle queue, held, and are reported;
 * - `dropRecords`: pod records none of whose addresses the node holds any more, and records of
 *   pods whose DEL or GC the DB recorded (a datastore restored from a backup brings them back):
 *   deleted — such a record would name as in use an address the node may hand out again;
 * - `conflicts`: pod records naming an address another pod holds: kept and reported;
 * - `inUse`: address → the pod key holding it, for the pods kept and adopted.
 */
import type { HeldRow, PodRow } from './resource-db.js';

/** A pod record of this node in the datastore (`agent-pods/NODE/KEY`), decoded. */
export interface PodRecord extends PodRow {
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  readonly uid?: string | undefined;
}

export interface ReconcileDb {
  readonly held: readonly HeldRow[];
  readonly pods: readonly PodRow[];
  readonly quarantined: readonly HeldRow[];
  /** Warm handles of refills whose addresses never reached the DB. */
  readonly refills: ReadonlySet<string>;
  /** Pod keys whose DEL or GC the DB recorded (record delete queued, or deleted in the pod store). */
  readonly released: ReadonlySet<string>;
}

export interface ReconcileDatastore {
  readonly held: ReadonlyMap<string, HeldRow>;
  readonly records: readonly PodRecord[];
}

export interface ReconcilePlan {
  readonly gone: readonly string[];
  readonly forgotten: readonly HeldRow[];
  readonly quarantine: readonly HeldRow[];
  readonly adopt: readonly { readonly pod: PodRecord; readonly rows: readonly HeldRow[] }[];
  readonly dropRecords: readonly string[];
  readonly conflicts: readonly { readonly pod: string; readonly addrs: readonly string[] }[];
  readonly dropPods: readonly { readonly pod: PodRow; readonly keep: readonly string[] }[];
  readonly inUse: ReadonlyMap<string, string>;
}

export function planReconcile(db: ReconcileDb, datastore: ReconcileDatastore, now: number, cooldownMs: number): ReconcilePlan {
  const dbHeld = new Set(db.held.map((r) => r.addr));
  const quarantined = new Set(db.quarantined.map((r) => r.addr));
  const gone = [...db.held, ...db.quarantined].map((r) => r.addr).filter((a) => !datastore.held.has(a));
  const goneSet = new Set(gone);
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
  const dbPods = new Set(db.pods.map((p) => p.key));
  const adopt: { pod: PodRecord; rows: HeldRow[] }[] = [];
  const dropRecords: string[] = [];
  const conflicts: { pod: string; addrs: string[] }[] = [];
  for (const r of datastore.records) {
    if (dbPods.has(r.key)) continue; // the DB knows newer
    if (db.released.has(r.key)) {
      dropRecords.push(r.key); // released: the DB knows newer, and the record must go
      continue;
    }
    const mine = r.addrs.filter((a) => datastore.held.has(a));
    if (mine.length === 0) {
      dropRecords.push(r.key);
      continue;
    }
    const taken = mine.filter((a) => inUse.has(a));
    if (taken.length > 0) {
      conflicts.push({ pod: r.key, addrs: taken });
      continue;
    }
    for (const a of mine) inUse.set(a, r.key);
    adopt.push({ pod: { ...r, addrs: mine }, rows: mine.filter((a) => !dbHeld.has(a)).map((a) => ({ ...datastore.held.get(a)!, freeAt: now + cooldownMs })) });
  }
  const forgotten: HeldRow[] = [];
  const quarantine: HeldRow[] = [];
  for (const r of datastore.held.values()) {
    if (dbHeld.has(r.addr) || quarantined.has(r.addr) || inUse.has(r.addr)) continue;
    if (db.refills.has(r.handle)) forgotten.push({ ...r, freeAt: now + cooldownMs });
    else quarantine.push(r);
  }
  return { gone, forgotten, quarantine, adopt, dropRecords, conflicts, dropPods, inUse };
}
