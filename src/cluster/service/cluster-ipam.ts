/**
 * The cluster block-IPAM service on a Store (Calico-style): pools cut into blocks, blocks
 * affine to nodes, handles recording who holds what, every racing write a compare-and-swap
 * transaction with bounded retries. One instance keeps hints (a snapshot of pools/settings and
 * per-node views) that make the steady-state assignment a single round trip; the hints are
 * proven by the transactions' compares, never trusted.
 *
 * Only the pod path (assign, release) is imported eagerly: the CNI plugin loads nothing else;
 * administration modules are imported on first use.
 *
 * Partial failure, for every method: an operation either commits one transaction (or, for
 * pool deletion, a documented sequence of them) or writes nothing. StoreUnavailableError
 * means the outcome of the last write is unknown; every operation is safe to repeat.
 */
import type { Addr, Prefix } from '../../ip/index.js';
import type { ReleaseEvidence, ReleaseReason } from '../../model/history.js';
import {
  type AllocationFilter,
  type AllocationPage,
  type BlockAllocations,
  type IpamUsage,
  type Utilisation,
  type UtilisationOptions,
  ViewCache,
  type AddressHolder,
  type PodHandle,
  DEFAULT_MAX_ATTEMPTS,
  type IpamContext,
  wallClock,
} from '../views/index.js';
import type { Store } from '../../store/index.js';
import {
  assignAddresses,
  type Released,
  releaseAddresses,
  releaseByHandle,
  type HoldResult,
  type BatchOutcome,
  type ReleaseOutcome,
  type NodeAttachment,
  type WarmRecordWrite,
  type WarmView,
  type WarmWriteResult,
  type WriteFence,
  currentPools,
  listWarmHandles,
  readWarmRecords,
  warmView,
  writeWarmRecords,
} from '../txn/index.js';
import type { CheckOptions, CheckReport, Leak, StickyHold } from '../reports/index.js';
import type {
  DeletedNodeBlockRelease,
  NodeGcResult,
  IpSetDetail,
  IpSetInfo,
  IpSetSpec,
  PoolHeld,
  ResizeResult,
  PoolSettings,
  IpamSettings,
} from '../admin/index.js';
import {
  CONFIG_KEY,
  HANDLE_PREFIX,
  type IpamConfig,
  type IpSet,
  type Pool,
  type PoolSpec,
  type Reservation,
  type HandleAttrs,
  type AssignRequest,
  type Assignment,
} from '../records/index.js';

export interface ClusterIpamOptions {
  /** Attempts per compare-and-swap loop (default 100, as Calico). */
  readonly maxAttempts?: number;
  /** Hints to start from (the CNI plugin restores them from a file). */
  readonly cache?: ViewCache;
  /** Clock (tests). */
  readonly now?: () => Date;
  /** The history stamp's writer name (history-stamp.ts): the node name on a node, "serve", "cli" (default "podipam"). */
  readonly writer?: string;
  /** Why this instance's releases happen, stamped on each (default: DEL). See withReason. */
  readonly why?: ReleaseReason;
  /** What those releases rest on (runtime reconciliation's proof), stamped with `why`. */
  readonly evidence?: ReleaseEvidence;
}

export class ClusterIpam {
  readonly #ctx: IpamContext;
  readonly #options: ClusterIpamOptions;

  constructor(store: Store, options: ClusterIpamOptions = {}) {
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
      throw new RangeError(`Cannot create ClusterIpam as 'maxAttempts' must be a positive integer: current value is ${maxAttempts}`);
    }
    this.#options = options;
    this.#ctx = {
      store,
      cache: options.cache ?? new ViewCache(),
      maxAttempts,
      now: options.now ?? wallClock,
      writer: options.writer ?? 'podipam',
      ...(options.why === undefined ? {} : { why: options.why }),
      ...(options.evidence === undefined ? {} : { evidence: options.evidence }),
    };
  }

  /** The same service (store, hints, writer) whose releases are stamped with `why` (and `evidence`) in the history. */
  withReason(why: ReleaseReason, evidence?: ReleaseEvidence): ClusterIpam {
    const { evidence: _, ...options } = this.#options;
    return new ClusterIpam(this.#ctx.store, { ...options, cache: this.#ctx.cache, why, ...(evidence ? { evidence } : {}) });
  }

  /** The same service (store, hints, reason) whose transactions are stamped as `writer`'s (an agent serving a node: the node's name). */
  withWriter(writer: string): ClusterIpam {
    return new ClusterIpam(this.#ctx.store, { ...this.#options, cache: this.#ctx.cache, writer });
  }

  /** The history stamp's writer name of this service. */
  get writer(): string {
    return this.#ctx.writer;
  }

  get store(): Store {
    return this.#ctx.store;
  }

  /** The hints this instance keeps (to save them between plugin runs). */
  get cache(): ViewCache {
    return this.#ctx.cache;
  }

  /** See assign.ts: auto-assign N v4 + M v6 and/or specific addresses to a handle, all or nothing. */
  assign(req: AssignRequest): Promise<Assignment[]> {
    return assignAddresses(this.#ctx, req);
  }

  /** See assign-group.ts: several assignments of one node in one transaction; outcomes in order. */
  async assignMany(node: string, reqs: readonly AssignRequest[]): Promise<BatchOutcome[]> {
    const { assignGroup } = await import('../txn/index.js');
    return assignGroup(this.#ctx, node, reqs);
  }

  /** See release.ts: free everything a handle holds; idempotent. `node`: the node releasing (hints, empty-block policy). */
  releaseHandle(handle: string, node?: string): Promise<Released[]> {
    return releaseByHandle(this.#ctx, handle, node);
  }

  /** See release-group.ts: several releases by handle of one node in one transaction; outcomes in order. */
  async releaseMany(node: string, handles: readonly string[]): Promise<ReleaseOutcome[]> {
    const { releaseGroup } = await import('../txn/index.js');
    return releaseGroup(this.#ctx, node, handles);
  }

  /** See release.ts: free specific addresses, whoever holds them (with `heldBy`: only while one of those handles does). */
  releaseAddresses(addrs: readonly Addr[], heldBy?: ReadonlySet<string>): Promise<Released[]> {
    return releaseAddresses(this.#ctx, addrs, heldBy);
  }

  /** See sticky-hold.ts: move a sticky pod's addresses from its attachment's handle to its hold (undefined: the handle has no record). */
  async holdSticky(handle: string, hold: string, attrs: HandleAttrs & { readonly stickyUntil: string }, node: string): Promise<HoldResult | undefined> {
    const { holdAttachment } = await import('../txn/index.js');
    return holdAttachment(this.#ctx, handle, hold, attrs, node);
  }

  /** See handle-addresses.ts: what a handle holds (undefined when it does not exist). */
  async addressesOf(handle: string): Promise<Assignment[] | undefined> {
    const { addressesOfHandle } = await import('../views/index.js');
    return addressesOfHandle(this.#ctx, handle);
  }

  /** See handles-of-pod.ts: the handles whose record names pod `namespace/name`, with their addresses. */
  async handlesOfPod(namespace: string | undefined, name: string): Promise<PodHandle[]> {
    const { handlesOfPod } = await import('../views/index.js');
    return handlesOfPod(this.#ctx, namespace, name);
  }

  /** See handles-of-pod.ts: who holds `addr` (handle, pod, node, block); undefined when nobody does. */
  async holderOfAddress(addr: Addr): Promise<AddressHolder | undefined> {
    const { holderOfAddress } = await import('../views/index.js');
    return holderOfAddress(this.#ctx, addr);
  }

  /** See handles-of-pod.ts: the pod each handle's record names (one batched read). */
  async podsOfHandles(handles: readonly string[]): Promise<Map<string, string>> {
    const { podsOfHandles } = await import('../views/index.js');
    return podsOfHandles(this.#ctx, handles);
  }

  /** See warm-handles.ts: the handles whose name starts with `prefix` (a node's warm handles). */
  warmHandles(prefix: string): Promise<string[]> {
    return listWarmHandles(this.#ctx, prefix);
  }

  /** See warm-handles.ts: the warm pool's records under `prefix` (a node's pod records). */
  warmRecords(prefix: string): Promise<{ key: string; value: string }[]> {
    return readWarmRecords(this.#ctx, prefix);
  }

  /** See warm-handles.ts: puts and deletes warm pool records in one transaction (stamped with each delete's time and reason). */
  writeWarmRecords(writes: readonly WarmRecordWrite[], fence?: WriteFence): Promise<WarmWriteResult> {
    return writeWarmRecords(this.#ctx, writes, fence);
  }

  /** See warm-handles.ts: the pools and their config generation, the snapshot reloaded when that changed. */
  currentPools(): Promise<{ readonly pools: readonly Pool[]; readonly configRev: number }> {
    return currentPools(this.#ctx);
  }

  /** See warm-handles.ts: the pools, reservations and `node`'s labels, for its warm pool. */
  warmView(node: string): Promise<WarmView> {
    return warmView(this.#ctx, node);
  }

  /** See gc-node.ts: release a node's handles of a network that are not in `keep`. */
  async gcNode(node: string, network: string, keep: ReadonlySet<string>): Promise<NodeGcResult> {
    const { gcNode } = await import('../admin/index.js');
    return gcNode(this.#ctx, node, network, keep);
  }

  async createPool(spec: PoolSpec): Promise<Pool> {
    const { createPool } = await import('../admin/index.js');
    return createPool(this.#ctx, spec);
  }

  async listPools(): Promise<Pool[]> {
    const { listPools } = await import('../admin/index.js');
    return listPools(this.#ctx);
  }

  async setPoolDisabled(name: string, disabled: boolean): Promise<Pool> {
    const { setPoolDisabled } = await import('../admin/index.js');
    return setPoolDisabled(this.#ctx, name, disabled);
  }

  /** See pool-resize.ts: grow or shrink a pool's CIDR in place. */
  async resizePool(name: string, cidr: string): Promise<ResizeResult> {
    const { resizePool } = await import('../admin/index.js');
    return resizePool(this.#ctx, name, cidr);
  }

  /** See pool-drain.ts: stop (or resume) new addresses and blocks from a pool; what it holds stays. */
  async setPoolDraining(name: string, draining: boolean): Promise<Pool> {
    const { setPoolDraining } = await import('../admin/index.js');
    return setPoolDraining(this.#ctx, name, draining);
  }

  /** See pool-drain.ts: what a pool still holds, by node and pod. */
  async poolHeld(name: string): Promise<PoolHeld> {
    const { poolHeld } = await import('../admin/index.js');
    return poolHeld(this.#ctx, name);
  }

  /** See pool-settings.ts: block size, node selector, disabled of a serving pool. */
  async setPoolSettings(name: string, settings: PoolSettings): Promise<Pool> {
    const { setPoolSettings } = await import('../admin/index.js');
    return setPoolSettings(this.#ctx, name, settings);
  }

  /** Refused with PoolInUseError while addresses of the pool are allocated. */
  async deletePool(name: string): Promise<void> {
    const { deletePool } = await import('../admin/index.js');
    return deletePool(this.#ctx, name);
  }

  async getSettings(): Promise<IpamConfig> {
    const { getSettings } = await import('../admin/index.js');
    return getSettings(this.#ctx);
  }

  async updateSettings(patch: Partial<IpamSettings>): Promise<IpamConfig> {
    const { updateSettings } = await import('../admin/index.js');
    return updateSettings(this.#ctx, patch);
  }

  async listReservations(): Promise<Reservation[]> {
    const { listReservations } = await import('../admin/index.js');
    return listReservations(this.#ctx);
  }

  async putReservation(name: string, cidrs: readonly string[]): Promise<Reservation> {
    const { putReservation } = await import('../admin/index.js');
    return putReservation(this.#ctx, name, cidrs);
  }

  async deleteReservation(name: string): Promise<void> {
    const { deleteReservation } = await import('../admin/index.js');
    return deleteReservation(this.#ctx, name);
  }

  /** See ip-sets.ts: a fixed address set of `pool` (explicit ranges, or its `count` lowest free addresses). */
  async createIpSet(name: string, pool: string, spec: IpSetSpec): Promise<IpSet> {
    const { createIpSet } = await import('../admin/index.js');
    return createIpSet(this.#ctx, name, pool, spec);
  }

  async listIpSets(): Promise<IpSetInfo[]> {
    const { listIpSets } = await import('../admin/index.js');
    return listIpSets(this.#ctx);
  }

  /** NotFoundError when the set does not exist. */
  async showIpSet(name: string): Promise<IpSetDetail> {
    const { showIpSet } = await import('../admin/index.js');
    return showIpSet(this.#ctx, name);
  }

  /** Refused with IpSetInUseError while any address of the set is held. */
  async deleteIpSet(name: string): Promise<void> {
    const { deleteIpSet } = await import('../admin/index.js');
    return deleteIpSet(this.#ctx, name);
  }

  /** `ipam show`'s rows: a projection of utilisation() (`isIdle`: which allocations are idle). */
  async usage(options?: UtilisationOptions): Promise<IpamUsage> {
    const { ipamUsage } = await import('../views/index.js');
    return ipamUsage(this.#ctx, options);
  }

  /** See utilisation.ts: the one utilisation computation (pools, blocks, nodes by affinity), exact bigint counts. */
  async utilisation(options?: UtilisationOptions): Promise<Utilisation> {
    const { clusterUtilisation } = await import('../views/index.js');
    return clusterUtilisation(this.#ctx, options);
  }

  async check(opts?: CheckOptions): Promise<CheckReport> {
    const { checkIpam } = await import('../reports/index.js');
    return checkIpam(this.#ctx, opts);
  }

  /** See sticky-holds.ts: free an expired sticky hold while its record is the one `check` listed (undefined: it changed). */
  async releaseStickyHold(hold: Pick<StickyHold, 'handle' | 'rev'>): Promise<Released[] | undefined> {
    const { releaseStickyHold } = await import('../reports/index.js');
    return releaseStickyHold(this.#ctx, hold);
  }

  /** See node-allocations.ts: the attachments `node`'s pods hold (runtime reconciliation's candidates). */
  async nodeAttachments(node: string): Promise<NodeAttachment[]> {
    const { nodeAttachments } = await import('../txn/index.js');
    return nodeAttachments(this.#ctx, node);
  }

  /** See node-allocations.ts: free an attachment while its handle record is at `rev` (undefined: it changed, nothing freed). */
  async releaseAttachmentAsSeen(handle: string, rev: number): Promise<Released[] | undefined> {
    const { releaseAttachmentAsSeen } = await import('../txn/index.js');
    return releaseAttachmentAsSeen(this.#ctx, handle, rev);
  }

  /** See gc-findings.ts: free a leaked address (CAS loop; false when it is no longer a leak). */
  async releaseLeak(leak: Leak): Promise<boolean> {
    const { releaseLeak } = await import('../admin/index.js');
    return releaseLeak(this.#ctx, leak);
  }

  /** See gc-findings.ts: release a `block-node-deleted` finding's block (`key` from the report), on proof. */
  async releaseDeletedNodeBlock(key: string): Promise<DeletedNodeBlockRelease> {
    const { releaseDeletedNodeBlock } = await import('../admin/index.js');
    return releaseDeletedNodeBlock(this.#ctx, key);
  }

  /** See gc-findings.ts: delete an empty orphan block (check's `emptyOrphans`) that quarantines nothing; false when it is no longer one. */
  async releaseEmptyOrphanBlock(key: string): Promise<boolean> {
    const { releaseEmptyOrphanBlock } = await import('../admin/index.js');
    return releaseEmptyOrphanBlock(this.#ctx, key);
  }

  /** See gc-findings.ts: release every block of a deleted node now (on the same proof). */
  async releaseDeletedNode(node: string): Promise<DeletedNodeBlockRelease[]> {
    const { releaseDeletedNode } = await import('../admin/index.js');
    return releaseDeletedNode(this.#ctx, node);
  }

  /** See allocations.ts: one page of allocations (InvalidCursorError for a bad `after`). */
  async listAllocations(filter: AllocationFilter): Promise<AllocationPage> {
    const { listAllocations } = await import('../views/index.js');
    return listAllocations(this.#ctx, filter);
  }

  /** See allocations.ts: one block's allocations, undefined when the block does not exist. */
  async blockAllocations(cidr: Prefix): Promise<BlockAllocations | undefined> {
    const { blockAllocations } = await import('../views/index.js');
    return blockAllocations(this.#ctx, cidr);
  }

  /** One small read (the settings record): throws what the store throws when it cannot answer. */
  async probe(): Promise<void> {
    await this.#ctx.store.get(CONFIG_KEY);
  }

  /** The handle a check problem's `key` names, when it is a handle record's key. */
  static handleOfKey(key: string): string | undefined {
    return key.startsWith(HANDLE_PREFIX) ? key.slice(HANDLE_PREFIX.length) : undefined;
  }
}
