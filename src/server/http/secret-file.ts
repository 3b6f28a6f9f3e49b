/**
 * Reading files that hold secrets (the --token-file, the per-install token): a file that group
 * or other may read is refused, because a token anyone on the host can read protects nothing.
 * Messages name the file and its mode, never its content.
 */
import { readFileSync, statSync } from 'node:fs';

/**
 * Reads `path` as UTF-8 after checking it is a regular file with no group/other permission
 * bits (mode & 0o077 === 0). Throws an Error naming `what`, the path and the mode.
 */
export function readSecretFile(what: string, path: string): string {
  let mode: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a regular file');
    mode = st.mode & 0o777;
  } catch (e) {
    throw new Error(`cannot read ${what} ${path}: ${(e as Error).message}`, { cause: e });
  }
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `refusing ${what} ${path}: its mode is 0${mode.toString(8).padStart(3, '0')}, so group or other may read it; ` +
        `make it private with "chmod 600 ${path}"`,
    );
  }
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${what} ${path}: ${(e as Error).message}`, { cause: e });
  }
}
