/**
 * The warm pool's verbs on typed requests: ADD takes one address per family from the pools
 * (a miss waits for an urgent refill) and commits the pod's row — and its pod record, queued
 * for the write-behind — to the resource DB before the answer; DEL lets them go (a sticky
 * pod's into a reservation for its next incarnation); CHECK and GC as the CNI spec asks; the
 * pod GC's release of pods gone from the API server. An attachment whose pod asks for pools,
 * addresses or an ip-set is allocated directly on the datastore instead (warm-direct.ts), and its
 * DEL, CHECK and GC go there too. Runtime reconciliation (src/reconcile) lists the pod rows,
 * each with the last ADD or DEL of its container id this process began (a repeated ADD starts
 * the creation grace again), and frees one as a DEL would (releaseAsListed) only while the row is
 * the one it judged and no ADD or DEL of that container id began since.
 */
import { CallTracker } from '../util/call-tracker.js';
import { addUsableFamilies, noUsablePoolMessage } from './warm-families.js';
import { crashPoint } from '../util/crash-point.js';
import { type Addr, type Family, formatAddr } from '../ip/index.js';
import { cniHandleId } from '../model/handle-id.js';
import type { ReleaseEvidence, ReleaseReason } from '../model/history.js';
import type { PodRow } from './resource-db.js';
import { hasPlacement } from '../model/placement.js';
import type { WarmDirect } from './warm-direct.js';
import { WarmError } from './warm-error.js';
import type { WarmRefiller } from './warm-refiller.js';
import type { WarmRestore } from './warm-restore.js';
import { type WarmAnswer, type WarmRequest, warmRequestKey } from './warm-request.js';
import type { WarmState } from './warm-state.js';
import { encodeWarmPodRecord } from '../model/warm-pod-record.js';

export class WarmVerbs {
  readonly #s: WarmState;
  readonly #restore: Pick<WarmRestore, 'ready'>;
  readonly #refiller: WarmRefiller;
  readonly #direct: WarmDirect;
  readonly counters = { hits: 0, misses: 0, runtimeAbsent: 0 };
  /** Container ids with an ADD or DEL running, and when one last began (kept while the id has a pod row or runs). */
  readonly #calls: CallTracker;

  /**
   * `restore.ready()`: resolves once the pools are restored, else a not-ready WarmError
   * (warm-restore.ts). Objects and their methods, not closures, here and for the clock: every
   * pool's calls then call the same functions, the warm-up's pool's and the agent's (V8 throws
   * code optimised for one closure away at another's).
   */
  constructor(state: WarmState, restore: Pick<WarmRestore, 'ready'>, refiller: WarmRefiller, direct: WarmDirect) {
    this.#s = state;
    this.#restore = restore;
    this.#refiller = refiller;
    this.#direct = direct;
    this.#calls = new CallTracker(state.now);
  }

  async add(req: WarmRequest): Promise<WarmAnswer> {
    const done = this.#calls.begin(req.containerId);
    try {
      return await this.#add(req);
    } finally {
      done();
    }
  }

  /** Container ids with an ADD or DEL running now. */
  inFlight(): ReadonlySet<string> {
    return this.#calls.inFlight();
  }

  /**
   * The pod rows (attachments the idle queue served), for runtime reconciliation, each with
   * `touchedAt`: when an ADD or DEL of its container id last began, if this process saw one; a
   * not-ready WarmError before the pools are restored (nothing can be judged then).
   */
  async podRows(): Promise<(PodRow & { readonly touchedAt?: number })[]> {
    await this.#restore.ready();
    const rows = this.#s.db.pods();
    const held = new Set(rows.map((r) => r.containerId));
    this.#calls.retain((id) => held.has(id));
    return rows.map((r) => {
      const touchedAt = this.#calls.touchedAt(r.containerId);
      return touchedAt === undefined ? r : { ...r, touchedAt };
    });
  }

  /**
   * Frees `row` as a DEL would (idle after the cooldown, a sticky pod's into its reservation;
   * the pod record's delete queued with reason `runtime-absent` and `evidence`), only while
   * the resource DB still has that row (same key, container id and `since`), no ADD or DEL of
   * the container id runs, and none began since the listing (its `touchedAt`, podRows').
   * Returns the addresses freed; none when any of that does not hold (nothing changed). No await
   * between the checks and the release: no verb can run in between.
   */
  releaseAsListed(row: Pick<PodRow, 'key' | 'containerId' | 'since'> & { readonly touchedAt?: number }, evidence: ReleaseEvidence): string[] {
    const s = this.#s;
    if (!s.isReady || s.closed || this.#calls.isBusy(row.containerId) || this.#direct.has(row.key)) return [];
    if (this.#calls.touchedAt(row.containerId) !== row.touchedAt) return [];
    const now = s.db.pods().find((p) => p.key === row.key);
    if (now === undefined || now.containerId !== row.containerId || now.since !== row.since) return [];
    const freed = this.#releaseAttachment(row.key, s.now(), 'runtime-absent', undefined, evidence);
    if (freed.length > 0) this.counters.runtimeAbsent++;
    return freed;
  }

  async #add(req: WarmRequest): Promise<WarmAnswer> {
    await this.#restore.ready();
    const s = this.#s;
    const { db, pods } = s;
    const key = warmRequestKey(req, s.node);
    const holds = db.hasPod(key);
    // An annotated pod (or a repeated ADD of one) never takes from the idle queue; an attachment
    // the pool already serves stays the pool's (a repeated ADD returns what it holds).
    if (this.#direct.has(key) || (!holds && req.placement !== undefined && hasPlacement(req.placement))) return this.#direct.add(req, key, req.placement ?? {});
    if (holds && req.placement?.ips) this.#requireHeld(key, req.placement.ips.parsed);
    if (s.pools.size === 0) {
      // Serving no family yet: a pool may have been created since the start (one config read, only then).
      addUsableFamilies(s, s.sizing, (await s.ds((ipam) => ipam.currentPools())).pools);
      if (s.pools.size === 0) throw new WarmError('not-ready', s.node, `warm pool on node ${s.node} not ready: ${noUsablePoolMessage(s.o.pools)}`);
    }
    let id = await pods.identify(
      { network: req.network, ifname: req.ifname, cniArgs: req.cniArgs, ...(req.placement?.sticky ? { sticky: req.placement.sticky.parsed } : {}) },
      key,
      holds,
    );
    // Checked again with no await before the acquire: another ADD may have taken the key meanwhile.
    const holder = id.poolKey !== key ? pods.store.holder(id.poolKey) : undefined;
    if (holder && holder.key !== key && holder.key !== id.transferFrom) {
      s.log.warn(
        { poolKey: id.poolKey, holder: holder.key, attachment: key },
        'sticky pod: another attachment took its pool key meanwhile; this one is not sticky',
      );
      id = { ...id, sticky: false, poolKey: key, transferFrom: undefined };
    }
    if (id.transferFrom !== undefined) {
      s.log.info(
        { namespace: id.namespace, name: id.name, from: id.transferFrom, to: key },
        'sticky pod: the new incarnation takes over what its dead one holds',
      );
      // The dead incarnation's hold ends here (its DEL never came, or came as a sticky one).
      this.#releaseAttachment(id.transferFrom, s.now(), 'del', true);
    }
    const poolKey = id.poolKey;
    let stickyHit = false;
    for (let attempt = 0; attempt < 16; attempt++) {
      const now = s.now();
      // Idle addresses of a pool that is no longer usable leave the queue before anything is taken.
      this.#refiller.withdraw(now);
      const got: [Family, Addr][] = [];
      let missed: Family | undefined;
      let retryAt: number | undefined;
      let full = false;
      let fresh = false;
      for (const [f, pool] of s.pools) {
        const r = pool.acquire(poolKey, now, { sticky: id.sticky });
        if (r.kind === 'hit') {
          got.push([f, r.addr]);
          if (r.from !== 'again') fresh = true;
          if (r.from === 'sticky') stickyHit = true;
          continue;
        }
        missed ??= f;
        if (r.refill) this.#refiller.demand(f);
        else {
          full = true;
          retryAt = r.retryAt;
        }
      }
      if (missed === undefined) {
        const texts = got.map(([, a]) => formatAddr(a));
        if (fresh) {
          const addrs = texts;
          try {
            db.transaction(() => {
              db.addPod(
                { key, network: req.network, containerId: req.containerId, ifname: req.ifname, addrs, since: now },
                {
                  key: s.podRecordKey(key),
                  value: encodeWarmPodRecord(
                    {
                      network: req.network,
                      containerId: req.containerId,
                      ifname: req.ifname,
                      addrs,
                      warmHandles: got.map(([, a]) => s.meta.get(formatAddr(a))?.handle),
                      since: now,
                      namespace: id.namespace,
                      name: id.name,
                      uid: id.uid,
                    },
                    key,
                  ),
                },
              );
              const { namespace, name, uid, ownerKind, sticky } = id;
              pods.store.seen({
                key,
                network: req.network,
                namespace,
                name,
                uid,
                containerId: req.containerId,
                ifname: req.ifname,
                ownerKind,
                sticky,
                poolKey,
                addrs,
                addedAt: now,
              });
              if (sticky) pods.store.unreserve(poolKey);
            });
          } catch (e) {
            for (const [f] of got) s.pools.get(f)!.cancel(poolKey, now);
            throw new WarmError('io', s.node, `resource DB ${db.path}: ${(e as Error).message}`, { cause: e });
          }
          crashPoint('agent.add.recorded');
          this.counters.hits += attempt === 0 ? 1 : 0;
          if (stickyHit) pods.stickyHit();
        }
        this.#refiller.lowWater();
        return { ips: texts.map((a) => s.ipConfig(a)) };
      }
      // Both or neither: what this attempt took goes back where it was.
      for (const [f] of got) s.pools.get(f)!.cancel(poolKey, now);
      stickyHit = false;
      if (attempt === 0) this.counters.misses++;
      if (full) {
        const wait = retryAt === undefined ? undefined : retryAt - now;
        throw new WarmError(
          'transient',
          s.node,
          `warm pool of IPv${missed} on node ${s.node} is at capacity ${s.o.capacity}${wait !== undefined ? `: the next address is free in ${Math.max(0, Math.ceil(wait / 1000))} s` : ''}`,
        );
      }
      await this.#refiller.waitForRefill(missed);
    }
    throw new WarmError('transient', s.node, `warm pool on node ${s.node}: no address after repeated refills`);
  }

  /**
   * A repeated ADD of an attachment the pool serves returns what it holds; one asking for an
   * address it does not hold (its podipam.io/ip changed meanwhile) is refused naming both —
   * never a second address for one attachment.
   */
  #requireHeld(key: string, want: readonly Addr[]): void {
    const s = this.#s;
    const { poolKey } = s.pods.poolKeyOf(key);
    const held = [...s.pools.values()].map((p) => p.addressOf(poolKey)).filter((a): a is Addr => a !== undefined);
    const missing = want.find((w) => !held.some((a) => a.family === w.family && a.value === w.value));
    if (missing === undefined) return;
    throw new WarmError(
      'address-unavailable',
      s.node,
      `address ${formatAddr(missing)} is not available: this attachment (${JSON.stringify(key)}) already holds ${held.map(formatAddr).join(', ') || 'its earlier address'} from its earlier ADD; a repeated ADD returns what it holds and cannot change it (DEL the attachment first)`,
    );
  }

  /** `why`: the runtime's DEL, or its CNI GC (gc below) — the history's reason. */
  async del(req: WarmRequest, why: ReleaseReason = 'del'): Promise<void> {
    const done = this.#calls.begin(req.containerId);
    try {
      await this.#del(req, why);
    } finally {
      done();
    }
  }

  async #del(req: WarmRequest, why: ReleaseReason): Promise<void> {
    await this.#restore.ready();
    const key = warmRequestKey(req, this.#s.node);
    if (this.#direct.has(key)) return this.#direct.release(key, why);
    this.#releaseAttachment(key, this.#s.now(), why);
  }

  /** Succeeds when the attachment holds addresses, among them every one of `expect` (its prevResult's). */
  async check(req: WarmRequest, expect: readonly Addr[]): Promise<void> {
    await this.#restore.ready();
    const s = this.#s;
    const key = warmRequestKey(req, s.node);
    if (this.#direct.has(key)) return this.#direct.check(key, expect);
    const { poolKey } = s.pods.poolKeyOf(key);
    const held = [...s.pools.values()].map((p) => p.addressOf(poolKey)).filter((a): a is Addr => a !== undefined);
    if (held.length === 0) throw new WarmError('not-found', s.node, `attachment ${JSON.stringify(key)} holds no warm-pool address on node ${s.node}`);
    for (const want of expect) {
      if (!held.some((a) => a.family === want.family && a.value === want.value)) {
        throw new WarmError(
          'not-found',
          s.node,
          `attachment ${JSON.stringify(key)} does not hold ${formatAddr(want)} (it holds ${held.map(formatAddr).join(', ')})`,
        );
      }
    }
  }

  /** Releases every attachment of `network` not in `valid`. */
  async gc(network: string, valid: readonly { readonly containerId: string; readonly ifname: string }[]): Promise<void> {
    await this.#restore.ready();
    const keep = new Set(valid.map((a) => cniHandleId(network, a.containerId, a.ifname)));
    for (const p of [...this.#s.db.pods(), ...this.#direct.rows()]) {
      if (p.network === network && !keep.has(p.key)) await this.del({ containerId: p.containerId, ifname: p.ifname, cniArgs: new Map(), network }, 'cni-gc');
    }
  }

  /**
   * The pod GC's release (pod-tracker.ts): gone for good; returns how many attachments held
   * addresses. A direct attachment whose handle cannot be released now (datastore away) is left
   * for a later run.
   */
  async gcRelease(keys: readonly string[], now: number): Promise<number> {
    if (!this.#s.isReady || this.#s.closed) return 0;
    let n = 0;
    for (const k of keys) {
      if (this.#direct.has(k)) {
        try {
          await this.#direct.release(k, 'warm-gc');
          n++;
        } catch (e) {
          this.#s.log.warn(
            { attachment: k, error: (e as Error).message },
            'pod GC: the handle of a directly allocated attachment cannot be released now; left for a later run',
          );
        }
      } else if (this.#releaseAttachment(k, now, 'warm-gc', false).length > 0) n++;
    }
    return n;
  }

  /**
   * Lets the attachment's addresses go: a sticky one's (`sticky` undefined: as its ADD decided;
   * false: gone for good, the GC's) into a reservation for its pool key, else idle after the
   * cooldown. `why` (and `evidence`) go with the pod record's queued delete (the history stamp's).
   * Returns the addresses released (none when the attachment holds none).
   */
  #releaseAttachment(key: string, now: number, why: ReleaseReason, sticky?: boolean, evidence?: ReleaseEvidence): string[] {
    const s = this.#s;
    const { db, pods } = s;
    // Held under its own key: not sticky (a sticky attachment holds under its pod's), no row read.
    let own: { poolKey: string; sticky: boolean } | undefined;
    for (const pool of s.pools.values()) if (pool.addressOf(key) !== undefined) own = { poolKey: key, sticky: false };
    own ??= pods.poolKeyOf(key);
    const addrs: [Family, string][] = [];
    for (const [f, pool] of s.pools) {
      const a = pool.release(own.poolKey, now, sticky === undefined ? {} : { sticky });
      if (a) addrs.push([f, formatAddr(a)]);
    }
    const hasPod = db.hasPod(key);
    if (addrs.length === 0 && !hasPod) {
      pods.store.deleted(key, now);
      return [];
    }
    const { stickyForMs, cooldownMs } = s.o;
    const reserve = (sticky ?? own.sticky) && stickyForMs > 0 && own.poolKey !== key;
    const freeAt = now + (reserve ? Math.max(stickyForMs, cooldownMs) : cooldownMs);
    db.transaction(() => {
      db.removePod(
        key,
        addrs.map(([, a]) => a),
        freeAt,
        s.podRecordKey(key),
        now,
        why,
        evidence,
      );
      if (reserve) pods.store.reserve(addrs.map(([family, addr]) => ({ addr, family, poolKey: own.poolKey, expiresAt: now + stickyForMs, freeAt })));
      pods.store.deleted(key, now);
    });
    crashPoint('agent.del.recorded');
    return addrs.map(([, a]) => a);
  }
}
