/**
 * flock(2) (the same addon as the local back end) for the agent's single-instance lock. The
 * peer checks (SO_PEERCRED) are src/wire/peer-credentials.ts.
 */
import { loadFlock } from '../util/flock.js';

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
