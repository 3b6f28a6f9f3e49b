import type { ClassifiedError } from './failure.js';

/** A value of the network configuration is wrong: `path` names it as a JSON path, `problem` says why (message `path: problem`). */
export class ConfigValueError extends Error implements ClassifiedError {
  override readonly name = 'ConfigValueError';
  readonly failure = 'invalid-config';

  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}
