/** What is at a path that install-cni wants to own, judged against the install manifest. */
import { lstatSync, readFileSync } from 'node:fs';
import { sha256, type InstallManifest } from './install-manifest.js';

export type FileState =
  | { readonly kind: 'absent' }
  /** A regular file listed in the manifest whose bytes hash to a recorded value. */
  | { readonly kind: 'ours'; readonly sha256: string; readonly mode: number }
  /** Anything else: unlisted, edited since, a symlink, a directory. */
  | { readonly kind: 'foreign'; readonly why: string };

export function fileState(path: string, manifest: InstallManifest): FileState {
  let st;
  try {
    st = lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    throw e;
  }
  if (!st.isFile()) return { kind: 'foreign', why: st.isSymbolicLink() ? 'a symlink' : 'not a regular file' };
  const entry = manifest.files.find((f) => f.path === path);
  if (!entry) return { kind: 'foreign', why: 'not in the install state' };
  const hash = sha256(readFileSync(path));
  if (!entry.sha256.includes(hash)) return { kind: 'foreign', why: `changed since install: sha256 ${hash.slice(0, 12)}` };
  return { kind: 'ours', sha256: hash, mode: st.mode & 0o7777 };
}
