/**
 * The native addons the agent uses: flock(2) (the same addon as the local back end) for its
 * single-instance lock, and SO_PEERCRED (native/peercred.c) to know who is calling.
 * Loaded through src/util/native-addon.ts.
 */
import { loadAddon } from '../util/native-addon.js';
export { tryLockExclusive } from '../util/flock.js';

interface PeerCredAddon {
  peercred(fd: number): { pid: number; uid: number; gid: number };
}


/** The credentials of the process at the other end of the unix socket `fd`. */
export function peerCredentials(fd: number): { pid: number; uid: number; gid: number } {
  return loadAddon<PeerCredAddon>('peercred').peercred(fd);
}
