/**
 * The write-behind of the pod records: the resource DB queues each ADD's record put and each
 * DEL's delete (resource-db.ts); a loop (Periodic, every writeDelayMs) writes them to the
 * datastore, WRITE_BATCH per txn (a key queued twice: its last write), through the cluster
 * back end's warm records API (src/cluster/txn/warm-handles.ts). Pods keep starting while the
 * datastore is away; the queue drains when it returns. Each delete carries the time and reason
 * of the DEL (CNI GC, warm GC, reconcile) that queued it, into the txn's history stamp; a put
 * folded away by a later delete of the same batch goes there too (warm-handles.ts). Every txn
 * is fenced (WRITE_FENCE_PREFIX): one given up on a timeout cannot land after a later one.
 * The agent's holder view (or, unchanged, its heartbeat) rides along when due
 * (warm-view-publisher.ts), in a txn of its own on this loop when no record is queued; a txn
 * that carried one and did not commit, or whose answer was lost, makes the next one the whole view.
 */
import { crashPoint } from '../util/crash-point.js';
import { Periodic } from '../util/periodic.js';
import { WRITE_BATCH, WRITE_DELAY_MS } from './warm-options.js';
import { writeFenceKey } from './warm-handle.js';
import type { WarmState } from './warm-state.js';
import { WarmViewPublisher } from './warm-view-publisher.js';

export class WarmWriteBehind {
  readonly #s: WarmState;
  readonly #view: WarmViewPublisher;
  #loop: Periodic | undefined;
  #flushRun: Promise<void> | undefined;
  #flushAgain: Promise<void> | undefined;
  /** The write fence's revision as last seen (0 until the first txn answers: a wrong guess costs one refused txn). */
  #fenceRev = 0;
  /** writeTxns: txns written; fenced: txns refused because the fence had moved (then written again). */
  readonly counters = { writeTxns: 0, fenced: 0 };

  constructor(state: WarmState) {
    this.#s = state;
    this.#view = new WarmViewPublisher(state);
  }

  start(): void {
    this.#loop = new Periodic({
      name: 'warm pool write-behind',
      intervalMs: this.#s.o.writeDelayMs ?? WRITE_DELAY_MS,
      task: () => this.flush(),
      log: this.#s.log,
    });
    this.#loop.start();
  }

  /** Stops the loop (its timer at once) and waits for the flush under way; the owner flushes once more after its last writes (WarmService.close). */
  async stop(): Promise<void> {
    await this.#loop?.stop();
  }

  /**
   * Writes the queued pod records, WRITE_BATCH per txn, until the queue is empty or a write
   * fails. While a flush is in flight (the loop's), a call waits for it and then flushes once
   * more, so what was queued before the call is written (or failed) when it resolves.
   */
  flush(): Promise<void> {
    if (this.#flushRun) {
      this.#flushAgain ??= this.#flushRun.then(() => {
        this.#flushAgain = undefined;
        return this.flush();
      });
      return this.#flushAgain;
    }
    const run = this.#flushOnce().finally(() => {
      this.#flushRun = undefined;
    });
    this.#flushRun = run;
    return run;
  }

  async #flushOnce(): Promise<void> {
    const s = this.#s;
    for (let i = 0; i < 1000; i++) {
      const batch = s.db.pendingWrites(WRITE_BATCH);
      const view = this.#view.due(batch.length);
      if (batch.length === 0 && view === undefined) return;
      let rev: number;
      try {
        // Each delete with its DEL's time and reason (the txn's history stamp); one queued before the column existed: reason unknown.
        const writes = batch.map((w) =>
          w.value === undefined
            ? { key: w.key, value: undefined, at: w.at, why: w.why ?? ('unknown' as const), ...(w.evidence ? { evidence: w.evidence } : {}) }
            : { key: w.key, value: w.value },
        );
        if (view) writes.push(view);
        const fence = { key: writeFenceKey(s.o.node), rev: this.#fenceRev };
        const r = await s.ds((ipam) => ipam.writeWarmRecords(writes, fence));
        this.#fenceRev = r.fenceRev;
        rev = r.fenceRev;
        if (!r.written) {
          // A txn of ours given up earlier landed since (or the first guess was wrong): the
          // queue is still all here; write it again over the fence as it is now.
          if (view) this.#view.failed();
          this.counters.fenced++;
          continue;
        }
      } catch (e) {
        // The txn may still land later; the fence keeps it from landing after a newer one.
        s.lastError = (e as Error).message;
        if (view) this.#view.failed();
        return;
      }
      // With the fence, fenceRev is the revision of the txn that just committed (the fence moved in it).
      if (view) this.#view.published(rev);
      if (batch.length === 0) continue;
      crashPoint('agent.writebehind.committed');
      this.counters.writeTxns++;
      s.db.writesDone(batch[batch.length - 1]!.seq);
    }
  }
}
