/**
 * `podipam serve`'s history follower: watches the whole datastore from the revision after the
 * history store's position, turns each revision into hold ends and starts (derive-holds.ts) and
 * applies them, with the position reached, in one transaction of the history store per watch
 * batch (split only where a hold begins and ends inside one batch, so that its start is applied
 * before its end). A new history store begins with a listing (a gap "before history began");
 * revisions the datastore no longer keeps (StoreCompactedError) are replaced by a relist and a
 * gap between the last position's time and the relist. A history store follows one datastore:
 * opening it against another is refused. Retention: holds that ended, and gaps that closed,
 * before now − retention are purged periodically. The watch (followPrefix) retries a failure every
 * `retryMs`, from the history store's position.
 *
 * A datastore restored from a backup or replaced by another at the same URL is detected at start
 * and every `checkIntervalMs` while following: its identity (Store.identity: etcd's cluster id,
 * the SQLite file's id) differs from the one the position recorded, or its revision is below the
 * position's. The follower then records a gap from the last instant it knew the datastore's state
 * (the position's time, or a later check that found the datastore exactly at the position) to the
 * relist, ends every open hold and starts every hold of the listing at a time known only to lie in
 * that gap, so that an instant inside it answers "unknown" for every address, and re-baselines
 * (position = the listing's revision and the new identity).
 */
import { STAMP_PREFIX } from '../cluster/records/index.js';
import { POOL_PREFIX } from '../cluster/records/index.js';
import type { Log } from '../log/logger.js';
import type { Failure } from '../model/failure.js';
import type { HistoryGap } from '../model/history.js';
import { followPrefix, StoreCompactedError, type PrefixFollow, type Store, type WatchEvent } from '../store/index.js';
import { listAll, listAllWithRevision } from '../store/list-all.js';
import { redactStoreUrl } from '../store/redact-store-url.js';
import { Periodic } from '../util/periodic.js';
import { type DerivedChanges, HoldState, revisionsOf } from './derive-holds.js';
import type { FollowPosition, HistoryDb, HoldEnd, HoldStart } from './history-db.js';
import { rebaselineChanges, replacedCause, withoutStaleStamps } from './replaced-datastore.js';

export const DEFAULT_RETENTION_MS = 90 * 24 * 3_600_000;

/** The history store was written following another datastore. */
export class HistorySourceMismatchError extends Error {
  override readonly name = 'HistorySourceMismatchError';
  readonly failure: Failure = 'datastore-url';
  constructor(
    readonly path: string,
    readonly recorded: string,
    readonly source: string,
  ) {
    super(
      `history store ${path} follows datastore ${recorded}, not ${source}: give this datastore its own --history-db file, or leave --history-db out (serve keeps each datastore's history in its own file), or --no-history`,
    );
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
  /** How often the datastore's identity and revision are checked while following (default 10 s; 0 = only at start). */
  readonly checkIntervalMs?: number;
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
  #check: Periodic | undefined;
  /** The datastore's identity, as last read. */
  #identity: string | undefined;
  /** The last instant a check found the datastore exactly at the position (same identity, same revision). */
  #verifiedAt = 0;
  /** Set by a check that found the datastore restored or replaced: the cause; the loop re-baselines. */
  #replaced: string | undefined;
  /**
   * The start of the last restore's gap: a stamp older than this in a later revision was written
   * back by the restore (a backup holds the stamps of its time), not by a writer: not trusted.
   */
  #staleBefore = 0;
  /** The watch of the whole datastore (followPrefix); a check that found it replaced makes it relist. */
  #follow: PrefixFollow | undefined;
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
    const replaced = (await this.#replacedCause(pos)).cause;
    if (pos) {
      this.#position = pos;
      this.#state = new HoldState(this.#o.db.openHolds(), await listAll(this.#o.store, POOL_PREFIX));
      if (replaced !== undefined) await this.#rebaseline(replaced);
    } else {
      await this.#relist(undefined);
    }
    const retryMs = this.#o.retryMs ?? 1000;
    this.#follow = followPrefix({
      store: this.#o.store,
      prefix: '',
      signal: this.#ac.signal,
      backoff: { firstMs: retryMs, maxMs: retryMs },
      list: (cause) => this.#resume(cause),
      onEvents: (batch) => this.#onEvents(batch),
      onError: (e) => this.#failed(e),
    });
    this.#loop = this.#follow.done;
    const checkIntervalMs = this.#o.checkIntervalMs ?? 10_000;
    if (checkIntervalMs > 0) {
      this.#check = new Periodic({ name: 'history datastore check', intervalMs: checkIntervalMs, log: this.#o.log, task: () => this.#checkDatastore() });
      this.#check.start();
    }
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
    await this.#check?.stop();
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

  /**
   * Where the watch starts, after catching up (the position's revision): at first what start()
   * left; a datastore found replaced: a re-baseline; compacted revisions: a relist; any other
   * failure (the history file, a bug): the history store's position and holds, read again.
   */
  async #resume(cause: unknown): Promise<number> {
    const replaced = this.#replaced;
    if (replaced !== undefined) {
      await this.#rebaseline(replaced);
      this.#replaced = undefined;
    } else if (cause instanceof StoreCompactedError) {
      await this.#relist(cause);
    } else if (cause !== undefined) {
      this.#position = this.#o.db.position();
      this.#state = new HoldState(this.#o.db.openHolds(), await listAll(this.#o.store, POOL_PREFIX));
    }
    return this.#position?.revision ?? 0;
  }

  #onEvents(batch: WatchEvent[]): void {
    if (this.#replaced !== undefined) return; // not this datastore's changes: a re-baseline follows
    if (batch.length > 0) {
      this.#applyBatch(batch, this.#now());
      this.#o.onChange?.(true);
    }
    if (this.#lastError !== undefined) this.#o.log.info({}, 'history: following the datastore again');
    this.#lastError = undefined;
  }

  #failed(e: unknown): void {
    this.#o.onChange?.(false);
    const msg = (e as Error).message;
    if (msg !== this.#lastError) this.#o.log.warn({ err: msg }, `history: following the datastore failed (retrying): ${msg}`);
    this.#lastError = msg;
  }

  /**
   * Why the datastore is not the one the position was written for (restored or replaced), or
   * undefined when it is. Reads its identity and revision; keeps the identity.
   */
  async #replacedCause(pos: FollowPosition | undefined): Promise<{ cause?: string; revision: number }> {
    const identity = await this.#o.store.identity();
    const revision = await this.#o.store.revision();
    const cause = replacedCause(pos, identity, revision);
    if (cause === undefined) this.#identity = identity;
    return cause === undefined ? { revision } : { cause, revision };
  }

  /** The periodic check while following: a datastore found replaced makes the loop stop its watch and re-baseline. */
  async #checkDatastore(): Promise<void> {
    if (this.#replaced !== undefined) return;
    const startedAt = this.#now();
    const pos = this.#position;
    const { cause, revision } = await this.#replacedCause(pos);
    if (cause !== undefined) {
      this.#replaced = cause;
      this.#follow?.relist(cause);
      return;
    }
    // The datastore was exactly where the history is: nothing before this instant is unknown.
    if (pos !== undefined && revision === pos.revision) this.#verifiedAt = Math.max(this.#verifiedAt, startedAt);
  }

  /**
   * The datastore was restored or replaced: a gap from the last instant its state was known to
   * the relist; every open hold ends, and every hold of the listing starts, at a time known only
   * to lie in the gap; the position becomes the listing's revision and the identity read now.
   */
  async #rebaseline(cause: string): Promise<void> {
    const identity = await this.#o.store.identity();
    const listing = await listAllWithRevision(this.#o.store, '');
    const now = this.#now();
    const pos = this.#position ?? { source: this.#source, revision: 0, at: 0 };
    const known = Math.min(Math.max(pos.at, this.#verifiedAt), now);
    const gap: HistoryGap = { from: known, until: Math.max(now, known), cause: `${cause}; relisted at revision ${listing.rev}` };
    const { ends, starts, state, problems } = rebaselineChanges(this.#state.openHolds(), listing.entries, gap);
    for (const p of problems) this.#o.log.warn({ err: p }, `history: skipped a record: ${p}`);
    this.#identity = identity;
    this.#staleBefore = gap.from;
    const position: FollowPosition = { source: this.#source, revision: listing.rev, at: gap.until, identity };
    this.#o.db.apply({ ends, starts, gaps: [gap], position });
    this.#state = state;
    this.#applied(position, ends.length, starts.length, 1);
    this.#o.onChange?.(true);
    this.#o.log.warn(
      {
        from: new Date(gap.from).toISOString(),
        until: new Date(gap.until).toISOString(),
        revision: listing.rev,
        identity,
        ended: ends.length,
        started: starts.length,
      },
      `history: gap recorded (${gap.cause}): who held any address inside it is unknown`,
    );
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
      gap = {
        from: pos.at,
        until: Math.max(now, pos.at),
        cause: `serve was not following the datastore and it no longer had revisions ${lost} (compacted); relisted at revision ${listing.rev}`,
      };
    }
    const d = this.#state.relist(listing.entries, pos ? { at: gap.until, earliest: pos.at } : { at: now, earliest: 0 });
    this.#logProblems(d);
    const position: FollowPosition = { source: this.#source, revision: Math.max(listing.rev, pos?.revision ?? 0), at: gap.until, ...this.#identityField() };
    this.#o.db.apply({ ends: d.ends, starts: d.starts, gaps: [gap], position });
    this.#applied(position, d.ends.length, d.starts.length, 1);
    this.#o.onChange?.(true);
    this.#o.log.warn(
      {
        from: new Date(gap.from).toISOString(),
        until: new Date(gap.until).toISOString(),
        revision: listing.rev,
        ended: d.ends.length,
        started: d.starts.length,
      },
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
      const position: FollowPosition = { source: this.#source, revision: rev, at, ...this.#identityField() };
      this.#o.db.apply({ ends, starts, position });
      this.#applied(position, ends.length, starts.length, 0);
      ends = [];
      starts = [];
      started = new Set();
    };
    const key = (address: string, handle: string): string => `${address} ${handle}`;
    for (const [r, events] of revisionsOf(batch)) {
      if (r <= rev) continue; // replayed
      const d = this.#state.applyRevision(withoutStaleStamps(events, this.#staleBefore), seenAt, after);
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

  #identityField(): { identity?: string } {
    return this.#identity === undefined ? {} : { identity: this.#identity };
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
