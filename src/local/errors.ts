/**
 * What the network directory's store throws, each with the data that explains it; the plugin
 * edge maps `failure` to the CNI code (src/cni/cni-error-of.ts: io → 5, transient → 11).
 */

/** An entry of the directory that is not a regular file (never opened, written or removed). */
export class UnsafeFileError extends Error {
  override readonly name = 'UnsafeFileError';
  readonly failure = 'io';
  constructor(
    readonly file: string,
    /** What it is instead: "a symbolic link", "a FIFO", … */
    readonly fileKind: string,
  ) {
    super(`refusing ${file}: it is ${fileKind}, not a regular file (remove it to continue)`);
  }
}

/** A file-system failure on `file`: `cannot <action> <file>: <cause>`. */
export class FileIoError extends Error {
  override readonly name = 'FileIoError';
  readonly failure = 'io';
  constructor(
    readonly action: string,
    readonly file: string,
    readonly causeMessage: string,
  ) {
    super(`cannot ${action} ${file}: ${causeMessage}`);
  }
}

/** The directory's lock was not obtained within `timeoutMs` (another process holds it). */
export class LockTimeoutError extends Error {
  override readonly name = 'LockTimeoutError';
  readonly failure = 'transient';
  constructor(
    readonly file: string,
    readonly timeoutMs: number,
  ) {
    super(`timed out after ${timeoutMs} ms waiting for the lock on ${file} (another process holds it)`);
  }
}

/** Either refusal of a directory entry. */
export type LocalFileError = UnsafeFileError | FileIoError;
