/**
 * What kind of failure a service reports, carried by its typed errors as `failure` (next to the
 * data that explains it). The edges map kinds to their own codes: the CNI plugin with the one
 * table in src/cni/cni-error-of.ts, the HTTP API with its status codes. Services know nothing
 * of either.
 */
export type Failure =
  /** Try again later: the datastore is unreachable, writers keep conflicting, a lock is busy. */
  | 'transient'
  /** No free address left in what the request may use. */
  | 'exhausted'
  /** The specific address asked for cannot be given out. */
  | 'address-unavailable'
  /** What the request says it holds is not held (a CHECK finding nothing). */
  | 'not-found'
  /** No pool may serve the request (the network config and the pools disagree). */
  | 'no-pool'
  /** A file-system failure; the message names the path. */
  | 'io'
  /** The datastore answered with something unusable (a corrupt or read-only SQLite file, a refused request). */
  | 'datastore'
  /** The datastore URL (or a setting that goes with it) is wrong. */
  | 'datastore-url'
  /** A value of the network configuration is wrong; the message names its path (`ipam.routes[0].dst: missing`). */
  | 'invalid-config'
  /** The service cannot serve the call yet (the warm pool is still starting, or a refill is backing off). */
  | 'not-ready';

/** An error that says what kind of failure it is. */
export interface ClassifiedError extends Error {
  readonly failure: Failure;
}

/** `e`'s failure kind, when it is a classified error. */
export function failureOf(e: unknown): Failure | undefined {
  return e instanceof Error && typeof (e as Partial<ClassifiedError>).failure === 'string' ? (e as ClassifiedError).failure : undefined;
}
