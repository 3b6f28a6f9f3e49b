/**
 * Opening files of the network directory without trusting what was planted there: never
 * through a symbolic link (O_NOFOLLOW), never blocking on a FIFO or device (O_NONBLOCK), and
 * only regular files (fstat after open, so a swap between a check and the open cannot slip
 * through). Anything else is an UnsafeFileError (CNI code 5) naming the path — the plugin answers instead of
 * overwriting a link's target, reading /dev/zero until it aborts, or hanging on a FIFO.
 */
import { FileIoError, type LocalFileError, UnsafeFileError } from './errors.js';
import { fs } from '../util/builtins.js';

/** What a directory entry or an fstat says a file is, for messages. */
export function kindOf(s: {
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isDirectory(): boolean;
}): string {
  if (s.isSymbolicLink()) return 'a symbolic link';
  if (s.isFIFO()) return 'a FIFO';
  if (s.isSocket()) return 'a socket';
  if (s.isCharacterDevice()) return 'a character device';
  if (s.isBlockDevice()) return 'a block device';
  if (s.isDirectory()) return 'a directory';
  return 'not a regular file';
}

/** What the native addons' kinds (native/read-files.c, native/reserve-file.c) say, as kindOf words them. */
export const KIND_TEXT: Record<string, string> = {
  symlink: 'a symbolic link',
  'fifo-or-device': 'a FIFO or device',
  directory: 'a directory',
  fifo: 'a FIFO',
  socket: 'a socket',
  char: 'a character device',
  block: 'a block device',
  other: 'not a regular file',
};

/** The refusal for `file`, which is `kind` (e.g. "a symbolic link"). */
export function notRegular(file: string, kind: string): UnsafeFileError {
  return new UnsafeFileError(file, kind);
}

/** An I/O failure on `file`, naming it: `cannot <action> <file>: <cause>`. */
export function ioError(action: string, file: string, e: unknown): LocalFileError {
  if (e instanceof UnsafeFileError || e instanceof FileIoError) return e;
  return new FileIoError(action, file, (e as Error).message);
}

/**
 * Opens `file` with `flags` (plus O_NOFOLLOW | O_NONBLOCK) and returns the descriptor of a
 * regular file. Throws the refusal for links, FIFOs, devices, sockets and directories; ENOENT
 * and other errno errors as they are (callers name the action).
 */
export function openRegular(file: string, flags: number, mode?: number): number {
  const c = fs.constants;
  let fd: number;
  try {
    fd = fs.openSync(file, flags | c.O_NOFOLLOW | c.O_NONBLOCK, mode);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw notRegular(file, 'a symbolic link');
    // A FIFO without a reader, opened for writing; a device without its driver.
    if (code === 'ENXIO' || code === 'ENODEV') throw notRegular(file, 'a FIFO or device');
    if (code === 'EISDIR') throw notRegular(file, 'a directory');
    throw e;
  }
  let st: import('node:fs').Stats;
  try {
    st = fs.fstatSync(fd);
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
  if (!st.isFile()) {
    fs.closeSync(fd);
    throw notRegular(file, kindOf(st));
  }
  return fd;
}

/** The content of the regular file `file` (utf8). Throws as openRegular; ENOENT as is. */
export function readRegular(file: string): string {
  const fd = openRegular(file, fs.constants.O_RDONLY);
  try {
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Replaces the content of `file` (created with `mode` if absent) with `data`, as
 * os.WriteFile does — but only if it is a regular file. Throws the refusal, or an I/O error
 * naming the path.
 */
export function writeRegular(file: string, data: string, mode: number): void {
  const c = fs.constants;
  let fd: number;
  try {
    // No O_TRUNC: nothing is changed before the file is known to be regular.
    fd = openRegular(file, c.O_WRONLY | c.O_CREAT, mode);
  } catch (e) {
    throw ioError('open', file, e);
  }
  const failed = writeThenClose(fd, () => {
    // Overwrite in place, then cut what is left of a longer old content: truncating to zero
    // first makes ext4 flush the file on close (its auto_da_alloc heuristic), measured at
    // 2-5 ms per ADD on this machine's disk, against 0.05 ms this way. A crash in between
    // leaves a wrong but well-formed hint, which is all last_reserved_ip is.
    // fs.writeFileSync on a descriptor just opened writes all of `data` from offset 0, as the
    // temporary file's write does (disk-store.ts), not through fs.writeSync: that one's branch for
    // text, first taken by the agent's log after its warm-up, threw its optimised code away for
    // good (V8's --trace-deopt; src/util/stop-optimizing.ts).
    fs.writeFileSync(fd, data, 'utf8');
    const length = Buffer.byteLength(data, 'utf8');
    if (fs.fstatSync(fd).size > length) fs.ftruncateSync(fd, length);
  });
  if (failed !== undefined) throw ioError('write', file, failed);
}

/**
 * Runs `write` on the open descriptor `fd`, then closes it whatever happened (a close can fail
 * too: EIO, a quota); returns the first failure of the two, or undefined.
 */
export function writeThenClose(fd: number, write: () => void): unknown {
  let failed: unknown;
  try {
    write();
  } catch (e) {
    failed = e;
  }
  try {
    fs.closeSync(fd);
  } catch (e) {
    failed ??= e;
  }
  return failed;
}
