/**
 * host-local's on-disk store, byte for byte (its `backend/disk`): in `<dataDir>/<network>/`, one
 * file per reserved address named by the address's canonical text and holding
 * `<containerID>\r\n<ifname>` (no newline), `last_reserved_ip.<rangeSet>` holding the address
 * text, and the empty `lock` file (mode 0750) locked with flock. Directories 0755, files 0644,
 * as host-local 1.1.1 writes them.
 *
 * One difference in *how* a reservation is written, not in what ends up on disk: the content
 * goes to a temporary file first, which is then hard-linked to the address's name (link(2)
 * fails if the name exists, like O_EXCL). A process killed mid-write therefore never leaves an
 * empty or partial address file — that would block the address forever, since no DEL could
 * match it. A killed writer can leave only the temporary file, which the next locked scan
 * removes (or a DEL matches by content). On a file system without hard links it falls back to
 * host-local's O_CREAT|O_EXCL write in place. A failed write (disk full) removes what it wrote
 * and names the path.
 *
 * Unlike host-local, nothing planted in the directory is trusted (regular-file.ts): files are
 * opened without following links or blocking, and an entry that is not a regular file (a
 * symbolic link, FIFO, device, socket) is refused with code 5 naming it. Directories are
 * skipped, as before.
 */
import { fs, path } from '../util/builtins.js';
import { FileIoError, type LocalFileError, UnsafeFileError } from './errors.js';
import { type Addr, formatAddr, tryParseAddr } from '../ip/addr.js';
import { FileLock } from './file-lock.js';
import type { ScanCache } from './scan-cache.js';
import type { LocalStore } from './local-store.js';
import { tryLoadAddon } from '../util/native-addon.js';
import { crashPoint } from '../util/crash-point.js';
import { KIND_TEXT, ioError, kindOf, notRegular, readRegular, writeRegular, writeThenClose } from './regular-file.js';
import { nativeReserve, reserveAddon } from './native-reserve.js';

const LAST_IP_PREFIX = 'last_reserved_ip.';
const LOCK_FILE = 'lock';
/** Written only under the lock, so one name suffices; host-local never reads it as an address. */
export const TMP_FILE = '.podipam-reserve.tmp';

/** Which directory a path named when it was opened (a replaced directory has another). */
export interface DirIdentity {
  readonly dev: number;
  readonly ino: number;
}

/** A file of the network directory: its name and its content (undefined when unreadable). */
export interface StoreFile {
  readonly name: string;
  readonly content: string | undefined;
  /** Set for an entry that is not a regular file (never opened): the refusal, code 5. */
  readonly refused?: LocalFileError;
}

/** Go's filepath.Walk order (byte order of names), the order scans list files in. */
export function byName(a: { readonly name: string }, b: { readonly name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** What an address file holds for an attachment: `id\r\nifname` (id whitespace-trimmed). */
export function fileContent(id: string, ifname: string): string {
  return `${id.trim()}\r\n${ifname}`;
}

/** host-local's match: the trimmed content equals `id\r\nifname`. */
export function matchesAttachment(content: string | undefined, id: string, ifname: string): boolean {
  return content !== undefined && content.trim() === fileContent(id, ifname);
}

/**
 * An address file's content read back (host-local's format, read as its matcher does: trimmed):
 * `id\r\nifname`, or the pre-2018 bare id (`ifname` undefined). Undefined when it is neither
 * (empty, more lines, white space inside the id, an ifname that no interface can have).
 */
export function parseFileContent(content: string): { readonly containerId: string; readonly ifname?: string } | undefined {
  const [id, ifname, ...rest] = content
    .trim()
    .split('\r\n')
    .map((s) => s.trim());
  if (!id || rest.length > 0 || /\s/.test(id) || (ifname !== undefined && (ifname === '' || /[\s/:]/.test(ifname)))) return undefined;
  return ifname === undefined ? { containerId: id } : { containerId: id, ifname };
}

/** The pre-2018 format, content = the container id alone (any ifname matches). */
export function matchesLegacy(content: string | undefined, id: string): boolean {
  return content !== undefined && content.trim() === id.trim();
}

/** The address a file name stands for (host-local parses names with net.ParseIP), or undefined. */
export function addrOfName(name: string): Addr | undefined {
  return name.length <= 45 ? tryParseAddr(name) : undefined;
}

/** native/read-files.c: many small files in one call, with regular-file.ts's rules. */
interface ReadFilesAddon {
  readFiles(dir: string, names: readonly string[]): (string | { kind: string } | null)[];
}

let readFiles: ReadFilesAddon | null | undefined;

/** The addon, or null: then each file is read with node:fs. */
function readFilesAddon(): ReadFilesAddon | null {
  if (readFiles === undefined) readFiles = tryLoadAddon<ReadFilesAddon>('read_files');
  return readFiles;
}

export class DiskStore implements LocalStore {
  readonly dir: string;
  readonly #lock: FileLock;

  readonly identity: DirIdentity;
  readonly #cache: ScanCache | undefined;

  /** Reservations written by native/reserve-file.c when it loads (else, and when it hands back, by node:fs). */
  #native: boolean;

  private constructor(dir: string, lock: FileLock, identity: DirIdentity, cache: ScanCache | undefined, native: boolean) {
    this.dir = dir;
    this.#lock = lock;
    this.identity = identity;
    this.#cache = cache;
    this.#native = native;
  }

  /**
   * Creates `dir` (mode 0755, parents too) and opens its lock file; does not lock. With a
   * `cache` (the agent's), scans read only what changed since the cache last saw the directory.
   * `o.native` false: reservations always written with node:fs (tests of that writer).
   */
  static open(dir: string, cache?: ScanCache, o: { readonly native?: boolean } = {}): DiskStore {
    // stat first: the directory exists on every call but the first, and a failing mkdir costs
    // an exception per call in a long-lived process (the agent).
    let st = fs.statSync(dir, { throwIfNoEntry: false });
    if (!st?.isDirectory()) {
      fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
      st = fs.statSync(dir);
    }
    return new DiskStore(dir, FileLock.open(path.join(dir, LOCK_FILE)), { dev: st.dev, ino: st.ino }, cache, o.native ?? true);
  }

  /** Takes the lock, waiting at most `timeoutMs` (LockTimeoutError after that; default: FileLock's). */
  lock(timeoutMs?: number): void {
    this.#lock.lock(timeoutMs);
  }

  /** As `lock`, yielding to the event loop while another process holds it (the agent). */
  lockAsync(timeoutMs?: number): Promise<void> {
    return this.#lock.lockAsync(timeoutMs);
  }

  /** Takes the lock if it is free (true), without waiting. */
  tryLock(): boolean {
    return this.#lock.tryLock();
  }

  unlock(): void {
    this.#lock.unlock();
  }

  close(): void {
    this.#lock.close();
  }

  /**
   * Every regular file of the directory (sorted by name, as Go's filepath.Walk visits them)
   * except `lock`, with its content. Call under the lock: a leftover temporary file of a killed
   * writer is removed here. Subdirectories are not entered. An entry that is not a regular file
   * is returned with `refused` set and no content (it is never opened).
   */
  scan(): StoreFile[] {
    return this.#cache ? this.#cache.scan(this) : this.scanAll();
  }

  /** As `scan`, never from a cache. */
  scanAll(): StoreFile[] {
    const out: StoreFile[] = [];
    const entries = fs
      .readdirSync(this.dir, { withFileTypes: true })
      .filter((d) => !d.isDirectory())
      .sort(byName);
    const regular: string[] = [];
    for (const d of entries) {
      const name = d.name;
      if (name === LOCK_FILE) continue;
      if (name === TMP_FILE) {
        this.#unlinkQuietly(TMP_FILE);
        continue;
      }
      if (!d.isFile()) {
        out.push({ name, content: undefined, refused: notRegular(path.join(this.dir, name), kindOf(d)) });
        continue;
      }
      regular.push(name);
    }
    out.push(...this.#readRegular(regular));
    out.sort(byName);
    return out;
  }

  /**
   * What `scan` would list for each of `names` now: the file, or undefined for a name that is
   * gone, a directory, the lock or a killed writer's temporary file (removed here, as `scan`
   * does). For the scan cache, under the lock.
   */
  rescanNames(names: readonly string[]): Map<string, StoreFile | undefined> {
    const out = new Map<string, StoreFile | undefined>();
    const regular: string[] = [];
    for (const name of names) {
      if (name === TMP_FILE) this.#unlinkQuietly(TMP_FILE);
      const st = name === LOCK_FILE || name === TMP_FILE ? undefined : fs.lstatSync(path.join(this.dir, name), { throwIfNoEntry: false });
      if (!st || st.isDirectory()) out.set(name, undefined);
      else if (!st.isFile()) out.set(name, { name, content: undefined, refused: notRegular(path.join(this.dir, name), kindOf(st)) });
      else regular.push(name);
    }
    for (const f of this.#readRegular(regular)) out.set(f.name, f);
    return out;
  }

  /** Reads files that readdir/lstat said are regular (a swap since then is refused, code 5). */
  #readRegular(regular: readonly string[]): StoreFile[] {
    const native = readFilesAddon();
    const read = native ? native.readFiles(this.dir, regular) : undefined;
    return regular.map((name, i) => {
      const file = path.join(this.dir, name);
      let content: string | undefined;
      let refused: LocalFileError | undefined;
      if (read) {
        // Swapped for a link or FIFO since readdir: refused. null: unreadable, matches nobody,
        // still occupies its name (as host-local).
        const r = read[i];
        if (typeof r === 'string') content = r;
        else if (r) refused = notRegular(file, KIND_TEXT[r.kind] ?? 'not a regular file');
      } else {
        try {
          content = readRegular(file);
        } catch (e) {
          if (e instanceof UnsafeFileError || e instanceof FileIoError) refused = e;
        }
      }
      return refused ? { name, content, refused } : { name, content };
    });
  }

  /**
   * Reserves `addr` for (id, ifname) if its file does not exist yet, then records it in
   * `last_reserved_ip.<rangeSet>`. Returns false when the address is taken. Throws on I/O errors.
   */
  reserve(id: string, ifname: string, addr: Addr, rangeSet: number): boolean {
    const name = formatAddr(addr);
    const tmp = path.join(this.dir, TMP_FILE);
    const native = this.#native ? reserveAddon() : null;
    if (native) {
      const done = nativeReserve(native, tmp, path.join(this.dir, name), fileContent(id, ifname), path.join(this.dir, LAST_IP_PREFIX + rangeSet), name);
      if (typeof done === 'boolean') return done;
      if (done === 'no-links') this.#native = false; // node:fs writes in place from now on, without trying a link each time
    }
    this.#writeTmp(tmp, fileContent(id, ifname));
    crashPoint('local.add.tmp-written');
    try {
      fs.linkSync(tmp, path.join(this.dir, name));
      crashPoint('local.add.reserved');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      // A file system without hard links: write in place, as host-local does.
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP') return this.#reserveInPlace(id, ifname, name, rangeSet);
      throw ioError('link', `${tmp} to ${path.join(this.dir, name)}`, e);
    } finally {
      this.#unlinkQuietly(TMP_FILE);
    }
    this.#recordLast(name, rangeSet);
    crashPoint('local.add.recorded');
    return true;
  }

  /** Writes `content` to a fresh temporary file (never through a planted link); on failure removes it. */
  #writeTmp(tmp: string, content: string): void {
    const c = fs.constants;
    let fd: number;
    const flags = c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW; // O_EXCL never follows a link or reuses what is there
    try {
      try {
        fd = fs.openSync(tmp, flags, 0o644);
      } catch (e) {
        // A leftover of a killed writer (the locked scan removes those too): remove it, once.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        this.#unlinkQuietly(TMP_FILE);
        fd = fs.openSync(tmp, flags, 0o644);
      }
    } catch (e) {
      throw ioError('create', tmp, e);
    }
    const failed = writeThenClose(fd, () => fs.writeFileSync(fd, content, 'utf8'));
    if (failed !== undefined) {
      this.#unlinkQuietly(TMP_FILE);
      throw ioError('write', tmp, failed);
    }
  }

  #reserveInPlace(id: string, ifname: string, name: string, rangeSet: number): boolean {
    const file = path.join(this.dir, name);
    let fd: number;
    try {
      fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw ioError('create', file, e);
    }
    const failed = writeThenClose(fd, () => fs.writeFileSync(fd, fileContent(id, ifname), 'utf8'));
    if (failed !== undefined) {
      this.#unlinkQuietly(name);
      throw ioError('write', file, failed);
    }
    this.#recordLast(name, rangeSet);
    return true;
  }

  /**
   * Records `name` in `last_reserved_ip.<rangeSet>`. If that fails (disk full, a planted
   * link), the address file just reserved is removed again: the failed ADD leaves no
   * reservation behind.
   */
  #recordLast(name: string, rangeSet: number): void {
    try {
      writeRegular(path.join(this.dir, LAST_IP_PREFIX + rangeSet), name, 0o644);
    } catch (e) {
      this.#unlinkQuietly(name);
      throw e;
    }
  }

  /**
   * The address in `last_reserved_ip.<rangeSet>`; undefined when missing or unparsable.
   * Throws the refusal (code 5) when it is not a regular file.
   */
  lastReserved(rangeSet: number): Addr | undefined {
    try {
      return tryParseAddr(readRegular(path.join(this.dir, LAST_IP_PREFIX + rangeSet)));
    } catch (e) {
      if (e instanceof UnsafeFileError || e instanceof FileIoError) throw e;
      return undefined;
    }
  }

  /** Deletes a file of the directory; false if it was already gone. Throws other I/O errors, naming the path. */
  remove(name: string): boolean {
    const file = path.join(this.dir, name);
    try {
      fs.unlinkSync(file);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw ioError('remove', file, e);
    }
  }

  #unlinkQuietly(name: string): void {
    try {
      fs.unlinkSync(path.join(this.dir, name));
    } catch {
      // gone already, or not ours to worry about
    }
  }
}

/** Names of the directory's files without opening anything (STATUS); [] when it does not exist. */
export function listNames(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}
