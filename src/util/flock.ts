/**
 * flock(2) from the native addon (native/flock.c), one interface for its three users: the
 * local back end's directory lock, the cluster back end's node lock, the agent's instance lock.
 */
import { loadAddon, tryLoadAddon } from './native-addon.js';

export interface FlockAddon {
  flock(fd: number, op: number): void;
  readonly LOCK_EX: number;
  readonly LOCK_NB: number;
  readonly LOCK_UN: number;
}

/** The addon; throws (the dlopen error) when it cannot be loaded. */
export function loadFlock(): FlockAddon {
  return loadAddon<FlockAddon>('flock');
}

/** The addon, or null when it cannot be loaded (callers that can run without the lock). */
export function tryLoadFlock(): FlockAddon | null {
  return tryLoadAddon<FlockAddon>('flock');
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
