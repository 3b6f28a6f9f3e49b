/**
 * The warm pool's DIRECT attachments: a pod whose annotations ask for pools, addresses or an
 * ip-set (src/model/placement.ts, `hasPlacement`) is never served from the idle queue (whose
 * addresses come from the node's configured pools): it is allocated on the datastore, as the
 * cluster back end would, under its own handle — the attachment key, `<network>:<containerID>:<ifname>`,
 * with the pod's namespace/name/uid in the handle's attributes — with the fields of
 * `placementRequest` (src/cluster/plan/placement-request.ts). Its failures are the cluster's (a
 * PlacementError, taken, exhausted), mapped by the one table at the edge.
 *
 * The resource DB's `direct` table records the attachment: first as an intent (no addresses)
 * committed before the datastore's txn, then with the addresses the handle holds. So:
 * - DEL releases the handle on the datastore (never into the idle queue), then forgets the row;
 *   a DEL of an intent (the agent stopped, or the datastore's answer was lost, between the two
 *   commits) releases the handle too — the release is idempotent;
 * - CHECK asks the datastore what the handle holds;
 * - CNI GC and the pod GC (pods gone from the API server) release like DEL;
 * - at start (warm-restore.ts) each row is checked against its handle: an intent whose handle
 *   holds addresses is completed, a row whose handle holds none is forgotten. The addresses are
 *   never the warm handles' (the restore's reconcile does not see them): neither adopted into
 *   the idle queue nor freed — the handle record is the evidence the pod holds them.
 * - a repeated ADD repeats the assignment, which returns what the handle holds (without its
 *   annotations: what the handle holds, read).
 * Direct attachments are not sticky: `podipam.io/ip` pins an address already.
 */
import { placementRequest } from '../cluster/plan/index.js';
import type { Assignment } from '../cluster/records/index.js';
import { type Addr, formatAddr } from '../ip/index.js';
import { failureOf } from '../model/failure.js';
import type { ReleaseReason } from '../model/history.js';
import { type Placement, hasPlacement } from '../model/placement.js';
import { formatPodRef } from '../model/pod-ref.js';
import type { DirectRow } from './resource-db.js';
import { WarmError } from './warm-error.js';
import type { WarmAnswer, WarmRequest } from './warm-request.js';
import type { WarmState } from './warm-state.js';

export class WarmDirect {
  readonly #s: WarmState;
  /** The keys of the `direct` table, so a DEL or CHECK of a pooled attachment costs no read. */
  readonly #keys = new Set<string>();
  readonly counters = { directAdds: 0, directReleases: 0 };

  constructor(state: WarmState) {
    this.#s = state;
    for (const r of state.db.directs()) this.#keys.add(r.key);
  }

  /** True when attachment `key` is (or is being) allocated directly. */
  has(key: string): boolean {
    return this.#keys.has(key);
  }

  get size(): number {
    return this.#keys.size;
  }

  /** Assigns on the datastore under the attachment's own handle (see the top of this file). */
  async add(req: WarmRequest, key: string, placement: Placement): Promise<WarmAnswer> {
    const s = this.#s;
    const { db } = s;
    const pod = req.pod;
    const now = s.now();
    const prior = db.direct(key);
    if (prior !== undefined && prior.ips.length > 0 && !hasPlacement(placement)) {
      // Repeated without its annotations (the runtime passes them on ADD only when it can): what
      // the handle holds, asking for nothing the first ADD did not.
      const held = await s.ds((ipam) => ipam.addressesOf(key));
      if (held && held.length > 0) return { ips: held.map(ipConfig) };
    }
    const row: DirectRow = { key, network: req.network, containerId: req.containerId, ifname: req.ifname, ips: prior?.ips ?? [], since: prior?.since ?? now };
    const seen = (addrs: readonly string[]): void =>
      s.pods.store.seen({
        key,
        network: req.network,
        namespace: pod?.namespace,
        name: pod?.name,
        uid: pod?.uid,
        containerId: req.containerId,
        ifname: req.ifname,
        ownerKind: undefined,
        sticky: false,
        poolKey: key,
        addrs,
        addedAt: now,
      });
    this.#commit(() => {
      db.putDirect(row);
      // In the pod store from the intent on: the pod GC then releases it too once its pod is gone.
      seen(row.ips.map((i) => i.address.split('/')[0]!));
    });
    this.#keys.add(key);
    let got: Assignment[];
    try {
      got = await s.cluster.assign(s.o.datastore, {
        node: s.o.node,
        handle: key,
        attachment: true,
        attrs: {
          network: req.network,
          containerId: req.containerId,
          ifname: req.ifname,
          ...(pod ? { namespace: pod.namespace, pod: pod.name, ...(pod.uid ? { podUid: pod.uid } : {}) } : {}),
        },
        ...placementRequest(placement, pod ? formatPodRef(pod) : '', s.o.pools),
      });
    } catch (e) {
      // Nothing was written unless the datastore's answer was lost (transient): then the intent
      // stays, for the DEL, the GC or the restart to settle.
      if (failureOf(e) !== 'transient' && prior === undefined) this.#forget(key, now);
      throw e;
    }
    const ips = got.map(ipConfig);
    this.#commit(() => {
      db.putDirect({ ...row, ips });
      seen(got.map((a) => formatAddr(a.addr)));
    });
    if (prior === undefined || prior.ips.length === 0) this.counters.directAdds++;
    s.log.info(
      { attachment: key, pod: pod ? formatPodRef(pod) : undefined, addrs: ips.map((i) => i.address), placedBy: placedBy(placement) },
      'warm pool: annotated pod allocated directly on the datastore',
    );
    return { ips };
  }

  /** Releases the handle on the datastore (stamped `why`: DEL, CNI GC, the pod GC), then forgets the attachment. Idempotent. */
  async release(key: string, why: ReleaseReason = 'del'): Promise<void> {
    const s = this.#s;
    await s.ds((ipam) => ipam.withReason(why).releaseHandle(key, s.o.node));
    this.#forget(key, s.now());
    this.counters.directReleases++;
  }

  /** What the handle holds must include every one of `expect`. */
  async check(key: string, expect: readonly Addr[]): Promise<void> {
    const s = this.#s;
    const held = ((await s.ds((ipam) => ipam.addressesOf(key))) ?? []).map((a) => a.addr);
    if (held.length === 0) throw new WarmError('not-found', s.node, `attachment ${JSON.stringify(key)} (allocated directly) holds no address in the datastore`);
    for (const want of expect) {
      if (!held.some((a) => a.family === want.family && a.value === want.value)) {
        throw new WarmError(
          'not-found',
          s.node,
          `attachment ${JSON.stringify(key)} does not hold ${formatAddr(want)} (its handle holds ${held.map(formatAddr).join(', ')})`,
        );
      }
    }
  }

  /** The direct rows, to be checked against their handles at start (`reconcile`). */
  rows(): DirectRow[] {
    return this.#s.db.directs();
  }

  /**
   * At start, with what each row's handle holds (undefined or empty: nothing): an intent whose
   * handle holds addresses is completed; a row whose handle holds nothing is forgotten. Runs
   * inside the restore's transaction. Returns the keys kept.
   */
  reconcile(found: ReadonlyMap<string, readonly Assignment[] | undefined>): Set<string> {
    const s = this.#s;
    const now = s.now();
    const kept = new Set<string>();
    for (const r of s.db.directs()) {
      const held = found.get(r.key) ?? [];
      if (held.length === 0) {
        if (r.ips.length > 0)
          s.log.warn(
            { node: s.node, attachment: r.key, addrs: r.ips.map((i) => i.address) },
            "warm pool: a directly allocated attachment's handle holds nothing in the datastore any more; forgotten",
          );
        this.#forget(r.key, now);
        continue;
      }
      kept.add(r.key);
      this.#keys.add(r.key);
      if (r.ips.length === 0) {
        const ips = held.map(ipConfig);
        s.db.putDirect({ ...r, ips });
        const known = s.pods.store.get(r.key);
        s.pods.store.seen({
          key: r.key,
          network: r.network,
          namespace: known?.namespace,
          name: known?.name,
          uid: known?.uid,
          containerId: r.containerId,
          ifname: r.ifname,
          ownerKind: undefined,
          sticky: false,
          poolKey: r.key,
          addrs: held.map((a) => formatAddr(a.addr)),
          addedAt: known?.addedAt ?? r.since,
        });
        s.log.info(
          { node: s.node, attachment: r.key, addrs: ips.map((i) => i.address) },
          'warm pool: a direct allocation the resource DB recorded only as an intent is held by its handle; completed',
        );
      }
    }
    return kept;
  }

  #forget(key: string, now: number): void {
    const { db, pods } = this.#s;
    this.#commit(() => {
      db.dropDirect(key);
      pods.store.deleted(key, now);
    });
    this.#keys.delete(key);
  }

  #commit(fn: () => void): void {
    try {
      this.#s.db.transaction(fn);
    } catch (e) {
      throw new WarmError('io', this.#s.node, `resource DB ${this.#s.db.path}: ${(e as Error).message}`, { cause: e });
    }
  }
}

function ipConfig(a: Assignment): { address: string; gateway: string } {
  return { address: `${formatAddr(a.addr)}/${a.prefixLen}`, gateway: formatAddr(a.gateway) };
}

function placedBy(p: Placement): string | undefined {
  const src = p.ips ?? p.ipSet ?? p.pools;
  return src && `${src.annotation}=${src.value} on ${src.on}`;
}
