/**
 * Replaces a file so that no reader ever sees it half written: the bytes go to a temp file in
 * the same directory, are fsynced, and the temp file is renamed over the target (then the
 * directory is fsynced so the rename itself survives a crash). A process executing the old
 * file keeps its inode; writing in place would fail with ETXTBSY or tear the binary under it.
 */
import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** Writes `data` to `path` with `mode` atomically. On failure the target is untouched and the temp file removed. */
export function writeFileAtomic(path: string, data: Uint8Array, mode: number): void {
  const dir = dirname(path);
  // A dot name that does not end in .conf/.conflist/.json: CNI runtimes never load it.
  const tmp = join(dir, `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    try {
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
      fchmodSync(fd, mode);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDir(dir);
}

/** fsync(2) on a directory: makes a rename or unlink in it durable. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
