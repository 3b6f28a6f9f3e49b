/**
 * What the local back end throws, each with the data that explains it; the plugin
 * edge maps `failure` to the CNI code (src/cni/cni-error-of.ts: io → 5, transient → 11, exhausted → 100, address-unavailable → 101, not-found → 102).
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
    options?: ErrorOptions,
  ) {
    super(`cannot ${action} ${file}: ${causeMessage}`, options);
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

/**
 * An ADD that cannot get an address from range set `rangeSet`: none free (`exhausted`), or the
 * one asked for is taken, outside every range, the gateway, or the attachment already holds one
 * there (`address-unavailable`). `detail` is host-local's text.
 */
export class AllocationError extends Error {
  override readonly name = 'AllocationError';
  constructor(
    readonly failure: 'exhausted' | 'address-unavailable',
    readonly rangeSet: number,
    readonly detail: string,
  ) {
    super(`failed to allocate for range ${rangeSet}: ${detail}`);
  }
}

/** Requested addresses that fell in no range set (host-local's text). */
export class UnallocatedRequestsError extends Error {
  override readonly name = 'UnallocatedRequestsError';
  readonly failure = 'address-unavailable';
  constructor(readonly requested: readonly string[]) {
    super(`failed to allocate all requested IPs: ${requested.join(' ')}`);
  }
}

/** STATUS: range set `rangeSet` has no free address (host-local's text). */
export class RangeSetExhaustedError extends Error {
  override readonly name = 'RangeSetExhaustedError';
  readonly failure = 'exhausted';
  constructor(
    readonly rangeSet: number,
    readonly range: string,
  ) {
    super(`range set ${rangeSet}: no IP addresses available in range set: ${range}`);
  }
}

/**
 * CHECK: the attachment holds nothing (`address` undefined, host-local's text), or not the
 * `address` its prevResult lists.
 */
export class NotHeldError extends Error {
  override readonly name = 'NotHeldError';
  readonly failure = 'not-found';
  constructor(
    readonly containerId: string,
    readonly ifname: string,
    readonly address?: string,
  ) {
    super(
      address === undefined
        ? `host-local: Failed to find address added by container ${containerId}`
        : `prevResult address ${address} is not held by container ${containerId} interface ${ifname}`,
    );
  }
}

/** File-system failures of one operation, each message naming its path, joined by `separator` after `prefix`. */
export class DirectoryError extends Error {
  override readonly name = 'DirectoryError';
  readonly failure = 'io';
  constructor(
    readonly problems: readonly string[],
    separator = '; ',
    prefix = '',
    options?: ErrorOptions,
  ) {
    super(prefix + problems.join(separator), options);
  }
}

/** `resolvConf` could not be read: `<action> <file>: <cause>`, Go's wording. */
export class ResolvConfError extends Error {
  override readonly name = 'ResolvConfError';
  readonly failure = 'io';
  constructor(
    readonly action: 'open' | 'read',
    readonly file: string,
    readonly causeMessage: string,
    options?: ErrorOptions,
  ) {
    super(`${action} ${file}: ${causeMessage}`, options);
  }
}
