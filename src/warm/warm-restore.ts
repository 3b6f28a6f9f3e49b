/**
 * The warm pool's start: the pools are rebuilt from the resource DB and reconciled with the
 * datastore's warm handles and pod records of this node (plan-reconcile.ts): an address is
 * idle only on proof (the DB had it idle, or recorded the intent of the refill that took it);
 * a pod record the DB does not know is in use; any other unknown address is quarantined.
 * Sticky reservations and in-use sticky pool keys come back from the pod store. Until it has
 * succeeded once, every verb (and the maintenance loop) tries again. Direct attachments
 * (warm-direct.ts) are checked against their own handles: their addresses are never the warm
 * handles', so they are neither adopted into the idle queue nor freed.
 */
import { type Family, formatAddr, parseAddr } from '../ip/index.js';
import { type PodRecord, planReconcile } from './plan-reconcile.js';
import { type Assignment, reuseAfterOfAddr } from '../cluster/records/index.js';
import { unusableAddrs } from './unusable-addrs.js';
import { usableFamilies } from './warm-families.js';
import type { HeldRow } from './resource-db.js';
import type { WarmDirect } from './warm-direct.js';
import { WarmError } from './warm-error.js';
import { WarmPool } from './warm-pool.js';
import type { WarmSizing } from './warm-pool-config.js';
import type { WarmState } from './warm-state.js';
import { tryDecodeWarmPodRecord } from '../model/warm-pod-record.js';

export class WarmRestore {
  readonly #s: WarmState;
  readonly #sizing: WarmSizing;
  readonly #afterReady: () => Promise<void>;
  readonly #direct: WarmDirect;
  #ready: Promise<void> | undefined;
  #quarantined = 0;
  readonly counters = { droppedOnReconcile: 0, adoptedOnReconcile: 0 };

  /** `sizing`: validated (warm-pool-config.ts); `afterReady`: the first refill, once the pools are restored. */
  constructor(state: WarmState, sizing: WarmSizing, afterReady: () => Promise<void>, direct: WarmDirect) {
    this.#s = state;
    this.#sizing = sizing;
    this.#afterReady = afterReady;
    this.#direct = direct;
  }

  /** Addresses the node's warm handles hold that no evidence shows free, as of the last restore. */
  get quarantined(): number {
    return this.#quarantined;
  }

  /** Resolves once the pools are restored (restoring them now, or joining the restore under way). */
  ensureReady(): Promise<void> {
    if (this.#s.isReady) return Promise.resolve();
    this.#ready ??= this.#init().then(
      () => {
        this.#s.isReady = true;
      },
      (e: unknown) => {
        this.#ready = undefined;
        throw e;
      },
    );
    return this.#ready;
  }

  /** ensureReady, its failure a not-ready WarmError naming the node. */
  async ready(): Promise<void> {
    try {
      await this.ensureReady();
    } catch (e) {
      throw new WarmError('not-ready', this.#s.node, `warm pool on node ${this.#s.node} not ready: ${(e as Error).message}`, { cause: e });
    }
  }

  async #init(): Promise<void> {
    const s = this.#s;
    const { node } = s.o;
    const recordPrefix = s.podRecordKey('');
    const found = await s.ds(async (ipam) => {
      // The pools as of now (one read of the config record): a start that failed for want of a pool
      // is retried by the next ADD, which must see a pool created since.
      // With the reservations and the node's labels (warmView): an address a reservation or a node
      // selector took out of service is withdrawn from the first ADD on, not from the first refresh.
      const view = await ipam.warmView(node);
      const { pools } = view;
      const families = usableFamilies(pools, s.o.pools);
      const handles = await ipam.warmHandles(s.warmHandlePrefix());
      const held = new Map<string, HeldRow>();
      for (const h of handles) {
        for (const a of (await ipam.addressesOf(h)) ?? []) {
          held.set(formatAddr(a.addr), {
            addr: formatAddr(a.addr),
            family: a.addr.family,
            handle: h,
            prefixLen: a.prefixLen,
            gateway: formatAddr(a.gateway),
            freeAt: 0,
          });
        }
      }
      // The pod records written behind: evidence of which held addresses are in use.
      const records = (await ipam.warmRecords(recordPrefix)).map((e) => decodePodRecord(e.key, e.value));
      // What each direct attachment's own handle holds: the evidence that its pod holds them.
      const direct = new Map<string, readonly Assignment[] | undefined>();
      for (const r of this.#direct.rows()) direct.set(r.key, await ipam.addressesOf(r.key));
      const unusable = unusableAddrs(view, [...held.keys()].map(parseAddr));
      return { families, held, records, direct, view, unusable, reuseAfter: reuseAfterOfAddr(pools) };
    });
    // Until the watch's first refresh: the view the start read (its generation is published only
    // once a refresh applied it: WarmRefiller.refreshPools sets poolsRev).
    s.view = found.view;
    s.unusable = found.unusable;
    // No usable pool and nothing held: ready all the same (a DEL must be answered); an ADD then
    // looks for a pool created since (warm-families.ts).
    const now = s.now();
    const { db, pods, log } = s;
    // Reconcile: the datastore is the truth about what the node holds (plan-reconcile.ts).
    const deletes = db.queuedDeletes();
    const released = new Set([
      ...pods.store
        .all()
        .filter((r) => r.deletedAt !== undefined)
        .map((r) => r.key),
      ...[...deletes].map((k) => k.slice(recordPrefix.length)),
    ]);
    const records = found.records.filter((r): r is PodRecord => !(r instanceof Error));
    for (const e of found.records)
      if (e instanceof Error)
        log.warn({ node, error: e.message }, 'warm pool: a pod record in the datastore cannot be read; its addresses are not known to be free');
    const mine = { held: db.held(), pods: db.pods(), quarantined: db.quarantined(), refills: db.refillIntents(), released };
    const plan = planReconcile(mine, { held: found.held, records }, now, s.o.cooldownMs);
    if (db.fresh && found.held.size > 0) {
      log.warn(
        { node, resourceDb: db.path, held: found.held.size, podRecords: records.length },
        "warm pool: the resource DB is new but the datastore holds addresses for this node: the datastore's pod records decide which are in use",
      );
    }
    let directKeys = new Set<string>();
    db.transaction(() => {
      directKeys = this.#direct.reconcile(found.direct);
      if (plan.gone.length > 0) {
        log.warn({ node, addrs: plan.gone }, 'warm pool: the datastore no longer holds these addresses for this node; dropped from the resource DB');
        db.dropHeld(plan.gone);
        db.unquarantine(plan.gone);
        pods.store.unreserveAddrs(plan.gone);
        this.counters.droppedOnReconcile += plan.gone.length;
      }
      if (plan.forgotten.length > 0) {
        log.info(
          { node, addrs: plan.forgotten.map((r) => r.addr) },
          'warm pool: addresses a refill put in the datastore before the resource DB recorded them join the idle queue after the cooldown',
        );
        db.addHeld(plan.forgotten);
        this.counters.adoptedOnReconcile += plan.forgotten.length;
      }
      for (const { pod, rows } of plan.adopt) {
        log.warn(
          { node, pod: pod.key, addrs: pod.addrs },
          'warm pool: a pod the resource DB does not know has a record in the datastore: its addresses stay in use until its DEL or a GC',
        );
        db.addHeld(rows);
        db.unquarantine(rows.map((r) => r.addr));
        db.adoptPod(pod);
        const { namespace, name, uid } = pod;
        pods.store.seen({
          key: pod.key,
          network: pod.network,
          namespace,
          name,
          uid,
          containerId: pod.containerId,
          ifname: pod.ifname,
          ownerKind: undefined,
          sticky: false,
          poolKey: pod.key,
          addrs: pod.addrs,
          addedAt: pod.since,
        });
      }
      if (plan.quarantine.length > 0) db.quarantine(plan.quarantine, now);
      for (const key of plan.dropRecords) {
        log.warn({ node, pod: key }, 'warm pool: a pod record names no address this node still holds, or a pod whose DEL this node recorded; deleted');
        db.removePod(key, [], now, s.podRecordKey(key), now, 'reconcile');
      }
      for (const c of plan.conflicts)
        log.error({ node, pod: c.pod, addrs: c.addrs }, 'warm pool: a pod record in the datastore names an address another pod holds; kept, nothing released');
      for (const { pod, keep } of plan.dropPods) {
        log.warn({ node, pod: pod.key, addrs: pod.addrs }, 'warm pool: a pod lost its address in the datastore; its record is dropped');
        db.removePod(pod.key, keep, now + s.o.cooldownMs, s.podRecordKey(pod.key), now, 'reconcile');
      }
      db.clearRefillIntents();
    });
    const quarantined = db.quarantined();
    this.#quarantined = quarantined.length;
    if (quarantined.length > 0) {
      log.warn(
        { node, addrs: quarantined.map((r) => r.addr) },
        'warm pool: addresses the node holds that are not known to be free (no record of a pod, no refill of this resource DB): held out of the idle queue; release them with `podipam ipam release --ip ADDR --force` once no pod uses them',
      );
    }
    const held = db.held();
    const releasedAt = new Map(held.flatMap((r) => (typeof r.releasedAt === 'number' ? [[r.addr, r.releasedAt] as const] : [])));
    const releasedOf = (addr: string): { releasedAt?: number } => (releasedAt.has(addr) ? { releasedAt: releasedAt.get(addr)! } : {});
    const inUse = plan.inUse;
    const { inUseOf, reservedOf } = this.#restoreSticky(held, inUse, directKeys, now);
    const pools = new Map<Family, WarmPool>();
    s.meta.clear();
    for (const f of [4, 6] as Family[]) {
      if (!found.families.has(f) && !held.some((r) => r.family === f)) continue;
      const rows = held.filter((r) => r.family === f);
      const { entries: inUseRows, keys } = inUseOf(f);
      const reserved = reservedOf(f, keys);
      const taken = new Set([...inUseRows.map((e) => e.addr), ...reserved.map((e) => e.addr)]);
      const pool = WarmPool.restore(
        { family: f, ...this.#sizing },
        {
          idle: rows.filter((r) => !taken.has(r.addr)).map((r) => ({ addr: parseAddr(r.addr), freeAt: r.freeAt, ...releasedOf(r.addr) })),
          inUse: inUseRows.map((e) => ({ key: e.key, addr: parseAddr(e.addr), sticky: e.sticky })),
          reserved: reserved.map((e) => ({ key: e.key, addr: parseAddr(e.addr), expiresAt: e.expiresAt, freeAt: e.freeAt, ...releasedOf(e.addr) })),
        },
      );
      // The pools' reuse quarantine as the start read them (the maintenance loop's view keeps it current).
      pool.setReuseAfter(found.reuseAfter);
      pools.set(f, pool);
    }
    for (const r of db.held()) s.meta.set(r.addr, { handle: r.handle, prefixLen: r.prefixLen, gateway: parseAddr(r.gateway) });
    s.pools = pools;
    log.info({ node, families: [...pools.keys()], ...Object.fromEntries([...pools].map(([f, p]) => [`ipv${f}`, p.counts()])) }, 'warm pool ready');
    s.isReady = true;
    await this.#afterReady().catch(() => undefined); // failures are logged and backed off
  }

  /**
   * The pool keys of the in-use addresses (a sticky pod's namespace/name key, from the pod
   * store) and the sticky reservations to rebuild. Pod-store rows whose pod the DB no longer
   * has are marked deleted; a pool key claimed twice (never written so) falls back to the
   * attachment key, not sticky; reservations of addresses not held or in use are dropped.
   */
  #restoreSticky(held: readonly HeldRow[], inUse: ReadonlyMap<string, string>, direct: ReadonlySet<string>, now: number) {
    const pods = this.#s.pods;
    const store = pods.store;
    const podKeys = new Set([...inUse.values(), ...direct]);
    for (const r of store.live()) if (!podKeys.has(r.key)) store.deleted(r.key, now);
    const familyOf = new Map(held.map((r) => [r.addr, r.family] as const));
    const inUseOf = (f: Family): { entries: { key: string; addr: string; sticky: boolean }[]; keys: Set<string> } => {
      const keys = new Set<string>();
      const entries: { key: string; addr: string; sticky: boolean }[] = [];
      for (const [addr, attach] of inUse) {
        if (familyOf.get(addr) !== f) continue;
        let { poolKey, sticky } = pods.poolKeyOf(attach);
        if (keys.has(poolKey)) {
          this.#s.log.warn({ poolKey, attachment: attach }, 'warm pool: a pool key is held twice in the resource DB; the attachment is no longer sticky');
          const r = store.get(attach);
          if (r) store.seen({ ...r, poolKey: attach, sticky: false });
          ({ poolKey, sticky } = { poolKey: attach, sticky: false });
        }
        keys.add(poolKey);
        entries.push({ key: poolKey, addr, sticky });
      }
      return { entries, keys };
    };
    const reservations = store.reservations().sort((x, y) => y.expiresAt - x.expiresAt); // a key's latest first
    const stale = reservations.filter((r) => !familyOf.has(r.addr) || inUse.has(r.addr)).map((r) => r.addr);
    if (stale.length > 0) store.unreserveAddrs(stale);
    const reservedOf = (f: Family, usedKeys: ReadonlySet<string>): { key: string; addr: string; expiresAt: number; freeAt: number }[] => {
      const seen = new Set<string>();
      const out: { key: string; addr: string; expiresAt: number; freeAt: number }[] = [];
      for (const r of reservations) {
        if (familyOf.get(r.addr) !== f || inUse.has(r.addr) || usedKeys.has(r.poolKey) || seen.has(r.poolKey)) continue;
        seen.add(r.poolKey);
        out.push({ key: r.poolKey, addr: r.addr, expiresAt: r.expiresAt, freeAt: r.freeAt });
      }
      return out;
    };
    return { inUseOf, reservedOf };
  }
}

/** A pod record of this node (src/model/warm-pod-record.ts) as the reconcile plan reads it, or the Error saying why it is not one. */
function decodePodRecord(key: string, value: string): PodRecord | Error {
  const r = tryDecodeWarmPodRecord(key, value);
  if (r instanceof Error) return r;
  return {
    key: r.attachment,
    network: r.network ?? '',
    containerId: r.containerId ?? '',
    ifname: r.ifname ?? '',
    addrs: [...r.addrs],
    since: r.since ?? 0,
    namespace: r.namespace,
    name: r.name,
    uid: r.uid,
  };
}
