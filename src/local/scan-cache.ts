/**
 * The agent's memory of network directories: for each, the reservation files as the last
 * locked scan saw them, plus an inotify watch (native/dir-watch.c) that says which names changed
 * since. Under the directory's flock, `scan` reads only those names again instead of every file
 * — host-local and the per-pod plugin read every reservation file on every ADD and DEL, which
 * in a burst is most of the agent's time.
 *
 * Sound against every writer that takes the flock (host-local, the per-pod plugin, another
 * agent): inotify queues an event inside the system call that makes the change, a writer
 * releases the flock only after its writes returned, and we drain the queue after taking it.
 * Whenever that chain may be broken, everything is read again: the queue overflowed, the
 * directory was removed, renamed or replaced (its device and inode differ), the watch could
 * not be set up (out of inotify instances: then no cache for that directory), or the addon is
 * missing. Not seen: a file changed through a hard link from outside the directory — no
 * writer of this layout does that, and the directory belongs to root.
 */
import { type DirIdentity, type StoreFile, byName } from './disk-store.js';
import { tryLoadAddon } from '../util/native-addon.js';

interface DirWatchAddon {
  open(dir: string): number;
  drain(fd: number): string[] | null;
  close(fd: number): void;
}

/** What the cache needs of a DiskStore (under its lock). */
export interface ScanSource {
  readonly dir: string;
  readonly identity: DirIdentity;
  /** Every file, as an uncached scan reads them. */
  scanAll(): StoreFile[];
  /** The current state of these names: a file, or undefined when gone or not a file to list. */
  rescanNames(names: readonly string[]): Map<string, StoreFile | undefined>;
}

interface Watched {
  readonly fd: number;
  readonly identity: DirIdentity;
  readonly files: Map<string, StoreFile>;
  sorted: StoreFile[] | undefined;
}

/** Directories remembered at once (one inotify instance each; the default per-user limit is 128). */
const MAX_DIRS = 32;

export class ScanCache {
  readonly #addon: DirWatchAddon | null;
  /** In least-recently-used order (a Map iterates in insertion order). */
  readonly #dirs = new Map<string, Watched>();
  #stats = { full: 0, incremental: 0, reread: 0, absorbed: 0 };
  #closed = false;

  constructor(addon: DirWatchAddon | null = tryLoadAddon<DirWatchAddon>('dir_watch')) {
    this.#addon = addon;
  }

  /** Full scans, incremental scans, names read again by those, and names known from own writes (absorb; for tests and metrics). */
  get stats(): { readonly full: number; readonly incremental: number; readonly reread: number; readonly absorbed: number } {
    return { ...this.#stats };
  }

  /** The directory's files, sorted by name, as `src.scanAll()` would return them. Call under the lock. */
  scan(src: ScanSource): StoreFile[] {
    if (this.#closed) return src.scanAll(); // a call still running while the agent shuts down
    const w = this.#dirs.get(src.dir);
    if (w) {
      this.#dirs.delete(src.dir);
      const changed = sameDir(w.identity, src.identity) ? this.#drain(w.fd) : null;
      if (changed !== null) {
        this.#dirs.set(src.dir, w);
        this.#stats.incremental++;
        if (changed.length) this.#apply(w, src, changed);
        return (w.sorted ??= [...w.files.values()].sort(byName)).slice();
      }
      this.#addon!.close(w.fd);
    }
    return this.#watchAndScan(src);
  }

  /**
   * Under the lock, after this process's own writes: `known` holds the state each name it wrote
   * is in now (a file, or undefined: gone). Drains the watch and takes those names' state from
   * `known` instead of reading them again on the next scan; a name it does not know is read
   * again now. Sound for the same reason as `scan`: while the lock is held, every queued event
   * is this process's own, and the queue was drained by the scan that began the work. A
   * directory the cache does not hold (or that was replaced) is left to the next scan.
   */
  absorb(src: ScanSource, known: ReadonlyMap<string, StoreFile | undefined>): void {
    if (this.#closed) return;
    const w = this.#dirs.get(src.dir);
    if (!w || !sameDir(w.identity, src.identity)) return;
    const changed = this.#drain(w.fd);
    if (changed === null) {
      // Overflowed or failed: forget it, the next scan reads everything.
      this.#addon!.close(w.fd);
      this.#dirs.delete(src.dir);
      return;
    }
    const unknown: string[] = [];
    for (const name of new Set(changed)) {
      if (!known.has(name)) {
        unknown.push(name);
        continue;
      }
      const f = known.get(name);
      if (f) w.files.set(name, f);
      else w.files.delete(name);
      this.#stats.absorbed++;
    }
    if (unknown.length) this.#apply(w, src, unknown);
    w.sorted = undefined;
  }

  /** Forgets every directory and closes the watches. */
  close(): void {
    this.#closed = true;
    for (const w of this.#dirs.values()) this.#addon?.close(w.fd);
    this.#dirs.clear();
  }

  #drain(fd: number): string[] | null {
    try {
      return this.#addon!.drain(fd);
    } catch {
      return null;
    }
  }

  #apply(w: Watched, src: ScanSource, changed: readonly string[]): void {
    const names = [...new Set(changed)];
    this.#stats.reread += names.length;
    for (const [name, file] of src.rescanNames(names)) {
      if (file) w.files.set(name, file);
      else w.files.delete(name);
    }
    w.sorted = undefined;
  }

  /** Watch first, then read: a change made while reading is in the queue for the next scan. */
  #watchAndScan(src: ScanSource): StoreFile[] {
    this.#stats.full++;
    let fd: number | undefined;
    if (this.#addon) {
      try {
        fd = this.#addon.open(src.dir);
      } catch {
        fd = undefined; // no watch (EMFILE, ENOSPC…): read everything, every time, as before
      }
    }
    const files = src.scanAll();
    if (fd !== undefined) {
      this.#dirs.set(src.dir, { fd, identity: src.identity, files: new Map(files.map((f) => [f.name, f])), sorted: files.slice() });
      if (this.#dirs.size > MAX_DIRS) {
        const [oldest, ow] = this.#dirs.entries().next().value as [string, Watched];
        this.#addon!.close(ow.fd);
        this.#dirs.delete(oldest);
      }
    }
    return files;
  }
}

function sameDir(a: DirIdentity, b: DirIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}
