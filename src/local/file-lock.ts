/**
 * The store lock host-local takes: `<dir>/lock`, opened O_CREAT|O_RDONLY with mode 0750 and
 * held with flock(LOCK_EX) (alexflint/go-filemutex). Taking the very same lock lets podipam and
 * host-local share one directory; the kernel drops it when a holder dies, so `kill -9` never
 * leaves it stuck.
 */
import { fs } from '../util/builtins.js';
import { LockTimeoutError } from './errors.js';
import { openRegular } from './regular-file.js';
import { type FlockAddon, loadFlock as flockAddon } from '../util/flock.js';

/** How long ADD/DEL/CHECK/GC wait for the lock by default before answering code 11. */
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;

/**
 * An open lock file; `lock`/`unlock` may be called repeatedly, `close` releases everything.
 * Unlike host-local, the wait is bounded: a lock held forever (a hung plugin, a planted
 * `flock`) gives LockTimeoutError (CNI code 11, try again later) naming the file, not a plugin that never returns.
 */
export class FileLock {
  readonly path: string;
  readonly #fd: number;
  readonly #flock: FlockAddon;

  private constructor(path: string, fd: number, flock: FlockAddon) {
    this.path = path;
    this.#fd = fd;
    this.#flock = flock;
  }

  /**
   * Opens (creating with mode 0750) the lock file at `path`, unlocked. Refuses (code 5, naming
   * the path) a lock file that is a symbolic link, FIFO or anything but a regular file.
   */
  static open(path: string): FileLock {
    const flock = flockAddon();
    return new FileLock(path, openRegular(path, fs.constants.O_RDONLY | fs.constants.O_CREAT, 0o750), flock);
  }

  /**
   * Waits until this process holds the exclusive lock, at most `timeoutMs`; then throws
   * LockTimeoutError. Polls with LOCK_NB (sleeping 1 ms, doubling up to 20 ms): flock(2) itself has
   * no timeout, and a signal to interrupt it would reach the whole process.
   */
  lock(timeoutMs: number = DEFAULT_LOCK_TIMEOUT_MS): void {
    const deadline = Date.now() + timeoutMs;
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    for (let pause = 1; !this.#tryLock(); pause = Math.min(pause * 2, 20)) {
      const left = deadline - Date.now();
      if (left <= 0) throw this.#timedOut(timeoutMs);
      Atomics.wait(sleeper, 0, 0, Math.min(pause, left));
    }
  }

  /**
   * Waits like `lock`, but between attempts yields to the event loop (a long-lived process —
   * the node agent — keeps serving other calls while another process holds this lock).
   */
  async lockAsync(timeoutMs: number = DEFAULT_LOCK_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (let pause = 1; !this.#tryLock(); pause = Math.min(pause * 2, 20)) {
      const left = deadline - Date.now();
      if (left <= 0) throw this.#timedOut(timeoutMs);
      await new Promise((r) => setTimeout(r, Math.min(pause, left)));
    }
  }

  /** Takes the exclusive lock if it is free (true), without waiting. */
  tryLock(): boolean {
    return this.#tryLock();
  }

  #tryLock(): boolean {
    const f = this.#flock;
    try {
      f.flock(this.#fd, f.LOCK_EX | f.LOCK_NB);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EWOULDBLOCK') throw e;
      return false;
    }
  }

  #timedOut(timeoutMs: number): LockTimeoutError {
    return new LockTimeoutError(this.path, timeoutMs);
  }

  unlock(): void {
    this.#flock.flock(this.#fd, this.#flock.LOCK_UN);
  }

  /** Closes the file, which also drops the lock. */
  close(): void {
    fs.closeSync(this.#fd);
  }
}
