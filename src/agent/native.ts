/**
 * The native addons the agent uses: flock(2) (the same addon as the local back end) for its
 * single-instance lock, and SO_PEERCRED (native/peercred.c) to know who is calling.
 * dist/src/agent/native.js → <repo>/build/Release/*.node.
 */
interface FlockAddon {
  flock(fd: number, op: number): void;
  readonly LOCK_EX: number;
  readonly LOCK_NB: number;
}

interface PeerCredAddon {
  peercred(fd: number): { pid: number; uid: number; gid: number };
}

function load<T>(name: string): T {
  const mod = { exports: {} as T };
  process.dlopen(mod, decodeURIComponent(new URL(`../../../build/Release/${name}.node`, import.meta.url).pathname));
  return mod.exports;
}

let flockAddon: FlockAddon | undefined;
let credAddon: PeerCredAddon | undefined;

/** Takes an exclusive flock on `fd` without waiting; false when another process holds it. */
export function tryLockExclusive(fd: number): boolean {
  const a = (flockAddon ??= load<FlockAddon>('flock'));
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
  return (credAddon ??= load<PeerCredAddon>('peercred')).peercred(fd);
}
