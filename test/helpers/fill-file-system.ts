/**
 * Fills the (small) file system holding `file` with `file` until ENOSPC, bounded by `maxPages`
 * pages of 4 KiB: a test's full disk. Fails the test if it never fills up.
 */
import assert from 'node:assert/strict';
import { closeSync, openSync, writeSync } from 'node:fs';

export function fillFileSystem(file: string, maxPages = 1024): void {
  const fd = openSync(file, 'w');
  const page = Buffer.alloc(4096, 1);
  try {
    for (let i = 0; i < maxPages; i++) writeSync(fd, page);
    assert.fail(`the file system never filled up (${maxPages} pages written to ${file})`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
}
