/**
 * What agents killed during their warm-up left behind. A warm-up removes its private directory
 * when it ends; an agent killed meanwhile (SIGKILL, the OOM killer, a node's restart of a
 * crash-looping agent) cannot, and each start would leave another one in the temporary
 * directory. Each directory is named after its agent's pid (`WARM_UP_DIR_PREFIX<pid>-XXXXXX`):
 * one whose agent is gone is removed at the next warm-up's start.
 *
 * "Gone" needs both proofs: no process has that pid (kill(pid, 0) answers ESRCH: a pid reused
 * by another process keeps the directory, harmlessly), and the directory has not changed for
 * STALE_AFTER_MS (a temporary directory shared across pid namespaces may hold a live agent's,
 * whose pid means nothing here; a warm-up lasts seconds). Only this user's directories of that
 * name are looked at, at most MAX_SWEPT a start.
 */
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const WARM_UP_DIR_PREFIX = 'podipam-agent-warm-up-';
/** A directory untouched this long (and its agent's pid free) is a dead warm-up's. */
export const STALE_AFTER_MS = 10 * 60_000;
/** Removed at most this many a start (a temporary directory full of them is emptied over starts). */
const MAX_SWEPT = 32;

/** The warm-up directory names in `tmp` whose agent is gone (see above), removed; their names. */
export function sweepStaleWarmUps(tmp: string, now = Date.now()): string[] {
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
    const pid = /^(\d+)-/.exec(name.slice(WARM_UP_DIR_PREFIX.length))?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    const path = join(tmp, name);
    try {
      const st = lstatSync(path);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || now - st.mtimeMs < STALE_AFTER_MS) continue;
      rmSync(path, { recursive: true, force: true });
      swept.push(name);
    } catch {
      // gone meanwhile, or not ours to remove: left as it is
    }
  }
  return swept;
}

/** Whether a process has `pid` (EPERM: one does, another user's). */
function alive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return true; // not a pid: never proof of anything
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
