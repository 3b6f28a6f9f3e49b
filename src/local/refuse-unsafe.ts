import type { StoreFile } from './disk-store.js';
import { DirectoryError } from './errors.js';

/** `files`, when none is refused; else the refusal (code 5) naming every such entry. */
export function refuseUnsafe(files: readonly StoreFile[]): readonly StoreFile[] {
  const refused = files.flatMap((f) => (f.refused ? [f.refused] : []));
  if (refused.length === 1) throw refused[0]!;
  if (refused.length > 1) throw new DirectoryError(refused.map((e) => e.message));
  return files;
}
