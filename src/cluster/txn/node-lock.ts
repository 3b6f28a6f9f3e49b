/**
 * A per-node advisory lock (flock) that serialises this node's plugin runs, as Calico's
 * `acquireIPAMLockBestEffort`: not needed for correctness (every write is a CAS) but it keeps
 * 16 pods starting at once from retrying against each other, and keeps the node's hint file
 * coherent. Best effort: waits at most `timeoutMs` (polling with LOCK_NB, so a stuck holder
 * cannot hang the plugin), and runs unlocked when the lock or the native addon is unavailable.
 * The kernel drops the lock when its holder dies.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fs } from '../../util/builtins.js';
import { tryLoadFlock as flockAddon } from '../../util/flock.js';

export class NodeLock {
  readonly #fd: number;

  private constructor(fd: number) {
    this.#fd = fd;
  }

  /** Takes the lock at `path` within `timeoutMs`; undefined when that was not possible. Never throws. */
  static async acquire(path: string, timeoutMs: number): Promise<NodeLock | undefined> {
    const f = flockAddon();
    if (!f) return undefined;
    let fd: number;
    try {
      fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_CREAT, 0o600);
    } catch {
      return undefined;
    }
    const deadline = Date.now() + timeoutMs;
    for (let wait = 1; ; wait = Math.min(wait * 2, 8)) {
      try {
        f.flock(fd, f.LOCK_EX | f.LOCK_NB);
        return new NodeLock(fd);
      } catch {
        if (Date.now() >= deadline) break;
        await sleep(wait);
      }
    }
    fs.closeSync(fd);
    return undefined;
  }

  /** Drops the lock (closing the file). */
  release(): void {
    try {
      fs.closeSync(this.#fd);
    } catch {
      /* already closed */
    }
  }
}
