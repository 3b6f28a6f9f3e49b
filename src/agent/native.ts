/**
 * The native addons the agent uses: flock(2) (the same addon as the local back end) for its
 * single-instance lock, and SO_PEERCRED (native/peercred.c) to know who is calling.
 * Loaded through src/util/native-addon.ts.
 */
import { loadAddon } from '../util/native-addon.js';
import { loadFlock } from '../util/flock.js';

interface PeerCredAddon {
  peercred(fd: number): { pid: number; uid: number; gid: number };
}


/** Takes an exclusive flock on `fd` without waiting; false when another process holds it. */
export function tryLockExclusive(fd: number): boolean {
  const a = loadFlock();
  try {
    a.flock(fd, a.LOCK_EX | a.LOCK_NB);
    return true;
  } catch (e) {
    if ((e as { code?: string }).code === 'EWOULDBLOCK') return false;
    throw e;
  }
}

/** The credentials of the process at the other end of the unix socket `fd`. */
export function peerCredentials(fd: number): { pid: number; uid: number; gid: number } {
  return loadAddon<PeerCredAddon>('peercred').peercred(fd);
}
