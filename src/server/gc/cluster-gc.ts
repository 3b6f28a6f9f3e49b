/**
 * Cluster garbage collection inside `podipam serve`, as Calico's kube-controllers IPAM GC:
 * what `ipam check` finds is acted on only after it has been seen continuously for a grace
 * period (a finding that disappears resets its clock), so an operation in flight is never
 * mistaken for garbage.
 *   - Leaks (an allocation whose handle record is gone): the address is freed, in a
 *     transaction that compares the block and proves the handle still absent — an address
 *     that was meanwhile released and handed to a new pod is left alone.
 *   - Blocks affine to a node whose record was deleted (`block-node-deleted`: the node's
 *     tombstone, written in the transaction that deleted its record, is the proof it is gone):
 *     the addresses held there by that node's pods are released by handle, then the block
 *     loses its affinity — deleted with it when empty, otherwise left orphaned for the pods of
 *     other nodes that borrowed from it (it is deleted when they release). Every one of those
 *     transactions compares the proof (tombstone present, record absent), so a node re-added
 *     or claiming a block meanwhile keeps what is left.
 *   - Empty orphan blocks (no affinity, no address: kept by a release while they quarantined a
 *     freed address, src/cluster/reports/empty-orphans.ts) once their quarantine is over: deleted, in a
 *     transaction that compares the block and the pools' `config` (a borrowing ADD, a new
 *     release or a longer reuseAfter meanwhile keeps it). Their grace starts when the quarantine ends.
 *   - Sticky holds (a sticky pod's addresses kept for its next incarnation) whose `stickyUntil`
 *     has passed: released by handle, comparing the hold's record as the report saw it.
 * A block affine to a node that has no record and never had one deleted
 * (`block-node-unregistered`) proves nothing — the node claimed it and may well run — and is
 * only reported, as are problems of every other kind: never repaired automatically. This file only keeps
 * the schedule; each repair is a ClusterIpam method (src/cluster/admin/gc-findings.ts) with the
 * same bounded compare-and-swap retry loop as ADD and DEL.
 */
import { formatAddr, formatPrefix } from '../../ip/index.js';
import type { CheckReport, ClusterIpam, EmptyOrphanBlock, Leak, Problem, StickyHold } from '../../cluster/index.js';
import type { Log } from '../../log/logger.js';

export interface GcResult {
  readonly leaksReleased: number;
  readonly handlesReleased: number;
  readonly blocksReleased: number;
  /** Empty orphan blocks deleted once their quarantine was over. */
  readonly orphansDeleted: number;
  /** Expired sticky holds released (their addresses freed). */
  readonly holdsReleased: number;
  /** Findings still inside their grace period. */
  readonly waiting: number;
}

export interface ClusterGcOptions {
  /** The repairs (and, without `check`, the reports): ClusterIpam's. */
  readonly ipam: Pick<ClusterIpam, 'check' | 'releaseLeak' | 'releaseDeletedNodeBlock' | 'releaseEmptyOrphanBlock' | 'releaseStickyHold'>;
  /** Where reports come from (default: ipam.check(), a fresh check every run). */
  readonly check?: () => Promise<CheckReport>;
  readonly graceMs: number;
  /** Where each repair is reported (info, with the node, handle and block as fields). */
  readonly log: Log;
  readonly now?: () => number;
}

/** The schedule of the repairs; the repairs themselves (CAS loops) are ClusterIpam's. */
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
    const report = this.#o.check ? await this.#o.check() : await this.#o.ipam.check();
    const now = this.#now();
    const current = new Map<string, Leak | Problem | EmptyOrphanBlock>();
    for (const l of report.leaks) current.set(`leak ${l.block} ${l.ip} ${l.handle}`, l);
    for (const p of report.problems) if (p.kind === 'block-node-deleted') current.set(`deleted-node ${p.key}`, p);
    for (const o of report.emptyOrphans ?? []) if (o.quarantinedUntil === undefined) current.set(`empty-orphan ${o.key}`, o);
    for (const id of this.#seen.keys()) if (!current.has(id)) this.#seen.delete(id);
    let leaksReleased = 0;
    let handlesReleased = 0;
    let blocksReleased = 0;
    let orphansDeleted = 0;
    let waiting = 0;
    for (const [id, finding] of current) {
      const first = this.#seen.get(id) ?? now;
      this.#seen.set(id, first);
      if (now - first < this.#o.graceMs) {
        waiting++;
        continue;
      }
      if ('block' in finding && !('ip' in finding)) {
        if (await this.#o.ipam.releaseEmptyOrphanBlock(finding.key)) {
          orphansDeleted++;
          this.#o.log.info({ block: finding.block }, `deleted empty orphan block ${finding.block} (no node, no address, its reuse quarantine over)`);
        }
      } else if ('ip' in finding) {
        if (await this.#o.ipam.releaseLeak(finding)) {
          leaksReleased++;
          this.#o.log.info(
            { handle: finding.handle, ip: finding.ip, block: finding.block },
            `released leaked address ${finding.ip} of missing handle "${finding.handle}" (block ${finding.block})`,
          );
        }
      } else {
        const r = await this.#o.ipam.releaseDeletedNodeBlock(finding.key);
        handlesReleased += r.handles;
        blocksReleased += r.released ? 1 : 0;
        if (r.released) {
          this.#o.log.info(
            { node: r.node, block: r.cidr ? formatPrefix(r.cidr) : finding.key },
            `node "${r.node}" is gone: released ${r.handles} of its pods' handle(s) and block ${r.cidr ? formatPrefix(r.cidr) : finding.key}` +
              (r.deleted ? ' (deleted)' : ` (kept without affinity: ${r.borrowed} borrowed address(es))`),
          );
        } else if (r.unproven) {
          this.#o.log.info(
            { node: r.node, block: r.cidr ? formatPrefix(r.cidr) : finding.key },
            `node "${r.node}" is back (a record or a new block since its deletion): kept block ${r.cidr ? formatPrefix(r.cidr) : finding.key}${r.handles ? ` after releasing ${r.handles} handle(s)` : ''}`,
          );
        }
      }
      this.#seen.delete(id);
    }
    const holdsReleased = await this.#expireHolds(report.stickyHolds ?? [], now);
    return { leaksReleased, handlesReleased, blocksReleased, orphansDeleted, holdsReleased, waiting };
  }

  /**
   * Sticky holds whose stickyUntil has passed (by this GC's clock): released at once — the
   * expiry is their deadline, no grace period more — while their record is the one the report
   * saw (a hold renewed by a later DEL, or taken over, stays).
   */
  async #expireHolds(holds: readonly StickyHold[], now: number): Promise<number> {
    let n = 0;
    for (const h of holds) {
      if (Date.parse(h.stickyUntil) > now) continue;
      const released = await this.#o.ipam.releaseStickyHold(h);
      if (released === undefined || released.length === 0) continue;
      n++;
      const pod = h.namespace !== undefined && h.pod !== undefined ? `${h.namespace}/${h.pod}` : '(unnamed)';
      const ips = released.map((r) => formatAddr(r.addr));
      this.#o.log.info(
        { handle: h.handle, pod, ips: ips.join(','), stickyUntil: h.stickyUntil },
        `released sticky hold "${h.handle}" of pod ${pod}: ${ips.join(', ')} (kept until ${h.stickyUntil})`,
      );
    }
    return n;
  }
}
