/**
 * The agent's resource DB: one SQLite file (`<data-dir>/resources.db`, WAL) holding what the
 * warm pool must not forget across a restart — every address the node's warm handles hold in
 * the datastore (with its block prefix length and gateway, to answer an ADD without asking
 * the datastore, `free_at`, the end of its cooldown, and `released_at`, when a pod let it go), the pods using some of them, and the
 * write-behind queue of pod records still to be written to the datastore, and the DIRECT
 * attachments (pods with a placement annotation, allocated on the datastore under their own
 * handle, never from the idle queue: warm-direct.ts).
 *
 * Every mutation is one SQLite transaction, committed before the caller goes on (an ADD is
 * answered only after its pod row is in). synchronous=NORMAL in WAL mode: a commit survives the
 * agent's crash (SIGKILL); a power loss may lose the last commits, and with them the node's
 * pods, which a reboot restarts anyway.
 */
import { lstatSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type ReleaseEvidence, type ReleaseReason, decodeReleaseEvidence, encodeReleaseEvidence, isReleaseReason } from '../model/history.js';
import {
  applyPragmas,
  pragmaInteger,
  checkpointWhenIdle,
  type IdleCheckpointer,
  oneRow,
  openSqlite,
  quickCheck,
  SQLITE_DIR_MODE,
  type SqliteDb,
} from '../sqlite/index.js';
import { createTables, prepareStatements } from './resource-db-schema.js';

/** The resource DB exists but cannot be opened or read: the agent stops (it is never recreated over it). */
export class ResourceDbError extends Error {
  override readonly name = 'ResourceDbError';
}

/** An address a warm handle holds, as the DB keeps it. */
export interface HeldRow {
  readonly addr: string;
  readonly family: 4 | 6;
  /** The warm handle holding it in the datastore. */
  readonly handle: string;
  readonly prefixLen: number;
  readonly gateway: string;
  /** Idle from this time (ms since the epoch); meaningless while a pod holds it. */
  readonly freeAt: number;
  /** When a pod of this node last let it go (its pool's reuse quarantine counts from it); absent or null: refilled, not released since. */
  readonly releasedAt?: number | null;
}

/** A pod (CNI attachment) holding warm addresses. */
export interface PodRow {
  /** The attachment key: `<network>:<containerID>:<ifname>` (handle-id.ts). */
  readonly key: string;
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly addrs: readonly string[];
  readonly since: number;
}

/**
 * An attachment allocated directly on the datastore under its own handle (`key`, the would-be
 * cluster handle): its addresses are the handle's, never the warm handles'. Recorded before the
 * datastore's txn with no addresses (`addrs` empty: an intent), completed after it.
 */
export interface DirectRow {
  readonly key: string;
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  /** `addr/prefixLen` and gateway of each address, as the ADD answered; empty while only intended. */
  readonly ips: readonly { readonly address: string; readonly gateway: string }[];
  readonly since: number;
}

/** A pod record to write (`value`) or delete (`value` undefined) in the datastore. */
export interface PendingWrite {
  readonly seq: number;
  readonly key: string;
  readonly value: string | undefined;
  /** When it was queued (a delete: the DEL's time). */
  readonly at: number;
  /** A delete's reason (the history stamp's); undefined for puts and for deletes queued before the DB had the column. */
  readonly why?: ReleaseReason;
  /** A `runtime-absent` delete's evidence (the history's). */
  readonly evidence?: ReleaseEvidence;
}

/**
 * The page size of a new resource DB (one made before keeps its own). Every ADD and DEL is a
 * commit of a few rows, and a commit writes each page it changed whole into the WAL: measured
 * on 2 vCPUs (an ADD's and a DEL's transactions, 10,000 of them, synchronous=NORMAL), 37-50 µs
 * a commit with 4,096-byte pages against 25-27 µs with 1,024 on an ext4 disk, 22-31 against
 * 18-20 µs on tmpfs; 512 gains little more.
 */
const PAGE_SIZE_BYTES = 1024;

/** WAL length past which a commit checkpoints inline (checkpointWhenIdle's cap, ~16 MiB whatever the page size). */
const WAL_CAP_BYTES = 16 << 20;

export class ResourceDb {
  readonly path: string;
  readonly #db: SqliteDb;
  readonly #st: ReturnType<typeof prepareStatements>;
  /** WAL checkpoints after 100–200 ms without a commit, inline only past WAL_CAP_BYTES: never inside an ADD's commit unless the WAL is that long. */
  readonly #checkpointer: IdleCheckpointer;
  #runTx: ((fn: () => unknown) => unknown) | undefined;
  /** The keys of the pods table, so `hasPod` (an ADD's and a DEL's first question) reads no row; changed when the commit that changed the table is in. */
  readonly #podKeys: Set<string>;
  /** While a transaction of `#tx` runs: its changes to the pods table's keys, applied once the outermost commits. */
  #keyChanges: [key: string, present: boolean][] | undefined;
  /** A call that ran its statements in the transaction under way without a savepoint of its own failed: that transaction must not commit. */
  #failed: Error | undefined;

  /** The file was absent or empty at open: whatever it knew is lost (the datastore's records decide). */
  readonly fresh: boolean;

  /**
   * Opens `<dir>/resources.db`, creating it when absent (or empty). One that exists but is not
   * a readable SQLite database (corrupt, another file, a link) is a ResourceDbError naming it,
   * and is left as it is.
   */
  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: SQLITE_DIR_MODE });
    this.path = join(dir, 'resources.db');
    const unreadable = (why: string): ResourceDbError =>
      new ResourceDbError(
        `resource DB ${this.path} cannot be read (${why}): it is not recreated over it; move it aside to start with an empty one (the datastore's records of this node then decide what is held)`,
      );
    let size: number | undefined;
    try {
      const st = lstatSync(this.path);
      if (!st.isFile()) throw unreadable('not a regular file');
      size = st.size;
    } catch (e) {
      if (e instanceof ResourceDbError) throw e;
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw unreadable((e as Error).message);
      // No DB: a journal left beside it belongs to the lost one, not to the DB about to be created.
      for (const f of [`${this.path}-wal`, `${this.path}-shm`]) rmSync(f, { force: true });
    }
    this.fresh = size === undefined || size === 0;
    let db: SqliteDb | undefined;
    try {
      // An absent file is created (owner-only, as every SQLite file of podipam); an existing one must still be there.
      db = openSqlite(this.path, { busyTimeoutMs: 5000, create: size === undefined });
      if (!this.fresh) {
        const bad = quickCheck(db).filter((m) => m !== 'ok');
        if (bad.length > 0) throw new Error(bad.slice(0, 3).join('; '));
      }
      applyPragmas(db, { journal: 'wal', synchronous: 'normal', pageSizeBytes: PAGE_SIZE_BYTES });
      createTables(db);
    } catch (e) {
      db?.close();
      throw unreadable((e as Error).message);
    }
    this.#db = db; // assigned: the catch above always throws
    this.#st = prepareStatements(db);
    this.#checkpointer = checkpointWhenIdle(db, { idleMs: 100, capPages: Math.ceil(WAL_CAP_BYTES / pragmaInteger(db, 'page_size')) });
    this.#podKeys = new Set(this.#st.podKeys.all().map((r) => r.key));
  }

  /** Addresses just assigned to a warm handle; `refill`: the handle whose intent they fulfil (forgotten in the same commit). */
  addHeld(rows: readonly HeldRow[], refill?: string): void {
    this.#tx(() => {
      for (const r of rows) this.#st.putHeld.run(r.addr, r.family, r.handle, r.prefixLen, r.gateway, r.freeAt);
      if (refill !== undefined) this.#st.delRefill.run(refill);
    });
  }

  /**
   * A refill is about to assign addresses to warm handle `handle`: committed before the
   * datastore's txn, so a restart that finds the handle in the datastore but not its addresses
   * here knows they were never handed out (the agent stopped between the two commits).
   */
  refillIntent(handle: string, at: number): void {
    this.#st.putRefill.run(handle, at);
  }

  /** The warm handles of refills whose addresses never reached this DB. */
  refillIntents(): Set<string> {
    return new Set(this.#st.allRefills.all().map((r) => r.handle));
  }

  clearRefillIntents(): void {
    this.#st.clearRefills.run();
  }

  /** Addresses the node's warm handles hold that no evidence shows free: out of the idle queue (`freeAt`: since when). */
  quarantined(): HeldRow[] {
    return this.#st.allQuarantine.all();
  }

  quarantine(rows: readonly HeldRow[], since: number): void {
    this.#tx(() => {
      for (const r of rows) this.#st.putQuarantine.run(r.addr, r.family, r.handle, r.prefixLen, r.gateway, since);
    });
  }

  /** Quarantined addresses that left quarantine (gone from the datastore, or shown held/free). */
  unquarantine(addrs: readonly string[]): void {
    this.#tx(() => {
      for (const a of addrs) this.#st.delQuarantine.run(a);
    });
  }

  /** Pod record keys whose last queued write is a delete (their pods' DEL or GC is recorded here). */
  queuedDeletes(): Set<string> {
    const last = new Map<string, boolean>();
    for (const w of this.#st.allWrites.all()) last.set(w.key, w.value === null);
    return new Set([...last].filter(([, d]) => d).map(([k]) => k));
  }

  /** A pod the datastore's record shows in use, taken back into the DB (no write queued: the record is there). */
  adoptPod(pod: PodRow): void {
    this.#rows(() => {
      this.#st.putPod.run(pod.key, pod.network, pod.containerId, pod.ifname, JSON.stringify(pod.addrs), pod.since);
      this.#keyChanges!.push([pod.key, true]);
    });
  }

  /** Addresses released in the datastore (or found gone): forgotten. */
  dropHeld(addrs: readonly string[]): void {
    this.#tx(() => {
      for (const a of addrs) this.#st.delHeld.run(a);
    });
  }

  /** A pod got its addresses: its row and its datastore record queued, in one commit. */
  addPod(pod: PodRow, record: { key: string; value: string }): void {
    this.#rows(() => {
      this.#st.putPod.run(pod.key, pod.network, pod.containerId, pod.ifname, JSON.stringify(pod.addrs), pod.since);
      this.#st.queue.run(record.key, record.value, pod.since, null, null);
      this.#keyChanges!.push([pod.key, true]);
    });
  }

  /** A pod let go of its addresses at `now` (idle from `freeAt`); the datastore record's delete queued, with its time `now`, reason `why` and evidence (the history's). */
  removePod(key: string, addrs: readonly string[], freeAt: number, recordKey: string, now: number, why: ReleaseReason, evidence?: ReleaseEvidence): void {
    const proof = evidence === undefined ? null : JSON.stringify(encodeReleaseEvidence(evidence));
    this.#rows(() => {
      this.#st.delPod.run(key);
      for (const a of addrs) this.#st.freeAt.run(freeAt, now, a);
      this.#st.queue.run(recordKey, null, now, why, proof);
      this.#keyChanges!.push([key, false]);
    });
  }

  /** A direct attachment recorded (an intent when `ips` is empty), or completed. */
  putDirect(r: DirectRow): void {
    this.#st.putDirect.run(r.key, r.network, r.containerId, r.ifname, JSON.stringify(r.ips), r.since);
  }

  /** The direct attachment `key`, or undefined (one indexed read: a DEL's first question). */
  direct(key: string): DirectRow | undefined {
    const r = this.#st.getDirect.get(key);
    return r && { ...r, ips: JSON.parse(r.ips) as DirectRow['ips'] };
  }

  dropDirect(key: string): void {
    this.#st.delDirect.run(key);
  }

  directs(): DirectRow[] {
    return this.#st.allDirect.all().map((r) => ({ ...r, ips: JSON.parse(r.ips) as DirectRow['ips'] }));
  }

  /** Whether the pods table has `key`, as last committed (no read: see #podKeys). */
  hasPod(key: string): boolean {
    return this.#podKeys.has(key);
  }

  held(): HeldRow[] {
    return this.#st.allHeld.all();
  }

  pods(): PodRow[] {
    return this.#st.allPods.all().map((r) => ({ ...r, addrs: JSON.parse(r.addrs) as string[] }));
  }

  /** The oldest `limit` queued writes. */
  pendingWrites(limit: number): PendingWrite[] {
    return this.#st.pending.all(limit).map((r) => {
      const evidence = r.value === null && r.evidence !== null ? decodeReleaseEvidence(r.evidence) : undefined;
      return {
        seq: r.seq,
        key: r.key,
        value: r.value ?? undefined,
        at: r.at,
        ...(r.value === null && isReleaseReason(r.why) ? { why: r.why } : {}),
        // Undecodable evidence (a hand-edited DB): the delete still goes, its history without it.
        ...(evidence !== undefined && typeof evidence !== 'string' ? { evidence } : {}),
      };
    });
  }

  /** The queued writes up to `seq` are in the datastore. */
  writesDone(seq: number): void {
    this.#st.unqueue.run(seq);
  }

  /** Queued writes and the time of the oldest (undefined when none). */
  writeDepth(): { depth: number; oldestAt: number | undefined } {
    const r = oneRow(this.#st.depth);
    return { depth: r.n, oldestAt: r.oldest ?? undefined };
  }

  close(): void {
    this.#checkpointer.stop();
    this.#db.close();
  }

  /** The open database, for the tables of pod-store.ts (same file, same transactions). */
  get database(): SqliteDb {
    return this.#db;
  }

  /** Runs `fn` in one transaction (nested calls become savepoints). */
  transaction(fn: () => void): void {
    this.#tx(fn);
  }

  #tx(fn: () => void): void {
    // One wrapper for every call: better-sqlite3 builds five closures per transaction(), ~3 % of
    // the simulated warm pool's CPU when made per call. Nested calls still become savepoints.
    this.#runTx ??= this.#db.transaction((f: () => unknown) => {
      const r = f();
      // A call without a savepoint failed in here and was caught: its statements may be half done.
      if (this.#failed !== undefined) throw this.#failed;
      return r; // a promise is refused, as better-sqlite3 refuses it
    });
    const mark = this.#keyChanges?.length;
    const failedBefore = this.#failed;
    if (mark === undefined) this.#keyChanges = [];
    try {
      this.#runTx(fn);
    } catch (e) {
      if (mark === undefined) {
        // Rolled back — or, had SQLite rolled back by itself, partly committed: the table decides.
        this.#keyChanges = undefined;
        this.#reloadKeys();
      } else {
        // A savepoint's rollback takes back its own changes, and whatever failed inside it.
        this.#keyChanges!.length = mark;
        this.#failed = failedBefore;
      }
      throw e;
    } finally {
      if (mark === undefined) this.#failed = undefined;
    }
    if (mark !== undefined) return;
    const changes = this.#keyChanges!;
    this.#keyChanges = undefined;
    for (const [key, present] of changes) {
      if (present) this.#podKeys.add(key);
      else this.#podKeys.delete(key);
    }
  }

  #reloadKeys(): void {
    try {
      const keys = this.#st.podKeys.all().map((r) => r.key);
      this.#podKeys.clear();
      for (const k of keys) this.#podKeys.add(k);
    } catch {
      /* unreadable now: every write fails too until it is readable again */
    }
  }

  /**
   * A call's statements in the transaction under way, without a savepoint (two statements more
   * per ADD and DEL): if one fails, that transaction rolls back whole, caught or not. Else alone.
   */
  #rows(fn: () => void): void {
    if (this.#keyChanges === undefined) return this.#tx(fn);
    try {
      // SQLite rolled the transaction back by itself (a full disk, say) and the error was caught.
      if (!this.#db.inTransaction) throw new Error(`resource DB ${this.path}: the transaction was rolled back before this write`);
      fn();
    } catch (e) {
      this.#failed ??= e instanceof Error ? e : new Error(String(e));
      throw e;
    }
  }
}
