/** Install refused: files in the way that podipam did not write (or that changed since it did). */
export class ForeignFileError extends Error {
  override readonly name = 'ForeignFileError';
  constructor(
    readonly paths: readonly string[],
    options?: ErrorOptions,
  ) {
    super(`refusing to overwrite ${paths.join(', ')}: podipam install-cni did not write it; move it away, or pass --force to take it over`, options);
  }
}
