import type { ClassifiedError, Failure } from '../model/failure.js';

/** A warm-pool call that cannot be served: `failure` says what kind (src/model/failure.ts), `node` which node's pool. */
export class WarmError extends Error implements ClassifiedError {
  override readonly name = 'WarmError';

  constructor(
    readonly failure: Failure,
    readonly node: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
