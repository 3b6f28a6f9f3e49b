/**
 * Who holds and who waits for a flock(2) lock, read from Linux's /proc/locks: lets a test prove
 * that a process it kills was inside (or waiting for) a locked section, instead of guessing
 * from timing. Stop the process first (stopProcess), and what it holds cannot change. (A
 * process stopped while blocked in flock() leaves the wait queue: a waiter is proven by
 * reading while the test itself holds the lock, not by stopping it.)
 */
import { readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';

export interface FlockState {
  /** Pids holding the lock (flock: one writer, or several readers). */
  readonly holders: readonly number[];
  /** Pids blocked in flock() waiting for it. */
  readonly waiters: readonly number[];
}

/** The file's device and inode as /proc/locks writes them: `MAJ:MIN:INODE`, major and minor in hex. */
function lockId(path: string): string {
  const st = statSync(path);
  const dev = Number(st.dev);
  const major = (dev >>> 8) & 0xfff;
  const minor = (dev & 0xff) | ((dev >>> 12) & 0xfff00);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${st.ino}`;
}

/** The FLOCK entries on `path` (an existing file). */
export function flockState(path: string): FlockState {
  const id = lockId(path);
  const holders: number[] = [];
  const waiters: number[] = [];
  for (const line of readFileSync('/proc/locks', 'utf8').split('\n')) {
    // "12: FLOCK  ADVISORY  WRITE 4242 00:1b:263 0 EOF", blocked: "12: -> FLOCK  ADVISORY  WRITE 4243 ..."
    const m = /^\d+:\s+(->\s+)?FLOCK\s+\S+\s+\S+\s+(\d+)\s+(\S+)\s/.exec(line);
    if (!m || m[3] !== id) continue;
    (m[1] ? waiters : holders).push(Number(m[2]));
  }
  return { holders, waiters };
}

/** The state letter of /proc/PID/stat (or PID/task/TID/stat: R, S, D, T, Z…); undefined when it is gone. */
function stateOf(pid: number | string): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2);
  } catch {
    return undefined;
  }
}

/** True when process `pid` has exited (gone, or a zombie not yet reaped). */
export function exited(pid: number): boolean {
  const s = stateOf(pid);
  return s === undefined || s === 'Z' || s === 'X';
}

/** The state letters of every thread of process `pid` (from /proc/PID/task); empty when it is gone. */
function threadStates(pid: number): string[] {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tids.map((tid) => stateOf(`${pid}/task/${tid}`)).filter((s): s is string => s !== undefined);
}

/**
 * Sends SIGSTOP and waits until the kernel shows **every thread** of the process stopped
 * (state T), polling between event-loop turns for at most 5 s. A group stop is not atomic:
 * the thread the signal wakes stops the others, and on a busy machine another thread (a Go
 * program's network poller) can still answer a request for milliseconds after kill(2)
 * returned. Only once all are stopped does the process answer nothing, and does /proc/locks
 * say what it holds at the moment it will be killed. False if it exited first.
 */
export async function stopProcess(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 'SIGSTOP');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false; // exited and reaped
    throw e;
  }
  const deadline = Date.now() + 5000;
  for (;;) {
    const main = stateOf(pid);
    if (main === undefined || main === 'Z' || main === 'X') return false;
    const states = threadStates(pid);
    if (states.length > 0 && states.every((s) => s === 'T' || s === 't')) return true;
    if (Date.now() > deadline) throw new Error(`process ${pid} not stopped 5 s after SIGSTOP (threads ${states.join('')})`);
    await new Promise((r) => setImmediate(r));
  }
}

/**
 * The pids among `pids` that have `path` open (from /proc/PID/fd). The plugin opens its lock
 * file only to lock it, and waits for a busy lock polling with LOCK_NB (a bounded wait), which
 * /proc/locks does not show: a plugin that has the file open while the test holds the lock is
 * waiting for it.
 */
export function openers(path: string, pids: readonly number[]): number[] {
  return pids.filter((pid) => {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      return false;
    }
    return fds.some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
      } catch {
        return false;
      }
    });
  });
}
