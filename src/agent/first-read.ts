/**
 * The agent's connections are accepted paused (SERVER_OPTIONS) and their first bytes read here,
 * at once, by the code that accepted them: the shim writes its whole request right after it
 * connects, so by the time the agent runs the request is nearly always in the socket. A read
 * through the stream would wait a turn of the event loop (start reading, poll, read, emit) and
 * cost ~10 µs more of a pod start's critical path. Whatever is not there yet flows through the
 * stream once the caller resumes it.
 */
import { readSync } from 'node:fs';

/** Options of every server whose connections the agent serves (its socket's and its warm-up's). */
export const SERVER_OPTIONS = { pauseOnConnect: true } as const;

/** Larger than any request but the rare config of tens of KiB, which then comes in several reads. */
const scratch = Buffer.allocUnsafe(64 << 10);

/**
 * The bytes waiting on connected socket `fd` (non-blocking), copied out; undefined when none are
 * there yet (EAGAIN), at the peer's end (0 bytes), or when the read fails: the stream, resumed,
 * then sees the rest, the end or the error itself.
 */
export function firstRead(fd: number): Buffer | undefined {
  let n: number;
  try {
    n = readSync(fd, scratch, 0, scratch.length, null);
  } catch {
    return undefined;
  }
  return n > 0 ? Buffer.from(scratch.subarray(0, n)) : undefined;
}
