/**
 * Where the CNI binary that install-cni copies comes from: the native shim that `npm run build`
 * (in a checkout) or the package's install script (from a tarball) builds, dist/bin/podipam-cni.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package root: dist/src/install/find-shim.js is three levels below it. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export const SHIM_CANDIDATES: readonly string[] = [`${PACKAGE_ROOT}dist/bin/podipam-cni`];

/** The first candidate that exists, else undefined. */
export function findShim(candidates: readonly string[] = SHIM_CANDIDATES): string | undefined {
  return candidates.find((p) => existsSync(p));
}
