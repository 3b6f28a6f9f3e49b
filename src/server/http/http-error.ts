/**
 * The one HTTP error class of the API and the one place where every other error becomes a
 * status code. Handlers throw; the server calls `toHttpError` and writes
 * `{"error": {"code", "message", "field"?}}`.
 */
import { isEngineError } from '../../util/engine-error.js';

export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The request field (body key or query parameter) the error is about, when there is one. */
    readonly field?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** The JSON body of the response. */
  toJSON(): { error: { code: string; message: string; field?: string } } {
    return { error: { code: this.code, message: this.message, ...(this.field !== undefined ? { field: this.field } : {}) } };
  }
}

/** A request field with a bad value: 400, naming the field. */
export function badField(field: string, message: string): HttpError {
  return new HttpError(400, 'invalid_field', message, field);
}

export function notFound(message: string): HttpError {
  return new HttpError(404, 'not_found', message);
}

/**
 * Error classes of the services below the API, by `name`, and the status each maps to.
 * Matching by name keeps this table free of imports from every service module.
 */
const BY_NAME: Readonly<Record<string, readonly [number, string]>> = {
  // src/store
  StoreUnavailableError: [503, 'datastore_unavailable'],
  StoreError: [502, 'datastore_error'],
  StoreUrlError: [400, 'invalid_datastore_url'],
  // src/cluster
  ContentionError: [503, 'contention'],
  PoolExhaustedError: [409, 'pool_exhausted'],
  NoPoolError: [409, 'no_pool'],
  AddressUnavailableError: [409, 'address_unavailable'],
  PoolConflictError: [409, 'pool_conflict'],
  PoolInUseError: [409, 'pool_in_use'],
  PoolChangeRefusedError: [409, 'pool_change_refused'],
  NotFoundError: [404, 'not_found'],
  IpSetExhaustedError: [409, 'ip_set_exhausted'],
  NoIpSetError: [409, 'no_ip_set'],
  IpSetConflictError: [409, 'ip_set_conflict'],
  IpSetInUseError: [409, 'ip_set_in_use'],
  PoolHasIpSetsError: [409, 'pool_in_use'],
  CorruptRecordError: [500, 'corrupt_record'],
  // src/controller
  NodeExistsError: [409, 'node_exists'],
  UnknownNodeError: [404, 'not_found'],
  CidrNotAvailableError: [409, 'cidr_not_available'],
  NodeConflictError: [503, 'contention'],
  CidrClaimedError: [409, 'cidr_claimed'],
};

/**
 * Maps anything a handler threw to an HttpError. Client mistakes are 4xx with our message;
 * everything else is a failure of ours: 5xx, with the original error as `cause` so the server
 * logs its stack, never a stack trace to the client.
 */
export function toHttpError(e: unknown): HttpError {
  if (e instanceof HttpError) return e;
  if (e instanceof Error) {
    const hit = BY_NAME[e.name] ?? BY_NAME[e.constructor.name];
    if (hit) return withCause(new HttpError(hit[0], hit[1], e.message, fieldOf(e)), e);
    // Services reject bad arguments with the built-in classes (see STYLE.md); by the time a
    // request reaches them its shape is validated, so what is left is a bad value — unless
    // the engine raised it, which is a bug of ours.
    if (isEngineError(e)) return withCause(new HttpError(500, 'internal', `internal error (logged by the server): ${e.message}`), e);
    if (e instanceof TypeError || e instanceof RangeError) return new HttpError(400, 'invalid', e.message, fieldOf(e));
    // CniError from the cluster back end: code 11 = try again later.
    const cniCode = (e as { code?: unknown }).code;
    if (e.name === 'CniError' && typeof cniCode === 'number') {
      return cniCode === 11 ? new HttpError(503, 'try_again', e.message) : new HttpError(409, `cni_${cniCode}`, e.message);
    }
    return withCause(new HttpError(500, 'internal', e.message), e);
  }
  return new HttpError(500, 'internal', String(e));
}

function withCause(h: HttpError, cause: Error): HttpError {
  if (h.status >= 500) h.cause = cause;
  return h;
}

function fieldOf(e: Error): string | undefined {
  const f = (e as { field?: unknown }).field;
  return typeof f === 'string' ? f : undefined;
}
