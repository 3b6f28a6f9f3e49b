/**
 * `podipam serve`'s history follower: watches the whole datastore from the revision after the
 * history store's position, turns each revision into hold ends and starts (derive-holds.ts) and
 * applies them, with the position reached, in one transaction of the history store per watch
 * batch (split only where a hold begins and ends inside one batch, so that its start is applied
 * before its end). A new history store begins with a listing (a gap "before history began");
 * revisions the datastore no longer keeps (StoreCompactedError) are replaced by a relist and a
 * gap between the last position's time and the relist. A history store follows one datastore:
 * opening it against another is refused. Retention: holds that ended, and gaps that closed,
 * before now − retention are purged periodically.
 */
import { STAMP_PREFIX } from '../cluster/history-stamp.js';
import { POOL_PREFIX } from '../cluster/keys.js';
import type { Log } from '../log/logger.js';
import type { Failure } from '../model/failure.js';
import type { HistoryGap } from '../model/history.js';
import { StoreCompactedError, type Store, type WatchEvent } from '../store/index.js';
import { listAll, listAllWithRevision } from '../store/list-all.js';
import { redactStoreUrl } from '../store/redact-store-url.js';
import { Periodic } from '../util/periodic.js';
import { type DerivedChanges, HoldState, revisionsOf } from './derive-holds.js';
import type { FollowPosition, HistoryDb, HoldEnd, HoldStart } from './history-db.js';

export const DEFAULT_RETENTION_MS = 90 * 24 * 3_600_000;

/** The history store was written following another datastore. */
export class HistorySourceMismatchError extends Error {
  override readonly name = 'HistorySourceMismatchError';
  readonly failure: Failure = 'datastore-url';
  constructor(readonly path: string, readonly recorded: string, readonly source: string) {
    super(`history store ${path} follows datastore ${recorded}, not ${source}: give this datastore its own --history-db file (or --no-history)`);
  }
}

export interface HistoryFollowerOptions {
  readonly store: Store;
  readonly db: HistoryDb;
  readonly log: Log;
  /** Holds that ended more than this long ago are purged (default 90 days; 0 = keep all). */
  readonly retentionMs?: number;
  /** How often the purge runs (default 1 h). */
  readonly purgeIntervalMs?: number;
  /** Pause after a failed watch before watching again (default 1 s). */
  readonly retryMs?: number;
  /** Clock, ms (tests). */
  readonly now?: () => number;
  /**
   * Called after each change the follower applied (true) and when its watch failed (false):
   * serve's dashboard summary learns of changes from here instead of a watch of its own, so
   * serve follows the datastore once (SummaryCache.noteChange).
   */
  readonly onChange?: (following: boolean) => void;
}

export interface HistoryFollowerStatus {
  readonly running: boolean;
  /** The last revision applied (0 before the first). */
  readonly revision: number;
  /** The time of the last change applied. */
  readonly at: number;
  /** How long after its writer's stamp the last stamped change was applied (ms). */
  readonly lagMs: number;
  /** Holds started (assigned), ended (released) and gaps recorded since this process began. */
  readonly events: { readonly assigned: number; readonly released: number; readonly gap: number };
  readonly openHolds: number;
  readonly lastError?: string;
}

export class HistoryFollower {
  readonly #o: HistoryFollowerOptions;
  readonly #source: string;
  readonly #now: () => number;
  readonly #ac = new AbortController();
  #state = new HoldState();
  #position: FollowPosition | undefined;
  #loop: Promise<void> | undefined;
  #purge: Periodic | undefined;
  #lagMs = 0;
  #events = { assigned: 0, released: 0, gap: 0 };
  #lastError: string | undefined;
  /** Resolvers waiting for the position to reach a revision (tests, `caughtUp`). */
  #waiters: { rev: number; resolve: () => void }[] = [];

  constructor(options: HistoryFollowerOptions) {
    this.#o = options;
    this.#source = redactStoreUrl(options.store.url);
    this.#now = options.now ?? Date.now;
  }

  /**
   * Checks the history store follows this datastore (HistorySourceMismatchError otherwise),
   * catches up to the datastore's current state (a listing for a new store) and starts following.
   */
  async start(): Promise<void> {
    if (this.#loop) return;
    const pos = this.#o.db.position();
    if (pos && pos.source !== this.#source) throw new HistorySourceMismatchError(this.#o.db.path, pos.source, this.#source);
    if (pos) {
      this.#position = pos;
      this.#state = new HoldState(this.#o.db.openHolds(), await listAll(this.#o.store, POOL_PREFIX));
    } else {
      await this.#relist(undefined);
    }
    this.#loop = this.#follow();
    const retentionMs = this.#o.retentionMs ?? DEFAULT_RETENTION_MS;
    if (retentionMs > 0) {
      const log = this.#o.log;
      this.#purge = new Periodic({
        name: 'history purge',
        intervalMs: this.#o.purgeIntervalMs ?? 3_600_000,
        firstDelayMs: 1000,
        log,
        task: () => {
          const n = this.#o.db.purge(this.#now() - retentionMs);
          if (n > 0) log.info({ purged: n }, `history: purged ${n} holds that ended more than ${Math.round(retentionMs / 86_400_000)} days ago`);
        },
      });
      this.#purge.start();
    }
  }

  /** Stops following; resolves when the batch under way (if any) is applied. The history store stays open (its owner closes it). */
  async stop(): Promise<void> {
    this.#ac.abort();
    await this.#purge?.stop();
    await this.#loop;
    for (const w of this.#waiters) w.resolve();
    this.#waiters = [];
  }

  /** Resolves once the position has reached `revision` (or the follower stopped). */
  caughtUp(revision: number): Promise<void> {
    if ((this.#position?.revision ?? 0) >= revision || this.#ac.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ rev: revision, resolve }));
  }

  status(): HistoryFollowerStatus {
    return {
      running: this.#loop !== undefined && !this.#ac.signal.aborted,
      revision: this.#position?.revision ?? 0,
      at: this.#position?.at ?? 0,
      lagMs: this.#lagMs,
      events: { ...this.#events },
      openHolds: this.#state.size,
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
    };
  }

  async #follow(): Promise<void> {
    const signal = this.#ac.signal;
    while (!signal.aborted) {
      try {
        const from = (this.#position?.revision ?? 0) + 1;
        for await (const batch of this.#o.store.watch('', from, { signal })) {
          if (batch.length > 0) {
            this.#applyBatch(batch, this.#now());
            this.#o.onChange?.(true);
          }
          if (this.#lastError !== undefined) this.#o.log.info({}, 'history: following the datastore again');
          this.#lastError = undefined;
        }
        return; // aborted, or the store closed
      } catch (e) {
        if (signal.aborted) return;
        try {
          if (e instanceof StoreCompactedError) {
            await this.#relist(e);
            continue;
          }
          // Anything else (the history file, a bug): start again from what the history store holds.
          this.#failed(e);
          this.#position = this.#o.db.position();
          this.#state = new HoldState(this.#o.db.openHolds(), await listAll(this.#o.store, POOL_PREFIX));
        } catch (e2) {
          this.#failed(e2);
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.#o.retryMs ?? 1000);
          signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        });
      }
    }
  }

  #failed(e: unknown): void {
    this.#o.onChange?.(false);
    const msg = (e as Error).message;
    if (msg !== this.#lastError) this.#o.log.warn({ err: msg }, `history: following the datastore failed (retrying): ${msg}`);
    this.#lastError = msg;
  }

  /** A listing in place of the change stream: the first one of a new store, or after revisions were compacted away. */
  async #relist(compacted: StoreCompactedError | undefined): Promise<void> {
    const listing = await listAllWithRevision(this.#o.store, '');
    const now = this.#now();
    const pos = this.#position;
    let gap: HistoryGap;
    if (!pos) {
      this.#state = new HoldState();
      gap = { from: 0, until: now, cause: 'before history began' };
    } else {
      const lost = compacted ? `${pos.revision + 1}-${compacted.oldest - 1}` : `after ${pos.revision}`;
      gap = { from: pos.at, until: Math.max(now, pos.at), cause: `serve was not following the datastore and it no longer had revisions ${lost} (compacted); relisted at revision ${listing.rev}` };
    }
    const d = this.#state.relist(listing.entries, pos ? { at: gap.until, earliest: pos.at } : { at: now, earliest: 0 });
    this.#logProblems(d);
    const position: FollowPosition = { source: this.#source, revision: Math.max(listing.rev, pos?.revision ?? 0), at: gap.until };
    this.#o.db.apply({ ends: d.ends, starts: d.starts, gaps: [gap], position });
    this.#applied(position, d.ends.length, d.starts.length, 1);
    this.#o.onChange?.(true);
    this.#o.log.warn(
      { from: new Date(gap.from).toISOString(), until: new Date(gap.until).toISOString(), revision: listing.rev, ended: d.ends.length, started: d.starts.length },
      `history: gap recorded (${gap.cause}): ${d.ends.length} releases and ${d.starts.length} assignments in it have times known only to lie in the gap`,
    );
  }

  /** One watch batch: derived revision by revision, applied in as few transactions as keep every hold's start before its end. */
  #applyBatch(batch: readonly WatchEvent[], seenAt: number): void {
    const pos = this.#position ?? { source: this.#source, revision: 0, at: 0 };
    let rev = pos.revision;
    let at = pos.at;
    let after = pos.at; // what the next revision is known to follow (an unstamped one: only what its predecessor followed)
    let ends: HoldEnd[] = [];
    let starts: HoldStart[] = [];
    let started = new Set<string>();
    const flush = (): void => {
      if (ends.length === 0 && starts.length === 0 && rev === this.#position?.revision) return;
      const position: FollowPosition = { source: this.#source, revision: rev, at };
      this.#o.db.apply({ ends, starts, position });
      this.#applied(position, ends.length, starts.length, 0);
      ends = [];
      starts = [];
      started = new Set();
    };
    const key = (address: string, handle: string): string => `${address} ${handle}`;
    for (const [r, events] of revisionsOf(batch)) {
      if (r <= rev) continue; // replayed
      const d = this.#state.applyRevision(events, seenAt, after);
      this.#logProblems(d);
      if ([...d.ends, ...d.pairs.map((p) => p.end)].some((e) => started.has(key(e.address, e.handle)))) flush();
      if (d.pairs.length > 0) {
        // A hold that began and ended within this revision: its start first, at the previous position.
        flush();
        starts = d.pairs.map((p) => p.start);
        flush();
      }
      ends.push(...d.ends, ...d.pairs.map((p) => p.end));
      starts.push(...d.starts);
      for (const s of d.starts) started.add(key(s.address, s.handle));
      rev = r;
      at = Math.max(at, d.at);
      after = Math.max(after, d.after);
      if (events.some((e) => e.key.startsWith(STAMP_PREFIX))) this.#lagMs = Math.max(0, seenAt - d.at);
    }
    flush();
  }

  #applied(position: FollowPosition, released: number, assigned: number, gaps: number): void {
    this.#position = position;
    this.#events.released += released;
    this.#events.assigned += assigned;
    this.#events.gap += gaps;
    const ready = this.#waiters.filter((w) => w.rev <= position.revision);
    this.#waiters = this.#waiters.filter((w) => w.rev > position.revision);
    for (const w of ready) w.resolve();
  }

  #logProblems(d: DerivedChanges): void {
    for (const p of d.problems) this.#o.log.warn({ err: p }, `history: skipped a record: ${p}`);
  }
}
