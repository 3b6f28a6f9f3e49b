/**
 * The CNI plugin's cluster mode (`"ipam": {"type": "podipam", "datastore": URL, …}` without
 * `ranges`): Calico-style block IPAM on the datastore. Loaded only in cluster mode; the store
 * back end is imported when the URL is opened.
 *
 * - ADD: one address per family of the configured pools (or of every enabled pool selecting
 *   the node), or exactly the requested addresses (CNI_ARGS `IP=`, `runtimeConfig.ips`,
 *   `args.cni.ips`), under the handle `<network>:<containerID>:<ifname>` (handle-id.ts); all families in one
 *   transaction. A repeated ADD returns what the handle holds, whatever its annotations now ask
 *   (a specific address it does not hold: code 101 naming what it holds) — never a second
 *   address for one attachment.
 *   The pod's placement annotations (src/model/placement.ts; the runtime's
 *   `runtimeConfig["io.kubernetes.cri.pod-annotations"]`, else the agent's pod cache) choose
 *   the pools or addresses instead (placement-request.ts): a named pool that is missing,
 *   disabled or does not select the node is code 7, never a fallback; an annotation together
 *   with an explicitly requested address is code 7 naming both. Parsing them is pure: a pod
 *   without annotations costs what it did (one round trip in the steady state). Each result address carries
 *   its BLOCK's prefix and the block's gateway (`10.244.3.7/26`, gateway `10.244.3.1`): the
 *   block is a subnet on the node, whose interface plugin puts the gateway on the node side
 *   (`bridge` with isGateway: on the bridge; `ptp`: on each host-side veth), and the other
 *   nodes route the block to this node. The block's network, gateway and IPv4 broadcast
 *   addresses are never handed out (src/alloc/block-addressing.ts). (Calico answers /32 and
 *   /128 with a link-local gateway because its data plane routes every pod.)
 *   The configured `routes` follow, those of the families the pod got an address of (so
 *   `0.0.0.0/0` and `::/0` suit any pool: a route of another family would fail `ptp`).
 * - Sticky pods (cluster-sticky.ts: `podipam.io/sticky: "true"`, or a StatefulSet's pod in the
 *   host's pod cache; `stickyFor` > 0): DEL moves the attachment's addresses, in one
 *   transaction, to the pod's hold `sticky:<network>:<namespace>:<name>:<ifname>` (its record
 *   names the pod and `stickyUntil`, now + stickyFor) instead of releasing them; the ADD of the
 *   pod's next incarnation takes the hold over in its assignment transaction (`takeOver`). An
 *   expired hold is left to `podipam serve`'s GC. A sticky ADD may cost one read of the hold
 *   (none when this node wrote it); other ADDs cost nothing more.
 * - DEL: releases the handle; idempotent. CHECK: the handle must hold the prevResult's addresses.
 * - GC: releases this node's handles of this network absent from the valid attachments.
 * - DEL and CHECK also find a record under the attachment's old dotted id when it belongs to the
 *   attachment and its new id holds nothing (legacy-handle.ts); GC judges such records by the
 *   attachment they name. ADD does not look for them, so the steady-state ADD and DEL stay one
 *   round trip: an attachment from before the upgrade has had its ADD; should it be repeated,
 *   it gets a fresh address under the new id, and GC releases the old record once the
 *   attachment is gone.
 * - STATUS: 50 when the datastore is unreachable or no pool can serve the node.
 * A datastore that cannot be reached gives code 11 (50 for STATUS) within the store's request
 * timeout (2 s per endpoint); the node lock is waited for at most LOCK_WAIT_MS.
 * With PODIPAM_STATS=1 each run prints `podipam-stats {"verb","roundTrips","locked"}` on stderr.
 */
import { crashPoint } from '../util/crash-point.js';
import { CniCode, CniError } from '../cni/errors.js';
import type { IpamBackend, IpamRequest } from './ipam-backend.js';
import type { Attachment, IpamResult, NetConf } from '../cni/types.js';
import { requestedAddrs } from './requested-addrs.js';
import { prevResultAddrs } from '../cni/prev-result.js';
import { formatAddr } from '../ip/index.js';
import type { ClusterIpam, ClusterHost } from '../cluster/service/index.js';
import { type ClusterConf, parseClusterConf } from './cluster-conf.js';
import { cniErrorOf as tableOf } from '../cni/cni-error-of.js';
import { redactStoreUrl } from '../store/redact-store-url.js';
import { cniHandleId, MAX_HANDLE_LENGTH } from '../model/handle-id.js';
import { type CniAttachment, legacyHandleOf, type AssignRequest } from '../cluster/records/index.js';
import { placementRequest } from '../cluster/plan/index.js';
import { PlacementError, hasPlacement } from '../model/placement.js';
import type { PodDirectory } from '../model/pod-directory.js';
import { formatPodRef } from '../model/pod-ref.js';
import { placementFor } from './placement-of.js';
import { stickyHoldOf } from './cluster-sticky.js';

/** Longest wait for the node lock before running unlocked (the lock only avoids retries). */
export const LOCK_WAIT_MS = 3000;

/** Validates the config (CniError 7) and returns the back end. */
export async function createClusterBackend(conf: NetConf, env: NodeJS.ProcessEnv = process.env, host?: ClusterHost, pods?: PodDirectory): Promise<IpamBackend> {
  return new ClusterBackend(parseClusterConf(conf, env), host, pods);
}

class ClusterBackend implements IpamBackend {
  readonly #conf: ClusterConf;
  readonly #host: ClusterHost | undefined;
  readonly #pods: PodDirectory | undefined;

  constructor(conf: ClusterConf, host?: ClusterHost, pods?: PodDirectory) {
    this.#conf = conf;
    this.#host = host;
    this.#pods = pods;
  }

  async add(req: IpamRequest): Promise<IpamResult> {
    const ips = requestedAddrs(req.conf, req.cniArgs);
    const c = this.#conf;
    const placement = await placementFor(req, this.#pods);
    const pod = req.pod ? formatPodRef(req.pod) : '';
    if (ips.length > 0 && hasPlacement(placement)) {
      const source = (placement.ips ?? placement.pools ?? placement.ipSet)!;
      throw new PlacementError(
        source,
        pod,
        `cannot be combined with the requested address(es) ${ips.map(formatAddr).join(', ')} (CNI_ARGS IP, args.cni.ips, runtimeConfig.ips): give one or the other`,
      );
    }
    const hold = stickyHoldOf(req, this.#pods, c.stickyForMs, placement);
    const areq: AssignRequest = {
      node: c.nodeName,
      handle: handleOf(req),
      attachment: true,
      attrs: {
        network: req.conf.name,
        containerId: req.containerId,
        ifname: req.ifname,
        ...(req.pod ? { namespace: req.pod.namespace, pod: req.pod.name, ...(req.pod.uid ? { podUid: req.pod.uid } : {}) } : {}),
      },
      ...(ips.length > 0 ? { ips } : placementRequest(placement, pod, c.pools)),
      ...(hold !== undefined ? { takeOver: hold } : {}),
    };
    const host = this.#host;
    const got = host
      ? await host.assign(c.datastore, areq).catch((e: unknown) => Promise.reject(cniErrorOfIn(c.datastore, e, 'ADD')))
      : await this.#run('ADD', (ipam) => ipam.assign(areq));
    return {
      ips: got.map((a) => ({ address: `${formatAddr(a.addr)}/${a.prefixLen}`, gateway: formatAddr(a.gateway) })),
      ...routesFor(c.routes, got),
    };
  }

  async del(req: IpamRequest): Promise<void> {
    const handle = handleOf(req);
    const hold = this.#holdOnDel(req);
    const c = this.#conf;
    // Through the agent, the DELs of a node that wait together are released as one group.
    if (this.#host && hold === undefined) {
      const freed = await this.#host.release(c.datastore, c.nodeName, handle).catch((e: unknown) => Promise.reject(cniErrorOfIn(c.datastore, e, 'DEL')));
      if (freed.length > 0) return;
      await this.#run('DEL', (ipam) => this.#releaseLegacy(ipam, req));
      return;
    }
    await this.#run('DEL', async (ipam) => {
      if (hold !== undefined && (await this.#keep(ipam, req, handle, hold))) return;
      // Only an attachment with nothing under its new id can be one from before the change:
      // the steady-state DEL stays one round trip.
      if ((await ipam.releaseHandle(handle, this.#conf.nodeName)).length > 0) return;
      await this.#releaseLegacy(ipam, req);
    });
  }

  /** Releases the attachment's handle of the naming from before the change, if there is one. */
  async #releaseLegacy(ipam: ClusterIpam, req: IpamRequest): Promise<void> {
    const legacy = await legacyHandleOf(ipam.store, attachmentOf(req));
    if (legacy !== undefined) await ipam.releaseHandle(legacy, this.#conf.nodeName);
  }

  /** The pod's hold when it is sticky; a malformed annotation must not fail a DEL: not sticky then. */
  #holdOnDel(req: IpamRequest): string | undefined {
    try {
      return stickyHoldOf(req, this.#pods, this.#conf.stickyForMs);
    } catch {
      return undefined;
    }
  }

  /** Moves the attachment's addresses to the pod's hold; false when there is nothing to keep (or its record is corrupt: released as usual). */
  async #keep(ipam: ClusterIpam, req: IpamRequest, handle: string, hold: string): Promise<boolean> {
    const c = this.#conf;
    const pod = req.pod!;
    const attrs = {
      node: c.nodeName,
      network: req.conf.name,
      ifname: req.ifname,
      namespace: pod.namespace,
      pod: pod.name,
      ...(pod.uid ? { podUid: pod.uid } : {}),
      stickyUntil: new Date(Date.now() + c.stickyForMs).toISOString(),
    };
    try {
      return (await ipam.holdSticky(handle, hold, attrs, c.nodeName)) !== undefined;
    } catch (e) {
      if (e instanceof Error && e.name === 'CorruptRecordError') return false;
      throw e;
    }
  }

  async check(req: IpamRequest): Promise<void> {
    let handle = handleOf(req);
    const held = await this.#run('CHECK', async (ipam) => {
      const got = await ipam.addressesOf(handle);
      if (got !== undefined) return got;
      const legacy = await legacyHandleOf(ipam.store, attachmentOf(req));
      if (legacy === undefined) return undefined;
      handle = legacy;
      return ipam.addressesOf(legacy);
    });
    if (!held || held.length === 0) throw new CniError(CniCode.NotFound, `handle ${JSON.stringify(handle)} holds no address`);
    for (const { addr: want } of prevResultAddrs(req.conf.prevResult)) {
      if (!held.some((h) => h.addr.family === want.family && h.addr.value === want.value)) {
        throw new CniError(
          CniCode.NotFound,
          `handle ${JSON.stringify(handle)} does not hold ${formatAddr(want)} (it holds ${held.map((h) => formatAddr(h.addr)).join(', ')})`,
        );
      }
    }
  }

  async gc(conf: NetConf, valid: readonly Attachment[]): Promise<void> {
    const keep = new Set(valid.map((a) => cniHandleId(conf.name, a.containerId, a.ifname)));
    const r = await this.#run('GC', (ipam) => ipam.withReason('cni-gc').gcNode(this.#conf.nodeName, conf.name, keep));
    if (r.failed.length > 0) {
      const first = cniErrorOfIn(this.#conf.datastore, r.failed[0]!.error);
      throw new CniError(first.code, `GC: ${r.failed.length} handle(s) not released: ${r.failed.map((f) => `${f.handle}: ${f.error.message}`).join('; ')}`);
    }
  }

  async status(): Promise<void> {
    const c = this.#conf;
    await this.#run('STATUS', async (ipam) => {
      const pools = await ipam.listPools();
      const usable = pools.filter((p) => !p.disabled && !p.deleting && (!c.pools || c.pools.includes(p.name)));
      if (usable.length === 0) {
        throw new CniError(CniCode.NotAvailable, c.pools ? `none of the pools [${c.pools.join(', ')}] exists and is enabled` : 'no enabled pool exists');
      }
    });
  }

  /** Opens the store, takes the node lock and hints, runs `fn`, saves the hints; maps errors to CniError. */
  async #run<T>(verb: string, fn: (ipam: ClusterIpam) => Promise<T>): Promise<T> {
    const c = this.#conf;
    if (this.#host) {
      try {
        return await this.#host.run(c.datastore, c.nodeName, fn);
      } catch (e) {
        throw cniErrorOfIn(c.datastore, e, verb);
      }
    }
    const [{ openStore }, { ClusterIpam }, { NodeCacheFile }, { NodeLock }, { ViewCache }] = await Promise.all([
      import('../store/open-store.js'),
      import('../cluster/service/index.js'),
      import('../cluster/views/index.js'),
      import('../cluster/txn/index.js'),
      import('../cluster/views/index.js'),
    ]);
    let store;
    try {
      // One process per call: etcd's JSON gateway, whose client loads faster (StoreOptions.oneShot).
      store = await openStore(c.datastore, { oneShot: true });
    } catch (e) {
      throw cniErrorOfIn(c.datastore, e, verb);
    }
    const file = c.cacheDir !== null ? new NodeCacheFile(c.cacheDir, c.datastore, c.nodeName) : undefined;
    const lock = file && file.prepare(c.cacheDir!) ? await NodeLock.acquire(file.lockPath, LOCK_WAIT_MS) : undefined;
    try {
      const cache = file ? file.load() : new ViewCache();
      // Stamped in the history as this node's transactions (src/cluster/records/history-stamp.ts); a DEL's reason is the default, 'del'.
      const result = await fn(new ClusterIpam(store, { cache, writer: c.nodeName }));
      crashPoint('cluster.plugin.before-save');
      file?.save(cache);
      crashPoint('cluster.plugin.saved');
      return result;
    } catch (e) {
      throw cniErrorOfIn(c.datastore, e, verb);
    } finally {
      lock?.release();
      // For benchmarks: what this invocation cost in datastore round trips.
      if (process.env.PODIPAM_STATS === '1')
        process.stderr.write(`podipam-stats ${JSON.stringify({ verb, roundTrips: store.roundTrips, locked: lock !== undefined })}\n`);
      await store.close();
    }
  }
}

/** The configured routes of the families the pod got an address of (a route of another family fails ptp). */
function routesFor(routes: ClusterConf['routes'], got: readonly { readonly addr: { readonly family: number } }[]): { routes?: ClusterConf['routes'] } {
  if (routes.length === 0) return {};
  const families = new Set(got.map((a) => a.addr.family));
  const kept = routes.filter((r) => families.has(r.dst.includes(':') ? 6 : 4));
  return kept.length > 0 ? { routes: kept } : {};
}

function attachmentOf(req: IpamRequest): CniAttachment {
  return { network: req.conf.name, containerId: req.containerId, ifname: req.ifname };
}

/** The attachment's handle id; code 7 when it would be longer than the store keeps. */
function handleOf(req: IpamRequest): string {
  const h = cniHandleId(req.conf.name, req.containerId, req.ifname);
  if (h.length > MAX_HANDLE_LENGTH) {
    throw new CniError(
      CniCode.InvalidConfig,
      `network name, container id and interface name make a handle of ${h.length} characters: at most ${MAX_HANDLE_LENGTH}`,
    );
  }
  return h;
}

/**
 * The one table's answer (src/cni/cni-error-of.ts), with the datastore named when the error is
 * about a record in it (a corrupt record names only its key): the operator learns which file or
 * cluster to look at.
 */
function cniErrorOfIn(datastore: string, e: unknown, verb?: string): CniError {
  const c = tableOf(e, verb);
  if (e instanceof Error && e.name === 'CorruptRecordError') return new CniError(c.code, `datastore ${redactStoreUrl(datastore)}: ${c.msg}`);
  return c;
}
