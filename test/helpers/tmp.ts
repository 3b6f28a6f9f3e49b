/** Throw-away directories for tests, always removable. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TempDir {
  readonly path: string;
  /** Removes the directory and everything in it; safe to call twice. */
  remove(): void;
}

/** A fresh directory under the system temp dir, named `podipam-<prefix>-XXXXXX`. */
export function makeTempDir(prefix: string): TempDir {
  const path = mkdtempSync(join(tmpdir(), `podipam-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** Runs `fn` with a fresh temp dir that is removed afterwards, whatever happens. */
export async function withTempDir<T>(prefix: string, fn: (dir: string) => Promise<T> | T): Promise<T> {
  const d = makeTempDir(prefix);
  try {
    return await fn(d.path);
  } finally {
    d.remove();
  }
}
