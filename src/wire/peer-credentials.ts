/**
 * SO_PEERCRED (native/peercred.c): the credentials of the process at the other end of a unix
 * socket. The agent checks its callers with it, the client its agent. Loaded through
 * src/util/native-addon.ts.
 */
import { loadAddon } from '../util/native-addon.js';

interface PeerCredAddon {
  peercred(fd: number): { pid: number; uid: number; gid: number };
}

/** The credentials of the process at the other end of the unix socket `fd`. */
export function peerCredentials(fd: number): { pid: number; uid: number; gid: number } {
  return loadAddon<PeerCredAddon>('peercred').peercred(fd);
}
