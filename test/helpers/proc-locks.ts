/**
 * Who holds and who waits for a flock(2) lock, read from Linux's /proc/locks: lets a test prove
 * that a process it kills was inside (or waiting for) a locked section, instead of guessing
 * from timing. Stop the process first (stopProcess), and what it holds cannot change. (A
 * process stopped while blocked in flock() leaves the wait queue: a waiter is proven by
 * reading while the test itself holds the lock, not by stopping it.)
 */
import { readFileSync, statSync } from 'node:fs';

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

/** The state letter of /proc/PID/stat (R, S, D, T, Z…); undefined when the process is gone. */
function stateOf(pid: number): string | undefined {
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

/**
 * Sends SIGSTOP and waits until the kernel shows the process stopped (state T), polling
 * between event-loop turns for at most 5 s: only then does /proc/locks say what it holds
 * at the moment it will be killed. False if it exited first.
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
    const s = stateOf(pid);
    if (s === 'T' || s === 't') return true;
    if (s === undefined || s === 'Z' || s === 'X') return false;
    if (Date.now() > deadline) throw new Error(`process ${pid} not stopped 5 s after SIGSTOP (state ${s})`);
    await new Promise((r) => setImmediate(r));
  }
}
