/**
 * The warm pool's hold on its data directory: `<data-dir>/agent.lock`, opened with O_NOFOLLOW
 * (a planted link is refused, never followed) and held with flock(LOCK_EX) for the agent's
 * life, the holder's pid written in it. Two agents on one data directory would each rebuild
 * the same idle queue from one resource DB and hand out the same addresses; the second is
 * refused instead, whatever socket it serves. The kernel drops the lock when the holder dies.
 */
import { closeSync, ftruncateSync, mkdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fs } from '../util/builtins.js';
import { openRegular } from '../local/regular-file.js';
import { tryLockExclusive } from '../util/flock.js';

export const DATA_DIR_LOCK = 'agent.lock';

/** Another agent holds the data directory (or its lock file cannot be used): the message names the file and, when known, the holder's pid. */
export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
}

/** Takes `<dir>/agent.lock` (creating the directory 0700 when absent); returns the descriptor to close on exit. */
export function lockDataDir(dir: string): number {
  const path = join(dir, DATA_DIR_LOCK);
  let fd: number;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    fd = openRegular(path, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
  } catch (e) {
    throw new DataDirLockedError(`cannot open the data directory's lock ${path}: ${(e as Error).message}`, { cause: e });
  }
  if (!tryLockExclusive(fd)) {
    let holder = '';
    try {
      const pid = readFileSync(fd, 'utf8').trim();
      if (/^[0-9]{1,10}$/.test(pid)) holder = ` (pid ${pid})`;
    } catch {
      // unknown holder
    }
    closeSync(fd);
    throw new DataDirLockedError(`another podipam agent${holder} uses the data directory ${dir}: it holds ${path}`);
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  return fd;
}
