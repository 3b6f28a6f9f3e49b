/** A command line that names a bad flag value; printed without a stack, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
