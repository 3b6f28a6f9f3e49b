/**
 * Cluster garbage collection inside `podipam serve`, as Calico's kube-controllers IPAM GC:
 * what `ipam check` finds is acted on only after it has been seen continuously for a grace
 * period (a finding that disappears resets its clock), so an operation in flight is never
 * mistaken for garbage.
 *   - Leaks (an allocation whose handle record is gone): the address is freed, in a
 *     transaction that compares the block and proves the handle still absent — an address
 *     that was meanwhile released and handed to a new pod is left alone.
 *   - Blocks affine to a node whose record is gone (reported only when node records exist at
 *     all): the addresses held there by that node's pods are released by handle, then the
 *     block loses its affinity — deleted with it when empty, otherwise left orphaned for the
 *     pods of other nodes that borrowed from it (it is deleted when they release).
 * Problems of other kinds are reported, never repaired automatically.
 */
import { releaseOrdinals, ordinalOf, isEmptyBlock, withAffinity } from '../alloc/block.js';
import { decodeBlock, encodeBlock } from '../cluster/block-record.js';
import { decodeHandle } from '../cluster/handle-record.js';
import { affinityKey, blockKey, handleKey } from '../cluster/keys.js';
import { formatPrefix, parseAddr, parsePrefix } from '../ip/index.js';
import type { Op, Store } from '../store/index.js';
import type { CheckReport, ClusterOps, Leak, Problem } from './cluster-ops.js';

export interface GcResult {
  readonly leaksReleased: number;
  readonly handlesReleased: number;
  readonly blocksReleased: number;
  /** Findings still inside their grace period. */
  readonly waiting: number;
}

export interface ClusterGcOptions {
  readonly store: Store;
  readonly ops: ClusterOps;
  /** Where reports come from (default: ops.check(), a fresh check every run). */
  readonly check?: () => Promise<CheckReport>;
  readonly graceMs: number;
  readonly log: (line: string) => void;
  readonly now?: () => number;
}

export class ClusterGc {
  readonly #o: ClusterGcOptions;
  readonly #now: () => number;
  /** Finding id → when it was first seen (ms). */
  readonly #seen = new Map<string, number>();

  constructor(options: ClusterGcOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** One pass: check, age the findings, act on those past the grace period. */
  async runOnce(): Promise<GcResult> {
    const report = this.#o.check ? await this.#o.check() : await this.#o.ops.check();
    const now = this.#now();
    const current = new Map<string, Leak | Problem>();
    for (const l of report.leaks) current.set(`leak ${l.block} ${l.ip} ${l.handle}`, l);
    for (const p of report.problems) if (p.kind === 'block-node-missing') current.set(`orphan ${p.key}`, p);
    for (const id of this.#seen.keys()) if (!current.has(id)) this.#seen.delete(id);
    let leaksReleased = 0;
    let handlesReleased = 0;
    let blocksReleased = 0;
    let waiting = 0;
    for (const [id, finding] of current) {
      const first = this.#seen.get(id) ?? now;
      this.#seen.set(id, first);
      if (now - first < this.#o.graceMs) {
        waiting++;
        continue;
      }
      if ('ip' in finding) {
        if (await this.#releaseLeak(finding)) leaksReleased++;
      } else {
        const r = await this.#releaseOrphanBlock(finding.key);
        handlesReleased += r.handles;
        blocksReleased += r.block ? 1 : 0;
      }
      this.#seen.delete(id);
    }
    return { leaksReleased, handlesReleased, blocksReleased, waiting };
  }

  /** Frees a leaked address if the block still gives it to the handle and the handle is still absent. */
  async #releaseLeak(leak: Leak): Promise<boolean> {
    const cidr = parsePrefix(leak.block);
    const key = blockKey(cidr);
    const e = await this.#o.store.get(key);
    if (!e) return false;
    const block = decodeBlock(e);
    const o = ordinalOf(cidr, parseAddr(leak.ip));
    if (block.allocations.get(o) !== leak.handle) return false;
    const next = releaseOrdinals(block, [o]).block;
    const ops: Op[] =
      isEmptyBlock(next) && next.affinity === null ? [{ type: 'delete', key }] : [{ type: 'put', key, value: encodeBlock(next) }];
    const r = await this.#o.store.txn(
      [
        { key, rev: e.rev },
        { key: handleKey(leak.handle), rev: 0 },
      ],
      ops,
    );
    if (r.succeeded) this.#o.log(`gc: released leaked address ${leak.ip} of missing handle "${leak.handle}" (block ${leak.block})`);
    return r.succeeded;
  }

  /** Releases what a deleted node's pods hold in its block, then the block's affinity. */
  async #releaseOrphanBlock(key: string): Promise<{ handles: number; block: boolean }> {
    const first = await this.#o.store.get(key);
    if (!first) return { handles: 0, block: false };
    const node = decodeBlock(first).affinity;
    if (node === null) return { handles: 0, block: false };
    let handles = 0;
    for (const h of new Set(decodeBlock(first).allocations.values())) {
      const he = await this.#o.store.get(handleKey(h));
      if (he && decodeHandle(he).node === node) {
        await this.#o.ops.releaseHandle(h);
        handles++;
      }
    }
    // The releases may have deleted the block already (empty, no affinity needed by anyone).
    const e = await this.#o.store.get(key);
    if (!e) return { handles, block: true };
    const block = decodeBlock(e);
    if (block.affinity !== node) return { handles, block: false };
    const ak = affinityKey(node, block.cidr);
    const ae = await this.#o.store.get(ak);
    const ops: Op[] = isEmptyBlock(block) ? [{ type: 'delete', key }] : [{ type: 'put', key, value: encodeBlock(withAffinity(block, null)) }];
    if (ae) ops.push({ type: 'delete', key: ak });
    const r = await this.#o.store.txn(
      [
        { key, rev: e.rev },
        { key: ak, rev: ae?.rev ?? 0 },
      ],
      ops,
    );
    if (r.succeeded) {
      this.#o.log(
        `gc: node "${node}" is gone: released ${handles} of its pods' handle(s) and block ${formatPrefix(block.cidr)}` +
          (isEmptyBlock(block) ? ' (deleted)' : ` (kept without affinity: ${block.allocations.size} borrowed address(es))`),
      );
    }
    return { handles, block: r.succeeded };
  }
}
