/**
 * The native addons the agent uses: flock(2) (the same addon as the local back end) for its
 * single-instance lock, and SO_PEERCRED (native/peercred.c) to know who is calling.
 * Loaded through src/util/native-addon.ts.
 */
import { loadAddon } from '../util/native-addon.js';
interface FlockAddon {
  flock(fd: number, op: number): void;
  readonly LOCK_EX: number;
  readonly LOCK_NB: number;
}

interface PeerCredAddon {
  peercred(fd: number): { pid: number; uid: number; gid: number };
}


/** Takes an exclusive flock on `fd` without waiting; false when another process holds it. */
export function tryLockExclusive(fd: number): boolean {
  const a = loadAddon<FlockAddon>('flock');
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
