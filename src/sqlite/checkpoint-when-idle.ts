/**
 * WAL checkpoints off a hot path's commits. SQLite checkpoints inside the commit that takes the
 * WAL past `wal_autocheckpoint` pages, and a checkpoint writes the pages back and fsyncs: on a
 * busy disk several milliseconds that one ADD waits for (bench/results/idle-helpers.md). Here
 * the inline threshold is raised to `capPages` and a timer checkpoints (PASSIVE: never waits for
 * a reader or a writer) once the WAL has not been written for a whole tick of `idleMs` (so after
 * idleMs to 2 × idleMs of quiet) — a pod start's burst commits without checkpoints, the quiet
 * that follows pays for them. Durability is unchanged: a
 * checkpoint only moves committed pages from the WAL into the database file. Under load with no
 * quiet, SQLite still checkpoints inline at `capPages` (the WAL stays bounded).
 *
 * A checkpoint that moved every frame is followed at once by the WAL's restart: once the WAL is
 * all in the database file, the next commit starts it over, and SQLite syncs the new header
 * (synchronous NORMAL and above: an fsync even where commits have none) — in that commit, on
 * its caller's path. Measured under containerd (bench/cri.ts, 64 sandboxes at once): the warm
 * pool's first ADDs after a quiet moment waited 5-10 ms there for the disk. The timer restarts it
 * instead, with a write of the header's user_version as it already is (its own write is not news
 * to the next tick).
 */
import { statSync } from 'node:fs';
import { pragmaInteger } from './read-pragma.js';
import type { SqliteDb } from './sqlite-db.js';

export interface IdleCheckpointer {
  /** Checkpoints run by the timer so far. */
  readonly checkpoints: number;
  stop(): void;
}

export function checkpointWhenIdle(db: SqliteDb, o: { readonly idleMs: number; readonly capPages: number }): IdleCheckpointer {
  db.pragma(`wal_autocheckpoint = ${o.capPages}`);
  const wal = `${db.name}-wal`;
  const written = (): number => {
    try {
      return statSync(wal).mtimeMs;
    } catch {
      return 0; // no WAL file (yet, or after a close): nothing to checkpoint
    }
  };
  let seen = written();
  let done = -1; // a WAL left by the opening (a migration, a crash's recovery) is checkpointed too
  let checkpoints = 0;
  const timer = setInterval(() => {
    const now = written();
    // Written since the last tick: not idle yet. Unchanged since the last checkpoint: nothing new.
    if (now !== seen || now === done) {
      seen = now;
      return;
    }
    try {
      // [{ busy, log, checkpointed }]: a partial one (a reader in the way) is tried again next tick.
      const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
      checkpoints++;
      if (r !== undefined && r.checkpointed >= r.log) {
        if (r.log > 0) restartWal(db);
        done = written();
      }
    } catch {
      // Performance only: a checkpoint that failed (the file closed under it) leaves SQLite's own at capPages.
      done = now;
    }
  }, o.idleMs);
  timer.unref();
  return {
    get checkpoints() {
      return checkpoints;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * Starts a fully checkpointed WAL over now (its new header written and synced), with a commit
 * that changes nothing: the header's user_version rewritten as it is. SQLite starts the WAL over
 * at the first write after a complete checkpoint (when no reader still uses the old frames).
 */
function restartWal(db: SqliteDb): void {
  db.pragma(`user_version = ${pragmaInteger(db, 'user_version')}`);
}
