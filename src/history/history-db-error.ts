import type { Failure } from '../model/failure.js';

/** The history file cannot be opened, is not a history file, or refuses a batch; the message names the file. */
export class HistoryDbError extends Error {
  override readonly name = 'HistoryDbError';
  readonly failure: Failure = 'io';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}
