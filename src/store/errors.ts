import type { Failure } from '../model/failure.js';
import { redactStoreUrl } from './redact-store-url.js';

/** The engine behind a store could not be reached or answered in time (transient: CNI code 11). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly failure = 'transient';
  /** The store's URL, password hidden. */
  readonly url: string;
  constructor(
    url: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    const shown = redactStoreUrl(url);
    super(`datastore ${shown} is unavailable: ${reason}`, options);
    this.url = shown;
  }
}

/** The engine answered with something podipam cannot use (corrupt data, refused request). */
export class StoreError extends Error {
  override readonly name: string = 'StoreError';
  readonly failure: Failure = 'datastore';
  /** The store's URL, password hidden. */
  readonly url: string;
  constructor(url: string, message: string, options?: ErrorOptions) {
    const shown = redactStoreUrl(url);
    super(`datastore ${shown}: ${message}`, options);
    this.url = shown;
  }
}

/** A read-only open found no store to read (a SQLite file that does not exist); nothing was created. */
export class StoreMissingError extends StoreError {
  override readonly name = 'StoreMissingError';
  constructor(
    url: string,
    readonly file: string,
  ) {
    super(url, `${file} does not exist (a read creates no store: create it with a write such as \`podipam pool create\`, or start \`podipam serve\`)`);
  }
}

/**
 * A watch asked for revisions the store no longer keeps (etcd compacted them; the change log
 * of SQLite and memory was trimmed). `oldest` is the first revision a watch may start from;
 * the caller relists and watches from the listing's revision.
 */
export class StoreCompactedError extends StoreError {
  override readonly name = 'StoreCompactedError';
  constructor(
    url: string,
    readonly fromRevision: number,
    readonly oldest: number,
  ) {
    super(url, `cannot watch from revision ${fromRevision}: history before revision ${oldest} is compacted (relist, then watch from the listing's revision)`);
  }
}

/**
 * A datastore URL that names no known back end or is malformed, or settings that go with it
 * (environment variables, files they name) that are wrong. `url` has its password hidden.
 */
export class StoreUrlError extends TypeError {
  override readonly name = 'StoreUrlError';
  readonly failure = 'datastore-url';
  readonly url: string;
  constructor(url: string, reason: string, options?: ErrorOptions) {
    const shown = redactStoreUrl(url);
    super(`invalid datastore URL "${shown}": ${reason}`, options);
    this.url = shown;
  }
}
