import { createLogger, type Log } from '../log/logger.js';
import { formatPrefix, type Prefix } from '../ip/index.js';
import { crashPoint } from '../util/crash-point.js';
import { followPrefix, MAX_TXN_OPS, StoreUnavailableError, type Entry, type Store, type WatchEvent } from '../store/index.js';
import { assignBatch, batchItemSize, type BatchItem } from './assign-batch.js';
import type { ControllerSummary, NodeCidrControllerOptions } from './controller-options.js';
import { CidrNotAvailableError, NodeConflictError } from './errors.js';
import { listAll, listAllWithRevision } from '../store/list-all.js';
import { NODE_CIDR_CLAIM_PREFIX } from './node-cidr-claim.js';
import { NodeOccupancy } from './node-occupancy.js';
import { Periodic } from '../util/periodic.js';
import { decodeNodeRecord, NODE_PREFIX, nodeKey, type NodeRecord } from '../model/node-record.js';
import { sweepOrphanClaims } from './sweep-orphan-claims.js';
import { WorkQueue } from './work-queue.js';
import { writeNodeRecord } from './write-node-record.js';
import { pause } from '../util/pause.js';

export type { ControllerSummary, NodeCidrControllerOptions } from './controller-options.js';

/** Writes of one node lost to other writers before the worker hands it back to the queue. */
const MAX_CAS_ATTEMPTS = 16;

/**
 * The node-CIDR controller (kube-controller-manager's RangeAllocator over the datastore): gives
 * every node record in `nodes/` one pod CIDR per configured family, and frees the CIDRs of
 * nodes whose records vanish. Occupancy is rebuilt from every claim and record before any
 * allocation (so a restart never hands a CIDR out twice), then kept up by following `nodes/`
 * (followPrefix: a watch from the listing's revision; a compacted watch resyncs at once, a failed
 * one after a back-off from `pollIntervalMs` doubling to 5 s); the full resync every
 * `resyncIntervalMs` stays as the safety net. Listings and watch batches
 * are applied one at a time, never interleaved.
 *
 * Every assignment is a transaction writing the node record at the revision read plus a claim
 * key per new CIDR that must not exist (`nodecidrs/<cidr>`): even two controllers running by
 * mistake never record one CIDR for two nodes — the loser marks the CIDR used and tries the
 * next. Nodes a listing finds pending are assigned in shared transactions (up to ~40 nodes
 * each); any conflict sends each of them to the per-node work queue (fixed workers, bounded
 * retries with exponential back-off). Deletion: `deleteNode` removes a record and its claims
 * together; a record marked `deleting: true` is removed the same way here; claims left by
 * records removed otherwise are swept at each resync.
 */
export class NodeCidrController {
  readonly #store: Store;
  readonly #occ: NodeOccupancy;
  readonly #log: Log;
  readonly #onChange: (name: string, record: NodeRecord | undefined) => void;
  readonly #poller: Periodic;
  readonly #resyncMs: number;
  readonly #workers: number;
  readonly #batch: boolean;
  readonly #queue: WorkQueue;
  /** Nodes waiting for a free CIDR; woken when one is freed. */
  readonly #parked = new Set<string>();
  /** Nodes whose CIDRNotAvailable was logged (once until they get CIDRs or go). */
  readonly #notified = new Set<string>();
  readonly #failed = new Set<string>();
  readonly #warned = new Set<string>();
  #assigned = 0;
  #conflicts = 0;
  #ready = false;
  #running = false;
  #nextResync = 0;
  /** Store revision when `nodes/` was last listed: the watch starts after it. */
  #listedAt = 0;
  /** Listings and watch batches, applied one after the other. */
  #serial: Promise<void> = Promise.resolve();
  #watchAbort: AbortController | undefined;
  #watchLoop: Promise<void> | undefined;
  /** Nodes the watch found pending, served together after a short gather delay. */
  readonly #gathered = new Set<string>();
  #gatherTimer: NodeJS.Timeout | undefined;

  constructor(options: NodeCidrControllerOptions) {
    this.#store = options.store;
    this.#log = options.log ?? createLogger({ level: 'info', format: 'text', component: 'controller' });
    this.#occ = new NodeOccupancy(options.config, this.#log);
    this.#onChange = options.onChange ?? (() => {});
    // A failure is logged (warn) once per distinct message: "node resync failed (retrying every N ms): …".
    this.#poller = new Periodic({
      name: 'node resync',
      intervalMs: options.pollIntervalMs ?? 250,
      log: this.#log,
      task: () => (Date.now() >= this.#nextResync || !this.#ready ? this.#run(() => this.#resync()) : Promise.resolve()),
    });
    this.#resyncMs = options.resyncIntervalMs ?? 30_000;
    this.#workers = options.workers ?? 8;
    this.#batch = options.batch ?? true;
    this.#queue = new WorkQueue({
      workers: this.#workers,
      maxRetries: options.maxRetries ?? 8,
      process: (name) => this.#sync(name),
      onGiveUp: (name, error, attempts) => {
        this.#failed.add(name);
        this.#log.warn({ node: name, attempts }, `CIDRAssignmentFailed: ${(error as Error)?.message ?? String(error)} (retried at the next resync)`);
      },
    });
  }

  /** Counters since construction: CIDR sets recorded, writes lost to another writer, nodes known. */
  stats(): { assigned: number; conflicts: number; known: number } {
    return { assigned: this.#assigned, conflicts: this.#conflicts, known: this.#occ.size };
  }

  /** Node blocks in total and in use, per family. */
  usage(): { family: 4 | 6; size: bigint; used: bigint }[] {
    return this.#occ.usage();
  }

  /**
   * Grows the cluster by one CIDR while running (nodes waiting for a CIDR get one). Throws
   * TypeError/RangeError like MultiCidrSet.add (overlap, unconfigured family, short node mask).
   * Not persisted: pass it in the configuration at the next start too.
   */
  addClusterCidr(cidr: Prefix): void {
    this.#occ.addClusterCidr(cidr);
    this.#log.info({ cidr: formatPrefix(cidr) }, `cluster CIDR added: ${formatPrefix(cidr)}`);
    this.#wake();
  }

  /** Asks for `name` to be looked at now (a hint from outside; the watch finds it anyway). */
  enqueue(name: string): void {
    if (this.#ready) this.#queue.add(name);
  }

  /**
   * Starts: rebuilds occupancy from the datastore, then follows `nodes/` by a watch (and resyncs periodically) until stop().
   * If the datastore is unreachable at first, keeps retrying in the background (nothing is
   * allocated before occupancy is known); other errors are thrown.
   */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      await this.#resync();
    } catch (e) {
      if (!(e instanceof StoreUnavailableError)) {
        this.#running = false;
        throw e;
      }
      this.#log.warn({ err: e.message }, `datastore unavailable, retrying: ${e.message}`);
    }
    this.#poller.start();
    const ac = (this.#watchAbort = new AbortController());
    const intervalMs = this.#poller.intervalMs;
    this.#watchLoop = followPrefix({
      store: this.#store,
      prefix: NODE_PREFIX,
      signal: ac.signal,
      backoff: { firstMs: Math.min(5000, intervalMs), maxMs: Math.min(5000, intervalMs * 64) },
      list: (cause) => this.#relist(cause, ac.signal),
      onEvents: (batch) => this.#run(() => this.#onEvents(batch)),
      onError: (e, stage) => {
        const msg = (e as Error).message;
        this.#log.warn({ err: msg }, stage === 'watch' ? `node watch failed, relisting: ${msg}` : `node relist failed: ${msg}`);
      },
    }).done;
  }

  /** Stops the watch and the resyncs, and waits for the nodes in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#watchAbort?.abort();
    await this.#watchLoop;
    clearTimeout(this.#gatherTimer);
    this.#gathered.clear();
    await this.#poller.stop();
    await this.#serial;
    await this.#queue.stop();
  }

  /** Runs `fn` after every listing or batch queued before it (a failure is passed on, not kept). */
  #run(fn: () => Promise<void>): Promise<void> {
    const next = this.#serial.then(fn);
    this.#serial = next.catch(() => {});
    return next;
  }

  /**
   * The listing the watch follows: at first start()'s (the datastore down at start: the poller's
   * first, waited for), after a compacted or failed watch a resync; the revision it was read at.
   */
  async #relist(cause: unknown, signal: AbortSignal): Promise<number> {
    if (cause !== undefined) await this.#run(() => this.#resync());
    while (!this.#ready && !signal.aborted) await pause(this.#poller.intervalMs, signal);
    return this.#listedAt;
  }

  /**
   * Changed records taken in, deleted ones forgotten (never older than what is known); the
   * pending nodes are served after a gather delay of about a fifth of the poll interval
   * (at most 50 ms), with jitter: nodes registering together share one batched transaction,
   * and two controllers run by mistake do not act in lock-step.
   */
  async #onEvents(events: readonly WatchEvent[]): Promise<void> {
    const pending: string[] = [];
    for (const e of events) {
      const name = e.key.slice(NODE_PREFIX.length);
      const k = this.#occ.known(name);
      if (k && k.rev >= e.modRevision) continue;
      if (e.type === 'delete') {
        this.#vanish(name);
        continue;
      }
      const rec = this.#decode({ key: e.key, value: e.value, rev: e.modRevision });
      if (rec && this.#observe(name, e.modRevision, rec)) pending.push(name);
    }
    for (const name of pending) this.#gathered.add(name);
    if (this.#gathered.size === 0 || this.#gatherTimer !== undefined) return;
    const delay = Math.min(50, this.#poller.intervalMs / 5) * (0.5 + Math.random());
    this.#gatherTimer = setTimeout(() => {
      this.#gatherTimer = undefined;
      if (!this.#running) return;
      const names = [...this.#gathered];
      this.#gathered.clear();
      void this.#run(() => this.#serve(names)).catch((e: unknown) => {
        // The nodes stay known as pending: the queue or the next resync serves them.
        this.#log.warn({ err: (e as Error).message }, `serving watched nodes failed: ${(e as Error).message}`);
        for (const n of names) this.#queue.add(n);
      });
    }, delay);
  }

  /** Rebuilds occupancy, processes every pending node, returns when none is left (tests, benches, `--once`). */
  async runOnce(): Promise<ControllerSummary> {
    if (this.#running) throw new Error('Cannot runOnce a node-CIDR controller that is started');
    await this.#resync();
    await this.#queue.idle();
    await this.#queue.stop();
    this.#ready = false;
    return { nodes: this.#occ.size, assigned: this.#assigned, waiting: [...this.#parked].sort(), failed: [...this.#failed].sort() };
  }

  /** Occupancy from scratch (every claim, record and proposal in flight), orphan claims swept, all pending nodes served. */
  async #resync(): Promise<void> {
    const claims = await listAll(this.#store, NODE_CIDR_CLAIM_PREFIX);
    const [entries, rev0] = await this.#listNodes();
    this.#apply(entries, rev0);
    this.#occ.rebuild(claims.map((c) => c.key.slice(NODE_CIDR_CLAIM_PREFIX.length)));
    this.#nextResync = Date.now() + this.#resyncMs;
    // Known records are at least as new as the listing, which came after the claims listing.
    const unreadable = new Set(entries.map((e) => e.key.slice(NODE_PREFIX.length)).filter((n) => !this.#occ.known(n)));
    const podCidrsOf = (name: string) => (unreadable.has(name) ? null : this.#occ.known(name)?.record.podCIDRs);
    const swept = await sweepOrphanClaims(this.#store, claims, podCidrsOf, this.#log);
    // Every swept CIDR must be tried (no short-circuit): each frees its own block.
    const freed = swept.filter((t) => this.#occ.releaseUnheld(t));
    if (freed.length) this.#wake();
    this.#parked.clear();
    this.#failed.clear();
    if (!this.#ready) {
      this.#queue.start();
      const use = this.#occ
        .usage()
        .map((u) => `IPv${u.family} ${u.used}/${u.size}`)
        .join(', ');
      this.#log.info({}, `ready: ${this.#occ.size} nodes, ${claims.length} claims, node blocks used ${use}`);
    }
    this.#ready = true;
    const pending = [...this.#occ.entries()].filter(([name]) => this.#occ.needsWork(name)).map(([name]) => name);
    await this.#serve(pending);
  }

  /** The node records, and a store revision read before listing them. */
  async #listNodes(): Promise<[Entry[], number]> {
    const { entries, rev } = await listAllWithRevision(this.#store, NODE_PREFIX);
    this.#listedAt = Math.max(this.#listedAt, rev);
    return [entries, rev];
  }

  /**
   * Applies a listing: takes in new and changed records; forgets known nodes absent from it
   * whose last known write came before it began (rev ≤ rev0). Returns changed nodes needing work.
   */
  #apply(entries: readonly Entry[], rev0: number): string[] {
    const pending: string[] = [];
    const seen = new Set<string>();
    for (const e of entries) {
      const name = e.key.slice(NODE_PREFIX.length);
      seen.add(name);
      const k = this.#occ.known(name);
      if (k && k.rev >= e.rev) continue;
      const rec = this.#decode(e);
      if (rec && this.#observe(name, e.rev, rec)) pending.push(name);
    }
    for (const [name, k] of [...this.#occ.entries()]) if (!seen.has(name) && k.rev <= rev0) this.#vanish(name);
    return pending;
  }

  #decode(e: Entry): NodeRecord | undefined {
    try {
      return decodeNodeRecord(e.key, e.value);
    } catch (err) {
      if (!this.#warned.has(`${e.key}@${e.rev}`)) this.#log.warn({ key: e.key }, `skipping ${(err as Error).message}`);
      this.#warned.add(`${e.key}@${e.rev}`);
      return undefined;
    }
  }

  #observe(name: string, rev: number, rec: NodeRecord): boolean {
    const before = this.#occ.known(name)?.rev;
    const needs = this.#occ.observe(name, rev, rec);
    if (before !== undefined && before < rev) this.#parked.delete(name);
    return needs;
  }

  /** A node whose record is gone: free what it held. */
  #vanish(name: string): void {
    const had = this.#occ.known(name) !== undefined;
    const freed = this.#occ.vanish(name);
    this.#parked.delete(name);
    this.#notified.delete(name);
    if (freed.length) {
      this.#log.info({ node: name, podCIDRs: freed.join(',') }, 'released');
      this.#wake();
    }
    if (had) this.#onChange(name, undefined);
  }

  /** Nodes waiting for a CIDR get another turn. */
  #wake(): void {
    for (const name of this.#parked) this.#queue.add(name);
    this.#parked.clear();
  }

  #park(e: CidrNotAvailableError): void {
    // The node is named in the message ("CIDRNotAvailable: node \"z\" cannot get …").
    if (!this.#notified.has(e.node)) this.#log.warn({}, e.message);
    this.#notified.add(e.node);
    this.#parked.add(e.node);
  }

  #committed(name: string, rev: number, next: NodeRecord, cidrs: readonly Prefix[], added: readonly Prefix[]): void {
    this.#occ.observe(name, rev, next, cidrs);
    this.#occ.settle(added, undefined, true);
    this.#assigned++;
    this.#failed.delete(name);
    this.#notified.delete(name);
    this.#log.info({ node: name, podCIDRs: next.podCIDRs.join(',') }, 'assigned');
    this.#onChange(name, next);
  }

  /** Pending nodes: batched assignments where possible, the work queue for the rest. */
  async #serve(names: readonly string[]): Promise<void> {
    if (!this.#batch) {
      for (const n of names) this.#queue.add(n);
      return;
    }
    type Member = { name: string; cidrs: readonly Prefix[]; added: readonly Prefix[]; item: BatchItem };
    const groups: Member[][] = [[]];
    let size = 0;
    for (const name of names) {
      const k = this.#occ.known(name);
      if (!k || k.record.deleting || this.#queue.has(name)) {
        this.#queue.add(name);
        continue;
      }
      const p = this.#occ.propose(name);
      if (!p || !p.ok) {
        if (p) this.#park(new CidrNotAvailableError(name, p.family, p.clusters));
        continue;
      }
      if (p.added.length === 0) continue;
      const item: BatchItem = { rev: k.rev, next: { ...k.record, podCIDRs: p.podCIDRs.map(formatPrefix) }, claims: p.added.map(formatPrefix) };
      if (size + batchItemSize(item) > MAX_TXN_OPS) {
        groups.push([]);
        size = 0;
      }
      (groups[groups.length - 1] as Member[]).push({ name, cidrs: p.podCIDRs, added: p.added, item });
      size += batchItemSize(item);
    }
    // Up to `workers` transactions in flight; the loop is bounded by the number of groups.
    let next = 0;
    await Promise.all(
      Array.from({ length: this.#workers }, async () => {
        while (next < groups.length) {
          const g = groups[next++] as Member[];
          if (g.length === 0) continue;
          let outcomes;
          try {
            outcomes = await assignBatch(
              this.#store,
              g.map((x) => x.item),
            );
          } catch (e) {
            for (const x of g) this.#occ.settle(x.added);
            for (const x of g) this.#queue.add(x.name);
            if (!(e instanceof StoreUnavailableError)) throw e;
            continue;
          }
          if (outcomes[0]?.ok) crashPoint('controller.cidr.committed');
          g.forEach((x, i) => {
            const o = outcomes[i] as (typeof outcomes)[number];
            if (o.ok) return this.#committed(x.name, o.rev, x.item.next, x.cidrs, x.added);
            this.#occ.settle(x.added, o.claimedBy);
            this.#queue.add(x.name);
          });
          if (!outcomes[0]?.ok) this.#conflicts++;
        }
      }),
    );
  }

  /** One node: delete it (deleting) or assign its missing CIDRs by compare-and-swap, re-reading on conflict. */
  async #sync(name: string): Promise<void> {
    // The first turn trusts the last listing; a conflict means it was stale, so re-read.
    let fresh = this.#occ.known(name) === undefined;
    for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
      if (fresh) {
        const entry = await this.#store.get(nodeKey(name));
        if (!entry) return this.#vanish(name);
        const rec = this.#decode(entry);
        if (!rec) return;
        this.#observe(name, entry.rev, rec);
      }
      fresh = true;
      const k = this.#occ.known(name);
      if (!k) return;
      if (k.record.deleting) {
        const out = await writeNodeRecord(this.#store, { name, rev: k.rev, prev: k.record }, { deletedBy: 'controller' });
        if (out.ok) return this.#vanish(name);
        this.#conflicts++;
        continue;
      }
      const p = this.#occ.propose(name);
      if (!p) return;
      if (!p.ok) return this.#park(new CidrNotAvailableError(name, p.family, p.clusters));
      if (p.added.length === 0) return;
      const next: NodeRecord = { ...k.record, podCIDRs: p.podCIDRs.map(formatPrefix) };
      let out;
      try {
        out = await writeNodeRecord(this.#store, { name, rev: k.rev, prev: k.record }, next);
      } catch (e) {
        // Unknown whether it landed: free the proposals; the re-read occupies what did.
        this.#occ.settle(p.added);
        throw e;
      }
      if (out.ok) crashPoint('controller.cidr.committed');
      if (out.ok) return this.#committed(name, out.rev, next, p.podCIDRs, p.added);
      const taken = new Map(out.claimedBy);
      for (const c of out.ownClaims.keys()) taken.set(c, name);
      this.#occ.settle(p.added, taken);
      this.#conflicts++;
    }
    throw new NodeConflictError(name, MAX_CAS_ATTEMPTS);
  }
}
