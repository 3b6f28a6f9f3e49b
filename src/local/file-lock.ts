/**
 * The store lock host-local takes: `<dir>/lock`, opened O_CREAT|O_RDONLY with mode 0750 and
 * held with flock(LOCK_EX) (alexflint/go-filemutex). Taking the very same lock lets podipam and
 * host-local share one directory; the kernel drops it when a holder dies, so `kill -9` never
 * leaves it stuck.
 */
import { fs } from '../cni/builtins.js';

interface FlockAddon {
  flock(fd: number, op: number): void;
  readonly LOCK_EX: number;
  readonly LOCK_UN: number;
}

let addon: FlockAddon | undefined;

function flockAddon(): FlockAddon {
  if (!addon) {
    // dist/src/local/file-lock.js → <repo>/build/Release/flock.node. process.dlopen rather than
    // createRequire(import.meta.url): same addon, without starting the CommonJS loader (~2 ms of
    // every plugin start-up).
    const file = decodeURIComponent(new URL('../../../build/Release/flock.node', import.meta.url).pathname);
    const mod = { exports: {} as FlockAddon };
    process.dlopen(mod, file);
    addon = mod.exports;
  }
  return addon;
}

/** An open lock file; `lock`/`unlock` may be called repeatedly, `close` releases everything. */
export class FileLock {
  readonly #fd: number;
  readonly #flock: FlockAddon;

  private constructor(fd: number, flock: FlockAddon) {
    this.#fd = fd;
    this.#flock = flock;
  }

  /** Opens (creating with mode 0750) the lock file at `path`, unlocked. */
  static open(path: string): FileLock {
    const flock = flockAddon();
    return new FileLock(fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_CREAT, 0o750), flock);
  }

  /** Blocks until this process holds the exclusive lock. */
  lock(): void {
    this.#flock.flock(this.#fd, this.#flock.LOCK_EX);
  }

  unlock(): void {
    this.#flock.flock(this.#fd, this.#flock.LOCK_UN);
  }

  /** Closes the file, which also drops the lock. */
  close(): void {
    fs.closeSync(this.#fd);
  }
}
