/**
 * How to run podipam in a hint printed to the operator: `podipam` when the `podipam` on PATH
 * is this very installation, else `npx podipam` — from a clone (`npm start`), `podipam` is
 * "command not found" unless `npm link` or `npm install -g` put it on PATH.
 */
import { realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** bin/podipam of this installation (dist/src/cli/ → ../../../bin/podipam). */
const OWN_BIN = fileURLToPath(new URL('../../../bin/podipam', import.meta.url));

function real(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** The command that runs this podipam: "podipam" when PATH leads here, else "npx podipam". */
export function cliCommand(path: string = process.env.PATH ?? ''): string {
  const own = real(OWN_BIN);
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const found = real(join(dir, 'podipam'));
    if (found !== undefined) return found === own ? 'podipam' : 'npx podipam';
  }
  return 'npx podipam';
}
