/**
 * What agents killed during their warm-up left behind. A warm-up removes its private directory
 * when it ends; an agent killed meanwhile (SIGKILL, the OOM killer, a node's restart of a
 * crash-looping agent) cannot, and each start would leave another one in the temporary
 * directory — which, in the DaemonSet, is an emptyDir that outlives the container's restarts.
 *
 * A warm-up holds an exclusive flock on its directory's WARM_UP_LOCK for its whole run
 * (`holdWarmUpLock`); the lock goes with its process, however it ends. A directory named
 * WARM_UP_DIR_PREFIX… is a dead warm-up's when both hold: its lock can be taken (or it has none:
 * killed before making it, or made by an agent before the lock), and it has not changed for
 * STALE_AFTER_MS (a warm-up lasts seconds). Not a pid: in a container every agent is pid 1, and a
 * temporary directory shared across pid namespaces holds pids that mean nothing here. Only this
 * user's directories (not links) are looked at, at most MAX_SWEPT a start; without the flock
 * addon nothing is removed (no proof).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tryLoadFlock, tryLockExclusive } from '../util/flock.js';

export const WARM_UP_DIR_PREFIX = 'podipam-agent-warm-up-';
/** The file a running warm-up holds locked, in its directory. */
export const WARM_UP_LOCK = 'lock';
/** A directory untouched this long (and not locked) is a dead warm-up's. */
export const STALE_AFTER_MS = 10 * 60_000;
/** Removed at most this many a start (a temporary directory full of them is emptied over starts). */
const MAX_SWEPT = 32;

/** Locks `dir`'s WARM_UP_LOCK (made 0600) for this process: the descriptor to close when the warm-up ends. */
export function holdWarmUpLock(dir: string): number {
  const fd = openSync(join(dir, WARM_UP_LOCK), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    if (!tryLockExclusive(fd)) throw new Error(`${join(dir, WARM_UP_LOCK)} is locked by another process`);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return fd;
}

/** The warm-up directories in `tmp` of warm-ups that are gone (see above), removed; their names. */
export function sweepStaleWarmUps(tmp: string, now = Date.now()): string[] {
  if (tryLoadFlock() === null) return [];
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return []; // no temporary directory to read: nothing of ours there
  }
  const uid = process.getuid?.();
  const swept: string[] = [];
  for (const name of names) {
    if (swept.length >= MAX_SWEPT) break;
    if (!name.startsWith(WARM_UP_DIR_PREFIX)) continue;
    const path = join(tmp, name);
    try {
      const st = lstatSync(path);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || now - st.mtimeMs < STALE_AFTER_MS) continue;
      if (!unlocked(path)) continue;
      rmSync(path, { recursive: true, force: true });
      swept.push(name);
    } catch {
      // gone meanwhile, or not ours to remove: left as it is
    }
  }
  return swept;
}

/**
 * No process holds `dir`'s lock: it has none, its `lock` is no regular file (a running warm-up's
 * always is: holdWarmUpLock makes it so, never through a link), or this one could take it (let
 * go at once). Opened without waiting (a FIFO there would block the agent's start).
 */
function unlocked(dir: string): boolean {
  let fd: number;
  try {
    fd = openSync(join(dir, WARM_UP_LOCK), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ELOOP';
  }
  try {
    return !fstatSync(fd).isFile() || tryLockExclusive(fd);
  } finally {
    closeSync(fd);
  }
}
