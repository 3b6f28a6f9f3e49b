/** The engine behind a store could not be reached or answered in time (transient: CNI code 11). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(readonly url: string, readonly reason: string) {
    super(`datastore ${url} is unavailable: ${reason}`);
  }
}

/** The engine answered with something podipam cannot use (corrupt data, refused request). */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  constructor(readonly url: string, message: string) {
    super(`datastore ${url}: ${message}`);
  }
}

/** A datastore URL that names no known back end or is malformed. */
export class StoreUrlError extends TypeError {
  override readonly name = 'StoreUrlError';
  constructor(readonly url: string, reason: string) {
    super(`invalid datastore URL "${url}": ${reason}`);
  }
}
